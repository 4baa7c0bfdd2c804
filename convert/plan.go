package convert

import (
	"fmt"
	"strings"

	"nanoserve/gguf"
	"nanoserve/llamacpp"
	"nanoserve/tensor"
)

// FileType is a llama.cpp file type (general.file_type, LLAMA_FTYPE_*):
// the encoding most matrices get. The table and the per-tensor recipe
// live in llamacpp.
type FileType = llamacpp.FileType

// ParseFileType looks up a file type by name (case-insensitive).
func ParseFileType(s string) (FileType, bool) { return llamacpp.ParseFileType(s) }

// QuantizeNames lists the names Options.Quantize accepts.
func QuantizeNames() []string {
	var out []string
	for _, f := range llamacpp.FileTypes {
		if f.Quantized() {
			out = append(out, f.Name)
		}
	}
	return out
}

func isFloat(t tensor.DType) bool { return t == tensor.F32 || t == tensor.F16 || t == tensor.BF16 }

// plan decides each tensor's output encoding.
type plan struct {
	float   tensor.DType // matrix float type; 0 with keep
	keep    bool         // no Type: keep source encodings
	quant   *FileType    // nil: no quantization
	opts    Options
	threads int
}

func newPlan(opts Options) (*plan, error) {
	p := &plan{opts: opts, threads: threadsOf(opts), keep: opts.Type == ""}
	if !p.keep {
		f, ok := ParseFileType(opts.Type)
		if !ok || !isFloat(f.Base) {
			return nil, fmt.Errorf("%w: --type %q (want f32, f16 or bf16)", ErrUnsupported, opts.Type)
		}
		p.float = f.Base
	}
	if opts.Quantize != "" {
		f, ok := ParseFileType(opts.Quantize)
		if !ok || !f.Quantized() {
			return nil, fmt.Errorf("%w: --quantize %q (want one of %s)", ErrUnsupported, opts.Quantize, strings.Join(QuantizeNames(), ", "))
		}
		p.quant = &f
	}
	return p, nil
}

// quantizable reports whether llama.cpp's quantizer would quantize a
// tensor: 2-D or more weights other than norms and position embeddings.
func quantizable(t *srcTensor) bool {
	n := t.name
	return strings.HasSuffix(n, "weight") && len(t.dims) >= 2 &&
		!strings.Contains(n, "_norm.weight") &&
		n != "position_embd.weight" && n != "token_types.weight" &&
		!strings.Contains(n, "ffn_gate_inp.weight")
}

// tensorStats are the counts llama.cpp's recipe needs.
type tensorStats struct {
	hasOutput bool
	nAttnV    int // attn_v (and fused attn_qkv) weights
	nFfnDown  int
	experts   int // expert_count (from the 3-D ffn_*_exps tensors)
	gqa       int // query heads per KV head (0: unknown)
}

func statsOf(src *source) tensorStats {
	ts := src.tensors
	s := tensorStats{gqa: gqaOf(src)}
	for _, t := range ts {
		switch {
		case t.name == "output.weight":
			s.hasOutput = true
		case strings.Contains(t.name, "attn_v.weight"), strings.Contains(t.name, "attn_qkv.weight"):
			s.nAttnV++
		case strings.Contains(t.name, "ffn_down"):
			s.nFfnDown++
		}
		if strings.Contains(t.name, "_exps.") && len(t.dims) == 3 {
			s.experts = int(t.dims[2])
		}
	}
	return s
}

// gqaOf is the source model's query heads per KV head (n_gqa), 0 if
// unknown or not uniform.
func gqaOf(src *source) int {
	if src.m != nil {
		if c := &src.m.Config; c.KVHeads > 0 {
			return c.Heads / c.KVHeads
		}
		return 0
	}
	var arch string
	for _, kv := range src.kv {
		if kv.Key == "general.architecture" {
			arch, _ = kv.Value.Str()
		}
	}
	var heads, kvHeads uint64
	for _, kv := range src.kv {
		switch kv.Key {
		case arch + ".attention.head_count":
			heads, _ = kv.Value.Uint()
		case arch + ".attention.head_count_kv":
			kvHeads, _ = kv.Value.Uint()
		}
	}
	if kvHeads == 0 {
		kvHeads = heads // llama.cpp: head_count_kv defaults to head_count
	}
	if kvHeads == 0 {
		return 0
	}
	return int(heads / kvHeads)
}

// floatType is the encoding of a matrix that is not quantized.
func (p *plan) floatType(t *srcTensor) tensor.DType {
	if len(t.dims) < 2 {
		return tensor.F32
	}
	if !p.keep {
		return p.float
	}
	if t.f32 != nil || t.typ == tensor.F64 {
		return tensor.F32
	}
	return t.typ
}

// typeOf returns the output encoding of t (llama_tensor_get_type for the
// file types in llamacpp.FileTypes, on non-Falcon models).
func (p *plan) typeOf(t *srcTensor, st tensorStats) tensor.DType {
	if len(t.dims) < 2 {
		return tensor.F32
	}
	if p.quant == nil || !quantizable(t) {
		return p.floatType(t)
	}
	kind, layer := llamacpp.KindOf(t.name)
	k := llamacpp.TensorKind{Name: kind, Layer: layer, Cols: t.cols(), Experts: st.experts,
		Output:  t.name == "output.weight" || (!st.hasOutput && t.name == "token_embd.weight"),
		Stacked: len(t.dims) == 3 && t.dims[2] > 1, GQA: st.gqa}
	switch {
	case kind == "attn_v" || kind == "attn_qkv":
		k.Layers = st.nAttnV
	case strings.Contains(kind, "ffn_down"):
		k.Layers = st.nFfnDown
	}
	return p.quant.TensorType(k)
}

// fileTypeID is general.file_type for the chosen encodings: the quantized
// file type, the float Type, or, when keeping source encodings, the
// type most matrices have (srcID if known and nothing changed).
func (p *plan) fileTypeID(types map[string]tensor.DType, ts []*srcTensor, srcID uint32, haveSrc bool) uint32 {
	if p.quant != nil {
		return p.quant.ID
	}
	if !p.keep {
		f, _ := ParseFileType(p.float.String())
		return f.ID
	}
	changed := false
	count := map[tensor.DType]int{}
	for _, t := range ts {
		if types[t.name] != t.typ {
			changed = true
		}
		if len(t.dims) >= 2 {
			count[types[t.name]]++
		}
	}
	if haveSrc && !changed {
		return srcID
	}
	best, bestN := tensor.F32, -1
	for typ, n := range count {
		if n > bestN || (n == bestN && typ < best) {
			best, bestN = typ, n
		}
	}
	for _, f := range llamacpp.FileTypes {
		if f.Base == best && f.Name != "q4_k_m" && f.Name != "q5_k_m" {
			return f.ID
		}
	}
	return 0
}

// build assembles the GGUF writer: metadata, then every tensor in source
// order with its output encoding.
func (p *plan) build(src *source) (*gguf.Writer, error) {
	st := statsOf(src)
	types := map[string]tensor.DType{}
	for _, t := range src.tensors {
		types[t.name] = p.typeOf(t, st)
	}
	var kvs []gguf.KV
	var err error
	if src.kv != nil {
		kvs, err = p.ggufMeta(src, types)
	} else {
		kvs, err = p.modelMeta(src, types)
	}
	if err != nil {
		return nil, err
	}
	w := gguf.NewWriter()
	for _, kv := range kvs {
		if err := w.AddKV(kv.Key, kv.Value); err != nil {
			return nil, fmt.Errorf("convert: %w", err)
		}
	}
	extra, err := extraTensors(src)
	if err != nil {
		return nil, err
	}
	all := append(append([]*srcTensor(nil), src.tensors...), extra...)
	for i, t := range all {
		typ, ok := types[t.name]
		if !ok {
			typ = tensor.F32
		}
		var done func()
		if p.opts.Log != nil {
			msg := fmt.Sprintf("[%3d/%3d] %-28s %-5s -> %-5s %v", i+1, len(all), t.name, srcTypeName(t), typ, t.dims)
			done = func() { p.opts.Log(msg) }
		}
		if err := addTensor(w, t, typ, p.threads, done); err != nil {
			return nil, fmt.Errorf("convert: %w", err)
		}
	}
	return w, nil
}

func srcTypeName(t *srcTensor) string {
	if t.f32 != nil {
		return "F32"
	}
	return t.typ.String()
}
