package tmpl

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// Filters: Jinja2's built-in filters that chat templates use, plus Hugging
// Face's tojson. Each gets the renderer (for the budget), the input and the
// call's arguments. Semantics follow Jinja2 3.1 (e.g. unique and dictsort
// ignore case by default, indent adds no indentation to the first line or
// to blank lines unless asked, title capitalizes after "-", "(", "[", "{"
// and "<" too).

type filterFn func(r *renderer, pos int, x Value, c *Call) (Value, error)

var filters map[string]filterFn

func init() {
	filters = map[string]filterFn{
		"abs":         fAbs,
		"attr":        fAttr,
		"capitalize":  strFilter(pyCapitalize),
		"center":      fCenter,
		"count":       fLength,
		"d":           fDefault,
		"default":     fDefault,
		"dictsort":    fDictsort,
		"e":           fEscape,
		"escape":      fEscape,
		"first":       fFirst,
		"float":       fFloat,
		"forceescape": fEscape,
		"format":      fFormat,
		"groupby":     fGroupby,
		"indent":      fIndent,
		"int":         fInt,
		"items":       fItems,
		"join":        fJoin,
		"last":        fLast,
		"length":      fLength,
		"list":        fList,
		"lower":       strFilter(strings.ToLower),
		"map":         fMap,
		"max":         fMinMax(1),
		"min":         fMinMax(-1),
		"reject":      fSelect(false, false),
		"rejectattr":  fSelect(false, true),
		"replace":     fReplace,
		"reverse":     fReverse,
		"round":       fRound,
		"safe":        fSafe,
		"select":      fSelect(true, false),
		"selectattr":  fSelect(true, true),
		"sort":        fSort,
		"string":      fString,
		"striptags":   fStriptags,
		"sum":         fSum,
		"title":       strFilter(jinjaTitle),
		"tojson":      fTojson,
		"trim":        fTrim,
		"truncate":    fTruncate,
		"unique":      fUnique,
		"upper":       strFilter(strings.ToUpper),
		"wordcount":   fWordcount,
	}
}

// applyFilter evaluates a filter's arguments and applies it to x.
func (r *renderer) applyFilter(f *filterExpr, x Value, sc *scope) (Value, error) {
	fn, ok := filters[f.name]
	if !ok {
		return Value{}, r.fail(f.pos, "filter", "no filter named '%s'", f.name)
	}
	c, err := r.evalArgs(f.args, f.kwargs, sc)
	if err != nil {
		return Value{}, err
	}
	r.callPos = f.pos
	v, err := fn(r, f.pos, x, c)
	r.putCall(c)
	if err != nil {
		return Value{}, r.wrap(f.pos, "filter '"+f.name+"'", err)
	}
	return v, nil
}

func undefinedErr(x Value) error { return errors.New(undefMsg(x)) }

// strFilter lifts a string function: the input is str()-ed first.
func strFilter(fn func(string) string) filterFn {
	return func(r *renderer, pos int, x Value, c *Call) (Value, error) {
		s, err := r.str(pos, x)
		if err != nil {
			return Value{}, err
		}
		out := fn(s)
		if err := r.charge(pos, int64(len(out))); err != nil {
			return Value{}, err
		}
		if x.isMarkup() {
			return markup(out), nil // Markup's methods keep it Markup
		}
		return String(out), nil
	}
}

func fString(r *renderer, pos int, x Value, c *Call) (Value, error) {
	if x.kind == KString {
		return x, nil
	}
	s, err := r.str(pos, x)
	return String(s), err
}

// fSafe marks a string as Markup (safe HTML): later additions of plain
// strings to it get HTML-escaped, as in markupsafe.
func fSafe(r *renderer, pos int, x Value, c *Call) (Value, error) {
	s, err := r.str(pos, x)
	return markup(s), err
}

func fEscape(r *renderer, pos int, x Value, c *Call) (Value, error) {
	if x.isMarkup() {
		return x, nil
	}
	s, err := r.str(pos, x)
	if err != nil {
		return Value{}, err
	}
	out := htmlEscape(s)
	return markup(out), r.charge(pos, int64(len(out)))
}

func fTrim(r *renderer, pos int, x Value, c *Call) (Value, error) {
	s, err := r.str(pos, x)
	if err != nil {
		return Value{}, err
	}
	out := String(strings.TrimFunc(s, pyIsSpace))
	if chars, ok := c.Arg(0, "chars"); ok && chars.kind == KString {
		out = String(strings.Trim(s, chars.s))
	}
	if x.isMarkup() {
		out.n = 1
	}
	return out, nil
}

func fLength(r *renderer, pos int, x Value, c *Call) (Value, error) {
	n, err := pyLen(x)
	return Int(int64(n)), err
}

func pyLen(x Value) (int, error) {
	switch x.kind {
	case KString:
		if isASCII(x.s) {
			return len(x.s), nil
		}
		return len([]rune(x.s)), nil
	case KList:
		return len(x.List().Items), nil
	case KDict:
		return x.Dict().Len(), nil
	case KUndefined:
		return 0, nil
	}
	return 0, fmt.Errorf("object of type '%s' has no len()", typeName(x))
}

func fDefault(r *renderer, pos int, x Value, c *Call) (Value, error) {
	def, ok := c.Arg(0, "default_value")
	if !ok {
		def = String("")
	}
	boolean, _ := c.Arg(1, "boolean")
	if x.kind == KUndefined || boolean.Truth() && !x.Truth() {
		return def, nil
	}
	return x, nil
}

func fFirst(r *renderer, pos int, x Value, c *Call) (Value, error) {
	items, err := r.iterate(pos, x)
	if err != nil {
		return Value{}, err
	}
	if len(items) == 0 {
		return undefinedNamed("No first item, sequence was empty."), nil
	}
	return items[0], nil
}

func fLast(r *renderer, pos int, x Value, c *Call) (Value, error) {
	items, err := r.iterate(pos, x)
	if err != nil {
		return Value{}, err
	}
	if len(items) == 0 {
		return undefinedNamed("No last item, sequence was empty."), nil
	}
	return items[len(items)-1], nil
}

func fList(r *renderer, pos int, x Value, c *Call) (Value, error) {
	items, err := r.iterate(pos, x)
	if err != nil {
		return Value{}, err
	}
	if err := r.chargeSlots(pos, int64(len(items))*slotBytes); err != nil {
		return Value{}, err
	}
	return NewList(append([]Value(nil), items...)), nil
}

func fItems(r *renderer, pos int, x Value, c *Call) (Value, error) {
	switch x.kind {
	case KUndefined:
		return newIter("generator", nil), nil
	case KDict:
		v, err := dictItems(r, pos, x.Dict())
		if err != nil {
			return Value{}, err
		}
		return newIter("generator", v.List().Items), nil
	}
	return Value{}, fmt.Errorf("can only get item pairs from a mapping, not %s", typeName(x))
}

func dictItems(r *renderer, pos int, d *Dict) (Value, error) {
	if err := r.chargeSlots(pos, int64(d.Len())*3*slotBytes); err != nil {
		return Value{}, err
	}
	out := make([]Value, d.Len())
	for i := range d.keys {
		out[i] = newTuple([]Value{d.keys[i], d.vals[i]})
	}
	return NewList(out), nil
}

func fJoin(r *renderer, pos int, x Value, c *Call) (Value, error) {
	items, err := r.iterate(pos, x)
	if err != nil {
		return Value{}, err
	}
	sep := ""
	if v, ok := c.Arg(0, "d"); ok {
		if sep, err = r.str(pos, v); err != nil {
			return Value{}, err
		}
	}
	attr, hasAttr := c.Arg(1, "attribute")
	parts := make([]string, len(items))
	total := int64(len(sep)) * int64(max(len(items)-1, 0))
	for i, it := range items {
		if hasAttr {
			if it, err = r.attrPath(pos, it, attr); err != nil {
				return Value{}, err
			}
		}
		if parts[i], err = r.str(pos, it); err != nil {
			return Value{}, err
		}
		total += int64(len(parts[i]))
		if total > r.lim.MaxOutput {
			return Value{}, r.limitErr(pos, "output size", r.lim.MaxOutput)
		}
	}
	if err := r.charge(pos, total); err != nil {
		return Value{}, err
	}
	return String(strings.Join(parts, sep)), nil
}

func fReplace(r *renderer, pos int, x Value, c *Call) (Value, error) {
	s, err := r.str(pos, x)
	if err != nil {
		return Value{}, err
	}
	oldV, ok1 := c.Arg(0, "old")
	newV, ok2 := c.Arg(1, "new")
	if !ok1 || !ok2 {
		return Value{}, errors.New("replace needs the old and new strings")
	}
	old, err := r.str(pos, oldV)
	if err != nil {
		return Value{}, err
	}
	nw, err := r.str(pos, newV)
	if err != nil {
		return Value{}, err
	}
	count := int64(-1)
	if v, ok := c.Arg(2, "count"); ok && v.kind == KInt {
		count = v.n
	}
	return r.replace(pos, s, old, nw, count)
}

// replace is str.replace with the result's size checked before building.
func (r *renderer) replace(pos int, s, old, nw string, count int64) (Value, error) {
	n := int64(strings.Count(s, old))
	if old == "" {
		n = int64(len([]rune(s))) + 1
	}
	if count >= 0 && count < n {
		n = count
	}
	size := int64(len(s)) + n*(int64(len(nw))-int64(len(old)))
	if size > r.lim.MaxOutput {
		return Value{}, r.limitErr(pos, "output size", r.lim.MaxOutput)
	}
	if err := r.charge(pos, size); err != nil {
		return Value{}, err
	}
	return String(strings.Replace(s, old, nw, int(n))), nil
}

func fIndent(r *renderer, pos int, x Value, c *Call) (Value, error) {
	s, err := r.str(pos, x)
	if err != nil {
		return Value{}, err
	}
	ind := "    "
	if w, ok := c.Arg(0, "width"); ok {
		switch w.kind {
		case KString:
			ind = w.s
		case KInt, KBool:
			if w.n > r.lim.MaxOutput {
				return Value{}, r.limitErr(pos, "output size", r.lim.MaxOutput)
			}
			ind = strings.Repeat(" ", int(max(w.n, 0)))
		default:
			return Value{}, errors.New("indent width must be an int or a string")
		}
	}
	first, _ := c.Arg(1, "first")
	blank, _ := c.Arg(2, "blank")
	lines := splitLines(s + "\n")
	if int64(len(ind))*int64(len(lines)+1)+int64(len(s)) > r.lim.MaxOutput {
		return Value{}, r.limitErr(pos, "output size", r.lim.MaxOutput)
	}
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
			if blank.Truth() || l != "" {
				b.WriteString(ind)
			}
		}
		b.WriteString(l)
	}
	out := b.String()
	if first.Truth() {
		out = ind + out
	}
	return String(out), r.charge(pos, int64(len(out)))
}

// splitLines is Python's str.splitlines().
func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); {
		r, n := decodeRune(s[i:])
		switch r {
		case '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			out = append(out, s[start:i])
			if r == '\r' && i+1 < len(s) && s[i+1] == '\n' {
				n++
			}
			start = i + n
		}
		i += n
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

func fDictsort(r *renderer, pos int, x Value, c *Call) (Value, error) {
	if x.kind != KDict {
		return Value{}, fmt.Errorf("dictsort: expected a dict, got %s", typeName(x))
	}
	cs, _ := c.Arg(0, "case_sensitive")
	by, _ := c.Arg(1, "by")
	rev, _ := c.Arg(2, "reverse")
	idx := 0
	if by.kind == KString && by.s == "value" {
		idx = 1
	}
	pairs, err := dictItems(r, pos, x.Dict())
	if err != nil {
		return Value{}, err
	}
	sorted, ok := sortValues(r, pairs.List().Items, func(p Value) Value { return p.List().Items[idx] }, rev.Truth(), !cs.Truth())
	if !ok {
		return Value{}, errors.New("dictsort: keys are not comparable")
	}
	return NewList(sorted), nil
}

func fSort(r *renderer, pos int, x Value, c *Call) (Value, error) {
	items, err := r.iterate(pos, x)
	if err != nil {
		return Value{}, err
	}
	rev, _ := c.Arg(0, "reverse")
	cs, _ := c.Arg(1, "case_sensitive")
	attr, hasAttr := c.Arg(2, "attribute")
	var key func(Value) Value
	if hasAttr && attr.kind != KNone {
		key = func(v Value) Value { k, _ := r.attrPath(pos, v, attr); return k }
	}
	sorted, ok := sortValues(r, items, key, rev.Truth(), !cs.Truth())
	if !ok {
		return Value{}, errors.New("sort: items are not comparable")
	}
	return NewList(sorted), r.chargeSlots(pos, int64(len(sorted))*slotBytes)
}

func fUnique(r *renderer, pos int, x Value, c *Call) (Value, error) {
	items, err := r.iterate(pos, x)
	if err != nil {
		return Value{}, err
	}
	cs, _ := c.Arg(0, "case_sensitive")
	attr, hasAttr := c.Arg(1, "attribute")
	var out []Value
	seen := NewDict().Dict()
	for _, it := range items {
		k := it
		if hasAttr && attr.kind != KNone {
			if k, err = r.attrPath(pos, it, attr); err != nil {
				return Value{}, err
			}
		}
		if !cs.Truth() && k.kind == KString {
			k = String(strings.ToLower(k.s))
		}
		if _, dup := seen.Get(k); dup {
			continue
		}
		if !seen.Set(k, None()) {
			return Value{}, fmt.Errorf("unhashable type: '%s'", typeName(k))
		}
		out = append(out, it)
	}
	return newIter("generator", out), r.chargeSlots(pos, int64(len(out))*slotBytes)
}

func fReverse(r *renderer, pos int, x Value, c *Call) (Value, error) {
	if x.kind == KString {
		rs := []rune(x.s)
		for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
			rs[i], rs[j] = rs[j], rs[i]
		}
		return String(string(rs)), r.charge(pos, int64(len(x.s)))
	}
	items, err := r.iterate(pos, x)
	if err != nil {
		return Value{}, err
	}
	out := make([]Value, len(items))
	for i, it := range items {
		out[len(items)-1-i] = it
	}
	if x.kind == KList {
		return newIter("list_reverseiterator", out), r.chargeSlots(pos, int64(len(out))*slotBytes)
	}
	return NewList(out), r.chargeSlots(pos, int64(len(out))*slotBytes)
}

// attrPath resolves a filter's attribute="a.b.0" argument on v.
func (r *renderer) attrPath(pos int, v Value, attr Value) (Value, error) {
	if attr.kind == KInt {
		return r.getItem(pos, v, attr)
	}
	path, err := r.str(pos, attr)
	if err != nil {
		return Value{}, err
	}
	for _, part := range strings.Split(path, ".") {
		var key Value = String(part)
		if n, err := strconv.ParseInt(part, 10, 64); err == nil {
			key = Int(n)
		}
		if v, err = r.getItem(pos, v, key); err != nil {
			return Value{}, err
		}
	}
	return v, nil
}

func fAttr(r *renderer, pos int, x Value, c *Call) (Value, error) {
	name, ok := c.Arg(0, "name")
	if !ok || name.kind != KString {
		return Value{}, errors.New("attr needs an attribute name")
	}
	// attr() is getattr only: methods, not dict items.
	if x.kind == KUndefined {
		return Value{}, undefinedErr(x)
	}
	if isMethod(x, name.s) {
		return boundMethod(x, name.s), nil
	}
	if x.kind == KSpace || x.kind == kLoop || x.kind == KList {
		return r.getAttr(pos, x, name.s)
	}
	return undefinedNamed(fmt.Sprintf("'%s' has no attribute '%s'", objName(x), name.s)), nil
}

func fMap(r *renderer, pos int, x Value, c *Call) (Value, error) {
	if !x.Truth() {
		return newIter("generator", nil), nil
	}
	items, err := r.iterate(pos, x)
	if err != nil {
		return Value{}, err
	}
	if err := r.chargeSlots(pos, int64(len(items))*slotBytes); err != nil {
		return Value{}, err
	}
	out := make([]Value, len(items))
	if attr, ok := c.Kw("attribute"); ok {
		def, hasDef := c.Kw("default")
		for i, it := range items {
			if err := r.step(pos); err != nil {
				return Value{}, err
			}
			v, err := r.attrPath(pos, it, attr)
			if err != nil {
				return Value{}, err
			}
			if v.kind == KUndefined && hasDef {
				v = def
			}
			out[i] = v
		}
		return newIter("generator", out), nil
	}
	if len(c.Args) == 0 || c.Args[0].kind != KString {
		return Value{}, errors.New("map needs a filter name or attribute=")
	}
	fn, ok := filters[c.Args[0].s]
	if !ok {
		return Value{}, fmt.Errorf("no filter named '%s'", c.Args[0].s)
	}
	sub := &Call{Args: c.Args[1:], Kwargs: c.Kwargs, r: r}
	for i, it := range items {
		if err := r.step(pos); err != nil {
			return Value{}, err
		}
		if out[i], err = fn(r, pos, it, sub); err != nil {
			return Value{}, err
		}
	}
	return newIter("generator", out), nil
}

// fSelect is select/reject (byAttr false) and selectattr/rejectattr.
func fSelect(keep, byAttr bool) filterFn {
	return func(r *renderer, pos int, x Value, c *Call) (Value, error) {
		if !x.Truth() {
			return newIter("generator", nil), nil
		}
		items, err := r.iterate(pos, x)
		if err != nil {
			return Value{}, err
		}
		args := c.Args
		var attr Value
		if byAttr {
			if len(args) == 0 {
				return Value{}, errors.New("selectattr/rejectattr need an attribute name")
			}
			attr, args = args[0], args[1:]
		}
		var test testFn
		var targs []Value
		if len(args) > 0 {
			if args[0].kind != KString {
				return Value{}, errors.New("the test name must be a string")
			}
			t, ok := tests[args[0].s]
			if !ok {
				return Value{}, fmt.Errorf("no test named '%s'", args[0].s)
			}
			test, targs = t, args[1:]
		}
		var out []Value
		for _, it := range items {
			if err := r.step(pos); err != nil {
				return Value{}, err
			}
			v := it
			if byAttr {
				if v, err = r.attrPath(pos, it, attr); err != nil {
					return Value{}, err
				}
			}
			ok := v.Truth()
			if test != nil {
				if ok, err = test(r, v, targs); err != nil {
					return Value{}, err
				}
			}
			if ok == keep {
				out = append(out, it)
			}
		}
		return newIter("generator", out), r.chargeSlots(pos, int64(len(out))*slotBytes)
	}
}

func fMinMax(sign int) filterFn {
	return func(r *renderer, pos int, x Value, c *Call) (Value, error) {
		items, err := r.iterate(pos, x)
		if err != nil {
			return Value{}, err
		}
		if len(items) == 0 {
			return undefinedNamed("No aggregated item, sequence was empty."), nil
		}
		cs, _ := c.Arg(0, "case_sensitive")
		attr, hasAttr := c.Arg(1, "attribute")
		key := func(v Value) Value {
			if hasAttr && attr.kind != KNone {
				v, _ = r.attrPath(pos, v, attr)
			}
			if !cs.Truth() && v.kind == KString {
				return String(strings.ToLower(v.s))
			}
			return v
		}
		best := items[0]
		for _, it := range items[1:] {
			c, ok := r.compare(key(it), key(best))
			if !ok {
				return Value{}, errors.New("items are not comparable")
			}
			if c*sign > 0 {
				best = it
			}
		}
		return best, nil
	}
}

func fSum(r *renderer, pos int, x Value, c *Call) (Value, error) {
	items, err := r.iterate(pos, x)
	if err != nil {
		return Value{}, err
	}
	attr, hasAttr := c.Arg(0, "attribute")
	total, ok := c.Arg(1, "start")
	if !ok {
		total = Int(0)
	}
	for _, it := range items {
		if hasAttr && attr.kind != KNone {
			if it, err = r.attrPath(pos, it, attr); err != nil {
				return Value{}, err
			}
		}
		if total, err = r.arith(pos, "+", total, it); err != nil {
			return Value{}, err
		}
	}
	return total, nil
}

func fAbs(r *renderer, pos int, x Value, c *Call) (Value, error) {
	switch x.kind {
	case KInt, KBool:
		if x.n < 0 {
			return Int(-x.n), nil
		}
		return Int(x.n), nil
	case KFloat:
		return Float(math.Abs(x.f)), nil
	}
	return Value{}, fmt.Errorf("bad operand type for abs(): '%s'", typeName(x))
}

func fInt(r *renderer, pos int, x Value, c *Call) (Value, error) {
	def, ok := c.Arg(0, "default")
	if !ok {
		def = Int(0)
	}
	switch x.kind {
	case KInt, KBool:
		return Int(x.n), nil
	case KFloat:
		if math.IsNaN(x.f) || math.IsInf(x.f, 0) {
			return def, nil
		}
		return Int(int64(x.f)), nil
	case KString:
		s := strings.ReplaceAll(strings.TrimSpace(x.s), "_", "")
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return Int(n), nil
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return Int(int64(f)), nil
		}
	}
	return def, nil
}

func fFloat(r *renderer, pos int, x Value, c *Call) (Value, error) {
	def, ok := c.Arg(0, "default")
	if !ok {
		def = Float(0)
	}
	switch x.kind {
	case KInt, KBool:
		return Float(float64(x.n)), nil
	case KFloat:
		return x, nil
	case KString:
		if f, err := strconv.ParseFloat(strings.TrimSpace(x.s), 64); err == nil {
			return Float(f), nil
		}
	}
	return def, nil
}

func fRound(r *renderer, pos int, x Value, c *Call) (Value, error) {
	prec := int64(0)
	if p, ok := c.Arg(0, "precision"); ok && p.kind == KInt {
		prec = p.n
	}
	method := "common"
	if m, ok := c.Arg(1, "method"); ok && m.kind == KString {
		method = m.s
	}
	if !x.isNumber() {
		return Value{}, fmt.Errorf("round: expected a number, got %s", typeName(x))
	}
	f := x.number()
	p := math.Pow(10, float64(prec))
	switch method {
	case "common":
		f = math.Round(f*p) / p
	case "floor":
		f = math.Floor(f*p) / p
	case "ceil":
		f = math.Ceil(f*p) / p
	default:
		return Value{}, errors.New("round: method must be common, ceil or floor")
	}
	return Float(f), nil
}

func fCenter(r *renderer, pos int, x Value, c *Call) (Value, error) {
	s, err := r.str(pos, x)
	if err != nil {
		return Value{}, err
	}
	w := int64(80)
	if v, ok := c.Arg(0, "width"); ok && v.kind == KInt {
		w = v.n
	}
	return r.pad(pos, s, w, "center")
}

// pad is str.center/ljust/rjust with a space fill.
func (r *renderer) pad(pos int, s string, w int64, how string) (Value, error) {
	n := int64(len([]rune(s)))
	if w <= n {
		return String(s), nil
	}
	if w > r.lim.MaxOutput {
		return Value{}, r.limitErr(pos, "output size", r.lim.MaxOutput)
	}
	total := w - n
	var left int64
	switch how {
	case "center":
		left = total / 2 // CPython: the odd space goes left when width is odd
		if total%2 == 1 && w%2 == 1 {
			left++
		}
	case "rjust":
		left = total
	}
	out := strings.Repeat(" ", int(left)) + s + strings.Repeat(" ", int(total-left))
	return String(out), r.charge(pos, int64(len(out)))
}

func fFormat(r *renderer, pos int, x Value, c *Call) (Value, error) {
	s, err := r.str(pos, x)
	if err != nil {
		return Value{}, err
	}
	var arg Value
	switch {
	case len(c.Kwargs) > 0:
		d := NewDict()
		for _, kw := range c.Kwargs {
			d.Dict().SetStr(kw.Name, kw.Value)
		}
		arg = d
	case len(c.Args) == 1:
		arg = c.Args[0]
	default:
		arg = newTuple(c.Args)
	}
	out, err := percentFormat(s, arg)
	if err != nil {
		return Value{}, err
	}
	return String(out), r.charge(pos, int64(len(out)))
}

func fTruncate(r *renderer, pos int, x Value, c *Call) (Value, error) {
	s, err := r.str(pos, x)
	if err != nil {
		return Value{}, err
	}
	length := int64(255)
	if v, ok := c.Arg(0, "length"); ok && v.kind == KInt {
		length = v.n
	}
	killwords, _ := c.Arg(1, "killwords")
	end := "..."
	if v, ok := c.Arg(2, "end"); ok && v.kind == KString {
		end = v.s
	}
	leeway := int64(5)
	if v, ok := c.Arg(3, "leeway"); ok && v.kind == KInt {
		leeway = v.n
	}
	rs := []rune(s)
	if int64(len(rs)) <= length+leeway {
		return String(s), nil
	}
	keep := max(length-int64(len([]rune(end))), 0)
	if killwords.Truth() {
		return String(string(rs[:keep]) + end), nil
	}
	cut := string(rs[:keep])
	if i := strings.LastIndexByte(cut, ' '); i >= 0 {
		cut = cut[:i]
	}
	return String(cut + end), nil
}

func fStriptags(r *renderer, pos int, x Value, c *Call) (Value, error) {
	s, err := r.str(pos, x)
	if err != nil {
		return Value{}, err
	}
	var b strings.Builder
	in := false
	for _, ch := range s {
		switch {
		case ch == '<':
			in = true
		case ch == '>' && in:
			in = false
		case !in:
			b.WriteRune(ch)
		}
	}
	return String(strings.Join(strings.Fields(b.String()), " ")), nil
}

func fWordcount(r *renderer, pos int, x Value, c *Call) (Value, error) {
	s, err := r.str(pos, x)
	if err != nil {
		return Value{}, err
	}
	n := 0
	in := false
	for _, ch := range s {
		w := unicode.IsLetter(ch) || unicode.IsDigit(ch) || ch == '_'
		if w && !in {
			n++
		}
		in = w
	}
	return Int(int64(n)), nil
}

func fGroupby(r *renderer, pos int, x Value, c *Call) (Value, error) {
	items, err := r.iterate(pos, x)
	if err != nil {
		return Value{}, err
	}
	attr, ok := c.Arg(0, "attribute")
	if !ok {
		return Value{}, errors.New("groupby needs an attribute")
	}
	key := func(v Value) Value { k, _ := r.attrPath(pos, v, attr); return k }
	sorted, good := sortValues(r, items, key, false, false)
	if !good {
		return Value{}, errors.New("groupby: keys are not comparable")
	}
	var out []Value
	for _, it := range sorted {
		k := key(it)
		if n := len(out); n > 0 && r.equal(out[n-1].List().Items[0], k) {
			g := out[n-1].List().Items[1].List()
			g.Items = append(g.Items, it)
			continue
		}
		out = append(out, Value{kind: KList, ref: &List{Items: []Value{k, NewList([]Value{it})}, Tuple: true, Fields: []string{"grouper", "list"}}})
	}
	return NewList(out), r.chargeSlots(pos, int64(len(items))*3*slotBytes)
}

func fTojson(r *renderer, pos int, x Value, c *Call) (Value, error) {
	if n := reprSize(x, r.lim.MaxOutput, nil); n > r.lim.MaxOutput {
		return Value{}, r.limitErr(pos, "output size", r.lim.MaxOutput)
	}
	s, err := toJSON(x, c)
	if err != nil {
		return Value{}, err
	}
	return String(s), r.charge(pos, int64(len(s)))
}

// jinjaTitle is Jinja2's title filter: a word starts after whitespace or
// one of - ( { [ <, and is capitalized with the rest lowered.
func jinjaTitle(s string) string {
	var b strings.Builder
	start := true
	for _, ch := range s {
		if unicode.IsSpace(ch) || strings.ContainsRune("-({[<", ch) {
			start = true
			b.WriteRune(ch)
			continue
		}
		if start {
			b.WriteString(strings.ToUpper(string(ch)))
		} else {
			b.WriteString(strings.ToLower(string(ch)))
		}
		start = false
	}
	return b.String()
}

// pyCapitalize is str.capitalize: first character upper, rest lower.
func pyCapitalize(s string) string {
	if s == "" {
		return s
	}
	_, n := decodeRune(s) // n, not len(string(r)): an invalid byte is 1 long
	return strings.ToUpper(s[:n]) + strings.ToLower(s[n:])
}

// pyTitle is str.title: a letter after a non-letter is upper, others lower.
func pyTitle(s string) string {
	var b strings.Builder
	prev := false
	for _, ch := range s {
		cased := unicode.IsLetter(ch)
		if cased && !prev {
			b.WriteRune(unicode.ToTitle(ch))
		} else {
			b.WriteRune(unicode.ToLower(ch))
		}
		prev = cased
	}
	return b.String()
}

// percentFormat is Python's printf-style "fmt % arg" for %s %r %d %i %f %x
// %% with optional flags, width and precision, and %(name)s with a dict.
func percentFormat(format string, arg Value) (string, error) {
	var args []Value
	if arg.kind == KList && arg.List().Tuple {
		args = arg.List().Items
	} else {
		args = []Value{arg}
	}
	next := 0
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		ch := format[i]
		if ch != '%' {
			b.WriteByte(ch)
			continue
		}
		i++
		if i >= len(format) {
			return "", errors.New("incomplete format")
		}
		if format[i] == '%' {
			b.WriteByte('%')
			continue
		}
		var v Value
		named := false
		if format[i] == '(' {
			end := strings.IndexByte(format[i:], ')')
			if end < 0 || arg.kind != KDict {
				return "", errors.New("format requires a mapping")
			}
			v, _ = arg.Dict().GetStr(format[i+1 : i+end])
			i += end + 1
			named = true
		}
		j := i
		for j < len(format) && strings.IndexByte("-+ #0", format[j]) >= 0 {
			j++
		}
		for j < len(format) && (format[j] >= '0' && format[j] <= '9' || format[j] == '.') {
			j++
		}
		if j >= len(format) {
			return "", errors.New("incomplete format")
		}
		spec, verb := format[i:j], format[j]
		i = j
		if !named {
			if next >= len(args) {
				return "", errors.New("not enough arguments for format string")
			}
			v = args[next]
			next++
		}
		switch verb {
		case 's':
			b.WriteString(fmt.Sprintf("%"+spec+"s", pyStr(v)))
		case 'r':
			var rb strings.Builder
			writeRepr(&rb, v, nil)
			b.WriteString(fmt.Sprintf("%"+spec+"s", rb.String()))
		case 'd', 'i':
			if !v.isNumber() {
				return "", fmt.Errorf("%%%c format: a real number is required, not %s", verb, typeName(v))
			}
			b.WriteString(fmt.Sprintf("%"+spec+"d", int64(v.number())))
		case 'f', 'F', 'e', 'g':
			if !v.isNumber() {
				return "", fmt.Errorf("must be real number, not %s", typeName(v))
			}
			if !strings.Contains(spec, ".") && verb != 'g' {
				spec += ".6"
			}
			b.WriteString(fmt.Sprintf("%"+spec+string(verb), v.number()))
		case 'x', 'X', 'o':
			if v.kind != KInt && v.kind != KBool {
				return "", fmt.Errorf("%%%c format: an integer is required, not %s", verb, typeName(v))
			}
			b.WriteString(fmt.Sprintf("%"+spec+string(verb), v.n))
		default:
			return "", fmt.Errorf("unsupported format character '%c'", verb)
		}
	}
	if next < len(args) && !(arg.kind == KDict) {
		return "", errors.New("not all arguments converted during string formatting")
	}
	return b.String(), nil
}
