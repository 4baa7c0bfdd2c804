package model

import (
	"errors"
	"fmt"
	"slices"

	"nanoserve/gguf"
	"nanoserve/tensor"
	"nanoserve/tokenizer"
)

// GGUF files (llama.cpp): hyperparameters under "<arch>.*" metadata keys,
// tensors by llama.cpp's names (token_embd, blk.N.attn_q, …), the
// tokenizer under "tokenizer.ggml.*", the chat template under
// "tokenizer.chat_template". Weights stay in the file mapping in their
// stored type; 1-D tensors (norms, biases) are decoded to float32 (aliased
// when already F32).
//
// Architecture "llama" rotates interleaved RoPE pairs (llama.cpp's
// converter permuted the Q/K rows); "qwen2" rotates halves (NEOX); "gpt2"
// has no RoPE.

func loadGGUF(path string) (*Model, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	m, err := modelFromGGUF(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	m.Files = []string{path}
	m.closers = append(m.closers, f)
	return m, nil
}

// ggufLoader collects the first error while reading tensors and keys.
type ggufLoader struct {
	f   *gguf.File
	err error
}

func (g *ggufLoader) fail(err error) {
	if g.err == nil {
		g.err = err
	}
}

// uint reads "<arch>.suffix"; missing keys give def (or an error when
// required).
func (g *ggufLoader) uint(suffix string, def int, required bool) int {
	key := g.f.Arch() + "." + suffix
	v, err := g.f.Uint(key)
	if errors.Is(err, gguf.ErrMissingKey) && !required {
		return def
	}
	if err != nil {
		g.fail(fmt.Errorf("model: %w", err))
		return def
	}
	if v > 1<<31 {
		g.fail(fmt.Errorf("model: %s = %d is too large", key, v))
		return def
	}
	return int(v)
}

func (g *ggufLoader) float(suffix string, def float64) float64 {
	key := g.f.Arch() + "." + suffix
	v, err := g.f.Float(key)
	if errors.Is(err, gguf.ErrMissingKey) {
		return def
	}
	if err != nil {
		g.fail(fmt.Errorf("model: %w", err))
		return def
	}
	return v
}

// mat returns tensor name as a (rows, cols) matrix; required tensors that
// are missing, mis-shaped or of a type the kernels cannot use are errors
// naming the tensor.
func (g *ggufLoader) mat(name string, rows, cols int, required bool) *tensor.Mat {
	t, ok := g.f.Tensor(name)
	if !ok {
		if required {
			g.fail(fmt.Errorf("model: missing tensor %s", name))
		}
		return nil
	}
	if len(t.Dims) != 2 || t.Cols() != cols || t.Rows() != rows {
		g.fail(fmt.Errorf("model: tensor %s has dims %v, want [%d %d] (hyperparameters)", name, t.Dims, cols, rows))
		return nil
	}
	if !tensor.Computable(t.Type) {
		g.fail(fmt.Errorf("model: tensor %s has unsupported type %s", name, t.Type))
		return nil
	}
	m, err := tensor.NewMat(t.Type, rows, cols, t.Data)
	if err != nil {
		g.fail(fmt.Errorf("model: tensor %s: %w", name, err))
		return nil
	}
	return m
}

// vec returns tensor name (n elements) as float32.
func (g *ggufLoader) vec(name string, n int, required bool) []float32 {
	t, ok := g.f.Tensor(name)
	if !ok {
		if required {
			g.fail(fmt.Errorf("model: missing tensor %s", name))
		}
		return nil
	}
	if t.Elements() != uint64(n) || t.Cols() != n {
		g.fail(fmt.Errorf("model: tensor %s has dims %v, want [%d] (hyperparameters)", name, t.Dims, n))
		return nil
	}
	v, err := decodeVec(t.Type, t.Data, n)
	if err != nil {
		g.fail(fmt.Errorf("model: tensor %s: %w", name, err))
	}
	return v
}

// decodeVec returns n elements of type t as float32: aliased when t is F32,
// else decoded into a new slice.
func decodeVec(t tensor.DType, data []byte, n int) ([]float32, error) {
	if !tensor.Computable(t) {
		return nil, fmt.Errorf("unsupported type %s", t)
	}
	rb, err := t.RowBytes(n)
	if err != nil {
		return nil, err
	}
	if len(data) != rb {
		return nil, fmt.Errorf("%d bytes, want %d", len(data), rb)
	}
	if t == tensor.F32 {
		return tensor.BytesF32(data), nil
	}
	v := make([]float32, n)
	tensor.DequantizeRow(v, t, data)
	return v, nil
}

// modelFromGGUF reads hyperparameters, weights, tokenizer and chat template.
func modelFromGGUF(f *gguf.File) (*Model, error) {
	arch := f.Arch()
	m := &Model{}
	c := &m.Config
	c.Format = "gguf"
	switch arch {
	case "llama", "mistral":
		c.Arch = ArchLlama
	case "qwen2":
		c.Arch, c.RopeNeox = ArchQwen2, true
	case "gpt2":
		c.Arch = ArchGPT2
	case "":
		return nil, fmt.Errorf("%w: GGUF file has no general.architecture", ErrUnknownArch)
	default:
		return nil, fmt.Errorf("%w %q (supported: llama, qwen2, gpt2)", ErrUnknownArch, arch)
	}
	g := &ggufLoader{f: f}
	c.ContextLen = g.uint("context_length", 0, true)
	c.Dim = g.uint("embedding_length", 0, true)
	c.Layers = g.uint("block_count", 0, true)
	c.HiddenDim = g.uint("feed_forward_length", 0, true)
	c.Heads = g.uint("attention.head_count", 0, true)
	c.KVHeads = g.uint("attention.head_count_kv", c.Heads, false)
	if g.err != nil {
		return nil, g.err
	}
	if c.Heads <= 0 || c.Dim <= 0 {
		return nil, fmt.Errorf("model: invalid GGUF hyperparameters: embedding_length %d, head_count %d", c.Dim, c.Heads)
	}
	c.HeadDim = g.uint("attention.key_length", c.Dim/c.Heads, false)
	if v := g.uint("attention.value_length", c.HeadDim, false); v != c.HeadDim {
		return nil, fmt.Errorf("model: attention.value_length %d != key_length %d is not supported", v, c.HeadDim)
	}
	if c.Arch == ArchGPT2 {
		c.NormEps = float32(g.float("attention.layer_norm_epsilon", 1e-5))
	} else {
		c.NormEps = float32(g.float("attention.layer_norm_rms_epsilon", 1e-5))
		c.RopeTheta = g.float("rope.freq_base", 10000)
		c.RopeDim = g.uint("rope.dimension_count", c.HeadDim, false)
		c.SlidingWindow = g.uint("attention.sliding_window", 0, false)
		if st, err := f.String(arch + ".rope.scaling.type"); err == nil && st != "none" {
			c.RopeScaling.Type = st
			c.RopeScaling.Factor = g.float("rope.scaling.factor", 1)
			c.RopeScaling.OrigContext = g.uint("rope.scaling.original_context_length", 0, false)
		}
	}
	if g.err != nil {
		return nil, g.err
	}
	if c.Dim%c.Heads != 0 && c.HeadDim == c.Dim/c.Heads {
		return nil, fmt.Errorf("model: embedding_length %d is not a multiple of head_count %d", c.Dim, c.Heads)
	}
	emb, ok := f.Tensor("token_embd.weight")
	if !ok {
		return nil, fmt.Errorf("model: missing tensor token_embd.weight")
	}
	c.Vocab = emb.Rows()
	if err := c.validate(); err != nil {
		return nil, err
	}

	dim, qd, kvd, hid := c.Dim, c.QDim(), c.KVDim(), c.HiddenDim
	w := &m.w
	w.tokEmb = g.mat("token_embd.weight", c.Vocab, dim, true)
	gpt2 := c.Arch == ArchGPT2
	if gpt2 {
		if t, ok := f.Tensor("position_embd.weight"); ok {
			w.posEmb = g.mat("position_embd.weight", t.Rows(), dim, true)
		} else {
			g.fail(fmt.Errorf("model: missing tensor position_embd.weight"))
		}
	}
	w.layers = make([]layerWeights, c.Layers)
	for i := range w.layers {
		l := &w.layers[i]
		p := fmt.Sprintf("blk.%d.", i)
		l.attnNorm = g.vec(p+"attn_norm.weight", dim, true)
		l.attnNormB = g.vec(p+"attn_norm.bias", dim, gpt2)
		if gpt2 {
			l.wqkv = g.mat(p+"attn_qkv.weight", qd+2*kvd, dim, true)
			l.bqkv = g.vec(p+"attn_qkv.bias", qd+2*kvd, false)
		} else {
			l.wq = g.mat(p+"attn_q.weight", qd, dim, true)
			l.wk = g.mat(p+"attn_k.weight", kvd, dim, true)
			l.wv = g.mat(p+"attn_v.weight", kvd, dim, true)
			l.bq = g.vec(p+"attn_q.bias", qd, c.Arch == ArchQwen2)
			l.bk = g.vec(p+"attn_k.bias", kvd, c.Arch == ArchQwen2)
			l.bv = g.vec(p+"attn_v.bias", kvd, c.Arch == ArchQwen2)
			l.wGate = g.mat(p+"ffn_gate.weight", hid, dim, true)
		}
		l.wo = g.mat(p+"attn_output.weight", dim, qd, true)
		l.bo = g.vec(p+"attn_output.bias", dim, false)
		l.ffnNorm = g.vec(p+"ffn_norm.weight", dim, true)
		l.ffnNormB = g.vec(p+"ffn_norm.bias", dim, gpt2)
		l.wUp = g.mat(p+"ffn_up.weight", hid, dim, true)
		l.bUp = g.vec(p+"ffn_up.bias", hid, false)
		l.wDown = g.mat(p+"ffn_down.weight", dim, hid, true)
		l.bDown = g.vec(p+"ffn_down.bias", dim, false)
		if g.err != nil {
			return nil, g.err
		}
	}
	w.outNorm = g.vec("output_norm.weight", dim, true)
	w.outNormB = g.vec("output_norm.bias", dim, gpt2)
	if _, ok := f.Tensor("output.weight"); ok {
		w.output = g.mat("output.weight", c.Vocab, dim, true)
	} else {
		w.output, c.Tied = w.tokEmb, true
	}
	if c.RopeDim > 0 {
		w.ropeFreqs = g.vec("rope_freqs.weight", c.RopeDim/2, false)
	}
	if g.err != nil {
		return nil, g.err
	}

	for _, t := range f.Tensors {
		shape := make([]int, len(t.Dims))
		for i, d := range t.Dims {
			shape[len(t.Dims)-1-i] = int(d)
		}
		m.Tensors = append(m.Tensors, TensorDesc{Name: t.Name, Type: t.Type, Shape: shape})
	}

	if _, err := f.Strings("tokenizer.ggml.tokens"); err == nil {
		v, err := vocabFromGGUF(f)
		if err != nil {
			return nil, err
		}
		tk, err := tokenizer.FromVocab(v)
		if err != nil {
			return nil, fmt.Errorf("model: GGUF tokenizer: %w", err)
		}
		m.Tokenizer = tk
	}
	m.Gen.ChatTemplate, _ = f.String("tokenizer.chat_template")
	return m, nil
}

// vocabFromGGUF reads the tokenizer.ggml.* metadata into a Vocab: model,
// pre-tokenizer, tokens, scores, token types, merges, special token ids,
// and the add-BOS/EOS/space-prefix flags (with llama.cpp's defaults when
// absent: SentencePiece models add BOS and a space prefix, byte-level ones
// neither).
func vocabFromGGUF(f *gguf.File) (tokenizer.Vocab, error) {
	var v tokenizer.Vocab
	var err error
	fail := func(e error) (tokenizer.Vocab, error) {
		return tokenizer.Vocab{}, fmt.Errorf("model: GGUF tokenizer: %w", e)
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
	switch v.Pre {
	case "llama3", "llama-v3", "llama-bpe":
		v.IgnoreMerges = true
	}
	return v, nil
}

// loadGGUFTokenizer reads only the tokenizer of a GGUF file.
func loadGGUFTokenizer(path string) (*tokenizer.Tokenizer, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	defer f.Close()
	v, err := vocabFromGGUF(f)
	if err != nil {
		return nil, err
	}
	// The Vocab's strings live in the metadata, not the mapping, so they
	// outlive Close.
	tk, err := tokenizer.FromVocab(v)
	if err != nil {
		return nil, fmt.Errorf("model: GGUF tokenizer: %w", err)
	}
	return tk, nil
}
