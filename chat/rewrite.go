package chat

import "strings"

// The Jinja engine looks filters up in its own built-in table first and only
// falls back to template variables for names it does not know, so its
// built-in `tojson` cannot be shadowed by passing a variable of that name.
// Its tojson differs from Hugging Face's (json.dumps with ensure_ascii=False):
// tojson(indent=N) sorts keys and HTML-escapes <, >, &; floats print as Go
// does (1.0 → "1"); U+2028/2029 get escaped. So before compiling we rename
// every `| tojson` filter application inside tags to tojsonName, which is not a
// built-in and therefore resolves to our Python-exact filter passed in with
// the variables. String literals, comments and {% raw %} blocks are left
// untouched. (A `{% filter tojson %}` block or map('tojson') still reaches the
// built-in; no known chat template uses either.)
const tojsonName = "__nanoserve_tojson"

// renameTojson returns src with filter applications `|tojson` renamed.
func renameTojson(src string) string {
	if !strings.Contains(src, "tojson") {
		return src
	}
	var b strings.Builder
	b.Grow(len(src) + 64)
	i := 0
	for i < len(src) {
		j := strings.IndexByte(src[i:], '{')
		if j < 0 || i+j+1 >= len(src) {
			b.WriteString(src[i:])
			break
		}
		j += i
		b.WriteString(src[i:j])
		switch src[j+1] {
		case '#':
			end := strings.Index(src[j+2:], "#}")
			if end < 0 {
				b.WriteString(src[j:])
				return b.String()
			}
			end += j + 2 + 2
			b.WriteString(src[j:end])
			i = end
		case '{', '%':
			closer := "}}"
			if src[j+1] == '%' {
				closer = "%}"
			}
			end := tagEnd(src, j+2, closer)
			if end < 0 {
				b.WriteString(src[j:])
				return b.String()
			}
			tag := src[j:end]
			b.WriteString(renameInTag(tag))
			i = end
			if src[j+1] == '%' && isRawTag(tag) {
				// copy through to the matching {% endraw %}
				k := rawEnd(src, i)
				b.WriteString(src[i:k])
				i = k
			}
		default:
			b.WriteByte('{')
			i = j + 1
		}
	}
	return b.String()
}

// tagEnd returns the index just past closer, scanning from i and skipping
// quoted strings; -1 if the tag is unterminated.
func tagEnd(src string, i int, closer string) int {
	for i < len(src) {
		c := src[i]
		if c == '\'' || c == '"' {
			i++
			for i < len(src) && src[i] != c {
				if src[i] == '\\' {
					i++
				}
				i++
			}
			i++
			continue
		}
		if strings.HasPrefix(src[i:], closer) {
			return i + len(closer)
		}
		i++
	}
	return -1
}

func isRawTag(tag string) bool {
	body := strings.Trim(tag[2:len(tag)-2], "-+ \t\r\n")
	return body == "raw"
}

// rawEnd returns the index where the {% endraw %} tag that closes a raw
// block starting at i begins (or len(src)).
func rawEnd(src string, i int) int {
	for i < len(src) {
		k := strings.Index(src[i:], "{%")
		if k < 0 {
			return len(src)
		}
		k += i
		end := strings.Index(src[k:], "%}")
		if end < 0 {
			return len(src)
		}
		if strings.Trim(src[k+2:k+end], "-+ \t\r\n") == "endraw" {
			return k
		}
		i = k + 2
	}
	return len(src)
}

// renameInTag renames `|tojson` (any spaces around the bar) outside string
// literals within one {{ }} or {% %} tag.
func renameInTag(tag string) string {
	var b strings.Builder
	lastBar := false // previous non-space character outside strings was '|'
	for i := 0; i < len(tag); {
		c := tag[i]
		switch {
		case c == '\'' || c == '"':
			k := i + 1
			for k < len(tag) && tag[k] != c {
				if tag[k] == '\\' {
					k++
				}
				k++
			}
			k = min(k+1, len(tag))
			b.WriteString(tag[i:k])
			i = k
			lastBar = false
		case isIdentByte(c):
			k := i
			for k < len(tag) && isIdentByte(tag[k]) {
				k++
			}
			word := tag[i:k]
			if lastBar && word == "tojson" {
				word = tojsonName
			}
			b.WriteString(word)
			i = k
			lastBar = false
		default:
			b.WriteByte(c)
			if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
				lastBar = c == '|'
			}
			i++
		}
	}
	return b.String()
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}
