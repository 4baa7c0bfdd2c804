package model

import (
	"encoding/binary"
	"fmt"
	"strconv"

	"nanoserve/internal/mmap"
	"nanoserve/tensor"
)

// llama2.c legacy (version 0) checkpoint: seven little-endian int32
// {dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len}
// (vocab_size < 0: the classifier is stored separately at the end), then
// float32 tensors in this order:
//
//	token_embedding (vocab, dim)
//	rms_att (layers, dim)
//	wq (layers, dim, dim)   wk (layers, kv_dim, dim)   wv (layers, kv_dim, dim)
//	wo (layers, dim, dim)
//	rms_ffn (layers, dim)
//	w1 (layers, hidden, dim)   w2 (layers, dim, hidden)   w3 (layers, hidden, dim)
//	rms_final (dim)
//	freq_cis_real, freq_cis_imag (seq_len, head_size/2)   unused
//	wcls (vocab, dim)   only when vocab_size < 0
//
// RoPE rotates interleaved pairs with θ = 10000, RMSNorm eps is 1e-5.

const llama2cHeader = 7 * 4

func loadLlama2c(path string) (*Model, error) {
	mp, err := mmap.Open(path)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	m, err := parseLlama2c(mp.Bytes())
	if err != nil {
		mp.Close()
		return nil, fmt.Errorf("%w (%s)", err, baseName(path))
	}
	m.Files = []string{path}
	m.closers = append(m.closers, mp)
	return m, nil
}

// parseLlama2c builds a model whose weights point into data.
func parseLlama2c(data []byte) (*Model, error) {
	if len(data) < llama2cHeader {
		return nil, fmt.Errorf("model: llama2.c file too short for its header (%d bytes)", len(data))
	}
	var h [7]int
	for i := range h {
		h[i] = int(int32(binary.LittleEndian.Uint32(data[4*i:])))
	}
	dim, hidden, layers, heads, kvHeads, vocab, seqLen := h[0], h[1], h[2], h[3], h[4], h[5], h[6]
	shared := vocab > 0
	if vocab < 0 {
		vocab = -vocab
	}
	const limit = 1 << 20
	for i, v := range []int{dim, hidden, layers, heads, kvHeads, vocab, seqLen} {
		if v <= 0 || v > limit*16 {
			names := []string{"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"}
			return nil, fmt.Errorf("model: llama2.c header: invalid %s %d", names[i], v)
		}
	}
	if dim%heads != 0 {
		return nil, fmt.Errorf("model: llama2.c header: dim %d is not a multiple of n_heads %d", dim, heads)
	}
	if heads%kvHeads != 0 {
		return nil, fmt.Errorf("model: llama2.c header: n_heads %d is not a multiple of n_kv_heads %d", heads, kvHeads)
	}
	hs := dim / heads
	if hs%2 != 0 {
		return nil, fmt.Errorf("model: llama2.c header: head size %d is odd", hs)
	}
	kvDim := kvHeads * hs

	// Lay out every tensor, checking the file holds it.
	off := int64(llama2cHeader)
	var sizeErr error
	take := func(n int64) []float32 {
		if sizeErr != nil {
			return nil
		}
		end := off + 4*n
		if end > int64(len(data)) {
			sizeErr = fmt.Errorf("model: llama2.c file truncated: needs at least %d bytes, has %d", end, len(data))
			return nil
		}
		v := tensor.BytesF32(data[off:end])
		off = end
		return v
	}
	L, D, H, KV, V := int64(layers), int64(dim), int64(hidden), int64(kvDim), int64(vocab)
	emb := take(V * D)
	rmsAtt := take(L * D)
	wq := take(L * D * D)
	wk := take(L * KV * D)
	wv := take(L * KV * D)
	wo := take(L * D * D)
	rmsFfn := take(L * D)
	w1 := take(L * H * D)
	w2 := take(L * D * H)
	w3 := take(L * H * D)
	rmsFinal := take(D)
	take(int64(seqLen) * int64(hs/2) * 2) // freq_cis_real, freq_cis_imag
	var wcls []float32
	if !shared {
		wcls = take(V * D)
	}
	if sizeErr != nil {
		return nil, sizeErr
	}

	m := &Model{Config: Config{
		Arch: ArchLlama, Format: "llama2c",
		Dim: dim, HiddenDim: hidden, Layers: layers, Heads: heads, KVHeads: kvHeads, HeadDim: hs,
		Vocab: vocab, ContextLen: seqLen, NormEps: 1e-5, RopeTheta: 10000, RopeDim: hs, Tied: shared,
	}}
	w := &m.w
	w.tokEmb = tensor.F32Mat(vocab, dim, emb)
	w.layers = make([]layerWeights, layers)
	for l := range layers {
		lw := &w.layers[l]
		sl := func(v []float32, n int) []float32 { return v[l*n : (l+1)*n] }
		lw.attnNorm = sl(rmsAtt, dim)
		lw.wq = tensor.F32Mat(dim, dim, sl(wq, dim*dim))
		lw.wk = tensor.F32Mat(kvDim, dim, sl(wk, kvDim*dim))
		lw.wv = tensor.F32Mat(kvDim, dim, sl(wv, kvDim*dim))
		lw.wo = tensor.F32Mat(dim, dim, sl(wo, dim*dim))
		lw.ffnNorm = sl(rmsFfn, dim)
		lw.wGate = tensor.F32Mat(hidden, dim, sl(w1, hidden*dim))
		lw.wDown = tensor.F32Mat(dim, hidden, sl(w2, dim*hidden))
		lw.wUp = tensor.F32Mat(hidden, dim, sl(w3, hidden*dim))
	}
	w.outNorm = rmsFinal
	w.output = w.tokEmb
	if !shared {
		w.output = tensor.F32Mat(vocab, dim, wcls)
	}

	add := func(name string, shape ...int) {
		m.Tensors = append(m.Tensors, TensorDesc{Name: name, Type: tensor.F32, Shape: shape})
	}
	add("token_embedding", vocab, dim)
	add("rms_att", layers, dim)
	add("wq", layers, dim, dim)
	add("wk", layers, kvDim, dim)
	add("wv", layers, kvDim, dim)
	add("wo", layers, dim, dim)
	add("rms_ffn", layers, dim)
	add("w1", layers, hidden, dim)
	add("w2", layers, dim, hidden)
	add("w3", layers, hidden, dim)
	add("rms_final", dim)
	if !shared {
		add("wcls", vocab, dim)
	}
	return m, nil
}

// NamedTensor is one weight of a loaded model under its llama.cpp GGUF
// name: Dims in ggml order (Dims[0] = row length), Data in Type's encoding,
// pointing at the loaded data (no copy).
type NamedTensor struct {
	Name  string
	Layer int // block index; -1 for tensors outside the blocks
	Dims  []int
	Type  tensor.DType
	Data  []byte
}

// LlamaTensors lists a Llama-architecture model's weights (no biases)
// under llama.cpp names, as convert writes them: for a llama2.c checkpoint
// this is its file layout (interleaved RoPE pairs, like llama GGUF files).
func (m *Model) LlamaTensors() ([]NamedTensor, error) {
	if m.Arch != ArchLlama {
		return nil, fmt.Errorf("model: LlamaTensors: architecture is %s", m.Arch)
	}
	var out []NamedTensor
	mat := func(name string, layer int, w *tensor.Mat) {
		out = append(out, NamedTensor{Name: name, Layer: layer, Dims: []int{w.Cols, w.Rows}, Type: w.Type, Data: w.Data})
	}
	vec := func(name string, layer int, v []float32) {
		out = append(out, NamedTensor{Name: name, Layer: layer, Dims: []int{len(v)}, Type: tensor.F32, Data: tensor.F32Bytes(v)})
	}
	mat("token_embd.weight", -1, m.w.tokEmb)
	for l := range m.w.layers {
		lw := &m.w.layers[l]
		p := "blk." + strconv.Itoa(l) + "."
		vec(p+"attn_norm.weight", l, lw.attnNorm)
		mat(p+"attn_q.weight", l, lw.wq)
		mat(p+"attn_k.weight", l, lw.wk)
		mat(p+"attn_v.weight", l, lw.wv)
		mat(p+"attn_output.weight", l, lw.wo)
		vec(p+"ffn_norm.weight", l, lw.ffnNorm)
		mat(p+"ffn_gate.weight", l, lw.wGate)
		mat(p+"ffn_down.weight", l, lw.wDown)
		mat(p+"ffn_up.weight", l, lw.wUp)
	}
	vec("output_norm.weight", -1, m.w.outNorm)
	if !m.Tied {
		mat("output.weight", -1, m.w.output)
	}
	return out, nil
}
