package tokenizer

// Unicode normalisation for tokenizers whose tokenizer.json declares a
// normalizer (Qwen's NFC). NFC composes characters canonically (e + U+0301
// becomes é), so such a tokenizer's decode(encode(s)) gives NFC(s), not s.
// This uses golang.org/x/text/unicode/norm.

import (
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// normalizeNFC returns the NFC form of s. ASCII text is returned as is.
// Invalid UTF-8 bytes are kept unchanged.
func normalizeNFC(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			if norm.NFC.IsNormalString(s) {
				return s
			}
			return norm.NFC.String(s)
		}
	}
	return s
}
