package tmpl

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Methods of Python's str, dict and list that templates call. Only these
// exist: there is no attribute that reaches an interpreter internal, which
// is what the sandbox exists to prevent in Python.
//
// One difference from Jinja2's ImmutableSandboxedEnvironment: the list and
// dict mutators (append, extend, insert, pop, remove, clear, update,
// setdefault) work here — charged to the allocation budget — where Python
// raises SecurityError; so a template that mutates renders here and fails
// under transformers.

var strMethods = map[string]bool{
	"startswith": true, "endswith": true, "strip": true, "lstrip": true, "rstrip": true,
	"split": true, "rsplit": true, "splitlines": true, "replace": true, "upper": true,
	"lower": true, "title": true, "capitalize": true, "swapcase": true, "casefold": true,
	"find": true, "rfind": true, "index": true, "rindex": true, "count": true, "join": true,
	"format": true, "isdigit": true, "isalpha": true, "isalnum": true, "isspace": true,
	"isupper": true, "islower": true, "isnumeric": true, "isdecimal": true, "istitle": true,
	"zfill": true, "center": true, "ljust": true, "rjust": true, "partition": true,
	"rpartition": true, "removeprefix": true, "removesuffix": true,
}

var dictMethods = map[string]bool{
	"items": true, "keys": true, "values": true, "get": true, "copy": true,
	"update": true, "pop": true, "setdefault": true, "clear": true,
}

var listMethods = map[string]bool{
	"index": true, "count": true, "copy": true,
	"append": true, "extend": true, "insert": true, "pop": true, "remove": true, "clear": true,
}

func isMethod(x Value, name string) bool {
	switch x.kind {
	case KString:
		return strMethods[name]
	case KDict:
		return dictMethods[name]
	case KList:
		return listMethods[name]
	}
	return false
}

func boundMethod(x Value, name string) Value {
	return Value{kind: KFunc, ref: &Func{Name: name, self: x, Fn: func(c *Call) (Value, error) { return callMethod(c, c.self, name) }}}
}

// pyIsSpace is str.isspace for one character.
func pyIsSpace(r rune) bool { return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f }

func argStr(c *Call, i int, name string) (string, bool, error) {
	v, ok := c.Arg(i, name)
	if !ok || v.kind == KNone {
		return "", false, nil
	}
	if v.kind != KString {
		return "", false, fmt.Errorf("argument %d must be str, not %s", i+1, typeName(v))
	}
	return v.s, true, nil
}

func argInt(c *Call, i int, name string, def int64) (int64, error) {
	v, ok := c.Arg(i, name)
	if !ok || v.kind == KNone {
		return def, nil
	}
	if v.kind != KInt && v.kind != KBool {
		return 0, fmt.Errorf("argument %d must be int, not %s", i+1, typeName(v))
	}
	return v.n, nil
}

func callMethod(c *Call, x Value, name string) (Value, error) {
	r := c.r
	switch x.kind {
	case KString:
		v, err := strMethod(r, c, x.s, name)
		if err == nil && x.isMarkup() && v.kind == KString {
			v.n = 1 // Markup methods return Markup
		}
		return v, err
	case KDict:
		return dictMethod(r, c, x, name)
	case KList:
		return listMethod(r, c, x, name)
	}
	return Value{}, fmt.Errorf("'%s' object has no attribute '%s'", typeName(x), name)
}

func strMethod(r *renderer, c *Call, s, name string) (Value, error) {
	built := func(out string) (Value, error) {
		return String(out), r.charge(noPos, int64(len(out)))
	}
	switch name {
	case "startswith", "endswith":
		v, ok := c.Arg(0, "")
		if !ok {
			return Value{}, fmt.Errorf("%s() takes at least 1 argument", name)
		}
		sub := s
		if start, err := argInt(c, 1, "", 0); err == nil && start != 0 {
			sub = sliceStr(s, start)
		}
		var cands []Value
		switch v.kind {
		case KString:
			cands = []Value{v}
		case KList:
			cands = v.List().Items
		default:
			return Value{}, fmt.Errorf("%s first arg must be str or a tuple of str, not %s", name, typeName(v))
		}
		for _, p := range cands {
			if p.kind != KString {
				return Value{}, fmt.Errorf("%s: tuple for %s must only contain str", name, name)
			}
			if name == "startswith" && strings.HasPrefix(sub, p.s) || name == "endswith" && strings.HasSuffix(sub, p.s) {
				return Bool(true), nil
			}
		}
		return Bool(false), nil
	case "strip", "lstrip", "rstrip":
		chars, has, err := argStr(c, 0, "chars")
		if err != nil {
			return Value{}, err
		}
		cut := func(r rune) bool { return pyIsSpace(r) }
		if has {
			cut = func(r rune) bool { return strings.ContainsRune(chars, r) }
		}
		switch name {
		case "strip":
			return String(strings.TrimFunc(s, cut)), nil
		case "lstrip":
			return String(strings.TrimLeftFunc(s, cut)), nil
		}
		return String(strings.TrimRightFunc(s, cut)), nil
	case "split", "rsplit":
		sep, has, err := argStr(c, 0, "sep")
		if err != nil {
			return Value{}, err
		}
		maxsplit, err := argInt(c, 1, "maxsplit", -1)
		if err != nil {
			return Value{}, err
		}
		var parts []string
		if !has {
			parts = splitWhitespace(s, maxsplit, name == "rsplit")
		} else {
			if sep == "" {
				return Value{}, errors.New("empty separator")
			}
			if maxsplit < 0 {
				parts = strings.Split(s, sep)
			} else if name == "split" {
				parts = strings.SplitN(s, sep, int(maxsplit)+1)
			} else {
				parts = rsplitN(s, sep, int(maxsplit))
			}
		}
		if err := r.chargeSlots(noPos, int64(len(parts))*slotBytes+int64(len(s))); err != nil {
			return Value{}, err
		}
		out := make([]Value, len(parts))
		for i, p := range parts {
			out[i] = String(p)
		}
		return NewList(out), nil
	case "splitlines":
		parts := splitLines(s)
		out := make([]Value, len(parts))
		for i, p := range parts {
			out[i] = String(p)
		}
		return NewList(out), r.chargeSlots(noPos, int64(len(parts))*slotBytes+int64(len(s)))
	case "replace":
		old, ok1, err := argStr(c, 0, "")
		if err != nil {
			return Value{}, err
		}
		nw, ok2, err := argStr(c, 1, "")
		if err != nil {
			return Value{}, err
		}
		if !ok1 || !ok2 {
			return Value{}, errors.New("replace() takes at least 2 arguments")
		}
		count, err := argInt(c, 2, "count", -1)
		if err != nil {
			return Value{}, err
		}
		return r.replace(0, s, old, nw, count)
	case "upper":
		return built(strings.ToUpper(s))
	case "lower", "casefold":
		return built(strings.ToLower(s))
	case "title":
		return built(pyTitle(s))
	case "capitalize":
		return built(pyCapitalize(s))
	case "swapcase":
		return built(strings.Map(func(r rune) rune {
			if unicode.IsUpper(r) {
				return unicode.ToLower(r)
			}
			return unicode.ToUpper(r)
		}, s))
	case "find", "rfind", "index", "rindex", "count":
		sub, ok, err := argStr(c, 0, "")
		if err != nil || !ok {
			return Value{}, fmt.Errorf("%s() needs a string argument", name)
		}
		switch name {
		case "count":
			if sub == "" {
				return Int(int64(len([]rune(s))) + 1), nil
			}
			return Int(int64(strings.Count(s, sub))), nil
		case "find", "index":
			i := strings.Index(s, sub)
			if i < 0 && name == "index" {
				return Value{}, errors.New("substring not found")
			}
			if i >= 0 {
				i = len([]rune(s[:i]))
			}
			return Int(int64(i)), nil
		}
		i := strings.LastIndex(s, sub)
		if i < 0 && name == "rindex" {
			return Value{}, errors.New("substring not found")
		}
		if i >= 0 {
			i = len([]rune(s[:i]))
		}
		return Int(int64(i)), nil
	case "join":
		v, ok := c.Arg(0, "")
		if !ok {
			return Value{}, errors.New("join() takes exactly one argument")
		}
		items, err := r.iterate(0, v)
		if err != nil {
			return Value{}, err
		}
		parts := make([]string, len(items))
		total := int64(len(s)) * int64(max(len(items)-1, 0))
		for i, it := range items {
			if it.kind != KString {
				return Value{}, fmt.Errorf("sequence item %d: expected str instance, %s found", i, typeName(it))
			}
			parts[i] = it.s
			total += int64(len(it.s))
		}
		if total > r.lim.MaxOutput {
			return Value{}, r.limitErr(noPos, "output size", r.lim.MaxOutput)
		}
		return built(strings.Join(parts, s))
	case "format":
		out, err := strFormat(r, s, c)
		if err != nil {
			return Value{}, err
		}
		return built(out)
	case "isdigit", "isdecimal", "isnumeric":
		return Bool(s != "" && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsDigit(r) }) < 0), nil
	case "isalpha":
		return Bool(s != "" && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsLetter(r) }) < 0), nil
	case "isalnum":
		return Bool(s != "" && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) < 0), nil
	case "isspace":
		return Bool(s != "" && strings.IndexFunc(s, func(r rune) bool { return !pyIsSpace(r) }) < 0), nil
	case "isupper":
		return Bool(hasCased(s) && strings.ToUpper(s) == s), nil
	case "islower":
		return Bool(hasCased(s) && strings.ToLower(s) == s), nil
	case "istitle":
		return Bool(hasCased(s) && pyTitle(s) == s), nil
	case "zfill":
		w, err := argInt(c, 0, "", 0)
		if err != nil {
			return Value{}, err
		}
		n := int64(len([]rune(s)))
		if w <= n {
			return String(s), nil
		}
		if w > r.lim.MaxOutput {
			return Value{}, r.limitErr(noPos, "output size", r.lim.MaxOutput)
		}
		sign := ""
		if s != "" && (s[0] == '-' || s[0] == '+') {
			sign, s = s[:1], s[1:]
		}
		return built(sign + strings.Repeat("0", int(w-n)) + s)
	case "center", "ljust", "rjust":
		w, err := argInt(c, 0, "", 0)
		if err != nil {
			return Value{}, err
		}
		return r.pad(0, s, w, name)
	case "partition", "rpartition":
		sep, ok, err := argStr(c, 0, "")
		if err != nil || !ok || sep == "" {
			return Value{}, errors.New(name + "() needs a non-empty separator")
		}
		i := strings.Index(s, sep)
		if name == "rpartition" {
			i = strings.LastIndex(s, sep)
		}
		if i < 0 {
			if name == "rpartition" {
				return newTuple([]Value{String(""), String(""), String(s)}), nil
			}
			return newTuple([]Value{String(s), String(""), String("")}), nil
		}
		return newTuple([]Value{String(s[:i]), String(sep), String(s[i+len(sep):])}), nil
	case "removeprefix", "removesuffix":
		p, _, err := argStr(c, 0, "")
		if err != nil {
			return Value{}, err
		}
		if name == "removeprefix" {
			return String(strings.TrimPrefix(s, p)), nil
		}
		return String(strings.TrimSuffix(s, p)), nil
	}
	return Value{}, fmt.Errorf("'str' object has no attribute '%s'", name)
}

func sliceStr(s string, start int64) string {
	rs := []rune(s)
	n := int64(len(rs))
	if start < 0 {
		start = max(start+n, 0)
	}
	if start > n {
		return ""
	}
	return string(rs[start:])
}

// splitWhitespace is str.split()/rsplit() without a separator: runs of
// whitespace separate, leading and trailing whitespace is dropped.
func splitWhitespace(s string, maxsplit int64, fromRight bool) []string {
	if !fromRight {
		var out []string
		rest := strings.TrimLeftFunc(s, pyIsSpace)
		for rest != "" {
			if maxsplit >= 0 && int64(len(out)) == maxsplit {
				out = append(out, rest)
				return out
			}
			i := strings.IndexFunc(rest, pyIsSpace)
			if i < 0 {
				out = append(out, rest)
				break
			}
			out = append(out, rest[:i])
			rest = strings.TrimLeftFunc(rest[i:], pyIsSpace)
		}
		return out
	}
	var out []string
	rest := strings.TrimRightFunc(s, pyIsSpace)
	for rest != "" {
		if maxsplit >= 0 && int64(len(out)) == maxsplit {
			out = append(out, rest)
			break
		}
		i := strings.LastIndexFunc(rest, pyIsSpace)
		if i < 0 {
			out = append(out, rest)
			break
		}
		_, n := decodeRune(rest[i:])
		out = append(out, rest[i+n:])
		rest = strings.TrimRightFunc(rest[:i], pyIsSpace)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

func rsplitN(s, sep string, n int) []string {
	var out []string
	for n > 0 {
		i := strings.LastIndex(s, sep)
		if i < 0 {
			break
		}
		out = append(out, s[i+len(sep):])
		s = s[:i]
		n--
	}
	out = append(out, s)
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// strFormat is str.format with {}, {0}, {name}, {name.attr}, {0[key]}
// fields and format specs [[fill]align][width][.precision][type].
func strFormat(r *renderer, f string, c *Call) (string, error) {
	var b strings.Builder
	auto := 0
	for i := 0; i < len(f); i++ {
		ch := f[i]
		if ch == '}' {
			if i+1 < len(f) && f[i+1] == '}' {
				i++
			}
			b.WriteByte('}')
			continue
		}
		if ch != '{' {
			b.WriteByte(ch)
			continue
		}
		if i+1 < len(f) && f[i+1] == '{' {
			b.WriteByte('{')
			i++
			continue
		}
		end := strings.IndexByte(f[i:], '}')
		if end < 0 {
			return "", errors.New("single '{' encountered in format string")
		}
		field := f[i+1 : i+end]
		i += end
		spec := ""
		if k := strings.IndexByte(field, ':'); k >= 0 {
			field, spec = field[:k], field[k+1:]
		}
		conv := byte(0)
		if k := strings.IndexByte(field, '!'); k >= 0 && k+1 < len(field) {
			conv = field[k+1]
			field = field[:k]
		}
		head := field
		rest := ""
		if k := strings.IndexAny(field, ".["); k >= 0 {
			head, rest = field[:k], field[k:]
		}
		var v Value
		switch {
		case head == "":
			if auto >= len(c.Args) {
				return "", errors.New("Replacement index out of range for positional args tuple")
			}
			v = c.Args[auto]
			auto++
		case head[0] >= '0' && head[0] <= '9':
			n, _ := strconv.Atoi(head)
			if n >= len(c.Args) {
				return "", errors.New("Replacement index out of range for positional args tuple")
			}
			v = c.Args[n]
		default:
			kv, ok := c.Kw(head)
			if !ok {
				return "", fmt.Errorf("KeyError: '%s'", head)
			}
			v = kv
		}
		for rest != "" {
			if rest[0] == '.' {
				k := strings.IndexAny(rest[1:], ".[")
				if k < 0 {
					k = len(rest) - 1
				}
				var err error
				if v, err = r.getAttr(0, v, rest[1:1+k]); err != nil {
					return "", err
				}
				rest = rest[1+k:]
			} else {
				k := strings.IndexByte(rest, ']')
				if k < 0 {
					return "", errors.New("Missing ']' in format string")
				}
				key := rest[1:k]
				var kv Value = String(key)
				if n, err := strconv.ParseInt(key, 10, 64); err == nil {
					kv = Int(n)
				}
				var err error
				if v, err = r.getItem(0, v, kv); err != nil {
					return "", err
				}
				rest = rest[k+1:]
			}
		}
		var s string
		if conv == 'r' {
			var rb strings.Builder
			writeRepr(&rb, v, nil)
			s = rb.String()
		} else {
			var err error
			if s, err = formatSpec(v, spec); err != nil {
				return "", err
			}
		}
		b.WriteString(s)
	}
	return b.String(), nil
}

// formatSpec is format(v, spec) for the common specs.
func formatSpec(v Value, spec string) (string, error) {
	if spec == "" {
		return pyStr(v), nil
	}
	fill, align := " ", byte(0)
	rs := []rune(spec)
	if len(rs) >= 2 && strings.ContainsRune("<>^=", rs[1]) {
		fill, align = string(rs[0]), byte(rs[1])
		spec = string(rs[2:])
	} else if spec[0] == '<' || spec[0] == '>' || spec[0] == '^' {
		align = spec[0]
		spec = spec[1:]
	}
	j := 0
	for j < len(spec) && spec[j] >= '0' && spec[j] <= '9' {
		j++
	}
	width, _ := strconv.Atoi(spec[:j])
	spec = spec[j:]
	prec := -1
	if strings.HasPrefix(spec, ".") {
		k := 1
		for k < len(spec) && spec[k] >= '0' && spec[k] <= '9' {
			k++
		}
		prec, _ = strconv.Atoi(spec[1:k])
		spec = spec[k:]
	}
	var s string
	switch spec {
	case "", "s":
		s = pyStr(v)
		if prec >= 0 && v.kind == KString {
			if rr := []rune(s); len(rr) > prec {
				s = string(rr[:prec])
			}
		}
		if spec == "" && v.isNumber() && prec >= 0 {
			s = strconv.FormatFloat(v.number(), 'g', prec, 64)
		}
	case "d":
		if v.kind != KInt && v.kind != KBool {
			return "", fmt.Errorf("Unknown format code 'd' for object of type '%s'", typeName(v))
		}
		s = strconv.FormatInt(v.n, 10)
	case "f", "F", "%":
		if !v.isNumber() {
			return "", fmt.Errorf("Unknown format code '%s' for object of type '%s'", spec, typeName(v))
		}
		if prec < 0 {
			prec = 6
		}
		x := v.number()
		if spec == "%" {
			x *= 100
		}
		s = strconv.FormatFloat(x, 'f', prec, 64)
		if spec == "%" {
			s += "%"
		}
	default:
		return "", fmt.Errorf("unsupported format spec '%s'", spec)
	}
	n := len([]rune(s))
	if width > n {
		if align == 0 {
			align = '<'
			if v.isNumber() {
				align = '>'
			}
		}
		pad := width - n
		switch align {
		case '<':
			s += strings.Repeat(fill, pad)
		case '>', '=':
			s = strings.Repeat(fill, pad) + s
		case '^':
			s = strings.Repeat(fill, pad/2) + s + strings.Repeat(fill, pad-pad/2)
		}
	}
	return s, nil
}

func dictMethod(r *renderer, c *Call, x Value, name string) (Value, error) {
	d := x.Dict()
	switch name {
	case "items":
		return dictItems(r, 0, d)
	case "keys", "values":
		if err := r.chargeSlots(noPos, int64(d.Len())*slotBytes); err != nil {
			return Value{}, err
		}
		src := d.keys
		if name == "values" {
			src = d.vals
		}
		return NewList(append([]Value(nil), src...)), nil
	case "get":
		k, ok := c.Arg(0, "")
		if !ok {
			return Value{}, errors.New("get expected at least 1 argument")
		}
		if v, ok := d.Get(k); ok {
			return v, nil
		}
		if def, ok := c.Arg(1, ""); ok {
			return def, nil
		}
		return None(), nil
	case "copy":
		if err := r.chargeSlots(noPos, int64(d.Len())*2*slotBytes); err != nil {
			return Value{}, err
		}
		n := NewDict()
		for i := range d.keys {
			n.Dict().Set(d.keys[i], d.vals[i])
		}
		return n, nil
	case "update":
		for _, a := range c.Args {
			if a.kind != KDict {
				return Value{}, errors.New("update: expected a dict")
			}
			for i := range a.Dict().keys {
				d.Set(a.Dict().keys[i], a.Dict().vals[i])
			}
		}
		for _, kw := range c.Kwargs {
			d.SetStr(kw.Name, kw.Value)
		}
		return None(), r.chargeSlots(noPos, int64(d.Len())*2*slotBytes)
	case "setdefault":
		k, ok := c.Arg(0, "")
		if !ok {
			return Value{}, errors.New("setdefault expected at least 1 argument")
		}
		if v, ok := d.Get(k); ok {
			return v, nil
		}
		def, ok := c.Arg(1, "")
		if !ok {
			def = None()
		}
		if !d.Set(k, def) {
			return Value{}, fmt.Errorf("unhashable type: '%s'", typeName(k))
		}
		return def, r.chargeSlots(noPos, 2*slotBytes)
	case "pop":
		k, ok := c.Arg(0, "")
		if !ok {
			return Value{}, errors.New("pop expected at least 1 argument")
		}
		v, found := d.Get(k)
		if !found {
			if def, ok := c.Arg(1, ""); ok {
				return def, nil
			}
			return Value{}, fmt.Errorf("KeyError: %s", pyStr(k))
		}
		i := d.find(k)
		d.keys = append(d.keys[:i:i], d.keys[i+1:]...)
		d.vals = append(d.vals[:i:i], d.vals[i+1:]...)
		d.reindex()
		return v, nil
	case "clear":
		*d = Dict{}
		return None(), nil
	}
	return Value{}, fmt.Errorf("'dict' object has no attribute '%s'", name)
}

func listMethod(r *renderer, c *Call, x Value, name string) (Value, error) {
	l := x.List()
	switch name {
	case "index", "count":
		v, ok := c.Arg(0, "")
		if !ok {
			return Value{}, fmt.Errorf("%s() takes exactly one argument", name)
		}
		n := int64(0)
		for i, it := range l.Items {
			if r.equal(it, v) {
				if name == "index" {
					return Int(int64(i)), nil
				}
				n++
			}
		}
		if name == "index" {
			return Value{}, fmt.Errorf("%s is not in list", pyStr(v))
		}
		return Int(n), nil
	case "copy":
		if err := r.chargeSlots(noPos, int64(len(l.Items))*slotBytes); err != nil {
			return Value{}, err
		}
		return NewList(append([]Value(nil), l.Items...)), nil
	}
	if l.Tuple {
		return Value{}, fmt.Errorf("'tuple' object has no attribute '%s'", name)
	}
	switch name {
	case "append":
		v, ok := c.Arg(0, "")
		if !ok {
			return Value{}, errors.New("append() takes exactly one argument")
		}
		if err := r.chargeSlots(noPos, slotBytes); err != nil {
			return Value{}, err
		}
		l.Items = append(l.Items, v)
		return None(), nil
	case "extend":
		v, ok := c.Arg(0, "")
		if !ok {
			return Value{}, errors.New("extend() takes exactly one argument")
		}
		items, err := r.iterate(0, v)
		if err != nil {
			return Value{}, err
		}
		if err := r.chargeSlots(noPos, int64(len(items))*slotBytes); err != nil {
			return Value{}, err
		}
		l.Items = append(l.Items, items...)
		return None(), nil
	case "insert":
		i, err := argInt(c, 0, "", 0)
		if err != nil {
			return Value{}, err
		}
		v, _ := c.Arg(1, "")
		n := int64(len(l.Items))
		if i < 0 {
			i = max(i+n, 0)
		}
		i = min(i, n)
		if err := r.chargeSlots(noPos, slotBytes); err != nil {
			return Value{}, err
		}
		l.Items = append(l.Items, Value{})
		copy(l.Items[i+1:], l.Items[i:])
		l.Items[i] = v
		return None(), nil
	case "pop":
		n := int64(len(l.Items))
		i, err := argInt(c, 0, "", -1)
		if err != nil {
			return Value{}, err
		}
		if i < 0 {
			i += n
		}
		if i < 0 || i >= n {
			return Value{}, errors.New("pop index out of range")
		}
		v := l.Items[i]
		l.Items = append(l.Items[:i:i], l.Items[i+1:]...)
		return v, nil
	case "remove":
		v, _ := c.Arg(0, "")
		for i, it := range l.Items {
			if r.equal(it, v) {
				l.Items = append(l.Items[:i:i], l.Items[i+1:]...)
				return None(), nil
			}
		}
		return Value{}, errors.New("list.remove(x): x not in list")
	case "clear":
		l.Items = nil
		return None(), nil
	}
	return Value{}, fmt.Errorf("'list' object has no attribute '%s'", name)
}
