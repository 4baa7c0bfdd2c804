package tokenizer

// Pre-tokenizers for byte-level BPE.
//
// Byte-level models first cut text with a regular expression and run BPE on
// each piece separately, so no token spans two pieces. The expressions use
// Unicode classes and a `\s+(?!\S)` lookahead that Go's regexp cannot
// express, so each one is written here by hand as a matcher: a function that
// returns where the expression's match starting at byte i ends (leftmost
// alternative that matches wins, like a backtracking regex), or i if none
// does. Text that no alternative matches becomes a piece of its own, as in
// the regex "split, keep both" behaviour of llama.cpp and Hugging Face.
// Some models cut in several stages (each piece of stage k is cut again by
// stage k+1), as llama.cpp does.
//
// Classes: \p{L} is unicode.IsLetter, \p{N} unicode.IsNumber, \s Unicode
// White_Space (unicode.IsSpace), \p{P} unicode.IsPunct. A byte that is not
// valid UTF-8 counts as one character of none of these classes.
//
// The expressions, as written in the models' tokenizer.json files:
//
//	gpt2:   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//	llama3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//	qwen2:  the llama3 one with \p{N} (single digits) for \p{N}{1,3}
//	smollm: \p{N} first, then gpt2
//	default (llama.cpp): [\p{P}\$\+<=>\^~\|]+ then gpt2 then \p{N}+ then [0-9][0-9][0-9]
//
// falcon, deepseek-coder, deepseek-llm, qwen35 and Gemma 4's line split are
// in pretok_llamacpp.go. For GGUF vocabularies (Vocab.LlamaCppRules) the
// llama3 and qwen2 contractions fold ASCII case only, as llama.cpp does.

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// Character classes.
const (
	clsL  uint8 = 1 << iota // \p{L}
	clsN                    // \p{N}
	clsS                    // \s
	clsNL                   // \r or \n
	clsP                    // \p{P} or one of $+<=>^~|  (llama.cpp "default" only)
	clsM                    // \p{M} (combining marks; never ASCII)
)

var asciiClass [128]uint8

func init() {
	for c := 0; c < 128; c++ {
		r := rune(c)
		var k uint8
		switch {
		case unicode.IsLetter(r):
			k = clsL
		case unicode.IsNumber(r):
			k = clsN
		case unicode.IsSpace(r):
			k = clsS
			if c == '\r' || c == '\n' {
				k |= clsNL
			}
		case unicode.IsPunct(r) || (c < 128 && isDefaultSym(byte(c))):
			k = clsP
		}
		asciiClass[c] = k
	}
}

func isDefaultSym(c byte) bool {
	switch c {
	case '$', '+', '<', '=', '>', '^', '~', '|':
		return true
	}
	return false
}

// classAt returns the class bits and the byte width of the character at s[i].
func classAt(s string, i int) (uint8, int) {
	c := s[i]
	if c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && w == 1 {
		return 0, 1
	}
	switch {
	case unicode.IsLetter(r):
		return clsL, w
	case unicode.IsNumber(r):
		return clsN, w
	case unicode.IsSpace(r):
		return clsS, w
	case unicode.IsPunct(r):
		return clsP, w
	case unicode.IsMark(r):
		return clsM, w
	}
	return 0, w
}

// matcher returns the end of the match starting at s[i], or i for none.
type matcher func(s string, i int) int

// preTokenizer cuts text into pieces in one or more stages.
type preTokenizer struct {
	name   string
	stages []matcher
	// trailingSpace[k]: stage k is `\s+$` (deepseek-llm), which cuts each
	// piece once, before its trailing whitespace, instead of matching
	// from every position.
	trailingSpace []bool
	// ignoreMerges is llama.cpp's default for this family: a piece that is
	// itself a token is emitted whole.
	ignoreMerges bool
}

// newPreTokenizer returns the pre-tokenizer for a GGUF tokenizer.ggml.pre
// name (llama.cpp's names; "" means llama.cpp's "default", as llama.cpp does).
func newPreTokenizer(name string) (*preTokenizer, error) { return newPreTokenizerRules(name, false) }

// newPreTokenizerRules is newPreTokenizer with Vocab.LlamaCppRules.
func newPreTokenizerRules(name string, llamaCpp bool) (*preTokenizer, error) {
	p := &preTokenizer{name: name}
	llama3, qwen2 := matcher(matchLlama3), matcher(matchQwen2)
	if llamaCpp {
		llama3, qwen2 = matchLlama3ASCII, matchQwen2ASCII
	}
	switch name {
	case "gpt2", "gpt-2", "phi-2", "mpt", "olmo", "jais", "trillion", "exaone4",
		"jina-es", "jina-de", "jina-v1-en", "jina-v2-es", "jina-v2-de", "jina-v2-code",
		"gigachat", "a.x-4.0", "mellum", "roberta-bpe", "modern-bert":
		p.stages = []matcher{matchGPT2}
	case "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2":
		p.stages = []matcher{llama3}
		p.ignoreMerges = true
	case "dbrx", "smaug-bpe":
		p.stages = []matcher{llama3}
	case "qwen2", "deepseek-r1-qwen", "stablelm2", "megrez", "kormo", "f2llmv2":
		p.stages = []matcher{qwen2}
	case "qwen35":
		p.stages = []matcher{matchQwen35}
	case "falcon":
		p.stages = []matcher{matchFalconPunctRun, matchGPT2, matchThreeASCIIDigits}
	case "deepseek-coder":
		p.stages = []matcher{matchCRorLF, matchSpaceLetters, matchSpacePunct, matchDeepSeekCJK, matchOneNumber}
	case "deepseek-llm":
		p.stages = []matcher{matchCRorLF, matchSpaceDeepSeekLetters, matchSpaceDeepSeekPunct, nil, matchDeepSeekCJK, matchNumberRun}
		p.trailingSpace = []bool{3: true}
	case "gemma4":
		p.stages = []matcher{matchNewlineRuns}
	case "smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva-7b":
		p.stages = []matcher{matchOneNumber, matchGPT2}
	case "default", "":
		p.stages = []matcher{matchPunctRun, matchGPT2, matchNumberRun, matchThreeASCIIDigits}
	default:
		return nil, fmt.Errorf("tokenizer: unknown byte-level pre-tokenizer %q", name)
	}
	return p, nil
}

// split calls emit with each piece of s, in order. The pieces concatenate
// to s and none is empty.
func (p *preTokenizer) split(s string, emit func(string)) {
	if len(p.stages) == 1 {
		m := p.stages[0]
		gap := 0
		for i := 0; i < len(s); {
			j := m(s, i)
			if j <= i {
				_, w := classAt(s, i)
				i += w
				continue
			}
			if gap < i {
				emit(s[gap:i])
			}
			emit(s[i:j])
			i, gap = j, j
		}
		if gap < len(s) {
			emit(s[gap:])
		}
		return
	}
	p.splitStage(s, 0, emit)
}

func (p *preTokenizer) splitStage(s string, k int, emit func(string)) {
	if k == len(p.stages) {
		if s != "" {
			emit(s)
		}
		return
	}
	if k < len(p.trailingSpace) && p.trailingSpace[k] {
		t := trailingSpaceStart(s)
		p.splitStage(s[:t], k+1, emit)
		p.splitStage(s[t:], k+1, emit)
		return
	}
	m := p.stages[k]
	gap := 0
	for i := 0; i < len(s); {
		j := m(s, i)
		if j <= i {
			_, w := classAt(s, i)
			i += w
			continue
		}
		if gap < i {
			p.splitStage(s[gap:i], k+1, emit)
		}
		p.splitStage(s[i:j], k+1, emit)
		i, gap = j, j
	}
	if gap < len(s) {
		p.splitStage(s[gap:], k+1, emit)
	}
}

// contraction returns the length of 's 't 're 've 'm 'll 'd at s[i] (which
// holds the apostrophe), or 0. foldCase matches letters case-insensitively
// with Unicode simple case folding (so U+017F long s matches 's').
func contraction(s string, i int, foldCase bool) int {
	if i+1 >= len(s) {
		return 0
	}
	c := s[i+1]
	if foldCase && c >= 'A' && c <= 'Z' {
		c += 'a' - 'A'
	}
	switch c {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v', 'l':
		if i+2 >= len(s) {
			return 0
		}
		d := s[i+2]
		if foldCase && d >= 'A' && d <= 'Z' {
			d += 'a' - 'A'
		}
		if (c == 'r' && d == 'e') || (c == 'v' && d == 'e') || (c == 'l' && d == 'l') {
			return 3
		}
	case 0xC5: // U+017F LATIN SMALL LETTER LONG S folds to 's'
		if foldCase && i+2 < len(s) && s[i+2] == 0xBF {
			return 3
		}
	}
	return 0
}

// scanClass advances from i over characters having any bit of cls.
func scanClass(s string, i int, cls uint8) int {
	for i < len(s) {
		k, w := classAt(s, i)
		if k&cls == 0 {
			break
		}
		i += w
	}
	return i
}

// scanOther advances over characters that are not \s, \p{L} or \p{N}.
func scanOther(s string, i int) int {
	for i < len(s) {
		k, w := classAt(s, i)
		if k&(clsS|clsL|clsN) != 0 {
			break
		}
		i += w
	}
	return i
}

// matchSpaces handles the shared tail \s+(?!\S)|\s+ at a whitespace char.
func matchSpaces(s string, i int) int {
	end, last := i, i
	for end < len(s) {
		k, w := classAt(s, end)
		if k&clsS == 0 {
			break
		}
		last = end
		end += w
	}
	if end == len(s) || last == i {
		return end // at the end of text, or a single space before \S: \s+
	}
	return last // \s+(?!\S): leave the last space to the next piece
}

// matchGPT2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
func matchGPT2(s string, i int) int {
	if s[i] == '\'' {
		if n := contraction(s, i, false); n > 0 {
			return i + n
		}
	}
	j := i
	if s[i] == ' ' && i+1 < len(s) {
		j = i + 1
	}
	k, _ := classAt(s, j)
	switch {
	case k&clsL != 0:
		return scanClass(s, j, clsL)
	case k&clsN != 0:
		return scanClass(s, j, clsN)
	case k&clsS == 0:
		return scanOther(s, j)
	}
	// s[j] is whitespace: j == i or the optional space did not help.
	return matchSpaces(s, i)
}

// matchLlama3 is the Llama-3 expression with digits in groups of 1-3.
func matchLlama3(s string, i int) int { return matchLlamaStyle(s, i, 3, true) }

// matchQwen2 is the Llama-3 expression with single digits.
func matchQwen2(s string, i int) int { return matchLlamaStyle(s, i, 1, true) }

// matchLlama3ASCII and matchQwen2ASCII fold only ASCII case in contractions
// (llama.cpp).
func matchLlama3ASCII(s string, i int) int { return matchLlamaStyle(s, i, 3, false) }
func matchQwen2ASCII(s string, i int) int  { return matchLlamaStyle(s, i, 1, false) }

// matchLlamaStyle:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,maxDigits}|
//	 ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// foldLongS: (?i) folds U+017F long s to s, as Hugging Face's engines do.
func matchLlamaStyle(s string, i int, maxDigits int, foldLongS bool) int {
	if s[i] == '\'' && (foldLongS || i+1 < len(s) && s[i+1] < utf8.RuneSelf) {
		if n := contraction(s, i, true); n > 0 {
			return i + n
		}
	}
	k0, w0 := classAt(s, i)
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if k0&clsL != 0 {
		return scanClass(s, i+w0, clsL)
	}
	if k0&(clsNL|clsN) == 0 && i+w0 < len(s) {
		if k1, w1 := classAt(s, i+w0); k1&clsL != 0 {
			return scanClass(s, i+w0+w1, clsL)
		}
	}
	// \p{N}{1,maxDigits}
	if k0&clsN != 0 {
		j := i + w0
		for n := 1; n < maxDigits && j < len(s); n++ {
			k, w := classAt(s, j)
			if k&clsN == 0 {
				break
			}
			j += w
		}
		return j
	}
	//  ?[^\s\p{L}\p{N}]+[\r\n]*
	j := -1
	if k0&clsS == 0 {
		j = i
	} else if s[i] == ' ' && i+1 < len(s) {
		if k1, _ := classAt(s, i+1); k1&(clsS|clsL|clsN) == 0 {
			j = i + 1
		}
	}
	if j >= 0 {
		j = scanOther(s, j)
		for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
			j++
		}
		return j
	}
	return matchSpaceTail(s, i)
}

// matchSpaceTail is the shared \s*[\r\n]+|\s+(?!\S)|\s+ at s[i]:
// \s*[\r\n]+ ends after the whitespace run's last \r or \n.
func matchSpaceTail(s string, i int) int {
	end, lastNL := i, -1
	for end < len(s) {
		k, w := classAt(s, end)
		if k&clsS == 0 {
			break
		}
		if k&clsNL != 0 {
			lastNL = end
		}
		end += w
	}
	if lastNL >= 0 {
		return lastNL + 1
	}
	return matchSpaces(s, i)
}

// matchOneNumber: \p{N}
func matchOneNumber(s string, i int) int {
	if k, w := classAt(s, i); k&clsN != 0 {
		return i + w
	}
	return i
}

// matchNumberRun: \p{N}+
func matchNumberRun(s string, i int) int { return scanClass(s, i, clsN) }

// matchThreeASCIIDigits: [0-9][0-9][0-9]
func matchThreeASCIIDigits(s string, i int) int {
	if i+3 <= len(s) && isDigit(s[i]) && isDigit(s[i+1]) && isDigit(s[i+2]) {
		return i + 3
	}
	return i
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// matchPunctRun: [\p{P}\$\+<=>\^~\|]+
func matchPunctRun(s string, i int) int { return scanClass(s, i, clsP) }
