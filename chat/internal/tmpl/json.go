package tmpl

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// toJSON is the tojson filter as Hugging Face defines it for chat templates:
// Python's json.dumps(x, ensure_ascii=False, indent=indent,
// separators=separators, sort_keys=sort_keys). Positional arguments follow
// that signature after the input (ensure_ascii, indent, separators,
// sort_keys); keyword arguments override them. The output is Python's to the
// byte: ", " and ": " separators ("," and ": " once indent is given), keys in
// insertion order, non-ASCII raw, floats as Python's repr.
func toJSON(x Value, c *Call) (string, error) {
	o := jsonOpts{indent: -1, itemSep: ", ", keySep: ": "}
	if v, ok := c.Arg(0, "ensure_ascii"); ok {
		o.ensureASCII = v.Truth()
	}
	if v, ok := c.Arg(1, "indent"); ok && v.kind != KNone && v.kind != KUndefined {
		switch v.kind {
		case KInt:
			if v.n > 1024 {
				return "", fmt.Errorf("tojson: indent %d is more than 1024", v.n)
			}
			o.indent = int(max(v.n, 0))
			o.indentStr = strings.Repeat(" ", o.indent)
		case KString:
			o.indent = len(v.s)
			o.indentStr = v.s
		default:
			return "", fmt.Errorf("tojson: indent must be an int or a string, not %s", typeName(v))
		}
		o.itemSep = ","
	}
	if v, ok := c.Arg(2, "separators"); ok && v.kind != KNone && v.kind != KUndefined {
		if v.kind != KList || len(v.List().Items) != 2 || v.List().Items[0].kind != KString || v.List().Items[1].kind != KString {
			return "", errors.New("tojson: separators must be a pair of strings")
		}
		o.itemSep, o.keySep = v.List().Items[0].s, v.List().Items[1].s
	}
	if v, ok := c.Arg(3, "sort_keys"); ok {
		o.sortKeys = v.Truth()
	}
	var b strings.Builder
	if err := writeJSON(&b, x, &o, nil); err != nil {
		return "", err
	}
	return b.String(), nil
}

type jsonOpts struct {
	ensureASCII bool
	indent      int // < 0: no newlines
	indentStr   string
	itemSep     string
	keySep      string
	sortKeys    bool
}

func (o *jsonOpts) newline(b *strings.Builder, depth int) {
	if o.indent < 0 {
		return
	}
	b.WriteByte('\n')
	for range depth {
		b.WriteString(o.indentStr)
	}
}

// writeJSON writes v; path holds the containers being written (depth is
// its length), so that a container inside itself fails as in Python.
func writeJSON(b *strings.Builder, v Value, o *jsonOpts, path []any) error {
	depth := len(path)
	if depth > 1000 {
		return errors.New("tojson: nested too deeply")
	}
	if (v.kind == KList || v.kind == KDict) && onPath(path, v.ref) {
		return errors.New("tojson: Circular reference detected")
	}
	if v.kind == KList || v.kind == KDict {
		path = append(path, v.ref)
	}
	switch v.kind {
	case KNone:
		b.WriteString("null")
	case KBool:
		if v.n != 0 {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case KInt:
		b.WriteString(strconv.FormatInt(v.n, 10))
	case KFloat:
		b.WriteString(jsonFloat(v.f))
	case KString:
		writeJSONString(b, v.s, o.ensureASCII)
	case KList:
		items := v.List().Items
		if len(items) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, it := range items {
			if i > 0 {
				b.WriteString(o.itemSep)
			}
			o.newline(b, depth+1)
			if err := writeJSON(b, it, o, path); err != nil {
				return err
			}
		}
		o.newline(b, depth)
		b.WriteByte(']')
	case KDict:
		d := v.Dict()
		if d.Len() == 0 {
			b.WriteString("{}")
			return nil
		}
		order := make([]int, d.Len())
		for i := range order {
			order[i] = i
		}
		if o.sortKeys {
			bad := false
			sort.SliceStable(order, func(i, j int) bool {
				c, ok := compare(d.keys[order[i]], d.keys[order[j]])
				bad = bad || !ok
				return c < 0
			})
			if bad {
				return errors.New("tojson: sort_keys: keys are not comparable")
			}
		}
		b.WriteByte('{')
		for n, i := range order {
			if n > 0 {
				b.WriteString(o.itemSep)
			}
			o.newline(b, depth+1)
			k := d.keys[i]
			var ks string
			switch k.kind {
			case KString:
				ks = k.s
			case KInt:
				ks = strconv.FormatInt(k.n, 10)
			case KFloat:
				ks = jsonFloat(k.f)
			case KBool:
				ks = map[bool]string{true: "true", false: "false"}[k.n != 0]
			case KNone:
				ks = "null"
			}
			writeJSONString(b, ks, o.ensureASCII)
			b.WriteString(o.keySep)
			if err := writeJSON(b, d.vals[i], o, path); err != nil {
				return err
			}
		}
		o.newline(b, depth)
		b.WriteByte('}')
	case KUndefined:
		return errors.New("tojson: Object of type Undefined is not JSON serializable")
	default:
		return fmt.Errorf("tojson: Object of type %s is not JSON serializable", typeName(v))
	}
	return nil
}

// jsonFloat is float.__repr__ as json.dumps writes it (NaN, Infinity,
// -Infinity for the non-finite values).
func jsonFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return pyFloat(f)
}

// writeJSONString writes s as Python's json module does: `"` and `\`
// escaped, \n \r \t \b \f by name, other control characters as \u00XX;
// everything else raw unless ensureASCII, which escapes DEL and non-ASCII
// as \uXXXX (UTF-16 surrogate pairs above the BMP).
func writeJSONString(b *strings.Builder, s string, ensureASCII bool) {
	const hex = "0123456789abcdef"
	u := func(r rune) {
		b.WriteString(`\u`)
		b.WriteByte(hex[r>>12&0xf])
		b.WriteByte(hex[r>>8&0xf])
		b.WriteByte(hex[r>>4&0xf])
		b.WriteByte(hex[r&0xf])
	}
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r < 0x20:
				u(r)
			case !ensureASCII || r < 0x7f:
				b.WriteRune(r)
			case r > 0xffff:
				r -= 0x10000
				u(0xd800 + (r>>10)&0x3ff)
				u(0xdc00 + r&0x3ff)
			default:
				u(r)
			}
		}
	}
	b.WriteByte('"')
}
