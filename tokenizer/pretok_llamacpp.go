package tokenizer

// Pre-tokenizers that llama.cpp runs through its general regex engine
// (std::regex) rather than a hand-written splitter: falcon, deepseek-coder,
// deepseek-llm, and the qwen35 splitter.
//
// llama.cpp cannot give std::regex Unicode classes, so before matching an
// expression that names \p{L}, \p{N}, \p{P}, ... it "collapses" the text:
// every non-ASCII character becomes one stand-in byte for its category
// (whitespace first, then letter, number, punctuation, mark, symbol, other),
// and each \p{X} becomes that byte plus the ASCII members of X. So in those
// expressions
//
//	\p{L} is A-Za-z or a non-ASCII letter,
//	\p{N} is 0-9 or a non-ASCII number,
//	\p{P} is !"#%&'()*,-./:;?@[\]_{} or non-ASCII punctuation (ASCII $+<=>^`|~
//	      are symbols, \p{S}),
//	\s    is \t \n \v \f \r space, or non-ASCII Unicode White_Space,
//
// which are exactly the Unicode categories (Go's unicode.IsLetter, IsNumber,
// IsPunct, White_Space) restricted as written. Expressions with literal
// non-ASCII ranges and no \p{} run on code points instead (std::wregex), with
// each non-ASCII whitespace character replaced by \v first; so a range such
// as U+0800–U+9FA5 never matches the whitespace inside it (U+2000–U+200A,
// U+3000, ...). Both engines search leftmost-first and try alternatives in
// order, like the matchers here.
//
// The expressions (DeepSeek's and Falcon's tokenizer.json, as llama.cpp
// lists them):
//
//	falcon:         [\p{P}\$\+<=>\^~\|`]+  then gpt2  then [0-9][0-9][0-9]
//	deepseek-coder: [\r\n]  \s?\p{L}+  \s?\p{P}+  [一-龥ࠀ-一가-퟿]+  \p{N}
//	deepseek-llm:   [\r\n]  \s?[A-Za-zµÀ-ÖØ-öø-ƺ...]+  \s?[!-/:-~！-／：-～‘-‟　-。]+
//	                \s+$  [一-龥ࠀ-一가-퟿]+  \p{N}+
//	qwen35:         the qwen2 expression with [\p{L}\p{M}]+ for \p{L}+ and
//	                [^\s\p{L}\p{M}\p{N}] for [^\s\p{L}\p{N}]
//
// (`$` in \s+$ is the end of the piece the stage is cutting.)

import (
	"unicode"
	"unicode/utf8"
)

// runeAt decodes the character at s[i]; an invalid byte is (RuneError, 1).
func runeAt(s string, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// isSpaceAt reports whether s[i] starts a whitespace character and its width.
func isSpaceAt(s string, i int) (bool, int) {
	k, w := classAt(s, i)
	return k&clsS != 0, w
}

// scanSet advances from i over characters for which in is true.
func scanSet(s string, i int, in func(rune) bool) int {
	for i < len(s) {
		r, w := runeAt(s, i)
		if (r == utf8.RuneError && w == 1) || !in(r) {
			break
		}
		i += w
	}
	return i
}

// matchOptSpaceRun matches \s?X+ for the set X at s[i].
func matchOptSpaceRun(s string, i int, in func(rune) bool) int {
	j := i
	if sp, w := isSpaceAt(s, i); sp {
		j = i + w
		if j >= len(s) {
			return i
		}
	}
	if e := scanSet(s, j, in); e > j {
		return e
	}
	// \s? taken, X+ failed: backtrack to \s? empty, X+ at s[i] (a space,
	// never in X).
	if j > i {
		if e := scanSet(s, i, in); e > i {
			return e
		}
	}
	return i
}

// matchCRorLF: [\r\n]
func matchCRorLF(s string, i int) int {
	if s[i] == '\r' || s[i] == '\n' {
		return i + 1
	}
	return i
}

// matchNewlineRuns: [^\n]+|[\n]+ (Gemma 4: lines and runs of newlines)
func matchNewlineRuns(s string, i int) int {
	nl := s[i] == '\n'
	j := i + 1
	for j < len(s) && (s[j] == '\n') == nl {
		j++
	}
	return j
}

func isLetterRune(r rune) bool { return unicode.IsLetter(r) }
func isPunctRune(r rune) bool  { return unicode.IsPunct(r) }

// matchSpaceLetters: \s?\p{L}+
func matchSpaceLetters(s string, i int) int { return matchOptSpaceRun(s, i, isLetterRune) }

// matchSpacePunct: \s?\p{P}+
func matchSpacePunct(s string, i int) int { return matchOptSpaceRun(s, i, isPunctRune) }

// matchFalconPunctRun: [\p{P}\$\+<=>\^~\|`]+ — every ASCII punctuation or
// symbol character, and non-ASCII punctuation.
func matchFalconPunctRun(s string, i int) int {
	return scanSet(s, i, func(r rune) bool {
		if r < utf8.RuneSelf {
			return r > ' ' && r < 0x7F && !unicode.IsLetter(r) && !unicode.IsDigit(r)
		}
		return unicode.IsPunct(r)
	})
}

// deepSeekCJK: [一-龥ࠀ-一가-퟿], i.e. U+0800–U+9FA5 and U+AC00–U+D7FF,
// less whitespace (which std::wregex sees as \v).
func deepSeekCJK(r rune) bool {
	return (r >= 0x0800 && r <= 0x9FA5 || r >= 0xAC00 && r <= 0xD7FF) && !unicode.Is(unicode.White_Space, r)
}

// matchDeepSeekCJK: [一-龥ࠀ-一가-퟿]+
func matchDeepSeekCJK(s string, i int) int { return scanSet(s, i, deepSeekCJK) }

// deepSeekLetters is the letter class of deepseek-llm's second expression,
// as written in its tokenizer.json (cased letters of Latin, Greek, Cyrillic,
// Armenian, Georgian, Cherokee, Glagolitic, Coptic, Deseret, ... and the
// fullwidth Latin letters).
var deepSeekLetters = &unicode.RangeTable{
	R16: []unicode.Range16{
		{0x0041, 0x005A, 1}, {0x0061, 0x007A, 1}, {0x00B5, 0x00B5, 1}, {0x00C0, 0x00D6, 1},
		{0x00D8, 0x00F6, 1}, {0x00F8, 0x01BA, 1}, {0x01BC, 0x01BF, 1}, {0x01C4, 0x0293, 1},
		{0x0295, 0x02AF, 1}, {0x0370, 0x0373, 1}, {0x0376, 0x0377, 1}, {0x037B, 0x037D, 1},
		{0x037F, 0x037F, 1}, {0x0386, 0x0386, 1}, {0x0388, 0x038A, 1}, {0x038C, 0x038C, 1},
		{0x038E, 0x03A1, 1}, {0x03A3, 0x03F5, 1}, {0x03F7, 0x0481, 1}, {0x048A, 0x052F, 1},
		{0x0531, 0x0556, 1}, {0x10A0, 0x10C5, 1}, {0x13A0, 0x13F5, 1}, {0x13F8, 0x13FD, 1},
		{0x1C90, 0x1CBA, 1}, {0x1CBD, 0x1CBF, 1}, {0x1D00, 0x1D2B, 1}, {0x1D6B, 0x1D77, 1},
		{0x1D79, 0x1D9A, 1}, {0x1E00, 0x1F15, 1}, {0x1F18, 0x1F1D, 1}, {0x1F20, 0x1F45, 1},
		{0x1F48, 0x1F4D, 1}, {0x1F50, 0x1F57, 1}, {0x1F59, 0x1F5D, 2}, {0x1F5F, 0x1F7D, 1},
		{0x1F80, 0x1FB4, 1}, {0x1FB6, 0x1FBC, 1}, {0x1FBE, 0x1FBE, 1}, {0x1FC2, 0x1FC4, 1},
		{0x1FC6, 0x1FCC, 1}, {0x1FD0, 0x1FD3, 1}, {0x1FD6, 0x1FDB, 1}, {0x1FE0, 0x1FEC, 1},
		{0x1FF2, 0x1FF4, 1}, {0x1FF6, 0x1FFC, 1}, {0x2102, 0x2102, 1}, {0x2107, 0x2107, 1},
		{0x210A, 0x2113, 1}, {0x2115, 0x2115, 1}, {0x2119, 0x211D, 1}, {0x2124, 0x2128, 2},
		{0x212A, 0x212D, 1}, {0x212F, 0x2134, 1}, {0x2139, 0x2139, 1}, {0x213C, 0x213F, 1},
		{0x2145, 0x2149, 1}, {0x214E, 0x214E, 1}, {0x2183, 0x2184, 1}, {0x2C00, 0x2C7B, 1},
		{0x2C7E, 0x2CE4, 1}, {0x2CEB, 0x2CEE, 1}, {0x2CF2, 0x2CF3, 1}, {0xA640, 0xA66D, 1},
		{0xA680, 0xA69B, 1}, {0xA722, 0xA76F, 1}, {0xA771, 0xA787, 1}, {0xA78B, 0xA78E, 1},
		{0xAB70, 0xABBF, 1}, {0xFB00, 0xFB06, 1}, {0xFB13, 0xFB17, 1}, {0xFF21, 0xFF3A, 1},
		{0xFF41, 0xFF5A, 1},
	},
	R32: []unicode.Range32{
		{0x10400, 0x1044F, 1}, {0x104B0, 0x104D3, 1}, {0x104D8, 0x104FB, 1}, {0x10C80, 0x10CB2, 1},
		{0x10CC0, 0x10CF2, 1}, {0x118A0, 0x118DF, 1}, {0x1E900, 0x1E943, 1},
	},
}

// matchSpaceDeepSeekLetters: \s?[A-Za-zµÀ-ÖØ-öø-ƺ...]+
func matchSpaceDeepSeekLetters(s string, i int) int {
	return matchOptSpaceRun(s, i, func(r rune) bool { return unicode.Is(deepSeekLetters, r) })
}

// deepSeekPunct: [!-/:-~！-／：-～‘-‟　-。] (U+3000 is whitespace, so \v).
func deepSeekPunct(r rune) bool {
	switch {
	case r >= '!' && r <= '/', r >= ':' && r <= '~':
		return true
	case r >= 0xFF01 && r <= 0xFF0F, r >= 0xFF1A && r <= 0xFF5E:
		return true
	case r >= 0x2018 && r <= 0x201F, r == 0x3001 || r == 0x3002:
		return true
	}
	return false
}

// matchSpaceDeepSeekPunct: \s?[!-/:-~！-／：-～‘-‟　-。]+
func matchSpaceDeepSeekPunct(s string, i int) int { return matchOptSpaceRun(s, i, deepSeekPunct) }

// trailingSpaceStart returns where the whitespace at the end of s begins
// (len(s) if none): \s+$ cuts s there.
func trailingSpaceStart(s string) int {
	t := len(s)
	for t > 0 {
		j := t - 1
		for j > 0 && j > t-utf8.UTFMax && !utf8.RuneStart(s[j]) {
			j--
		}
		if sp, w := isSpaceAt(s, j); !sp || j+w != t {
			break
		}
		t = j
	}
	return t
}

// matchQwen35:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}|
//	 ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// llama.cpp folds case with simple lowercase mappings, so only ASCII
// letters fold in the contractions (U+017F long s does not).
func matchQwen35(s string, i int) int {
	if s[i] == '\'' && i+1 < len(s) && s[i+1] < utf8.RuneSelf {
		if n := contraction(s, i, true); n > 0 {
			return i + n
		}
	}
	const word = clsL | clsM
	k0, w0 := classAt(s, i)
	if k0&word != 0 {
		return scanClass(s, i+w0, word)
	}
	if k0&(clsNL|clsN) == 0 && i+w0 < len(s) {
		if k1, w1 := classAt(s, i+w0); k1&word != 0 {
			return scanClass(s, i+w0+w1, word)
		}
	}
	if k0&clsN != 0 {
		return i + w0
	}
	j := -1
	if k0&clsS == 0 {
		j = i
	} else if s[i] == ' ' && i+1 < len(s) {
		if k1, _ := classAt(s, i+1); k1&(clsS|word|clsN) == 0 {
			j = i + 1
		}
	}
	if j >= 0 {
		for j < len(s) {
			k, w := classAt(s, j)
			if k&(clsS|word|clsN) != 0 {
				break
			}
			j += w
		}
		for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
			j++
		}
		return j
	}
	return matchSpaceTail(s, i)
}
