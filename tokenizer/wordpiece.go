package tokenizer

// WordPiece (BERT; GGUF tokenizer.ggml.model "bert"), as llama.cpp runs it.
//
// BERT's tokenizer first normalises and cuts the text into words, then
// spells each word greedily with the longest vocabulary pieces:
//
//  1. Normalise each character: with accent stripping (the default) a
//     character becomes the first character of its canonical decomposition
//     (é -> e, 가 -> ᄀ) and combining marks are dropped; NUL, U+FFFD
//     (which invalid UTF-8 bytes become) and control characters (Unicode
//     Cc, Cf, Co) are dropped; with lowercasing (the default) letters map to
//     their simple lowercase.
//  2. Words: whitespace separates words; punctuation, ASCII symbols
//     ($+<=>^`|~) and CJK ideographs are words of one character each.
//  3. Each word, with "▁" in front (the GGUF converter writes BERT's
//     word-initial pieces as "▁piece" and its "##piece" continuations as
//     plain "piece"), is spelt left to right by the longest token starting
//     at each position (byte lengths up to the longest token). If some
//     position starts no token, the whole word is the unknown token.
//
// Decoding writes "▁" as a space, so a decoded text starts with a space;
// Decode drops it, as llama.cpp's clean-up of BERT output does.

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// wordPiece is the WordPiece model.
type wordPiece struct {
	ids          map[string]int32 // token text -> id (the last id of a text wins, as in llama.cpp)
	pieces       []string         // (vocab) decoded text: "▁" as a space
	types        []TokenType      // (vocab)
	unk          int32            // -1: none
	maxLen       int              // longest token text, in bytes
	lowercase    bool
	stripAccents bool
}

func newWordPiece(v *Vocab, types []TokenType) *wordPiece {
	m := &wordPiece{
		ids:          make(map[string]int32, len(v.Tokens)),
		pieces:       make([]string, len(v.Tokens)),
		types:        types,
		unk:          -1,
		lowercase:    !v.Cased,
		stripAccents: !v.KeepAccents,
	}
	for id, tok := range v.Tokens {
		m.ids[tok] = int32(id)
		m.maxLen = max(m.maxLen, len(tok))
		switch types[id] {
		case TypeControl, TypeUserDefined, TypeUnknown:
			m.pieces[id] = tok
		default:
			m.pieces[id] = strings.ReplaceAll(tok, "▁", " ")
		}
	}
	if v.UNK.OK {
		m.unk = int32(v.UNK.ID)
	}
	return m
}

func (m *wordPiece) piece(id int) []byte {
	if id < 0 || id >= len(m.pieces) {
		return nil
	}
	return []byte(m.pieces[id])
}

// stripsLeadingSpace: the "▁" of a word-initial piece is dropped at the
// start of a decoded text.
func (m *wordPiece) stripsLeadingSpace(id int) bool {
	return m.types[id] != TypeControl && m.types[id] != TypeUserDefined && m.types[id] != TypeUnknown
}

func (m *wordPiece) encode(dst []int, text string, first bool) []int {
	var word strings.Builder
	word.WriteString("▁")
	flush := func() {
		if word.Len() > len("▁") {
			dst = m.encodeWord(dst, word.String())
		}
		word.Reset()
		word.WriteString("▁")
	}
	for i := 0; i < len(text); {
		r, w := utf8.DecodeRuneInString(text[i:])
		i += w
		if r == utf8.RuneError && w == 1 {
			continue // U+FFFD
		}
		if m.stripAccents && r >= utf8.RuneSelf {
			r = firstOfNFD(r)
		}
		if unicode.Is(unicode.White_Space, r) {
			flush()
			continue
		}
		if r == 0 || r == utf8.RuneError || unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs) {
			continue
		}
		if m.stripAccents && unicode.IsMark(r) {
			continue
		}
		c := r
		if m.lowercase {
			c = unicode.ToLower(r)
		}
		if unicode.IsPunct(r) || (r < 0x7F && unicode.IsSymbol(r)) || isCJKIdeograph(r) {
			flush()
			word.WriteRune(c)
			flush()
			continue
		}
		word.WriteRune(c)
	}
	flush()
	return dst
}

// encodeWord appends the pieces of "▁"+word, or the unknown token.
func (m *wordPiece) encodeWord(dst []int, w string) []int {
	n0 := len(dst)
	for i := 0; i < len(w); {
		j := min(len(w), i+m.maxLen+1)
		for ; j > i; j-- {
			if id, ok := m.ids[w[i:j]]; ok {
				dst = append(dst, int(id))
				break
			}
		}
		if j == i {
			dst = dst[:n0]
			break
		}
		i = j
	}
	if len(dst) == n0 && m.unk >= 0 {
		dst = append(dst, int(m.unk))
	}
	return dst
}

// firstOfNFD returns the first character of r's canonical decomposition.
func firstOfNFD(r rune) rune {
	var buf [utf8.UTFMax]byte
	n := utf8.EncodeRune(buf[:], r)
	if norm.NFD.QuickSpan(buf[:n]) == n {
		return r
	}
	d, _ := utf8.DecodeRune(norm.NFD.Bytes(buf[:n]))
	return d
}

// isCJKIdeograph is BERT's "Chinese character" test: the CJK Unified
// Ideographs blocks and extensions and the compatibility ideographs (with
// Hugging Face's U+2B920 start for the block that begins at U+2B820).
func isCJKIdeograph(r rune) bool {
	return r >= 0x4E00 && r <= 0x9FFF ||
		r >= 0x3400 && r <= 0x4DBF ||
		r >= 0x20000 && r <= 0x2A6DF ||
		r >= 0x2A700 && r <= 0x2B73F ||
		r >= 0x2B740 && r <= 0x2B81F ||
		r >= 0x2B920 && r <= 0x2CEAF ||
		r >= 0xF900 && r <= 0xFAFF ||
		r >= 0x2F800 && r <= 0x2FA1F
}
