package tokenizer

// A small JSON reader for the large vocabulary files (tokenizer.json,
// encoder.json): it walks the bytes once and hands object keys and values to
// callbacks, so a 128k-entry vocabulary becomes a []string without a generic
// map[string]any in between. Small, irregular parts (normalizer,
// pre_tokenizer, ...) are cut out as raw bytes and given to encoding/json.
//
// Every method is a no-op once an error is recorded, and every loop either
// consumes input or records an error, so malformed input ends in an error,
// never a panic or a hang.

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

type jsonReader struct {
	b   string // the document; strings without escapes are returned as substrings of it
	i   int
	err error
}

func (d *jsonReader) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("json: %s at offset %d", fmt.Sprintf(format, args...), d.i)
	}
}

func (d *jsonReader) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte (0 at the end or after an error).
func (d *jsonReader) peek() byte {
	if d.err != nil {
		return 0
	}
	d.ws()
	if d.i >= len(d.b) {
		return 0
	}
	return d.b[d.i]
}

func (d *jsonReader) expect(c byte) bool {
	if d.peek() != c {
		if d.err == nil {
			if d.i >= len(d.b) {
				d.fail("unexpected end, want %q", c)
			} else {
				d.fail("unexpected %q, want %q", d.b[d.i], c)
			}
		}
		return false
	}
	d.i++
	return true
}

// str reads a string value.
func (d *jsonReader) str() string {
	if !d.expect('"') {
		return ""
	}
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		if c == '"' {
			s := d.b[start:d.i]
			d.i++
			return s
		}
		if c == '\\' {
			return d.strSlow(start)
		}
		if c < 0x20 {
			d.fail("control character in string")
			return ""
		}
		d.i++
	}
	d.fail("unterminated string")
	return ""
}

// strSlow finishes a string holding escapes; d.i is at the first backslash.
func (d *jsonReader) strSlow(start int) string {
	buf := []byte(d.b[start:d.i])
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return string(buf)
		case c < 0x20:
			d.fail("control character in string")
			return ""
		case c != '\\':
			buf = append(buf, c)
			d.i++
			continue
		}
		if d.i+1 >= len(d.b) {
			break
		}
		e := d.b[d.i+1]
		d.i += 2
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := d.hex4()
			if !ok {
				return ""
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if d.i+1 < len(d.b) && d.b[d.i] == '\\' && d.b[d.i+1] == 'u' {
					save := d.i
					d.i += 2
					if r2, ok = d.hex4(); !ok {
						return ""
					}
					if utf16.DecodeRune(r, r2) == utf8.RuneError {
						d.i = save // not a pair: keep the second escape for later
						r2 = -1
					}
				}
				if r2 >= 0 {
					r = utf16.DecodeRune(r, r2)
				} else {
					r = utf8.RuneError
				}
			}
			buf = utf8.AppendRune(buf, r)
		default:
			d.i--
			d.fail("bad escape \\%c", e)
			return ""
		}
	}
	d.fail("unterminated string")
	return ""
}

func (d *jsonReader) hex4() (rune, bool) {
	if d.i+4 > len(d.b) {
		d.fail("short \\u escape")
		return 0, false
	}
	v, err := strconv.ParseUint(d.b[d.i:d.i+4], 16, 32)
	if err != nil {
		d.fail("bad \\u escape")
		return 0, false
	}
	d.i += 4
	return rune(v), true
}

// object reads an object, calling fn for each key with the reader at the
// value; fn must consume the value (e.g. with skip).
func (d *jsonReader) object(fn func(key string)) {
	if !d.expect('{') {
		return
	}
	if d.peek() == '}' {
		d.i++
		return
	}
	for d.err == nil {
		key := d.str()
		if !d.expect(':') {
			return
		}
		fn(key)
		switch d.peek() {
		case ',':
			d.i++
		case '}':
			d.i++
			return
		default:
			d.fail("want ',' or '}' in object")
		}
	}
}

// array reads an array, calling fn with the reader at each element.
func (d *jsonReader) array(fn func()) {
	if !d.expect('[') {
		return
	}
	if d.peek() == ']' {
		d.i++
		return
	}
	for d.err == nil {
		fn()
		switch d.peek() {
		case ',':
			d.i++
		case ']':
			d.i++
			return
		default:
			d.fail("want ',' or ']' in array")
		}
	}
}

// integer reads an integer number.
func (d *jsonReader) integer() int64 {
	d.ws()
	start := d.i
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	v, err := strconv.ParseInt(d.b[start:d.i], 10, 64)
	if err != nil {
		d.i = start
		d.fail("want an integer")
		return 0
	}
	return v
}

// literal reads true, false or null: it returns (value, isNull).
func (d *jsonReader) literal() (bool, bool) {
	d.ws()
	rest := d.b[d.i:]
	switch {
	case len(rest) >= 4 && rest[:4] == "true":
		d.i += 4
		return true, false
	case len(rest) >= 5 && rest[:5] == "false":
		d.i += 5
		return false, false
	case len(rest) >= 4 && rest[:4] == "null":
		d.i += 4
		return false, true
	}
	d.fail("want true, false or null")
	return false, false
}

// skip consumes one value of any kind and returns its raw bytes. Nesting is
// tracked with a counter, not recursion.
func (d *jsonReader) skip() string {
	c := d.peek()
	start := d.i
	if d.err != nil {
		return ""
	}
	switch {
	case c == '"':
		d.str()
	case c == '{' || c == '[':
		depth := 0
		for d.err == nil {
			switch c := d.peek(); c {
			case '{', '[':
				depth++
				d.i++
			case '}', ']':
				depth--
				d.i++
				if depth == 0 {
					return d.b[start:d.i]
				}
			case '"':
				d.str()
			case ',', ':':
				d.i++
			case 0:
				d.fail("unterminated value")
			default:
				d.scalar()
			}
		}
	default:
		d.scalar()
	}
	if d.err != nil {
		return ""
	}
	return d.b[start:d.i]
}

// scalar consumes a number or literal.
func (d *jsonReader) scalar() {
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		if (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-' || c == '+' || c == '.' || c == 'E' {
			d.i++
			continue
		}
		break
	}
	if d.i == start {
		if d.i < len(d.b) {
			d.fail("unexpected %q", d.b[d.i])
		} else {
			d.fail("unexpected end")
		}
	}
}

// end checks that only white space follows.
func (d *jsonReader) end() {
	if d.peek() != 0 && d.err == nil {
		d.fail("trailing data")
	}
}
