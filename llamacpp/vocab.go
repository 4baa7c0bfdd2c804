package llamacpp

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"nanoserve/gguf"
	"nanoserve/tokenizer"
)

// The GGUF vocabulary: tokenizer.ggml.* metadata (llama.cpp's
// llama_vocab::load, gguf-py's GGUFWriter.add_tokenizer_model, add_token_list,
// …), read into a tokenizer.Vocab and written from one.

// ReadVocab reads the tokenizer.ggml.* metadata into a Vocab: model,
// pre-tokenizer, tokens, scores, token types, merges, special token ids,
// and the add-BOS/EOS/space-prefix flags (with llama.cpp's defaults when
// absent: SentencePiece models add BOS and a space prefix, byte-level ones
// neither).
func ReadVocab(f *gguf.File) (tokenizer.Vocab, error) {
	var v tokenizer.Vocab
	var err error
	fail := func(e error) (tokenizer.Vocab, error) {
		return tokenizer.Vocab{}, fmt.Errorf("GGUF tokenizer: %w", e)
	}
	if v.Model, err = f.String("tokenizer.ggml.model"); err != nil {
		return fail(err)
	}
	if v.Tokens, err = f.Strings("tokenizer.ggml.tokens"); err != nil {
		return fail(err)
	}
	n := len(v.Tokens)
	optional := func(err error) bool { return errors.Is(err, gguf.ErrMissingKey) }
	if v.Pre, err = f.String("tokenizer.ggml.pre"); err != nil && !optional(err) {
		return fail(err)
	}
	if v.Scores, err = f.Float32s("tokenizer.ggml.scores"); err != nil && !optional(err) {
		return fail(err)
	}
	if v.Scores != nil && len(v.Scores) != n {
		return fail(fmt.Errorf("%d scores for %d tokens", len(v.Scores), n))
	}
	types, err := f.Int32s("tokenizer.ggml.token_type")
	if err != nil && !optional(err) {
		return fail(err)
	}
	if types != nil {
		if len(types) != n {
			return fail(fmt.Errorf("%d token types for %d tokens", len(types), n))
		}
		v.Types = make([]tokenizer.TokenType, n)
		for i, t := range types {
			v.Types[i] = tokenizer.TokenType(t)
		}
	}
	if v.Merges, err = f.Strings("tokenizer.ggml.merges"); err != nil && !optional(err) {
		return fail(err)
	}
	id := func(key string) (tokenizer.OptID, error) {
		x, err := f.Uint("tokenizer.ggml." + key)
		if optional(err) {
			return tokenizer.OptID{}, nil
		}
		if err != nil {
			return tokenizer.OptID{}, err
		}
		if x >= uint64(n) {
			return tokenizer.OptID{}, fmt.Errorf("tokenizer.ggml.%s %d outside vocabulary of %d", key, x, n)
		}
		return tokenizer.Some(int(x)), nil
	}
	for key, dst := range map[string]*tokenizer.OptID{"bos_token_id": &v.BOS, "eos_token_id": &v.EOS, "unknown_token_id": &v.UNK, "padding_token_id": &v.PAD} {
		if *dst, err = id(key); err != nil {
			return fail(err)
		}
	}
	// FIM tokens: llama.cpp's keys, then its deprecated ones (missing ones
	// the tokenizer finds by text, see tokenizer.FIMTokens).
	for _, k := range FIMKeys(&v.FIM) {
		for _, key := range []string{k.Key, k.Old} {
			if key == "" || k.ID.OK {
				continue
			}
			if *k.ID, err = id(key); err != nil {
				return fail(err)
			}
		}
	}
	if b, err := f.Bool(KeyFIMSuffixFirst); err == nil {
		v.FIM.SuffixFirst = b
	} else if !errors.Is(err, gguf.ErrMissingKey) {
		return fail(err)
	}
	for _, key := range []string{"eot_token_id", "eom_token_id"} {
		o, err := id(key)
		if err != nil {
			return fail(err)
		}
		if o.OK && !slices.Contains(v.EOG, o.ID) {
			v.EOG = append(v.EOG, o.ID)
		}
	}
	flag := func(key string, def bool) (bool, error) {
		b, err := f.Bool("tokenizer.ggml." + key)
		if optional(err) {
			return def, nil
		}
		return b, err
	}
	sp := v.Model == "llama"
	if v.AddBOS, err = flag("add_bos_token", sp); err != nil {
		return fail(err)
	}
	if v.AddEOS, err = flag("add_eos_token", false); err != nil {
		return fail(err)
	}
	if v.AddSpacePrefix, err = flag("add_space_prefix", sp); err != nil {
		return fail(err)
	}
	if v.Model == "gemma4" {
		v.AddBOS = true // llama.cpp overrides add_bos_token for Gemma 4's tokenizer
	}
	if v.Model == "bert" {
		if err := readWordPiece(f, &v); err != nil {
			return fail(err)
		}
	}
	tokenizer.LlamaCppTypeFixes(&v) // phi-3's "</s>" is control, as in llama.cpp
	v.LlamaCppRules = true
	if name, err := f.String("general.name"); err == nil {
		phi3RStrip(&v, name)
	}
	switch v.Pre {
	case "llama3", "llama-v3", "llama-bpe":
		v.IgnoreMerges = true
	}
	return v, nil
}

// readWordPiece applies llama.cpp's WordPiece (BERT) defaults — [UNK] is
// id 100 and [CLS] (id 101) the BOS that prompts start with — and its
// normaliser keys (lowercase, and strip_accents, which defaults to
// lowercase).
func readWordPiece(f *gguf.File, v *tokenizer.Vocab) error {
	n := len(v.Tokens)
	if !v.UNK.OK && n > 100 {
		v.UNK = tokenizer.Some(100)
	}
	if !v.BOS.OK && n > 101 {
		v.BOS = tokenizer.Some(101)
	}
	if b, err := f.Bool("tokenizer.ggml.add_bos_token"); err == nil {
		v.AddBOS = b
	} else if errors.Is(err, gguf.ErrMissingKey) {
		v.AddBOS = true
	} else {
		return err
	}
	lower, strip := true, true
	if b, err := f.Bool("tokenizer.ggml.normalizer.lowercase"); err == nil {
		lower, strip = b, b
	} else if !errors.Is(err, gguf.ErrMissingKey) {
		return err
	}
	if b, err := f.Bool("tokenizer.ggml.normalizer.strip_accents"); err == nil {
		strip = b
	} else if !errors.Is(err, gguf.ErrMissingKey) {
		return err
	}
	v.Cased, v.KeepAccents = !lower, !strip
	return nil
}

// phi3RStrip applies llama.cpp's rule for models named phi-3 / phi3 (any
// case): every special token (control, user-defined, unknown) and "</s>"
// take the whitespace after them, except "<unk>", "<s>" and "<|endoftext|>".
func phi3RStrip(v *tokenizer.Vocab, name string) {
	name = strings.ToLower(name)
	if !strings.Contains(name, "phi-3") && !strings.Contains(name, "phi3") || v.Types == nil {
		return
	}
	for id, ty := range v.Types {
		switch ty {
		case tokenizer.TypeControl, tokenizer.TypeUserDefined, tokenizer.TypeUnknown:
		default:
			if v.Tokens[id] != "</s>" {
				continue
			}
		}
		switch v.Tokens[id] {
		case "<unk>", "<s>", "<|endoftext|>":
			continue
		}
		v.RStrip = append(v.RStrip, id)
	}
}

// TokenizerFromGGUF builds the tokenizer a GGUF file carries.
func TokenizerFromGGUF(f *gguf.File) (*tokenizer.Tokenizer, error) {
	v, err := ReadVocab(f)
	if err != nil {
		return nil, err
	}
	// The Vocab's strings live in the metadata, not the mapping, so they
	// outlive the file.
	tk, err := tokenizer.FromVocab(v)
	if err != nil {
		return nil, fmt.Errorf("GGUF tokenizer: %w", err)
	}
	return tk, nil
}

// LoadTokenizer reads only the tokenizer of the GGUF file at path
// (tokenizer.Load leaves GGUF files to this package).
func LoadTokenizer(path string) (*tokenizer.Tokenizer, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return TokenizerFromGGUF(f)
}

// VocabKVs writes v as tokenizer.ggml.* entries the way llama.cpp's
// converter does: padded with "[PADn]" tokens (type unused, score −1000)
// up to size, tokenizer.ggml.pre "default" for SentencePiece ("llama")
// vocabularies and "gpt-2" for a byte-level one without its own, types
// NORMAL where v has none, the special ids v names, eot_token_id for the
// first of eot (end-of-generation ids the vocabulary does not infer by
// itself), and the add-BOS/EOS (and, for SentencePiece, space-prefix)
// flags. Vocabulary models other than "llama", "gpt2" and "gemma4" are an
// error.
func VocabKVs(v tokenizer.Vocab, size int, eot []int) ([]gguf.KV, error) {
	n := len(v.Tokens)
	size = max(size, n)
	tokens := make([]string, size)
	types := make([]int32, size)
	var scores []float32
	if v.Scores != nil || v.Model == "llama" {
		scores = make([]float32, size)
	}
	for id := range size {
		if id < n {
			tokens[id] = v.Tokens[id]
			types[id] = int32(tokenizer.TypeNormal)
			if v.Types != nil {
				types[id] = int32(v.Types[id])
			}
			if v.Scores != nil {
				scores[id] = v.Scores[id]
			}
			continue
		}
		tokens[id] = fmt.Sprintf("[PAD%d]", id)
		types[id] = int32(tokenizer.TypeUnused)
		if scores != nil {
			scores[id] = -1000
		}
	}
	var kvs []gguf.KV
	add := func(k string, val gguf.Value) { kvs = append(kvs, gguf.KV{Key: "tokenizer.ggml." + k, Value: val}) }
	switch v.Model {
	case "llama":
		add("model", gguf.String("llama"))
		add("pre", gguf.String("default"))
	case "gpt2":
		add("model", gguf.String("gpt2"))
		pre := v.Pre
		switch pre {
		case "", "gpt2":
			pre = "gpt-2"
		}
		add("pre", gguf.String(pre))
	case "gemma4":
		add("model", gguf.String("gemma4")) // llama.cpp names its pre-tokenizer itself
	default:
		return nil, fmt.Errorf("tokenizer model %q", v.Model)
	}
	add("tokens", gguf.NewArray(tokens))
	if scores != nil {
		add("scores", gguf.NewArray(scores))
	}
	add("token_type", gguf.NewArray(types))
	if len(v.Merges) > 0 {
		add("merges", gguf.NewArray(v.Merges))
	}
	id := func(k string, o tokenizer.OptID) {
		if o.OK {
			add(k, gguf.Uint32(uint32(o.ID)))
		}
	}
	id("bos_token_id", v.BOS)
	id("eos_token_id", v.EOS)
	id("unknown_token_id", v.UNK)
	id("padding_token_id", v.PAD)
	for _, k := range FIMKeys(&v.FIM) {
		id(k.Key, *k.ID)
	}
	if len(eot) > 0 {
		add("eot_token_id", gguf.Uint32(uint32(eot[0])))
	}
	if v.FIM.SuffixFirst {
		kvs = append(kvs, gguf.KV{Key: KeyFIMSuffixFirst, Value: gguf.Bool(true)})
	}
	add("add_bos_token", gguf.Bool(v.AddBOS))
	add("add_eos_token", gguf.Bool(v.AddEOS))
	if v.Model == "llama" {
		add("add_space_prefix", gguf.Bool(v.AddSpacePrefix))
	}
	return kvs, nil
}

// KeyFIMSuffixFirst marks a model trained to read FIM prompts suffix
// first (tokenizer.FIMTokens.SuffixFirst). llama.cpp has no such key (its
// server takes --spm-infill instead); nanoserve's trainer writes it.
const KeyFIMSuffixFirst = "nanoserve.fim.suffix_first"

// SuffixFirst reports whether FIM prompts for tk's model are laid out
// suffix first: when asked (spmInfill, llama-server's --spm-infill) or
// when the model was trained so. A nil tokenizer has no mark.
func SuffixFirst(tk *tokenizer.Tokenizer, spmInfill bool) bool {
	return spmInfill || tk != nil && tk.FIM().SuffixFirst
}

// FIMKey names one FIM token's GGUF key (after "tokenizer.ggml.") and the
// deprecated key older files use ("" if none).
type FIMKey struct {
	Key, Old string
	ID       *tokenizer.OptID
}

// FIMKeys lists llama.cpp's tokenizer.ggml.fim_*_token_id keys with the
// fields of f they fill.
func FIMKeys(f *tokenizer.FIMTokens) []FIMKey {
	return []FIMKey{
		{"fim_pre_token_id", "prefix_token_id", &f.Pre},
		{"fim_suf_token_id", "suffix_token_id", &f.Suf},
		{"fim_mid_token_id", "middle_token_id", &f.Mid},
		{"fim_pad_token_id", "", &f.Pad},
		{"fim_rep_token_id", "", &f.Rep},
		{"fim_sep_token_id", "", &f.Sep},
	}
}
