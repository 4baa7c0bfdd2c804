package tmpl

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Kind is the Python type a Value stands for.
type Kind uint8

const (
	KUndefined Kind = iota // Jinja2's default Undefined: prints "", iterates empty, fails on use
	KNone                  // Python None
	KBool
	KInt // int64 (Python ints are unbounded; overflow is an error here)
	KFloat
	KString
	KList  // list or tuple (a tuple is a list that prints with parentheses)
	KDict  // dict with insertion order
	KFunc  // a callable: global function, macro, bound method, caller
	KSpace // namespace(): a dict whose attributes {% set ns.x %} may assign
	// KIter is a one-shot iterator, what Jinja2's map, select, reject,
	// selectattr, rejectattr, unique, items and reverse return: always true,
	// no len(), not JSON-serializable, printed as "<generator object ...>",
	// empty once iterated.
	KIter
)

// Value is one template value. The zero Value is Undefined.
type Value struct {
	kind Kind
	n    int64   // KBool (0/1), KInt
	f    float64 // KFloat
	s    string  // KString; for KUndefined the name that was missing (for errors)
	ref  any     // *List, *Dict, *Func
}

// List is the storage of a list or tuple value.
type List struct {
	Items []Value
	Tuple bool
	Iter  string // KIter: the Python type name ("generator", "list_reverseiterator")
	// Fields name a named tuple's items (groupby's grouper and list), which
	// are then attributes too.
	Fields []string
}

func newIter(typ string, items []Value) Value {
	return Value{kind: KIter, ref: &List{Items: items, Iter: typ}}
}

// Dict is an insertion-ordered dict. Keys are strings, ints, floats, bools or
// None (hashable scalars); ints and equal floats/bools are the same key, as in
// Python.
type Dict struct {
	keys []Value
	vals []Value
	idx  map[dictKey]int
}

type dictKey struct {
	kind Kind
	s    string
	n    int64
	f    float64
}

// Func is a callable value. Go functions get the evaluated arguments; the
// receiver of a bound method is in self.
type Func struct {
	Name  string
	Fn    func(c *Call) (Value, error)
	self  Value
	mac   *macroDef // non-nil for a macro or caller
	scope *scope    // where the macro was defined
}

// Call is one call's arguments.
type Call struct {
	Args   []Value
	Kwargs []Kwarg
	r      *renderer
	self   Value
}

// Kwarg is one keyword argument.
type Kwarg struct {
	Name  string
	Value Value
}

// Kw returns the keyword argument name, if given.
func (c *Call) Kw(name string) (Value, bool) {
	for _, kw := range c.Kwargs {
		if kw.Name == name {
			return kw.Value, true
		}
	}
	return Value{}, false
}

// Arg returns argument i, taken positionally or by keyword name.
func (c *Call) Arg(i int, name string) (Value, bool) {
	if name != "" {
		if v, ok := c.Kw(name); ok {
			return v, true
		}
	}
	if i >= 0 && i < len(c.Args) {
		return c.Args[i], true
	}
	return Value{}, false
}

// Constructors.

func Undefined() Value              { return Value{} }
func undefinedNamed(n string) Value { return Value{s: n} }
func None() Value                   { return Value{kind: KNone} }
func String(s string) Value         { return Value{kind: KString, s: s} }
func Int(i int64) Value             { return Value{kind: KInt, n: i} }
func Float(f float64) Value         { return Value{kind: KFloat, f: f} }
func NewList(items []Value) Value   { return Value{kind: KList, ref: &List{Items: items}} }
func newTuple(items []Value) Value  { return Value{kind: KList, ref: &List{Items: items, Tuple: true}} }
func NewDict() Value                { return Value{kind: KDict, ref: &Dict{}} }
func NewFunc(name string, fn func(c *Call) (Value, error)) Value {
	return Value{kind: KFunc, ref: &Func{Name: name, Fn: fn}}
}
func Bool(b bool) Value {
	if b {
		return Value{kind: KBool, n: 1}
	}
	return Value{kind: KBool}
}

// markup is a Markup string (what |safe and |escape return): adding a plain
// string to it HTML-escapes that string, as markupsafe does. The flag lives
// in n, unused by strings.
func markup(s string) Value    { return Value{kind: KString, s: s, n: 1} }
func (v Value) isMarkup() bool { return v.kind == KString && v.n == 1 }

// htmlEscape is markupsafe's escape: & < > " ' become entities.
func htmlEscape(s string) string {
	if !strings.ContainsAny(s, "&<>\"'") {
		return s
	}
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}

// Accessors.

func (v Value) Kind() Kind        { return v.kind }
func (v Value) IsUndefined() bool { return v.kind == KUndefined }
func (v Value) IsNone() bool      { return v.kind == KNone }
func (v Value) IsString() bool    { return v.kind == KString }
func (v Value) IsDict() bool      { return v.kind == KDict }
func (v Value) IsList() bool      { return v.kind == KList }
func (v Value) Str() string       { return v.s }
func (v Value) Int() int64        { return v.n }
func (v Value) Float() float64    { return v.f }
func (v Value) List() *List       { return v.ref.(*List) }
func (v Value) Dict() *Dict       { return v.ref.(*Dict) }
func (v Value) func_() *Func      { return v.ref.(*Func) }
func (v Value) isNumber() bool    { return v.kind == KInt || v.kind == KFloat || v.kind == KBool }
func (v Value) isMapping() bool   { return v.kind == KDict || v.kind == KSpace }
func (v Value) number() float64 {
	if v.kind == KFloat {
		return v.f
	}
	return float64(v.n)
}

// Truth is Python's bool(v).
func (v Value) Truth() bool {
	switch v.kind {
	case KUndefined, KNone:
		return false
	case KBool, KInt:
		return v.n != 0
	case KFloat:
		return v.f != 0
	case KString:
		return v.s != ""
	case KList:
		return len(v.List().Items) > 0
	case KDict, KSpace:
		return v.Dict().Len() > 0
	}
	return true // functions, iterators
}

// Dict operations.

func keyOf(k Value) (dictKey, bool) {
	switch k.kind {
	case KString:
		return dictKey{kind: KString, s: k.s}, true
	case KInt, KBool:
		return dictKey{kind: KInt, n: k.n}, true
	case KFloat:
		if k.f == math.Trunc(k.f) && math.Abs(k.f) < 1<<62 {
			return dictKey{kind: KInt, n: int64(k.f)}, true
		}
		return dictKey{kind: KFloat, f: k.f}, true
	case KNone:
		return dictKey{kind: KNone}, true
	}
	return dictKey{}, false
}

func (d *Dict) Len() int { return len(d.keys) }

// Keys returns the keys in insertion order (not a copy).
func (d *Dict) Keys() []Value { return d.keys }

// Get looks a key up. Small dicts (most in chat templates) are searched
// linearly; the index map is built once a dict outgrows smallDict.
func (d *Dict) Get(k Value) (Value, bool) {
	if i := d.find(k); i >= 0 {
		return d.vals[i], true
	}
	return Value{}, false
}

const smallDict = 8

func (d *Dict) find(k Value) int {
	dk, ok := keyOf(k)
	if !ok {
		return -1
	}
	if d.idx == nil {
		for i, kk := range d.keys {
			if kd, _ := keyOf(kk); kd == dk {
				return i
			}
		}
		return -1
	}
	if i, ok := d.idx[dk]; ok {
		return i
	}
	return -1
}

// GetStr looks a string key up.
func (d *Dict) GetStr(k string) (Value, bool) { return d.Get(String(k)) }

// Set adds or replaces (in place) a key; false if the key is not hashable.
func (d *Dict) Set(k, v Value) bool {
	dk, ok := keyOf(k)
	if !ok {
		return false
	}
	if i := d.find(k); i >= 0 {
		d.vals[i] = v
		return true
	}
	if d.idx == nil && len(d.keys) >= smallDict {
		d.idx = make(map[dictKey]int, 2*smallDict)
		for i, kk := range d.keys {
			kd, _ := keyOf(kk)
			d.idx[kd] = i
		}
	}
	if d.idx != nil {
		d.idx[dk] = len(d.keys)
	}
	d.keys = append(d.keys, k)
	d.vals = append(d.vals, v)
	return true
}

// reindex rebuilds the index after a deletion.
func (d *Dict) reindex() {
	if d.idx == nil {
		return
	}
	d.idx = make(map[dictKey]int, len(d.keys))
	for i, kk := range d.keys {
		kd, _ := keyOf(kk)
		d.idx[kd] = i
	}
}

// SetStr sets a string key.
func (d *Dict) SetStr(k string, v Value) { d.Set(String(k), v) }

// At returns the i-th pair in insertion order.
func (d *Dict) At(i int) (Value, Value) { return d.keys[i], d.vals[i] }

// Equality and ordering, as Python's == and <.

// maxCompareDepth bounds the recursion of ==, < and printing through
// nested lists and dicts: with list.append a template can build a list that
// contains itself, which would otherwise recurse until the stack overflows.
const maxCompareDepth = 200

// maxCompareNodes bounds the work of a comparison made outside a render.
// Lists built by repetition share their items, so a few thousand slots can
// stand for a billion-element tree: a render's comparisons are charged to
// its step budget instead (renderer.equal). Past the budget, values compare
// unequal (and unordered), and the render fails at its next step.
const maxCompareNodes = 1 << 20

func equal(a, b Value) bool {
	n := maxCompareNodes
	return equalAt(a, b, 0, &n)
}

func equalAt(a, b Value, depth int, budget *int) bool {
	*budget--
	if depth > maxCompareDepth || *budget < 0 {
		return false
	}
	if a.isNumber() && b.isNumber() {
		if a.kind == KFloat || b.kind == KFloat {
			return a.number() == b.number()
		}
		return a.n == b.n
	}
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case KUndefined, KNone:
		return true
	case KString:
		return a.s == b.s
	case KList:
		if a.ref == b.ref {
			return true // identity first, as Python compares container items
		}
		x, y := a.List().Items, b.List().Items
		if len(x) != len(y) || a.List().Tuple != b.List().Tuple {
			return false
		}
		for i := range x {
			if !equalAt(x[i], y[i], depth+1, budget) {
				return false
			}
		}
		return true
	case KDict:
		if a.ref == b.ref {
			return true
		}
		x, y := a.Dict(), b.Dict()
		if x.Len() != y.Len() {
			return false
		}
		for i, k := range x.keys {
			w, ok := y.Get(k)
			if !ok || !equalAt(x.vals[i], w, depth+1, budget) {
				return false
			}
		}
		return true
	}
	return a.ref == b.ref
}

// compare returns -1, 0, 1 for a < b, ==, >; ok false when Python would
// raise TypeError ('<' not supported).
func compare(a, b Value) (int, bool) {
	n := maxCompareNodes
	return compareAt(a, b, 0, &n)
}

func compareAt(a, b Value, depth int, budget *int) (int, bool) {
	*budget--
	if depth > maxCompareDepth || *budget < 0 {
		return 0, false
	}
	switch {
	case a.isNumber() && b.isNumber():
		if a.kind != KFloat && b.kind != KFloat {
			return cmp3(a.n, b.n), true
		}
		x, y := a.number(), b.number()
		switch {
		case x < y:
			return -1, true
		case x > y:
			return 1, true
		}
		return 0, true
	case a.kind == KString && b.kind == KString:
		return strings.Compare(a.s, b.s), true
	case a.kind == KList && b.kind == KList:
		x, y := a.List().Items, b.List().Items
		for i := 0; i < len(x) && i < len(y); i++ {
			if equalAt(x[i], y[i], depth+1, budget) {
				continue
			}
			return compareAt(x[i], y[i], depth+1, budget)
		}
		return cmp3(int64(len(x)), int64(len(y))), true
	}
	return 0, false
}

func cmp3(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// typeName is the Python type name, for error messages.
func typeName(v Value) string {
	switch v.kind {
	case KUndefined:
		return "Undefined"
	case KNone:
		return "NoneType"
	case KBool:
		return "bool"
	case KInt:
		return "int"
	case KFloat:
		return "float"
	case KString:
		return "str"
	case KList:
		if v.List().Tuple {
			return "tuple"
		}
		return "list"
	case KDict:
		return "dict"
	case KSpace:
		return "Namespace"
	case KIter:
		return v.List().Iter
	}
	return "function"
}

// Printing: str() and repr() as Python writes them.

// pyStr is Python's str(v); Undefined prints as "".
func pyStr(v Value) string {
	switch v.kind {
	case KUndefined:
		return ""
	case KString:
		return v.s
	}
	var b strings.Builder
	writeRepr(&b, v, nil)
	return b.String()
}

// maxReprBytes stops a repr early: callers that print check the size first
// (reprSize), but error messages and %-formatting print directly.
const maxReprBytes = 16<<20 + 1

// onPath reports whether the container ref is being printed already (a
// list that contains itself, possible through list.append).
func onPath(path []any, ref any) bool {
	for _, p := range path {
		if p == ref {
			return true
		}
	}
	return false
}

// writeRepr writes Python's repr(v); path holds the containers being
// written, so that a container inside itself prints as [...] or {...}, as
// in Python.
func writeRepr(b *strings.Builder, v Value, path []any) {
	if len(path) > maxCompareDepth || b.Len() > maxReprBytes {
		b.WriteString("...")
		return
	}
	switch v.kind {
	case KUndefined:
		b.WriteString("Undefined")
	case KNone:
		b.WriteString("None")
	case KBool:
		if v.n != 0 {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case KInt:
		b.WriteString(strconv.FormatInt(v.n, 10))
	case KFloat:
		b.WriteString(pyFloat(v.f))
	case KString:
		writeStrRepr(b, v.s)
	case KList:
		l := v.List()
		open, close := "[", "]"
		if l.Tuple {
			open, close = "(", ")"
		}
		if onPath(path, v.ref) {
			b.WriteString(open + "..." + close)
			return
		}
		path = append(path, v.ref)
		b.WriteString(open)
		for i, it := range l.Items {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, it, path)
		}
		if l.Tuple && len(l.Items) == 1 {
			b.WriteByte(',')
		}
		b.WriteString(close)
	case KDict, KSpace:
		if onPath(path, v.ref) {
			b.WriteString("{...}")
			return
		}
		path = append(path, v.ref)
		d := v.Dict()
		if v.kind == KSpace {
			b.WriteString("<Namespace ")
		}
		b.WriteByte('{')
		for i := range d.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, d.keys[i], path)
			b.WriteString(": ")
			writeRepr(b, d.vals[i], path)
		}
		b.WriteByte('}')
		if v.kind == KSpace {
			b.WriteByte('>')
		}
	case KFunc:
		b.WriteString("<function " + v.func_().Name + ">")
	case KIter:
		b.WriteString("<" + v.List().Iter + " object>")
	}
}

// writeStrRepr writes Python's repr of a str: single quotes unless the text
// holds a ' and no ", backslash escapes for the quote, \\, \n, \r, \t and
// other non-printable characters.
func writeStrRepr(b *strings.Builder, s string) {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x`)
			b.WriteString(hex2(byte(r)))
		case r >= 0x80 && r < 0xa0, r == 0xad:
			b.WriteString(`\x`)
			b.WriteString(hex2(byte(r)))
		case r == utf8.RuneError:
			b.WriteString(`\ufffd`)
		case r == 0x2028 || r == 0x2029:
			b.WriteString(`\u` + strconv.FormatInt(int64(r), 16))
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
}

func hex2(c byte) string {
	const h = "0123456789abcdef"
	return string([]byte{h[c>>4], h[c&15]})
}

// pyFloat is Python's repr(float): shortest round-trip digits, ".0" on
// integral values, exponent form outside 1e-4 <= |f| < 1e16.
func pyFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case f == 0:
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	sci := strconv.FormatFloat(f, 'e', -1, 64)
	e := strings.IndexByte(sci, 'e')
	exp, _ := strconv.Atoi(sci[e+1:])
	if exp < -4 || exp >= 16 {
		return sci
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// sortValues sorts a copy of items by Python's ordering; ok false when two
// items are not comparable.
func sortValues(r *renderer, items []Value, key func(Value) Value, reverse bool, fold bool) ([]Value, bool) {
	out := append([]Value(nil), items...)
	ok := true
	k := func(v Value) Value {
		if key != nil {
			v = key(v)
		}
		if fold && v.kind == KString {
			return String(strings.ToLower(v.s))
		}
		return v
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := k(out[i]), k(out[j])
		if reverse {
			a, b = b, a
		}
		c, good := r.compare(a, b)
		if !good {
			ok = false
		}
		return c < 0
	})
	return out, ok
}

// Repr is Python's str(v) for a non-string (repr of its items), the text
// `{{ v }}` prints.
func Repr(v Value) string { return pyStr(v) }
