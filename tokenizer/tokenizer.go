// Package tokenizer turns text into token ids and back.
//
// A language model reads and writes integers; the tokenizer is the fixed,
// invertible-as-possible map between strings and sequences of ids from a
// vocabulary of V pieces. Two algorithm families cover the models we run,
// both "byte-pair encoding" (BPE) at heart:
//
//   - SentencePiece BPE (Llama 1/2, TinyLlama, Mistral, Gemma; Vocab.Model
//     "llama"). The text is normalised — a dummy prefix "▁" is put in front
//     of the input and every space becomes "▁" — then split into Unicode
//     characters. Repeatedly, of all adjacent symbol pairs whose
//     concatenation is a vocabulary piece, the pair with the highest piece
//     score is merged (ties: the leftmost pair). Symbols that end up outside
//     the vocabulary are spelt as byte tokens "<0xNN>" (byte fallback) or
//     become the unknown token. See sentencepiece.go.
//   - Byte-level BPE (GPT-2, Llama 3, Qwen, DeepSeek, Falcon; Vocab.Model
//     "gpt2"): the text is first cut into pre-tokens by a regular expression
//     (pretok.go, pretok_llamacpp.go), each byte is mapped to a printable
//     character, and ranked merges are applied per pre-token. See
//     bytelevel.go. Gemma 4 (Vocab.Model "gemma4") runs the same ranked
//     merges over UTF-8 text with "▁" for spaces.
//
// A third family, WordPiece (BERT; Vocab.Model "bert", wordpiece.go),
// spells each word greedily with the longest vocabulary pieces.
//
// GGUF vocabularies tokenize exactly as llama.cpp tokenizes them: the
// llamacpp package applies llama.cpp's load-time fixes (LlamaCppTypeFixes,
// Vocab.LlamaCppRules, Vocab.RStrip), and ../shared/checks/llamacpp_vocab.py
// runs llama.cpp's own tokenizer tests.
//
// Special tokens. Control tokens (<s>, </s>, <|im_end|>, ...) are never
// produced by the merge algorithm. Encode(text, parseSpecial) splits the
// text on the literal text of special tokens only when parseSpecial is set
// (longest match first); otherwise "<s>" in user content is three ordinary
// pieces. The default is off on purpose: parsing special-token text inside
// user-supplied content lets a user forge turn boundaries (prompt
// injection). The engine turns it on for chat-template text, the CLI with
// --parse-special. Encode never adds BOS/EOS; AddBOS/AddEOS tell the caller
// what the model expects.
//
// Decoding concatenates the bytes each id stands for. Invariants the tests
// pin:
//   - SentencePiece: Decode drops control tokens (as SentencePiece does),
//     renders the unknown token as " ⁇ ", and drops the one space that the
//     dummy prefix put in front of the first piece, so for valid UTF-8 text s
//     Decode(Encode(s)) == s (exceptions, as in SentencePiece: a literal
//     "▁" in s comes back as a space, invalid UTF-8 bytes as U+FFFD,
//     remove_extra_whitespaces models drop extra spaces, and characters
//     mapped to <unk> without byte fallback are lost).
//   - Byte-level: control tokens decode to their text, like Hugging Face
//     decode without skip_special_tokens. DecodeWith chooses otherwise.
//   - Decode returns valid UTF-8: every byte that does not belong to a
//     complete UTF-8 sequence becomes U+FFFD.
//   - The streaming Decoder (NewDecoder, Next, Flush) emits only complete
//     characters, and the concatenation of everything it returns equals
//     Decode of the same ids.
package tokenizer

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// TokenType classifies a vocabulary entry, with SentencePiece's and GGUF's
// numbering (tokenizer.ggml.token_type).
type TokenType int32

const (
	TypeUndefined   TokenType = 0
	TypeNormal      TokenType = 1
	TypeUnknown     TokenType = 2
	TypeControl     TokenType = 3
	TypeUserDefined TokenType = 4
	TypeUnused      TokenType = 5
	TypeByte        TokenType = 6
)

// OptID is an optional token id (no -1 sentinels).
type OptID struct {
	ID int
	OK bool
}

// Some returns a present OptID.
func Some(id int) OptID { return OptID{ID: id, OK: true} }

// Vocab is a plain vocabulary that any loader (GGUF metadata, tokenizer
// files) can fill; FromVocab builds a Tokenizer from it.
type Vocab struct {
	Model  string      // "llama" (SentencePiece BPE: Scores) or "gpt2" (byte-level BPE: Merges)
	Pre    string      // byte-level pre-tokenizer, GGUF tokenizer.ggml.pre names: "gpt2", "llama-bpe", "qwen2", "smollm", ...
	Tokens []string    // (vocab) token text as the source stores it ("▁" for SentencePiece spaces, GPT-2 byte chars for byte-level)
	Scores []float32   // (vocab) SentencePiece piece scores; nil if absent
	Types  []TokenType // (vocab) nil means all normal (byte tokens recognised by "<0xNN>" text)
	Merges []string    // byte-level merges "left right", in rank order

	BOS, EOS, UNK, PAD OptID
	EOG                []int     // further end-of-generation ids (EOS is always one)
	FIM                FIMTokens // fill-in-the-middle tokens (fim.go); missing ones are found by text

	AddBOS, AddEOS bool
	AddSpacePrefix bool   // SentencePiece dummy prefix "▁" before the text
	IgnoreMerges   bool   // byte-level: a pre-token that is itself in the vocab is emitted whole (Llama-3)
	Normalizer     string // "" or "NFC"

	// WordPiece (Model "bert") normalisation, llama.cpp's
	// tokenizer.ggml.normalizer.* keys: the zero value lowercases and strips
	// accents, as BERT's uncased models do.
	Cased       bool // keep letter case
	KeepAccents bool // keep accents (combining marks, precomposed letters)

	// LlamaCppRules: where llama.cpp and Hugging Face's regex engines
	// differ, tokenize as llama.cpp (GGUF loaders set it). Contractions
	// ('s, 'T, ...) of the Llama-3 and Qwen pre-tokenizers then fold ASCII
	// case only (llama.cpp lowercases with simple mappings; Hugging Face's
	// (?i) also folds U+017F long s to s).
	LlamaCppRules bool

	// RStrip: special tokens whose match also takes the ASCII whitespace
	// after it (llama.cpp's rule for phi-3 GGUFs, whose added tokens were
	// trained that way: "<|user|>\nHi" is <|user|> "Hi").
	RStrip []int
}

// model is one tokenization algorithm over a vocabulary.
type model interface {
	// encode appends the ids of text, which holds no special tokens. first
	// reports whether text starts the input (SentencePiece adds its dummy
	// prefix only there).
	//
	// (Tokenizer.Encode also passes first=true for text that follows a
	// special token, as llama.cpp and Meta's Llama-2 chat code do: "<s>[INST]"
	// gives <s> "▁[" "INST" "]".)
	encode(dst []int, text string, first bool) []int
	// piece returns the bytes token id decodes to: byte tokens as their
	// byte, SentencePiece "▁" as a space, byte-level characters unmapped.
	piece(id int) []byte
}

// leadingSpacer is implemented by models whose decoder drops the space the
// dummy prefix put in front of the first piece (SentencePiece).
type leadingSpacer interface {
	stripsLeadingSpace(id int) bool
}

var errNotImplemented = errors.New("tokenizer: not implemented yet")

// ErrUnknownModel is returned by FromVocab for a Vocab.Model it does not
// implement.
var ErrUnknownModel = errors.New("tokenizer: unknown tokenizer model")

// Tokenizer encodes text to ids and decodes ids to text. It is immutable
// after construction and safe for concurrent use.
type Tokenizer struct {
	vocab Vocab
	m     model
	types []TokenType // (vocab) never nil

	special     prefixSet    // token texts Encode splits out when parseSpecial
	userDefined prefixSet    // token texts Encode always splits out (byte-level added tokens)
	rstrip      map[int]bool // Vocab.RStrip

	pieceStr []string // (vocab) string(m.piece(id)), so streaming need not allocate
	pieceOK  []bool   // (vocab) pieceStr[id] is valid UTF-8

	maxTokenBytes int // longest token text or piece, in bytes (promptbound.go)

	eog    []int // sorted, unique
	eogSet map[int]bool
	strip  leadingSpacer // nil unless the model drops the dummy-prefix space

	byPiece pieceIndex // built on first TokensWithPrefix (heal.go)
}

// FromVocab builds a Tokenizer from v: Model "llama" is SentencePiece BPE,
// "gpt2" byte-level BPE, "gemma4" Gemma 4's BPE, "bert" WordPiece. The
// Tokenizer keeps v's slices; do not modify them afterwards.
func FromVocab(v Vocab) (*Tokenizer, error) {
	return fromVocab(v, nil)
}

// fromVocab is FromVocab with SentencePiece options that only a .model file
// carries (nil: defaults).
func fromVocab(v Vocab, spOpts *spOptions) (*Tokenizer, error) {
	n := len(v.Tokens)
	if n == 0 {
		return nil, errors.New("tokenizer: empty vocabulary")
	}
	if v.Scores != nil && len(v.Scores) != n {
		return nil, fmt.Errorf("tokenizer: %d scores for %d tokens", len(v.Scores), n)
	}
	if v.Types != nil && len(v.Types) != n {
		return nil, fmt.Errorf("tokenizer: %d token types for %d tokens", len(v.Types), n)
	}
	for name, o := range map[string]OptID{"BOS": v.BOS, "EOS": v.EOS, "UNK": v.UNK, "PAD": v.PAD} {
		if o.OK && (o.ID < 0 || o.ID >= n) {
			return nil, fmt.Errorf("tokenizer: %s id %d outside vocabulary of %d", name, o.ID, n)
		}
	}
	for _, id := range v.EOG {
		if id < 0 || id >= n {
			return nil, fmt.Errorf("tokenizer: end-of-generation id %d outside vocabulary of %d", id, n)
		}
	}
	t := &Tokenizer{vocab: v}
	t.types = v.Types
	if t.types == nil {
		t.types = defaultTypes(v.Tokens)
	}
	var err error
	switch v.Model {
	case "llama":
		var sp *spModel
		sp, err = newSentencePiece(&t.vocab, t.types, spOpts)
		if err == nil {
			t.m, t.strip = sp, sp
		}
	case "gpt2":
		t.m, err = newByteLevel(&t.vocab, false)
	case "gemma4":
		t.m, err = newByteLevel(&t.vocab, true)
	case "bert":
		wp := newWordPiece(&t.vocab, t.types)
		t.m, t.strip = wp, wp
	default:
		return nil, fmt.Errorf("%w %q (want \"llama\", \"gpt2\", \"gemma4\" or \"bert\")", ErrUnknownModel, v.Model)
	}
	if err != nil {
		return nil, err
	}

	t.pieceStr = make([]string, n)
	t.pieceOK = make([]bool, n)
	for id := range n {
		t.pieceStr[id] = string(t.m.piece(id))
		t.pieceOK[id] = utf8.ValidString(t.pieceStr[id])
	}
	t.maxTokenBytes = longestToken(t.vocab.Tokens, t.pieceStr)

	var fimEOG []int
	t.types, fimEOG = resolveFIM(&t.vocab, t.types)
	for name, o := range map[string]OptID{"FIM prefix": t.vocab.FIM.Pre, "FIM suffix": t.vocab.FIM.Suf, "FIM middle": t.vocab.FIM.Mid,
		"FIM pad": t.vocab.FIM.Pad, "FIM repository": t.vocab.FIM.Rep, "FIM file separator": t.vocab.FIM.Sep} {
		if o.OK && (o.ID < 0 || o.ID >= n) {
			return nil, fmt.Errorf("tokenizer: %s id %d outside vocabulary of %d", name, o.ID, n)
		}
	}

	var special, user []int
	for id, ty := range t.types {
		if v.Tokens[id] == "" {
			continue
		}
		switch ty {
		case TypeControl, TypeUnknown:
			special = append(special, id)
		case TypeUserDefined:
			// SentencePiece matches user-defined pieces inside its own
			// encoder (so the dummy-prefix rule stays SentencePiece's).
			if v.Model != "llama" {
				user = append(user, id)
			}
		}
	}
	t.userDefined = newPrefixSet(v.Tokens, user)
	for _, id := range v.RStrip {
		if id < 0 || id >= n {
			return nil, fmt.Errorf("tokenizer: rstrip id %d outside vocabulary of %d", id, n)
		}
		if t.rstrip == nil {
			t.rstrip = map[int]bool{}
		}
		t.rstrip[id] = true
	}
	t.special = newPrefixSet(v.Tokens, append(special, user...))

	t.eogSet = map[int]bool{}
	if v.EOS.OK {
		t.eogSet[v.EOS.ID] = true
	}
	for _, id := range v.EOG {
		t.eogSet[id] = true
	}
	for _, id := range fimEOG {
		t.eogSet[id] = true
	}
	for id, s := range v.Tokens {
		if t.types[id] == TypeControl && slices.Contains(eogNames, s) {
			t.eogSet[id] = true
		}
	}
	for id := range t.eogSet {
		t.eog = append(t.eog, id)
	}
	slices.Sort(t.eog)
	return t, nil
}

// isASCIISpace is C's isspace: space, \t, \n, \v, \f, \r.
func isASCIISpace(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }

// defaultTypes are the types of a vocabulary that records none: normal
// tokens, and byte tokens recognised by their "<0xNN>" text.
func defaultTypes(tokens []string) []TokenType {
	types := make([]TokenType, len(tokens))
	for i, s := range tokens {
		types[i] = TypeNormal
		if _, ok := parseByteToken(s); ok {
			types[i] = TypeByte
		}
	}
	return types
}

// Encode returns the ids of text. It never adds BOS or EOS. With
// parseSpecial, the text of special tokens (control and unknown tokens, and
// added tokens) is matched first, longest match first, and becomes that
// token's id; without it such text is encoded as ordinary text. User-defined
// (added, non-special) tokens are always matched.
func (t *Tokenizer) Encode(text string, parseSpecial bool) []int {
	ids := make([]int, 0, len(text)/3+1)
	set := &t.userDefined
	if parseSpecial {
		set = &t.special
	}
	if set.empty() {
		return t.m.encode(ids, text, true)
	}
	first := true
	start := 0 // start of the pending ordinary text
	for i := 0; i < len(text); {
		id, n := set.match(text[i:])
		if n == 0 {
			i++
			continue
		}
		if start < i {
			ids = t.m.encode(ids, text[start:i], first)
		}
		ids = append(ids, id)
		first = true
		i += n
		if t.rstrip[id] {
			for i < len(text) && isASCIISpace(text[i]) {
				i++
			}
		}
		start = i
	}
	if start < len(text) {
		ids = t.m.encode(ids, text[start:], first)
	}
	return ids
}

// SpecialMode says how decoding renders control tokens.
type SpecialMode int

const (
	// SpecialDefault: SentencePiece drops control tokens (like
	// SentencePiece's decoder); byte-level renders their text (like Hugging
	// Face decode without skip_special_tokens).
	SpecialDefault SpecialMode = iota
	// SpecialSkip drops control tokens.
	SpecialSkip
	// SpecialRender writes control tokens as their text, e.g. "<s>".
	SpecialRender
)

// ParseSpecialMode reads a mode by name: "" (SpecialDefault), "render"
// or "skip".
func ParseSpecialMode(s string) (SpecialMode, error) {
	switch s {
	case "":
		return SpecialDefault, nil
	case "render":
		return SpecialRender, nil
	case "skip":
		return SpecialSkip, nil
	}
	return SpecialDefault, fmt.Errorf("tokenizer: special mode %q: want render or skip", s)
}

// DecodeOptions tunes Decode and the streaming Decoder.
type DecodeOptions struct {
	Special SpecialMode
	// Continuation: the ids continue text already shown (a prompt), so the
	// first piece keeps its leading space instead of losing the
	// SentencePiece dummy-prefix space.
	Continuation bool
}

// Decode returns the text of ids (SpecialDefault). Ids outside the
// vocabulary are ignored. The result is valid UTF-8: each byte not part of
// a complete UTF-8 sequence becomes U+FFFD.
func (t *Tokenizer) Decode(ids []int) string {
	return t.DecodeWith(ids, DecodeOptions{})
}

// DecodeWith is Decode with options.
func (t *Tokenizer) DecodeWith(ids []int, o DecodeOptions) string {
	var raw []byte
	atStart := !o.Continuation
	for _, id := range ids {
		p := t.pieceFor(id, o.Special)
		if len(p) == 0 {
			continue
		}
		if atStart {
			atStart = false
			if t.strip != nil && p[0] == ' ' && t.strip.stripsLeadingSpace(id) {
				p = p[1:]
			}
		}
		raw = append(raw, p...)
	}
	return lossyUTF8(raw)
}

// pieceFor returns the bytes of id under mode m (nil for ids outside the
// vocabulary).
func (t *Tokenizer) pieceFor(id int, m SpecialMode) []byte {
	if id < 0 || id >= len(t.vocab.Tokens) {
		return nil
	}
	if t.types[id] == TypeControl {
		switch m {
		case SpecialSkip:
			return nil
		case SpecialRender:
			return []byte(t.vocab.Tokens[id])
		}
	}
	return t.m.piece(id)
}

// lossyUTF8 returns raw as a string with every byte that does not start a
// complete, valid UTF-8 sequence replaced by U+FFFD.
func lossyUTF8(raw []byte) string {
	if utf8.Valid(raw) {
		return string(raw)
	}
	var b strings.Builder
	b.Grow(len(raw) + 8)
	for len(raw) > 0 {
		r, n := utf8.DecodeRune(raw)
		if r == utf8.RuneError && n == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.Write(raw[:n])
		}
		raw = raw[n:]
	}
	return b.String()
}

// BOS returns the beginning-of-sequence id, if the vocabulary has one.
func (t *Tokenizer) BOS() (int, bool) { return t.vocab.BOS.ID, t.vocab.BOS.OK }

// EOS returns the end-of-sequence id, if the vocabulary has one.
func (t *Tokenizer) EOS() (int, bool) { return t.vocab.EOS.ID, t.vocab.EOS.OK }

// AddBOS reports whether the model expects BOS in front of a prompt.
func (t *Tokenizer) AddBOS() bool { return t.vocab.AddBOS && t.vocab.BOS.OK }

// AddEOS reports whether the model expects EOS after a prompt.
func (t *Tokenizer) AddEOS() bool { return t.vocab.AddEOS && t.vocab.EOS.OK }

// IsEOG reports whether id ends generation (see EOG).
func (t *Tokenizer) IsEOG(id int) bool { return t.eogSet[id] }

// EOG returns the end-of-generation ids, sorted: EOS, Vocab.EOG, and every
// control token whose text is a known end-of-turn marker (<|eot_id|>,
// <|im_end|>, <|endoftext|>, <end_of_turn>, ...), as llama.cpp does.
func (t *Tokenizer) EOG() []int { return slices.Clone(t.eog) }

// Size returns the vocabulary size.
func (t *Tokenizer) Size() int { return len(t.vocab.Tokens) }

// Token returns the stored text of id ("▁Hello", "<0x0A>", "<s>"), or ""
// outside the vocabulary.
func (t *Tokenizer) Token(id int) string {
	if id < 0 || id >= len(t.vocab.Tokens) {
		return ""
	}
	return t.vocab.Tokens[id]
}

// TokenType returns the type of id (TypeUndefined outside the vocabulary).
func (t *Tokenizer) TokenType(id int) TokenType {
	if id < 0 || id >= len(t.types) {
		return TypeUndefined
	}
	return t.types[id]
}

// Vocab returns the vocabulary the tokenizer was built from (for GGUF
// export). It is shared, not copied: callers must not modify it.
func (t *Tokenizer) Vocab() *Vocab { return &t.vocab }

// Kind returns the algorithm: "llama" (SentencePiece BPE), "gpt2"
// (byte-level BPE), "gemma4" (Gemma 4's BPE) or "bert" (WordPiece).
func (t *Tokenizer) Kind() string { return t.vocab.Model }

// prefixSet finds the longest token text at the start of a string.
type prefixSet struct {
	texts   []string
	byFirst [256][]int32 // ids whose text starts with this byte, longest text first
	n       int
}

func newPrefixSet(texts []string, ids []int) prefixSet {
	p := prefixSet{texts: texts, n: len(ids)}
	for _, id := range ids {
		c := texts[id][0]
		p.byFirst[c] = append(p.byFirst[c], int32(id))
	}
	for c := range p.byFirst {
		slices.SortStableFunc(p.byFirst[c], func(a, b int32) int {
			return len(texts[b]) - len(texts[a])
		})
	}
	return p
}

func (p *prefixSet) empty() bool { return p.n == 0 }

// match returns the id and length of the longest text in p that prefixes s
// (n == 0: none).
func (p *prefixSet) match(s string) (id, n int) {
	if len(s) == 0 {
		return 0, 0
	}
	for _, c := range p.byFirst[s[0]] {
		if strings.HasPrefix(s, p.texts[c]) {
			return int(c), len(p.texts[c])
		}
	}
	return 0, 0
}

// parseByteToken recognises a byte token "<0xNN>" (two upper- or lower-case
// hex digits).
func parseByteToken(s string) (byte, bool) {
	if len(s) != 6 || s[0] != '<' || s[1] != '0' || s[2] != 'x' || s[5] != '>' {
		return 0, false
	}
	hi, ok1 := hexVal(s[3])
	lo, ok2 := hexVal(s[4])
	return hi<<4 | lo, ok1 && ok2
}

func hexVal(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
