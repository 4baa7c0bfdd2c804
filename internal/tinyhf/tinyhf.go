// Package tinyhf writes tiny seeded random-weight Hugging Face checkpoints
// — Llama (grouped-query attention), Qwen2 (Q/K/V biases) and GPT-2
// (Conv1D weights) — together with a tiny byte-level BPE tokenizer, for
// format-parity tests: the same weights written as a Hugging Face
// directory, converted to GGUF, and (Llama) written as a llama2.c
// checkpoint must give the same logits.
//
// Weights are generated in one canonical layout and then written in each
// format's own convention, independently of the code under test:
//
//   - Canonical Q/K rows rotate interleaved RoPE pairs (llama2.c's
//     convention). Hugging Face Llama rotates halves, so its q_proj/k_proj
//     hold, in head h, row j·d/2+i = canonical row 2i+j (i < d/2, j ∈ {0,1}).
//     Qwen2 has no interleaved form: its canonical rows are the HF rows.
//   - Canonical matrices are (out, in). GPT-2's Conv1D stores (in, out), so
//     c_attn, c_proj and c_fc are written transposed.
//
// Every value is rounded to F16 precision, so F16 conversions are exact.
// Each tensor draws from its own PCG stream seeded by (Spec.Seed, name),
// so outputs do not depend on generation order.
package tinyhf

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"nanoserve/safetensors"
	"nanoserve/tensor"
)

// Architectures.
const (
	Llama = "llama"
	Qwen2 = "qwen2"
	GPT2  = "gpt2"
)

// Spec describes a tiny model.
type Spec struct {
	Arch                string // Llama, Qwen2 or GPT2
	Dim, Layers, Hidden int
	Heads, KVHeads      int // GPT-2: KVHeads = Heads
	Ctx                 int // maximum positions
	Vocab               int // embedding rows; ≥ TokenizerSize() (extra rows are padding)
	Tied                bool
	RopeTheta           float64
	NormEps             float64
	Seed                uint64
}

// LlamaSpec is a 2-layer Llama with 4 query heads sharing 2 KV heads, an
// untied output and a vocabulary padded beyond the tokenizer; its RoPE
// theta and epsilon are llama2.c's fixed values.
func LlamaSpec() Spec {
	return Spec{Arch: Llama, Dim: 64, Layers: 2, Hidden: 160, Heads: 4, KVHeads: 2, Ctx: 128,
		Vocab: TokenizerSize() + 19, RopeTheta: 10000, NormEps: 1e-5, Seed: 1}
}

// Qwen2Spec is a 2-layer Qwen2 (biases on Q/K/V, θ = 1e6, tied).
func Qwen2Spec() Spec {
	return Spec{Arch: Qwen2, Dim: 64, Layers: 2, Hidden: 128, Heads: 4, KVHeads: 2, Ctx: 128,
		Vocab: TokenizerSize(), Tied: true, RopeTheta: 1e6, NormEps: 1e-6, Seed: 2}
}

// GPT2Spec is a 2-layer GPT-2 (learned positions, LayerNorm, tied).
func GPT2Spec() Spec {
	return Spec{Arch: GPT2, Dim: 64, Layers: 2, Hidden: 256, Heads: 4, KVHeads: 4, Ctx: 64,
		Vocab: TokenizerSize(), Tied: true, NormEps: 1e-5, Seed: 3}
}

func (s *Spec) headDim() int { return s.Dim / s.Heads }

func (s *Spec) check() error {
	switch {
	case s.Arch != Llama && s.Arch != Qwen2 && s.Arch != GPT2:
		return fmt.Errorf("tinyhf: unknown architecture %q", s.Arch)
	case s.Dim <= 0 || s.Layers <= 0 || s.Hidden <= 0 || s.Heads <= 0 || s.KVHeads <= 0 || s.Ctx <= 0:
		return fmt.Errorf("tinyhf: invalid dimensions %+v", *s)
	case s.Dim%s.Heads != 0 || s.Heads%s.KVHeads != 0 || s.headDim()%2 != 0:
		return fmt.Errorf("tinyhf: dim %d, heads %d, kv heads %d do not divide evenly", s.Dim, s.Heads, s.KVHeads)
	case s.Arch == GPT2 && s.KVHeads != s.Heads:
		return fmt.Errorf("tinyhf: gpt2 needs kv heads = heads")
	case s.Vocab < TokenizerSize():
		return fmt.Errorf("tinyhf: vocab %d is smaller than the tokenizer's %d tokens", s.Vocab, TokenizerSize())
	}
	return nil
}

// mat is a canonical tensor: (rows, cols) row-major, or a vector (rows 1).
type mat struct {
	rows, cols int
	v          []float32
}

// Weights are a model's canonical tensors by role.
type Weights struct {
	spec   Spec
	tokEmb mat // (vocab, dim)
	posEmb mat // (ctx, dim) GPT-2
	layers []layer
	norm   mat // (dim) final gain
	normB  mat // (dim) GPT-2 final bias
	output mat // (vocab, dim) untied only
}

type layer struct {
	attnNorm, attnNormB mat // (dim)
	wq, wk, wv          mat // (q_dim, dim), (kv_dim, dim), (kv_dim, dim); canonical (interleaved) Q/K
	bq, bk, bv          mat // Qwen2 biases; GPT-2: fused below
	wo, bo              mat // (dim, q_dim), (dim)
	ffnNorm, ffnNormB   mat
	wGate, wUp, wDown   mat // (hidden, dim), (hidden, dim), (dim, hidden)
	bUp, bDown          mat // GPT-2
}

// gen draws tensors from per-name streams.
type gen struct{ seed uint64 }

func (g gen) rng(name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(g.seed, h.Sum64()))
}

// f16 rounds x to the nearest F16 value.
func f16(x float64) float32 { return tensor.F16ToF32(tensor.F32ToF16(float32(x))) }

func (g gen) normal(name string, rows, cols int, mean, std float64) mat {
	r := g.rng(name)
	m := mat{rows, cols, make([]float32, rows*cols)}
	for i := range m.v {
		m.v[i] = f16(mean + std*r.NormFloat64())
	}
	return m
}

// Generate draws the canonical weights of s.
func Generate(s Spec) (*Weights, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	g := gen{s.Seed}
	d, hd := s.Dim, s.headDim()
	qd, kvd := s.Heads*hd, s.KVHeads*hd
	w := &Weights{spec: s}
	lin := func(name string, out, in int) mat { return g.normal(name, out, in, 0, 1/math.Sqrt(float64(in))) }
	vec := func(name string, n int, mean, std float64) mat { return g.normal(name, 1, n, mean, std) }
	w.tokEmb = g.normal("tok_emb", s.Vocab, d, 0, 1)
	if s.Arch == GPT2 {
		w.posEmb = g.normal("pos_emb", s.Ctx, d, 0, 0.3)
	}
	for l := range s.Layers {
		p := fmt.Sprintf("l%d.", l)
		ly := layer{
			attnNorm: vec(p+"attn_norm", d, 1, 0.1),
			wq:       lin(p+"wq", qd, d),
			wk:       lin(p+"wk", kvd, d),
			wv:       lin(p+"wv", kvd, d),
			wo:       lin(p+"wo", d, qd),
			ffnNorm:  vec(p+"ffn_norm", d, 1, 0.1),
			wUp:      lin(p+"w_up", s.Hidden, d),
			wDown:    lin(p+"w_down", d, s.Hidden),
		}
		switch s.Arch {
		case Llama, Qwen2:
			ly.wGate = lin(p+"w_gate", s.Hidden, d)
			if s.Arch == Qwen2 {
				ly.bq = vec(p+"bq", qd, 0, 0.5)
				ly.bk = vec(p+"bk", kvd, 0, 0.5)
				ly.bv = vec(p+"bv", kvd, 0, 0.5)
			}
		case GPT2:
			ly.attnNormB = vec(p+"attn_norm_b", d, 0, 0.1)
			ly.ffnNormB = vec(p+"ffn_norm_b", d, 0, 0.1)
			ly.bq = vec(p+"bq", qd, 0, 0.2)
			ly.bk = vec(p+"bk", kvd, 0, 0.2)
			ly.bv = vec(p+"bv", kvd, 0, 0.2)
			ly.bo = vec(p+"bo", d, 0, 0.1)
			ly.bUp = vec(p+"b_up", s.Hidden, 0, 0.1)
			ly.bDown = vec(p+"b_down", d, 0, 0.1)
		}
		w.layers = append(w.layers, ly)
	}
	w.norm = vec("norm", d, 2, 0.2)
	if s.Arch == GPT2 {
		w.normB = vec("norm_b", d, 0, 0.1)
	}
	if !s.Tied {
		w.output = lin("output", s.Vocab, d)
	}
	return w, nil
}

// halves returns m's rows (heads of hd rows, interleaved-pair order) in
// Hugging Face halves order: row j·hd/2+i of a head is row 2i+j.
func halves(m mat, hd int) mat {
	out := mat{m.rows, m.cols, make([]float32, len(m.v))}
	for h := 0; h < m.rows/hd; h++ {
		for i := 0; i < hd/2; i++ {
			for j := 0; j < 2; j++ {
				dst, src := h*hd+j*hd/2+i, h*hd+2*i+j
				copy(out.v[dst*m.cols:(dst+1)*m.cols], m.v[src*m.cols:(src+1)*m.cols])
			}
		}
	}
	return out
}

// transposed returns m as (cols, rows).
func transposed(m mat) mat {
	out := mat{m.cols, m.rows, make([]float32, len(m.v))}
	for r := range m.rows {
		for c := range m.cols {
			out.v[c*m.rows+r] = m.v[r*m.cols+c]
		}
	}
	return out
}

// concatRows stacks matrices (or vectors, as one long vector).
func concatRows(ms ...mat) mat {
	out := mat{cols: ms[0].cols}
	vecs := ms[0].rows == 1
	for _, m := range ms {
		out.v = append(out.v, m.v...)
		out.rows += m.rows
	}
	if vecs {
		out.rows, out.cols = 1, len(out.v)
	}
	return out
}

// Write writes s's weights as a Hugging Face directory: config.json,
// generation_config.json, tokenizer_config.json, vocab.json, merges.txt and
// model.safetensors (F32).
func Write(dir string, s Spec) error {
	w, err := Generate(s)
	if err != nil {
		return err
	}
	return w.WriteHF(dir)
}

// WriteHF writes the weights as a Hugging Face directory (see Write).
func (w *Weights) WriteHF(dir string) error {
	s := w.spec
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("tinyhf: %w", err)
	}
	var ts []safetensors.Tensor
	add := func(name string, m mat) {
		shape := []int{m.rows, m.cols}
		if m.rows == 1 {
			shape = []int{m.cols}
		}
		ts = append(ts, safetensors.Tensor{Name: name, DType: "F32", Shape: shape, Data: tensor.F32Bytes(m.v)})
	}
	hd := s.headDim()
	var cfg map[string]any
	switch s.Arch {
	case Llama, Qwen2:
		add("model.embed_tokens.weight", w.tokEmb)
		for l, ly := range w.layers {
			p := fmt.Sprintf("model.layers.%d.", l)
			wq, wk, bq, bk := ly.wq, ly.wk, ly.bq, ly.bk
			if s.Arch == Llama {
				wq, wk = halves(wq, hd), halves(wk, hd)
			}
			add(p+"input_layernorm.weight", ly.attnNorm)
			add(p+"self_attn.q_proj.weight", wq)
			add(p+"self_attn.k_proj.weight", wk)
			add(p+"self_attn.v_proj.weight", ly.wv)
			if s.Arch == Qwen2 {
				add(p+"self_attn.q_proj.bias", bq)
				add(p+"self_attn.k_proj.bias", bk)
				add(p+"self_attn.v_proj.bias", ly.bv)
			}
			add(p+"self_attn.o_proj.weight", ly.wo)
			add(p+"post_attention_layernorm.weight", ly.ffnNorm)
			add(p+"mlp.gate_proj.weight", ly.wGate)
			add(p+"mlp.up_proj.weight", ly.wUp)
			add(p+"mlp.down_proj.weight", ly.wDown)
		}
		add("model.norm.weight", w.norm)
		if !s.Tied {
			add("lm_head.weight", w.output)
		}
		arch := "LlamaForCausalLM"
		if s.Arch == Qwen2 {
			arch = "Qwen2ForCausalLM"
		}
		cfg = map[string]any{
			"architectures": []string{arch}, "model_type": s.Arch,
			"hidden_size": s.Dim, "intermediate_size": s.Hidden, "num_hidden_layers": s.Layers,
			"num_attention_heads": s.Heads, "num_key_value_heads": s.KVHeads, "head_dim": hd,
			"max_position_embeddings": s.Ctx, "rope_theta": s.RopeTheta, "rms_norm_eps": s.NormEps,
			"vocab_size": s.Vocab, "tie_word_embeddings": s.Tied, "hidden_act": "silu",
			"bos_token_id": eotID, "eos_token_id": eotID, "torch_dtype": "float32",
		}
	case GPT2:
		add("transformer.wte.weight", w.tokEmb)
		add("transformer.wpe.weight", w.posEmb)
		for l, ly := range w.layers {
			p := fmt.Sprintf("transformer.h.%d.", l)
			add(p+"ln_1.weight", ly.attnNorm)
			add(p+"ln_1.bias", ly.attnNormB)
			add(p+"attn.c_attn.weight", transposed(concatRows(ly.wq, ly.wk, ly.wv)))
			add(p+"attn.c_attn.bias", concatRows(ly.bq, ly.bk, ly.bv))
			add(p+"attn.c_proj.weight", transposed(ly.wo))
			add(p+"attn.c_proj.bias", ly.bo)
			add(p+"ln_2.weight", ly.ffnNorm)
			add(p+"ln_2.bias", ly.ffnNormB)
			add(p+"mlp.c_fc.weight", transposed(ly.wUp))
			add(p+"mlp.c_fc.bias", ly.bUp)
			add(p+"mlp.c_proj.weight", transposed(ly.wDown))
			add(p+"mlp.c_proj.bias", ly.bDown)
		}
		add("transformer.ln_f.weight", w.norm)
		add("transformer.ln_f.bias", w.normB)
		cfg = map[string]any{
			"architectures": []string{"GPT2LMHeadModel"}, "model_type": "gpt2",
			"n_embd": s.Dim, "n_layer": s.Layers, "n_head": s.Heads, "n_inner": s.Hidden,
			"n_positions": s.Ctx, "n_ctx": s.Ctx, "vocab_size": s.Vocab, "layer_norm_epsilon": s.NormEps,
			"activation_function": "gelu_new", "tie_word_embeddings": true,
			"bos_token_id": eotID, "eos_token_id": eotID, "torch_dtype": "float32",
		}
	}
	if err := safetensors.Write(filepath.Join(dir, "model.safetensors"), ts, map[string]string{"format": "pt"}); err != nil {
		return fmt.Errorf("tinyhf: %w", err)
	}
	files := map[string]any{
		"config.json":            cfg,
		"generation_config.json": map[string]any{"bos_token_id": eotID, "eos_token_id": eotID},
		"tokenizer_config.json": map[string]any{
			"add_bos_token": false, "add_prefix_space": false, "bos_token": eotText, "eos_token": eotText,
			"unk_token": eotText, "model_max_length": s.Ctx, "tokenizer_class": "GPT2Tokenizer",
		},
	}
	for name, v := range files {
		if err := writeJSON(filepath.Join(dir, name), v); err != nil {
			return err
		}
	}
	return WriteTokenizer(dir)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("tinyhf: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("tinyhf: %w", err)
	}
	return nil
}

// WriteLlama2C writes Llama weights as a llama2.c (version 0) checkpoint:
// the canonical, interleaved-RoPE layout, float32.
func (w *Weights) WriteLlama2C(path string) error {
	s := w.spec
	if s.Arch != Llama {
		return fmt.Errorf("tinyhf: llama2.c holds only Llama models, not %s", s.Arch)
	}
	if s.RopeTheta != 10000 || s.NormEps != 1e-5 {
		return fmt.Errorf("tinyhf: llama2.c fixes rope theta 10000 and eps 1e-5")
	}
	vocab := int32(s.Vocab)
	if !s.Tied {
		vocab = -vocab
	}
	var b []byte
	for _, x := range []int32{int32(s.Dim), int32(s.Hidden), int32(s.Layers), int32(s.Heads), int32(s.KVHeads), vocab, int32(s.Ctx)} {
		b = binary.LittleEndian.AppendUint32(b, uint32(x))
	}
	put := func(v []float32) {
		for _, x := range v {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
	}
	each := func(f func(l *layer) mat) {
		for i := range w.layers {
			put(f(&w.layers[i]).v)
		}
	}
	put(w.tokEmb.v)
	each(func(l *layer) mat { return l.attnNorm })
	each(func(l *layer) mat { return l.wq })
	each(func(l *layer) mat { return l.wk })
	each(func(l *layer) mat { return l.wv })
	each(func(l *layer) mat { return l.wo })
	each(func(l *layer) mat { return l.ffnNorm })
	each(func(l *layer) mat { return l.wGate })
	each(func(l *layer) mat { return l.wDown })
	each(func(l *layer) mat { return l.wUp })
	put(w.norm.v)
	hd := s.headDim()
	for _, fn := range []func(float64) float64{math.Cos, math.Sin} { // freq_cis_real, freq_cis_imag
		for pos := range s.Ctx {
			for i := 0; i < hd/2; i++ {
				put([]float32{float32(fn(float64(pos) * math.Pow(10000, -float64(2*i)/float64(hd))))})
			}
		}
	}
	if !s.Tied {
		put(w.output.v)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("tinyhf: %w", err)
	}
	return nil
}

// The tokenizer: GPT-2's byte alphabet, a few merges, and <|endoftext|>.
const eotText = "<|endoftext|>"

var merges = []string{
	"Ġ t", "h e", "Ġt he", "i n", "e r", "a n", "o n", "Ġ a", "r e", "Ġ s", "e n", "a t", "o r",
	"Ġ w", "Ġ o", "i s", "Ġ b", "Ġ c", "e d", "Ġ f", "in g", "Ġ i", "o u", "Ġ d", "l l", "Ġ h",
	"Ġ m", "Ġ p", "a r", "l e", "e s", "Ġa n", "Ġan d", "Ġo f", "Ġ l", "o w", "Ġ n", "a l",
}

// eotID is <|endoftext|>'s id: after the 256 byte symbols and the merges.
var eotID = 256 + len(merges)

// TokenizerSize is the number of tokens WriteTokenizer writes.
func TokenizerSize() int { return eotID + 1 }

// byteSymbols is GPT-2's map from bytes to printable characters.
func byteSymbols() [256]string {
	var out [256]string
	n := 0
	for b := range 256 {
		if ('!' <= b && b <= '~') || ('¡' <= b && b <= '¬') || ('®' <= b && b <= 'ÿ') {
			out[b] = string(rune(b))
		} else {
			out[b] = string(rune(256 + n))
			n++
		}
	}
	return out
}

// WriteTokenizer writes vocab.json and merges.txt (GPT-2 byte-level BPE).
func WriteTokenizer(dir string) error {
	vocab := map[string]int{}
	syms := byteSymbols()
	for b, s := range syms {
		vocab[s] = b
	}
	for i, m := range merges {
		l, r, ok := strings.Cut(m, " ")
		if _, okL := vocab[l]; !ok || !okL {
			return fmt.Errorf("tinyhf: merge %q: unknown left part", m)
		}
		if _, okR := vocab[r]; !okR {
			return fmt.Errorf("tinyhf: merge %q: unknown right part", m)
		}
		if _, dup := vocab[l+r]; dup {
			return fmt.Errorf("tinyhf: merge %q: duplicate result", m)
		}
		vocab[l+r] = 256 + i
	}
	vocab[eotText] = eotID
	if err := writeJSON(filepath.Join(dir, "vocab.json"), vocab); err != nil {
		return err
	}
	txt := "#version: 0.2\n" + strings.Join(merges, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "merges.txt"), []byte(txt), 0o644); err != nil {
		return fmt.Errorf("tinyhf: %w", err)
	}
	return nil
}
