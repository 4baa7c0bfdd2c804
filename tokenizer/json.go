package tokenizer

// Hugging Face tokenizer.json loading.
//
// Two kinds of BPE tokenizer.json are understood:
//   - byte-level (GPT-2, Llama-3, Qwen, SmolLM): a ByteLevel pre-tokenizer,
//     optionally after a Split whose regex names the pre-tokenizer (matched
//     against the expressions pretok.go implements), or after Digits. It
//     becomes Vocab{Model: "gpt2", Pre, Merges, IgnoreMerges, Normalizer}.
//   - SentencePiece-style (Llama-2, Mistral, TinyLlama): byte_fallback and
//     "▁" for spaces (Metaspace pre-tokenizer, or Prepend/Replace
//     normalizers). It becomes Vocab{Model: "llama"} whose Scores are minus
//     the rank of the first merge that builds each token, so SentencePiece's
//     highest-score-first merging follows the merges' priority.
//
// added_tokens become Control (special) or UserDefined tokens. BOS/EOS come
// from tokenizer_config.json (or special_tokens_map.json) beside the file,
// AddBOS/AddEOS from the post_processor's TemplateProcessing, overridden by
// tokenizer_config.json's add_bos_token/add_eos_token when set; the
// end-of-generation set adds generation_config.json's eos_token_id.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Known Split regexes of byte-level tokenizer.json files, by pre-tokenizer.
var splitRegexPre = map[string]string{
	`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`: "llama-bpe",
	`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`:      "qwen2",
	`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`:                                          "gpt2",
}

// hfComponent is any of normalizer, pre_tokenizer, post_processor, decoder.
type hfComponent struct {
	Type          string        `json:"type"`
	Normalizers   []hfComponent `json:"normalizers"`
	Pretokenizers []hfComponent `json:"pretokenizers"`
	Processors    []hfComponent `json:"processors"`
	Pattern       *struct {
		Regex  *string `json:"Regex"`
		String *string `json:"String"`
	} `json:"pattern"`
	Content          string  `json:"content"`
	Prepend          string  `json:"prepend"`
	Behavior         string  `json:"behavior"`
	Invert           bool    `json:"invert"`
	AddPrefixSpace   *bool   `json:"add_prefix_space"`
	UseRegex         *bool   `json:"use_regex"`
	IndividualDigits bool    `json:"individual_digits"`
	Replacement      string  `json:"replacement"`
	PrependScheme    *string `json:"prepend_scheme"`
	Single           []struct {
		SpecialToken *struct {
			ID string `json:"id"`
		} `json:"SpecialToken"`
		Sequence *struct {
			ID string `json:"id"`
		} `json:"Sequence"`
	} `json:"single"`
}

// flatten lists c, or the members of a Sequence, in order.
func (c *hfComponent) flatten() []hfComponent {
	if c == nil {
		return nil
	}
	var out []hfComponent
	switch {
	case len(c.Normalizers) > 0:
		for i := range c.Normalizers {
			out = append(out, c.Normalizers[i].flatten()...)
		}
	case len(c.Pretokenizers) > 0:
		for i := range c.Pretokenizers {
			out = append(out, c.Pretokenizers[i].flatten()...)
		}
	case len(c.Processors) > 0:
		for i := range c.Processors {
			out = append(out, c.Processors[i].flatten()...)
		}
	case c.Type == "Sequence":
	default:
		out = append(out, *c)
	}
	return out
}

type hfAddedToken struct {
	ID      int    `json:"id"`
	Content string `json:"content"`
	Special bool   `json:"special"`
}

// hfFile is the parsed part of tokenizer.json we use.
type hfFile struct {
	modelType    string
	vocab        []hfEntry
	merges       []string // "left right"; pairs are joined with a space
	pairMerges   bool     // merges were stored as pairs
	ignoreMerges bool
	byteFallback bool
	// vocabNotObject: model.vocab is not a {token: id} object (other models)
	vocabNotObject bool
	unkToken       string
	added          []hfAddedToken
	normalizer     *hfComponent
	pre            *hfComponent
	post           *hfComponent
	decoder        *hfComponent
}

type hfEntry struct {
	tok string
	id  int
}

// maxVocabID bounds token ids read from files (guards allocations).
const maxVocabID = 1 << 22

func parseHFComponent(d *jsonReader, what string, dst **hfComponent) {
	raw := d.skip()
	if d.err != nil || raw == "null" {
		return
	}
	c := new(hfComponent)
	if err := json.Unmarshal([]byte(raw), c); err != nil {
		d.fail("%s: %v", what, err)
		return
	}
	*dst = c
}

// parseHFFile reads the parts of a tokenizer.json we use.
func parseHFFile(data string) (*hfFile, error) {
	f := &hfFile{}
	d := &jsonReader{b: data}
	sawModel := false
	d.object(func(key string) {
		switch key {
		case "model":
			sawModel = true
			d.object(func(key string) {
				switch key {
				case "type":
					f.modelType = d.str()
				case "vocab":
					if d.peek() != '{' {
						d.skip()
						f.vocabNotObject = true
						return
					}
					d.object(func(tok string) {
						id := d.integer()
						if d.err == nil && (id < 0 || id >= maxVocabID) {
							d.fail("token %q has id %d out of range", tok, id)
						}
						f.vocab = append(f.vocab, hfEntry{tok, int(id)})
					})
				case "merges":
					d.array(func() {
						switch d.peek() {
						case '"':
							s := d.str()
							if strings.IndexByte(s, ' ') <= 0 {
								d.fail("merge %q is not \"left right\"", s)
								return
							}
							f.merges = append(f.merges, s)
						case '[':
							var p [2]string
							n := 0
							d.array(func() {
								if n < 2 {
									p[n] = d.str()
								} else {
									d.skip()
								}
								n++
							})
							if n != 2 && d.err == nil {
								d.fail("merge pair has %d elements", n)
							}
							if strings.IndexByte(p[0], ' ') >= 0 || p[0] == "" || p[1] == "" {
								d.fail("merge pair %q cannot be written \"left right\"", p[:])
							}
							f.pairMerges = true
							f.merges = append(f.merges, p[0]+" "+p[1])
						default:
							d.fail("merge is neither a string nor a pair")
						}
					})
				case "ignore_merges":
					f.ignoreMerges, _ = d.literal()
				case "byte_fallback":
					f.byteFallback, _ = d.literal()
				case "unk_token":
					if d.peek() == '"' {
						f.unkToken = d.str()
					} else {
						d.skip()
					}
				case "continuing_subword_prefix", "end_of_word_suffix":
					if d.peek() == '"' {
						if s := d.str(); s != "" {
							d.fail("model.%s %q is not supported", key, s)
						}
					} else {
						d.skip()
					}
				default:
					d.skip()
				}
			})
		case "added_tokens":
			raw := d.skip()
			if d.err == nil && raw != "null" {
				if err := json.Unmarshal([]byte(raw), &f.added); err != nil {
					d.fail("added_tokens: %v", err)
				}
			}
		case "normalizer":
			parseHFComponent(d, key, &f.normalizer)
		case "pre_tokenizer":
			parseHFComponent(d, key, &f.pre)
		case "post_processor":
			parseHFComponent(d, key, &f.post)
		case "decoder":
			parseHFComponent(d, key, &f.decoder)
		default:
			d.skip()
		}
	})
	d.end()
	if d.err != nil {
		return nil, d.err
	}
	if !sawModel {
		return nil, errors.New("no \"model\"")
	}
	return f, nil
}

// loadTokenizerJSON loads a Hugging Face tokenizer.json (with the config
// files beside it).
func loadTokenizerJSON(path string) (*Tokenizer, error) {
	v, err := tokenizerJSONVocab(path)
	if err != nil {
		return nil, err
	}
	return FromVocab(v)
}

// tokenizerJSONVocab reads a tokenizer.json file (and the config files
// beside it) into a Vocab.
func tokenizerJSONVocab(path string) (Vocab, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Vocab{}, fmt.Errorf("tokenizer: %w", err)
	}
	cfg, err := readHFConfig(filepath.Dir(path))
	if err != nil {
		return Vocab{}, err
	}
	v, err := parseTokenizerJSON(string(data), cfg)
	if err != nil {
		return Vocab{}, fmt.Errorf("tokenizer: %s: %w", path, err)
	}
	return v, nil
}

// parseTokenizerJSON builds a Vocab from tokenizer.json bytes and the
// optional configuration found beside it (nil: none).
func parseTokenizerJSON(data string, cfg *hfConfig) (Vocab, error) {
	f, err := parseHFFile(data)
	if err != nil {
		return Vocab{}, err
	}
	if f.modelType != "BPE" {
		if f.modelType == "" {
			return Vocab{}, errors.New("model.type is missing")
		}
		return Vocab{}, fmt.Errorf("model.type %q is not supported (BPE only)", f.modelType)
	}
	if f.vocabNotObject {
		return Vocab{}, errors.New("model.vocab is not an object")
	}
	// Tokens by id: the model's vocabulary, then added tokens.
	n := 0
	for _, e := range f.vocab {
		n = max(n, e.id+1)
	}
	for _, a := range f.added {
		if a.ID < 0 || a.ID >= maxVocabID {
			return Vocab{}, fmt.Errorf("added token %q has id %d out of range", a.Content, a.ID)
		}
		n = max(n, a.ID+1)
	}
	if n == 0 {
		return Vocab{}, errors.New("empty vocabulary")
	}
	if n > 2*(len(f.vocab)+len(f.added))+1024 {
		return Vocab{}, fmt.Errorf("token ids up to %d for %d tokens", n-1, len(f.vocab)+len(f.added))
	}
	v := Vocab{Tokens: make([]string, n), Types: make([]TokenType, n)}
	set := make([]bool, n)
	for _, e := range f.vocab {
		if set[e.id] {
			return Vocab{}, fmt.Errorf("id %d used by two tokens", e.id)
		}
		set[e.id] = true
		v.Tokens[e.id] = e.tok
		v.Types[e.id] = TypeNormal
	}
	for _, a := range f.added {
		if a.Content == "" {
			return Vocab{}, fmt.Errorf("added token %d is empty", a.ID)
		}
		set[a.ID] = true
		v.Tokens[a.ID] = a.Content
		if a.Special {
			v.Types[a.ID] = TypeControl
		} else {
			v.Types[a.ID] = TypeUserDefined
		}
	}
	for id := range v.Tokens {
		if !set[id] {
			v.Tokens[id] = fmt.Sprintf("[PAD%d]", id)
			v.Types[id] = TypeUnused
		}
	}

	spKind, err := f.isSentencePieceKind()
	if err != nil {
		return Vocab{}, err
	}
	if spKind {
		err = f.fillSentencePiece(&v)
	} else {
		err = f.fillByteLevel(&v)
	}
	if err != nil {
		return Vocab{}, err
	}
	f.fillSpecial(&v, cfg)
	compactStrings(v.Tokens)
	return v, nil
}

// compactStrings copies the strings of ss into one allocation, in place,
// so they no longer keep the (much larger) file they were cut from alive.
func compactStrings(ss []string) []string {
	n := 0
	for _, s := range ss {
		n += len(s)
	}
	var b strings.Builder
	b.Grow(n)
	for _, s := range ss {
		b.WriteString(s)
	}
	arena, off := b.String(), 0
	for i, s := range ss {
		ss[i] = arena[off : off+len(s)]
		off += len(s)
	}
	return ss
}

// isSentencePieceKind tells the "▁" kind from the byte-level kind.
func (f *hfFile) isSentencePieceKind() (bool, error) {
	byteLevel, meta := false, false
	for _, c := range f.pre.flatten() {
		switch c.Type {
		case "ByteLevel":
			byteLevel = true
		case "Metaspace":
			meta = true
		}
	}
	for _, c := range f.normalizer.flatten() {
		if (c.Type == "Replace" && c.Content == "▁") || (c.Type == "Prepend" && c.Prepend == "▁") {
			meta = true
		}
	}
	if !byteLevel {
		for _, c := range f.decoder.flatten() {
			if c.Type == "ByteLevel" {
				byteLevel = true
			}
		}
	}
	switch {
	case byteLevel && (meta || f.byteFallback):
		return false, errors.New("tokenizer.json mixes ByteLevel with SentencePiece-style settings")
	case byteLevel:
		return false, nil
	case meta || f.byteFallback:
		return true, nil
	}
	return false, errors.New("tokenizer.json is neither byte-level (ByteLevel pre-tokenizer) nor SentencePiece-style (Metaspace / byte_fallback)")
}

// fillByteLevel sets the byte-level fields.
func (f *hfFile) fillByteLevel(v *Vocab) error {
	v.Model = "gpt2"
	v.IgnoreMerges = f.ignoreMerges
	switch norms := f.normalizer.flatten(); {
	case len(norms) == 0:
	case len(norms) == 1 && norms[0].Type == "NFC":
		v.Normalizer = "NFC"
	default:
		return fmt.Errorf("normalizer %q is not supported for byte-level BPE", norms[0].Type)
	}
	pre, err := f.byteLevelPre()
	if err != nil {
		return err
	}
	v.Pre = pre
	for i, m := range f.merges {
		if sp := strings.IndexByte(m, ' '); sp <= 0 || sp == len(m)-1 || strings.IndexByte(m[sp+1:], ' ') >= 0 {
			return fmt.Errorf("merge %d %q is not a pair of byte-level tokens", i, m)
		}
	}
	v.Merges = compactStrings(f.merges)
	return nil
}

// byteLevelPre names the pre-tokenizer of a byte-level tokenizer.json.
func (f *hfFile) byteLevelPre() (string, error) {
	parts := f.pre.flatten()
	var split, digits, bl *hfComponent
	for i := range parts {
		c := &parts[i]
		switch c.Type {
		case "Split":
			if split != nil {
				return "", errors.New("pre_tokenizer has two Splits")
			}
			split = c
		case "Digits":
			digits = c
		case "ByteLevel":
			bl = c
		default:
			return "", fmt.Errorf("pre_tokenizer %q is not supported", c.Type)
		}
	}
	if bl == nil {
		return "", errors.New("pre_tokenizer has no ByteLevel")
	}
	if bl.AddPrefixSpace != nil && *bl.AddPrefixSpace {
		return "", errors.New("ByteLevel add_prefix_space=true is not supported")
	}
	useRegex := bl.UseRegex == nil || *bl.UseRegex
	switch {
	case split == nil && digits == nil && useRegex:
		return "gpt2", nil
	case split == nil && digits != nil && digits.IndividualDigits && useRegex:
		return "smollm", nil
	case split != nil && digits == nil && !useRegex:
		if split.Pattern == nil || split.Pattern.Regex == nil {
			return "", errors.New("pre_tokenizer Split has no Regex pattern")
		}
		if split.Invert || (split.Behavior != "" && split.Behavior != "Isolated") {
			return "", fmt.Errorf("pre_tokenizer Split behavior %q invert=%v is not supported", split.Behavior, split.Invert)
		}
		if pre, ok := splitRegexPre[*split.Pattern.Regex]; ok {
			return pre, nil
		}
		return "", fmt.Errorf("pre_tokenizer Split regex %q is not supported", *split.Pattern.Regex)
	}
	return "", errors.New("pre_tokenizer combination is not supported")
}

// fillSentencePiece sets the SentencePiece-style fields: scores from merge
// ranks, byte and unknown token types, the dummy-prefix flag.
func (f *hfFile) fillSentencePiece(v *Vocab) error {
	v.Model = "llama"
	ids := make(map[string]int, len(v.Tokens))
	for id, t := range v.Tokens {
		if v.Types[id] == TypeNormal {
			if _, dup := ids[t]; !dup {
				ids[t] = id
			}
		}
	}
	const unset = float32(1)
	v.Scores = make([]float32, len(v.Tokens))
	for i := range v.Scores {
		v.Scores[i] = unset
	}
	for rank, m := range f.merges {
		sp := strings.IndexByte(m, ' ')
		if id, ok := ids[m[:sp]+m[sp+1:]]; ok && v.Scores[id] == unset {
			v.Scores[id] = -float32(rank)
		}
	}
	for id, t := range v.Tokens {
		if v.Scores[id] != unset {
			continue
		}
		// Not built by any merge: single characters and bytes (whose score
		// never matters), or tokens BPE cannot reach: rank them last.
		v.Scores[id] = 0
		if v.Types[id] == TypeNormal && len([]rune(t)) > 1 && !isByteToken(t) {
			v.Scores[id] = -float32(len(f.merges) + id)
		}
	}
	for id, t := range v.Tokens {
		if v.Types[id] == TypeNormal && isByteToken(t) {
			v.Types[id] = TypeByte
		}
	}
	if f.unkToken != "" {
		if id, ok := ids[f.unkToken]; ok {
			v.Types[id] = TypeUnknown
			v.UNK = Some(id)
		} else {
			for id, t := range v.Tokens {
				if t == f.unkToken {
					v.Types[id] = TypeUnknown
					v.UNK = Some(id)
					break
				}
			}
		}
	}
	for _, c := range f.normalizer.flatten() {
		if c.Type == "Prepend" && c.Prepend == "▁" {
			v.AddSpacePrefix = true
		}
	}
	for _, c := range f.pre.flatten() {
		if c.Type == "Metaspace" {
			if c.PrependScheme != nil {
				v.AddSpacePrefix = *c.PrependScheme != "never"
			} else if c.AddPrefixSpace != nil {
				v.AddSpacePrefix = *c.AddPrefixSpace
			} else {
				v.AddSpacePrefix = true
			}
		}
	}
	return nil
}

// isByteToken reports whether t is a SentencePiece byte token "<0xNN>".
func isByteToken(t string) bool {
	return len(t) == 6 && t[:3] == "<0x" && t[5] == '>' && isHex(t[3]) && isHex(t[4])
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f')
}

// fillSpecial sets BOS/EOS/PAD/UNK, AddBOS/AddEOS and EOG.
func (f *hfFile) fillSpecial(v *Vocab, cfg *hfConfig) {
	find := func(name string) (int, bool) {
		if name == "" {
			return 0, false
		}
		for _, a := range f.added {
			if a.Content == name {
				return a.ID, true
			}
		}
		for id, t := range v.Tokens {
			if t == name {
				return id, true
			}
		}
		return 0, false
	}
	// Template post-processor: leading/trailing special tokens.
	var first, last string
	for _, c := range f.post.flatten() {
		if c.Type != "TemplateProcessing" || len(c.Single) == 0 {
			continue
		}
		if s := c.Single[0].SpecialToken; s != nil {
			first = s.ID
		}
		if s := c.Single[len(c.Single)-1].SpecialToken; s != nil && len(c.Single) > 1 {
			last = s.ID
		}
	}
	bosName, eosName, padName := "", "", ""
	if cfg != nil {
		bosName, eosName, padName = cfg.BOS, cfg.EOS, cfg.PAD
	}
	if bosName == "" {
		bosName = first
	}
	if eosName == "" {
		eosName = last
	}
	if v.Model == "llama" {
		if bosName == "" {
			bosName = "<s>"
		}
		if eosName == "" {
			eosName = "</s>"
		}
	} else if eosName == "" {
		eosName = "<|endoftext|>"
	}
	if id, ok := find(bosName); ok {
		v.BOS = Some(id)
	}
	if id, ok := find(eosName); ok {
		v.EOS = Some(id)
	}
	if id, ok := find(padName); ok {
		v.PAD = Some(id)
	}
	if cfg != nil && cfg.UNK != "" && !v.UNK.OK {
		if id, ok := find(cfg.UNK); ok {
			v.UNK = Some(id)
		}
	}
	v.AddBOS = first != "" && first == bosName
	v.AddEOS = last != "" && last == eosName
	if v.Model == "llama" && f.post == nil && (cfg == nil || cfg.AddBOS == nil) {
		v.AddBOS = v.BOS.OK // SentencePiece default
	}
	if cfg != nil {
		if cfg.AddBOS != nil {
			v.AddBOS = *cfg.AddBOS && v.BOS.OK
		}
		if cfg.AddEOS != nil {
			v.AddEOS = *cfg.AddEOS && v.EOS.OK
		}
	}
	seen := map[int]bool{}
	if v.EOS.OK {
		seen[v.EOS.ID] = true
	}
	addEOG := func(id int) {
		if !seen[id] && id >= 0 && id < len(v.Tokens) {
			seen[id] = true
			v.EOG = append(v.EOG, id)
		}
	}
	if cfg != nil {
		for _, id := range cfg.GenEOS {
			addEOG(id)
		}
	}
}

// hfConfig is what we read from tokenizer_config.json,
// special_tokens_map.json and generation_config.json.
type hfConfig struct {
	BOS, EOS, PAD, UNK string
	AddBOS, AddEOS     *bool
	GenEOS             []int
	// Added maps ids to added tokens declared in tokenizer_config.json's
	// added_tokens_decoder (used by folders without tokenizer.json).
	Added map[int]hfAddedToken
}

// readHFConfig reads the optional configuration files in dir. Missing
// files are fine; malformed ones are an error.
func readHFConfig(dir string) (*hfConfig, error) {
	cfg := &hfConfig{}
	tokName := func(raw json.RawMessage) string {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		var o struct {
			Content string `json:"content"`
		}
		if json.Unmarshal(raw, &o) == nil {
			return o.Content
		}
		return ""
	}
	type specials struct {
		BOS    json.RawMessage `json:"bos_token"`
		EOS    json.RawMessage `json:"eos_token"`
		PAD    json.RawMessage `json:"pad_token"`
		UNK    json.RawMessage `json:"unk_token"`
		AddBOS *bool           `json:"add_bos_token"`
		AddEOS *bool           `json:"add_eos_token"`
		Added  map[string]struct {
			Content string `json:"content"`
			Special bool   `json:"special"`
		} `json:"added_tokens_decoder"`
	}
	read := func(name string, dst any) error {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("tokenizer: %w", err)
		}
		if err := json.Unmarshal(data, dst); err != nil {
			return fmt.Errorf("tokenizer: %s: %w", filepath.Join(dir, name), err)
		}
		return nil
	}
	var m specials
	if err := read("special_tokens_map.json", &m); err != nil {
		return nil, err
	}
	var c specials
	if err := read("tokenizer_config.json", &c); err != nil {
		return nil, err
	}
	pick := func(a, b json.RawMessage) string {
		if s := tokName(a); s != "" {
			return s
		}
		return tokName(b)
	}
	cfg.BOS, cfg.EOS = pick(c.BOS, m.BOS), pick(c.EOS, m.EOS)
	cfg.PAD, cfg.UNK = pick(c.PAD, m.PAD), pick(c.UNK, m.UNK)
	cfg.AddBOS, cfg.AddEOS = c.AddBOS, c.AddEOS
	for k, a := range c.Added {
		var id int
		if _, err := fmt.Sscan(k, &id); err == nil && a.Content != "" {
			if cfg.Added == nil {
				cfg.Added = map[int]hfAddedToken{}
			}
			cfg.Added[id] = hfAddedToken{ID: id, Content: a.Content, Special: a.Special}
		}
	}
	var g struct {
		EOS json.RawMessage `json:"eos_token_id"`
	}
	if err := read("generation_config.json", &g); err != nil {
		return nil, err
	}
	if len(g.EOS) > 0 {
		var one int
		var many []int
		if json.Unmarshal(g.EOS, &one) == nil {
			cfg.GenEOS = []int{one}
		} else if json.Unmarshal(g.EOS, &many) == nil {
			cfg.GenEOS = many
		}
	}
	return cfg, nil
}
