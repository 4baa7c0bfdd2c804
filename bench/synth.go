package bench

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"nanoserve/gguf"
	"nanoserve/llamacpp"
	"nanoserve/tensor"
	"nanoserve/tokenizer"
)

// Shape is the architecture of a synthetic model: the hyperparameters of a
// published model, without its weights.
type Shape struct {
	Name      string  `json:"name"`
	Arch      string  `json:"arch"` // "llama", "gpt2", "qwen35" or "qwen35moe" (GGUF general.architecture)
	Dim       int     `json:"dim"`
	Layers    int     `json:"layers"`
	Heads     int     `json:"heads"`
	KVHeads   int     `json:"kv_heads"`
	FFN       int     `json:"ffn"`
	Vocab     int     `json:"vocab"`
	Ctx       int     `json:"ctx"`
	Tied      bool    `json:"tied"` // no output.weight: the logits reuse token_embd
	RopeTheta float64 `json:"rope_theta,omitempty"`
	NormEps   float32 `json:"norm_eps"`
	// Mixture of experts (llama architecture, Mixtral-style tensors):
	// FFN is then each expert's width.
	Experts     int `json:"experts,omitempty"`
	ExpertsUsed int `json:"experts_used,omitempty"`
	// Hybrid shapes (qwen35, qwen35moe; hybrid_synth.go): the attention
	// head width and rotated dims when they are not Dim/Heads, the
	// delta-net geometry, and the shared expert's width.
	HeadDim   int       `json:"head_dim,omitempty"`
	RopeDim   int       `json:"rope_dim,omitempty"`
	DeltaNet  *DeltaNet `json:"delta_net,omitempty"`
	SharedFFN int       `json:"shared_ffn,omitempty"`
	// LFM2 shapes (lfm2, lfm2moe; lfm2_synth.go): the short-convolution
	// layout and the leading dense layers.
	ShortConv *ShortConv `json:"short_conv,omitempty"`
	// Golden shapes (lfm2_synth.go) spread what random weights leave
	// nearly tied: the final norm's gain (logits ~OutGain·0.02·√dim) and
	// the router's and selection bias's standard deviations (σ gates away
	// from ½). 0: 1, weightStd.
	OutGain   float32 `json:"out_gain,omitempty"`
	RouterStd float32 `json:"router_std,omitempty"`
	WeightStd float32 `json:"weight_std,omitempty"` // the matrices' standard deviation; 0: weightStd
	// Granite shapes (granite, granitemoe; granite_synth.go): the scales
	// and RoPE switch; SharedFFN is granitemoe's ungated shared expert.
	Granite *GraniteScales `json:"granite,omitempty"`
	// Mamba-2 shapes (granitehybrid; granite_synth.go).
	Mamba *Mamba2 `json:"mamba,omitempty"`
}

// shapes are the standard shapes --synthetic accepts.
var shapes = []Shape{
	{Name: "tinyllama-1.1b", Arch: "llama", Dim: 2048, Layers: 22, Heads: 32, KVHeads: 4, FFN: 5632, Vocab: 32000, Ctx: 2048, RopeTheta: 10000, NormEps: 1e-5},
	{Name: "smollm2-135m", Arch: "llama", Dim: 576, Layers: 30, Heads: 9, KVHeads: 3, FFN: 1536, Vocab: 49152, Ctx: 8192, Tied: true, RopeTheta: 100000, NormEps: 1e-5},
	{Name: "gpt2-124m", Arch: "gpt2", Dim: 768, Layers: 12, Heads: 12, KVHeads: 12, FFN: 3072, Vocab: 50257, Ctx: 1024, Tied: true, NormEps: 1e-5},
	{Name: "llama2c-110m", Arch: "llama", Dim: 768, Layers: 12, Heads: 12, KVHeads: 12, FFN: 2048, Vocab: 32000, Ctx: 1024, Tied: true, RopeTheta: 10000, NormEps: 1e-5},
	// OLMoE-1B-7B's expert layout (64 experts, 8 active, as Qwen3-30B-A3B
	// has 128/8) scaled to fit a small machine: 604M expert parameters, 75M
	// active (expert width 512, a whole number of K-quant blocks);
	// "moe-mini-dense" has the same active parameters in one FFN (8·512
	// wide), for decode speed side by side.
	{Name: "moe-mini", Arch: "llama", Dim: 768, Layers: 8, Heads: 12, KVHeads: 4, FFN: 512, Vocab: 32000, Ctx: 4096, RopeTheta: 10000, NormEps: 1e-5, Experts: 64, ExpertsUsed: 8},
	{Name: "moe-mini-dense", Arch: "llama", Dim: 768, Layers: 8, Heads: 12, KVHeads: 4, FFN: 4096, Vocab: 32000, Ctx: 4096, RopeTheta: 10000, NormEps: 1e-5},
	// Test shapes: seconds to write and run.
	{Name: "tiny", Arch: "llama", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 256, Vocab: 512, Ctx: 256, RopeTheta: 10000, NormEps: 1e-5},
	{Name: "tiny-moe", Arch: "llama", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 64, Vocab: 512, Ctx: 256, RopeTheta: 10000, NormEps: 1e-5, Experts: 8, ExpertsUsed: 2},
	{Name: "tiny-gpt2", Arch: "gpt2", Dim: 64, Layers: 2, Heads: 4, KVHeads: 4, FFN: 256, Vocab: 512, Ctx: 256, Tied: true, NormEps: 1e-5},
	tinyQwen35, tinyQwen35MoE,
}

var shapeAliases = map[string]string{
	"tinyllama": "tinyllama-1.1b", "smollm2": "smollm2-135m", "smollm2-135": "smollm2-135m",
	"gpt2": "gpt2-124m", "gpt2-small": "gpt2-124m", "llama2c": "llama2c-110m", "stories110m": "llama2c-110m", "110m": "llama2c-110m",
}

// ErrUnknownShape is returned (wrapped) by LookupShape.
var ErrUnknownShape = errors.New("bench: unknown synthetic shape")

// LookupShape returns the standard shape called name (case-insensitive;
// short aliases such as "tinyllama" or "gpt2" work too).
func LookupShape(name string) (Shape, error) {
	n := strings.ToLower(name)
	if a, ok := shapeAliases[n]; ok {
		n = a
	}
	for _, s := range shapes {
		if s.Name == n {
			return s, nil
		}
	}
	return Shape{}, fmt.Errorf("%w %q (have %s)", ErrUnknownShape, name, strings.Join(ShapeNames(), ", "))
}

// ShapeNames lists the standard shapes.
func ShapeNames() []string {
	var ns []string
	for _, s := range shapes {
		ns = append(ns, s.Name)
	}
	return ns
}

func (s *Shape) headDim() int {
	if s.HeadDim > 0 {
		return s.HeadDim
	}
	return s.Dim / s.Heads
}
func (s *Shape) kvDim() int { return s.KVHeads * s.headDim() }

func (s *Shape) validate() error {
	if s.Dim <= 0 || s.Layers <= 0 || s.Heads <= 0 || s.KVHeads <= 0 || s.FFN <= 0 || s.Vocab <= 0 || s.Ctx <= 0 {
		return fmt.Errorf("bench: shape %q has a non-positive dimension", s.Name)
	}
	if (s.HeadDim == 0 && s.Dim%s.Heads != 0) || s.Heads%s.KVHeads != 0 {
		return fmt.Errorf("bench: shape %q: dim %d, %d heads, %d kv heads do not divide", s.Name, s.Dim, s.Heads, s.KVHeads)
	}
	switch s.Arch {
	case "llama", "gpt2", "granite", "granitemoe":
		granite := s.Arch == "granite" || s.Arch == "granitemoe"
		if (s.Granite != nil) != granite || granite && (s.Arch == "granitemoe") != (s.Experts > 0) || s.SharedFFN > 0 && s.Arch != "granitemoe" {
			return fmt.Errorf("bench: shape %q: %s with granite scales %v, %d experts, shared expert %d", s.Name, s.Arch, s.Granite != nil, s.Experts, s.SharedFFN)
		}
		if s.DeltaNet != nil || s.HeadDim != 0 || s.ShortConv != nil {
			return fmt.Errorf("bench: shape %q: a delta net or head width needs a qwen35 architecture", s.Name)
		}
	case "qwen35", "qwen35moe":
		if err := s.validateHybrid(); err != nil {
			return err
		}
	case "lfm2", "lfm2moe":
		if err := s.validateShortConv(); err != nil {
			return err
		}
	case "granitehybrid":
		if err := s.validateMamba2(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("bench: shape %q: architecture %q (want llama, gpt2, granite, granitemoe, granitehybrid, qwen35, qwen35moe, lfm2 or lfm2moe)", s.Name, s.Arch)
	}
	if s.Arch == "gpt2" && (s.KVHeads != s.Heads || !s.Tied) {
		return fmt.Errorf("bench: shape %q: gpt2 shapes are multi-head and tied", s.Name)
	}
	if s.Vocab < 3+256 {
		return fmt.Errorf("bench: shape %q: vocab %d is below the 259 tokens of the synthetic tokenizer", s.Name, s.Vocab)
	}
	return nil
}

// Mix is a weight-type recipe, named like llama.cpp's file types: one type
// for every matrix (f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q6_k), or
// a mix (q4_k_s … q5_k_m, q2_k, q3_k_s/m/l, iq4_nl, iq4_xs, iq3_s, iq3_m,
// mxfp4_moe) that, like llama-quantize, gives some tensors more bits
// (llamacpp.FileType.TensorType); MixNames lists them. 1-D tensors (norm
// gains, biases) are always F32.
type Mix struct {
	llamacpp.FileType // Name, ID (general.file_type), Base
}

// ParseMix looks up a weight type name (case-insensitive, "-" or "_").
// Besides llama.cpp's file types, "mxfp4" is every matrix MXFP4 (the
// output Q6_K), what mxfp4_moe gives a model's experts, to measure the
// format on dense shapes.
func ParseMix(name string) (Mix, error) {
	if strings.EqualFold(name, "mxfp4") {
		return Mix{llamacpp.FileType{Name: "mxfp4", ID: 38, Base: tensor.MXFP4}}, nil
	}
	f, ok := llamacpp.ParseFileType(name)
	if !ok {
		return Mix{}, fmt.Errorf("bench: unknown weight type %q (have %s)", name, strings.Join(MixNames(), ", "))
	}
	if !tensor.Computable(f.Base) || (f.Quantized() && !tensor.CanQuantize(f.Base)) {
		return Mix{}, fmt.Errorf("bench: weight type %s is not supported by this build's tensor package", f.Name)
	}
	return Mix{f}, nil
}

// MixNames lists the names ParseMix accepts: llama.cpp's file types
// (llamacpp.FileTypes) and "mxfp4".
func MixNames() []string { return append(llamacpp.FileTypeNames(), "mxfp4") }

// TensorType is the type the mix gives a matrix: kind is the llama.cpp
// tensor name without "blk.N." and ".weight", layer its block (-1 outside
// blocks), layers the number of blocks, isOutput whether the logits are
// computed with it.
func (m Mix) TensorType(kind string, layer, layers, cols int, isOutput bool) tensor.DType {
	return m.FileType.TensorType(llamacpp.TensorKind{Name: kind, Layer: layer, Layers: layers, Cols: cols, Output: isOutput})
}

// generatorVersion is stored in synthetic files; a cached file written by
// another version is regenerated.
const generatorVersion = 2

// weightStd is the standard deviation of the random matrix entries.
const weightStd = 0.02

// synthTensor is one tensor of a synthetic model.
type synthTensor struct {
	name       string
	typ        tensor.DType
	rows, cols int    // rows = 1 for vectors
	fill       string // "normal", "ones", "zeros" or "ramp" (−1, −2, … −8, −1, …: a delta net's decay rates A)
	vector     bool
	experts    int      // > 0: a 3-D expert tensor, rows/experts rows per expert
	scale      float32  // "normal": the standard deviation (0: weightStd); "ones": the value (0: 1)
	dims       []uint64 // the GGUF dims of a vector stored as a matrix (Mamba-2's ssm_a {1, heads}); nil: from rows, cols
}

// std is t's standard deviation for fill "normal".
func (t *synthTensor) std() float32 {
	if t.scale != 0 {
		return t.scale
	}
	return weightStd
}

// planner collects a shape's tensors in order (the order is the file's:
// a golden pins a synthetic file's bytes by sha256).
type planner struct {
	s  Shape
	m  Mix
	ts []synthTensor
}

// mat adds a weight matrix of the mix's type for its kind.
func (p *planner) mat(name, kind string, layer, rows, cols int, isOut bool) {
	p.ts = append(p.ts, synthTensor{name: name, typ: p.m.TensorType(kind, layer, p.s.Layers, cols, isOut), rows: rows, cols: cols,
		fill: "normal", scale: p.s.WeightStd})
}

// vec adds an F32 vector (dims: its GGUF dims when it is stored as a
// matrix).
func (p *planner) vec(name string, n int, fill string, dims ...uint64) {
	p.ts = append(p.ts, synthTensor{name: name, typ: tensor.F32, rows: 1, cols: n, fill: fill, vector: true, dims: dims})
}

// attn adds layer l's attention projections: attn_q (qRows: the query
// width qd, or more when it carries gates), attn_k, attn_v (kvd), with
// normDim > 0 the QK norms, and attn_output (dim, qd).
func (p *planner) attn(pre string, l, qRows, qd, kvd, normDim int) {
	dim := p.s.Dim
	p.mat(pre+"attn_q.weight", "attn_q", l, qRows, dim, false)
	p.mat(pre+"attn_k.weight", "attn_k", l, kvd, dim, false)
	p.mat(pre+"attn_v.weight", "attn_v", l, kvd, dim, false)
	if normDim > 0 {
		p.vec(pre+"attn_q_norm.weight", normDim, "ones")
		p.vec(pre+"attn_k_norm.weight", normDim, "ones")
	}
	p.mat(pre+"attn_output.weight", "attn_output", l, dim, qd, false)
}

// router adds an MoE layer's F32 router (ffn_gate_inp) and, with bias, its
// selection bias (exp_probs_b), both of standard deviation RouterStd.
func (p *planner) router(pre string, bias bool) {
	e := p.s.Experts
	p.ts = append(p.ts, synthTensor{name: pre + "ffn_gate_inp.weight", typ: tensor.F32, rows: e, cols: p.s.Dim, fill: "normal", scale: p.s.RouterStd})
	if bias {
		p.ts = append(p.ts, synthTensor{name: pre + "exp_probs_b.bias", typ: tensor.F32, rows: 1, cols: e, fill: "normal", vector: true, scale: p.s.RouterStd})
	}
}

// ffn adds layer l's dense SwiGLU matrices (prefix pre, width wide) in the
// order of kinds ("gate", "up", "down"), or with experts > 0 its 3-D
// expert tensors (ffn_*_exps; the router is router's).
func (p *planner) ffn(pre string, l, width, experts int, kinds ...string) {
	dim := p.s.Dim
	for _, k := range kinds {
		rows, cols := width, dim
		if k == "down" {
			rows, cols = dim, width
		}
		if experts == 0 {
			p.mat(pre+"ffn_"+k+".weight", "ffn_"+k, l, rows, cols, false)
			continue
		}
		kind := "ffn_" + k + "_exps"
		p.ts = append(p.ts, synthTensor{name: pre + kind + ".weight", typ: p.m.TensorType(kind, l, p.s.Layers, cols, false),
			rows: experts * rows, cols: cols, fill: "normal", experts: experts, scale: p.s.WeightStd})
	}
}

// sharedExpert adds layer l's shared expert (gate, up, down), when the
// shape has one.
func (p *planner) sharedExpert(pre string, l int) {
	if sh, dim := p.s.SharedFFN, p.s.Dim; sh > 0 {
		p.mat(pre+"ffn_gate_shexp.weight", "ffn_gate_shexp", l, sh, dim, false)
		p.mat(pre+"ffn_up_shexp.weight", "ffn_up_shexp", l, sh, dim, false)
		p.mat(pre+"ffn_down_shexp.weight", "ffn_down_shexp", l, dim, sh, false)
	}
}

// outNorm adds the final norm (name), its gain OutGain.
func (p *planner) outNorm(name string) {
	p.ts = append(p.ts, synthTensor{name: name, typ: tensor.F32, rows: 1, cols: p.s.Dim, fill: "ones", vector: true, scale: p.s.OutGain})
}

// plan lists the tensors of a shape under a mix, in llama.cpp's order.
func plan(s Shape, m Mix) []synthTensor {
	pl := &planner{s: s, m: m}
	mat, vec := pl.mat, pl.vec
	if s.DeltaNet != nil {
		return planHybrid(s, m)
	}
	if s.ShortConv != nil {
		return planShortConv(s, m)
	}
	if s.Mamba != nil {
		return planGraniteHybrid(s, m)
	}
	dim, kvd, hid := s.Dim, s.kvDim(), s.FFN
	mat("token_embd.weight", "token_embd", -1, s.Vocab, dim, s.Tied)
	gpt2 := s.Arch == "gpt2"
	if gpt2 {
		mat("position_embd.weight", "position_embd", -1, s.Ctx, dim, false)
	}
	for l := range s.Layers {
		p := fmt.Sprintf("blk.%d.", l)
		vec(p+"attn_norm.weight", dim, "ones")
		if gpt2 {
			vec(p+"attn_norm.bias", dim, "zeros")
			mat(p+"attn_qkv.weight", "attn_qkv", l, dim+2*kvd, dim, false)
			vec(p+"attn_qkv.bias", dim+2*kvd, "zeros")
			mat(p+"attn_output.weight", "attn_output", l, dim, dim, false)
			vec(p+"attn_output.bias", dim, "zeros")
			vec(p+"ffn_norm.weight", dim, "ones")
			vec(p+"ffn_norm.bias", dim, "zeros")
			mat(p+"ffn_up.weight", "ffn_up", l, hid, dim, false)
			vec(p+"ffn_up.bias", hid, "zeros")
			mat(p+"ffn_down.weight", "ffn_down", l, dim, hid, false)
			vec(p+"ffn_down.bias", dim, "zeros")
			continue
		}
		pl.attn(p, l, dim, dim, kvd, 0)
		vec(p+"ffn_norm.weight", dim, "ones")
		if s.Experts > 0 {
			pl.router(p, false)
		}
		pl.ffn(p, l, hid, s.Experts, "gate", "down", "up")
		pl.sharedExpert(p, l)
	}
	pl.outNorm("output_norm.weight")
	if gpt2 {
		vec("output_norm.bias", dim, "zeros")
	}
	if !s.Tied {
		mat("output.weight", "output", -1, s.Vocab, dim, true)
	}
	return pl.ts
}

// rng is xorshift64* seeded through splitmix64: fast, and good enough for
// weights nobody will train.
type rng struct{ s uint64 }

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

func newRNG(seed uint64) rng {
	s := splitmix(seed)
	if s == 0 {
		s = 1
	}
	return rng{s}
}

func (r *rng) next() uint64 {
	r.s ^= r.s >> 12
	r.s ^= r.s << 25
	r.s ^= r.s >> 27
	return r.s * 0x2545f4914f6cdd1d
}

// Irwin–Hall with four 16-bit uniforms: their sum has mean 4·(2¹⁶−1)/2 and
// variance 4·(2³²−1)/12; centred and scaled it is N(0,1) to within a few
// percent in the bulk, bounded at ±3.46σ (no outliers to upset F16).
const (
	ihMean = 2 * 65535.0
	ihStd  = 37837.2 // sqrt(4·(65536²−1)/12)
)

func (r *rng) fillNormal(dst []float32, std float32) {
	k := std / ihStd
	for i := range dst {
		v := r.next()
		s := float32(v&0xffff + v>>16&0xffff + v>>32&0xffff + v>>48)
		dst[i] = (s - ihMean) * k
	}
}

// tensorSeed derives the seed of a chunk of a tensor from the model seed,
// so every chunk can be generated independently (in parallel, in any
// order) and the file does not depend on the number of workers.
func tensorSeed(seed uint64, name string, chunk int) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return splitmix(seed^h.Sum64()) + uint64(chunk)*0x9e3779b97f4a7c15
}

// chunkElems is about how many weights one worker generates at a time.
const chunkElems = 1 << 18

// writeTensor streams t to w: rows are produced in chunks, workers at a
// time, quantized in parallel, and written in order.
func writeTensor(w io.Writer, t synthTensor, seed uint64, workers int) error {
	rowBytes, err := t.typ.RowBytes(t.cols)
	if err != nil {
		return fmt.Errorf("bench: tensor %s: %w", t.name, err)
	}
	if t.vector {
		v := make([]float32, t.cols)
		for i := range v {
			switch t.fill {
			case "ones":
				v[i] = 1
				if t.scale != 0 {
					v[i] = t.scale
				}
			case "ramp":
				v[i] = -float32(1 + i%8)
			}
		}
		if t.fill == "normal" {
			r := newRNG(tensorSeed(seed, t.name, 0))
			r.fillNormal(v, t.std())
		}
		_, err := w.Write(tensor.F32Bytes(v))
		return err
	}
	rowsPer := max(1, chunkElems/t.cols)
	nChunks := (t.rows + rowsPer - 1) / rowsPer
	type buf struct {
		f   []float32
		out []byte
		err error
	}
	bufs := make([]buf, workers)
	for i := range bufs {
		bufs[i].f = make([]float32, rowsPer*t.cols)
		bufs[i].out = make([]byte, rowsPer*rowBytes)
	}
	for c0 := 0; c0 < nChunks; c0 += workers {
		var wg sync.WaitGroup
		for i := 0; i < workers && c0+i < nChunks; i++ {
			wg.Add(1)
			go func(i, c int) {
				defer wg.Done()
				b := &bufs[i]
				rows := min(rowsPer, t.rows-c*rowsPer)
				f := b.f[:rows*t.cols]
				r := newRNG(tensorSeed(seed, t.name, c))
				r.fillNormal(f, t.std())
				b.err = tensor.QuantizeRow(b.out[:rows*rowBytes], t.typ, f)
			}(i, c0+i)
		}
		wg.Wait()
		for i := 0; i < workers && c0+i < nChunks; i++ {
			b := &bufs[i]
			if b.err != nil {
				return fmt.Errorf("bench: tensor %s: %w", t.name, b.err)
			}
			rows := min(rowsPer, t.rows-(c0+i)*rowsPer)
			if _, err := w.Write(b.out[:rows*rowBytes]); err != nil {
				return err
			}
		}
	}
	return nil
}

// vocabulary is the synthetic SentencePiece-style tokenizer: <unk>, <s>,
// </s>, the 256 byte tokens, then "▁t259", "▁t260", … so the model loads with
// a working (if useless) tokenizer. llamacpp.VocabKVs writes it in
// llama.cpp's keys, as convert and train write theirs.
func vocabulary(n int) tokenizer.Vocab {
	v := tokenizer.Vocab{
		Model:  "llama",
		Tokens: make([]string, n),
		Scores: make([]float32, n),
		Types:  make([]tokenizer.TokenType, n),
		UNK:    tokenizer.OptID{ID: 0, OK: true},
		BOS:    tokenizer.OptID{ID: 1, OK: true},
		EOS:    tokenizer.OptID{ID: 2, OK: true},
		AddBOS: true, AddSpacePrefix: true,
	}
	v.Tokens[0], v.Tokens[1], v.Tokens[2] = "<unk>", "<s>", "</s>"
	v.Types[0], v.Types[1], v.Types[2] = tokenizer.TypeUnknown, tokenizer.TypeControl, tokenizer.TypeControl
	for b := range 256 {
		v.Tokens[3+b] = fmt.Sprintf("<0x%02X>", b)
		v.Types[3+b] = tokenizer.TypeByte
	}
	for i := 259; i < n; i++ {
		v.Tokens[i] = fmt.Sprintf("▁t%d", i)
		v.Types[i] = tokenizer.TypeNormal
		v.Scores[i] = -float32(i - 259)
	}
	return v
}

// WriteSynthetic writes a GGUF file of shape s with weight types from mix:
// seeded random matrices N(0, 0.02²) (norm gains 1, biases 0), llama.cpp
// tensor names and metadata, and a minimal tokenizer. The bytes depend
// only on (s, mix, seed): chunks of every tensor are seeded independently,
// so workers (≤ 0: GOMAXPROCS) only changes the speed.
func WriteSynthetic(path string, s Shape, mix Mix, seed uint64, workers int) error {
	if err := s.validate(); err != nil {
		return err
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	w := gguf.NewWriter()
	a := s.Arch
	kvs := []gguf.KV{
		{Key: "general.architecture", Value: gguf.String(a)},
		{Key: "general.name", Value: gguf.String("synthetic " + s.Name)},
		{Key: "general.file_type", Value: gguf.Uint32(mix.ID)},
		{Key: "nanoserve.synthetic.shape", Value: gguf.String(s.Name)},
		{Key: "nanoserve.synthetic.type", Value: gguf.String(mix.Name)},
		{Key: "nanoserve.synthetic.seed", Value: gguf.Uint64(seed)},
		{Key: "nanoserve.synthetic.version", Value: gguf.Uint32(generatorVersion)},
	}
	h := llamacpp.HParams{Arch: a, ContextLength: s.Ctx, EmbeddingLength: s.Dim, BlockCount: s.Layers,
		FeedForwardLength: s.FFN, HeadCount: s.Heads}
	if a == "gpt2" {
		h.LayerNormEps = float64(s.NormEps)
	} else {
		h.HeadCountKV, h.RMSNormEps, h.RopeFreqBase, h.RopeDim, h.VocabSize = s.KVHeads, float64(s.NormEps), s.RopeTheta, s.headDim(), s.Vocab
		h.ExpertCount, h.ExpertUsedCount = s.Experts, s.ExpertsUsed
	}
	if s.DeltaNet != nil {
		h.KeyLength, h.RopeDim = s.headDim(), s.RopeDim
		if s.Experts > 0 {
			h.ExpertFFLength = s.FFN
		}
	}
	if s.Mamba != nil {
		h.HeadCountKVs = s.Mamba.headCountKVs(&s) // the experts' width is feed_forward_length (granite-hybrid.cpp's n_ff)
	}
	if s.ShortConv != nil {
		h.HeadCountKVs, h.FeedForwardLength = s.headCountKVs(), s.denseFFN()
		if s.Experts > 0 {
			h.ExpertFFLength = s.FFN
		}
	}
	kvs = append(kvs, h.KVs()...)
	kvs = append(kvs, s.hybridKVs()...)
	kvs = append(kvs, s.shortConvKVs()...)
	kvs = append(kvs, s.graniteKVs()...)
	kvs = append(kvs, s.mamba2KVs()...)
	vkvs, err := llamacpp.VocabKVs(vocabulary(s.Vocab), s.Vocab, nil)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	kvs = append(kvs, vkvs...)
	for _, kv := range kvs {
		if err := w.AddKV(kv.Key, kv.Value); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
	}
	for _, t := range plan(s, mix) {
		dims := []uint64{uint64(t.cols)}
		switch {
		case t.experts > 0:
			dims = append(dims, uint64(t.rows/t.experts), uint64(t.experts))
		case !t.vector:
			dims = append(dims, uint64(t.rows))
		}
		if t.dims != nil {
			dims = t.dims
		}
		if err := w.AddTensorFunc(t.name, t.typ, dims, func(out io.Writer) error {
			return writeTensor(out, t, seed, workers)
		}); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if err := w.WriteFile(path); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

// CacheDir is where SyntheticFile keeps generated models.
func CacheDir() string { return filepath.Join(os.TempDir(), "nanoserve-bench") }

// SyntheticFile returns the path of the synthetic model (shape, mix, seed)
// in dir (CacheDir() if ""), named <shape>-<type>-<seed>.gguf, writing it
// first unless a file from the same generator version is already there.
// created reports whether it was written.
func SyntheticFile(dir string, s Shape, mix Mix, seed uint64, workers int) (path string, created bool, err error) {
	if dir == "" {
		dir = CacheDir()
	}
	path = filepath.Join(dir, fmt.Sprintf("%s-%s-%d.gguf", s.Name, mix.Name, seed))
	if f, err := gguf.Open(path); err == nil {
		v, verr := f.Uint("nanoserve.synthetic.version")
		f.Close()
		if verr == nil && v == generatorVersion {
			return path, false, nil
		}
	}
	if err := WriteSynthetic(path, s, mix, seed, workers); err != nil {
		return "", false, err
	}
	return path, true, nil
}

// typeSummary names the matrix types of a tensor list by share of bytes,
// e.g. "Q4_K 78% + Q6_K 22%".
func typeSummary(bytesByType map[tensor.DType]int64) string {
	var total int64
	type tb struct {
		t tensor.DType
		b int64
	}
	var l []tb
	for t, b := range bytesByType {
		total += b
		l = append(l, tb{t, b})
	}
	sort.Slice(l, func(i, j int) bool { return l[i].b > l[j].b || l[i].b == l[j].b && l[i].t < l[j].t })
	if len(l) == 1 {
		return l[0].t.String()
	}
	var parts []string
	for _, x := range l {
		parts = append(parts, fmt.Sprintf("%s %.0f%%", x.t, 100*float64(x.b)/float64(total)))
	}
	return strings.Join(parts, " + ")
}
