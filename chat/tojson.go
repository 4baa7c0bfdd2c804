package chat

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"nanoserve/chat/internal/jinja"
)

// tojsonFilter is the `tojson` filter as Hugging Face defines it for chat
// templates: Python's json.dumps(x, ensure_ascii=False, indent=indent,
// separators=separators, sort_keys=sort_keys). Positional arguments follow
// that signature (after the piped value: ensure_ascii, indent, separators,
// sort_keys); keyword arguments override them.
// tojsonMaxBytes bounds what one tojson may produce, checked before
// encoding: a list holding one large string many times is small in memory and
// huge as text. The render's own output limit applies on top.
const tojsonMaxBytes = 64 << 20

func tojsonFilter(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.Undefined(), errors.New("tojson: missing value")
	}
	if jinja.PrintedSizeOver(args[0], tojsonMaxBytes) {
		return jinja.Undefined(), fmt.Errorf("tojson: the value would serialize to more than %d bytes", tojsonMaxBytes)
	}
	opt := jsonOpts{indent: -1, itemSep: ", ", keySep: ": "}
	param := func(i int, name string) (jinja.Value, bool) {
		if v, ok := kwargs[name]; ok {
			return v, true
		}
		if i < len(args) {
			return args[i], true
		}
		return jinja.Undefined(), false
	}
	if v, ok := param(1, "ensure_ascii"); ok {
		opt.ensureASCII = v.IsTruthy()
	}
	if v, ok := param(2, "indent"); ok && !v.IsNone() && !v.IsUndefined() {
		switch {
		case v.IsInt():
			if v.AsInt() > 1024 {
				return jinja.Undefined(), fmt.Errorf("tojson: indent %d is more than 1024", v.AsInt())
			}
			opt.indent = max(int(v.AsInt()), 0)
			opt.indentStr = strings.Repeat(" ", opt.indent)
		case v.IsString():
			opt.indent = len(v.AsString())
			opt.indentStr = v.AsString()
		default:
			return jinja.Undefined(), fmt.Errorf("tojson: indent must be an int or string, got %s", v.String())
		}
		opt.itemSep = "," // Python's default separators when indent is given
	}
	if v, ok := param(3, "separators"); ok && !v.IsNone() && !v.IsUndefined() {
		if !v.IsList() || v.AsList().Len() != 2 || !v.AsList().Get(0).IsString() || !v.AsList().Get(1).IsString() {
			return jinja.Undefined(), errors.New("tojson: separators must be a pair of strings")
		}
		opt.itemSep, opt.keySep = v.AsList().Get(0).AsString(), v.AsList().Get(1).AsString()
	}
	if v, ok := param(4, "sort_keys"); ok {
		opt.sortKeys = v.IsTruthy()
	}
	var b strings.Builder
	if err := writeJSON(&b, args[0], &opt, 0); err != nil {
		return jinja.Undefined(), err
	}
	return jinja.NewString(b.String()), nil
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

// writeJSON encodes v exactly as Python's json.dumps would.
func writeJSON(b *strings.Builder, v jinja.Value, o *jsonOpts, depth int) error {
	switch {
	case v.IsNone():
		b.WriteString("null")
	case v.IsBool():
		if v.AsBool() {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case v.IsInt():
		b.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		b.WriteString(jsonFloat(v.AsFloat()))
	case v.IsString():
		writeJSONString(b, v.AsString(), o.ensureASCII)
	case v.IsList():
		items := v.AsList().Items
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
			if err := writeJSON(b, it, o, depth+1); err != nil {
				return err
			}
		}
		o.newline(b, depth)
		b.WriteByte(']')
	case v.IsDict():
		d := v.AsDict()
		keys := d.Keys
		if len(keys) == 0 {
			b.WriteString("{}")
			return nil
		}
		if o.sortKeys {
			keys = append([]string(nil), keys...)
			sort.Strings(keys)
		}
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(o.itemSep)
			}
			o.newline(b, depth+1)
			writeJSONString(b, k, o.ensureASCII)
			b.WriteString(o.keySep)
			val, _ := d.Get(k)
			if err := writeJSON(b, val, o, depth+1); err != nil {
				return err
			}
		}
		o.newline(b, depth)
		b.WriteByte('}')
	case v.IsUndefined():
		return errors.New("tojson: value is undefined")
	default:
		return fmt.Errorf("tojson: cannot serialise %s", v.String())
	}
	return nil
}

// jsonFloat formats f as Python's float.__repr__ (which json.dumps uses):
// the shortest digits that round-trip, fixed notation with a trailing ".0"
// when the decimal exponent e (f = d.ddd × 10^e) satisfies -4 <= e < 16,
// scientific notation ("1e-05", "1.5e+16") otherwise. NaN and ±Inf come out
// as json.dumps writes them (NaN, Infinity, -Infinity).
func jsonFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return pyFloatRepr(f)
}

func pyFloatRepr(f float64) string {
	if f == 0 {
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	sci := strconv.FormatFloat(f, 'e', -1, 64) // e.g. "1.5e+16", "-2e-05"
	ePos := strings.IndexByte(sci, 'e')
	exp, _ := strconv.Atoi(sci[ePos+1:])
	if exp < -4 || exp >= 16 {
		return sci
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}

// writeJSONString writes s as a JSON string the way Python's json module does:
// `"` and `\` escaped, \n \r \t \b \f by name, other control characters as
// \u00XX (lowercase hex); everything else raw unless ensureASCII, which
// escapes DEL and non-ASCII as \uXXXX (UTF-16 surrogate pairs above the BMP).
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
