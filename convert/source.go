package convert

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"nanoserve/gguf"
	"nanoserve/llamacpp"
	"nanoserve/model"
	"nanoserve/safetensors"
	"nanoserve/tensor"
)

// source is an opened input: its tensors in llama.cpp naming, plus either
// the GGUF metadata to copy (kv) or the loaded model whose config and
// tokenizer become metadata.
type source struct {
	format  string // "gguf", "llama2c", "hf"
	name    string // default general.name
	kv      []gguf.KV
	m       *model.Model
	tensors []*srcTensor
	closers []io.Closer
}

func (s *source) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i].Close()
	}
	s.closers = nil
}

// openSource opens in by its kind: a directory is a Hugging Face model, a
// file starting with "GGUF" a GGUF file, anything else a llama2.c
// checkpoint.
func openSource(in string, opts Options) (*source, error) {
	fi, err := os.Stat(in)
	if err != nil {
		return nil, fmt.Errorf("convert: %w", err)
	}
	name := strings.TrimSuffix(filepath.Base(filepath.Clean(in)), filepath.Ext(in))
	s := &source{name: name}
	switch {
	case fi.IsDir():
		s.format = "hf"
		err = s.openHF(in, opts)
	case gguf.IsFile(in):
		s.format = "gguf"
		err = s.openGGUF(in, opts)
	default:
		s.format = "llama2c"
		err = s.openLlama2c(in, opts)
	}
	if err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// loadModel loads the model for its config and tokenizer.
func (s *source) loadModel(in string, opts Options) error {
	m, err := model.Load(in, model.Options{Tokenizer: opts.Tokenizer, Threads: 1})
	if err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	s.m = m
	s.closers = append(s.closers, m)
	if m.Tokenizer == nil {
		return fmt.Errorf("convert: %s has no tokenizer; name one with --tokenizer (llama2.c: tokenizer.bin or tokenizer.model)", filepath.Base(in))
	}
	return nil
}

// openGGUF takes metadata and tensors as they are. When opts.Tokenizer is
// set, the tokenizer.* keys are replaced by that vocabulary's.
func (s *source) openGGUF(in string, opts Options) error {
	f, err := gguf.OpenSplit(in) // a split model is merged into one file
	if err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	s.closers = append(s.closers, f)
	for _, kv := range f.KV {
		switch kv.Key {
		case gguf.KeySplitNo, gguf.KeySplitCount, gguf.KeySplitTensors:
		default:
			s.kv = append(s.kv, kv)
		}
	}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		s.tensors = append(s.tensors, &srcTensor{name: t.Name, dims: t.Dims, typ: t.Type, data: t.Data, layer: layerOf(t.Name)})
	}
	if opts.Tokenizer != "" {
		return s.loadModel(in, opts)
	}
	return nil
}

// openLlama2c takes the checkpoint's float32 tensors, under llama.cpp
// names, from the loaded model (package model owns the file layout);
// llama2.c already rotates interleaved pairs, so nothing is permuted.
func (s *source) openLlama2c(in string, opts Options) error {
	if err := s.loadModel(in, opts); err != nil {
		return err
	}
	ts, err := s.m.LlamaTensors()
	if err != nil {
		return fmt.Errorf("convert: %s: %w", filepath.Base(in), err)
	}
	for _, t := range ts {
		d := make([]uint64, len(t.Dims))
		for i, x := range t.Dims {
			d[i] = uint64(x)
		}
		s.tensors = append(s.tensors, &srcTensor{name: t.Name, dims: d, typ: t.Type, data: t.Data, layer: t.Layer})
	}
	return nil
}

// hfSkip are suffixes of non-weight buffers some checkpoints carry.
var hfSkip = []string{".rotary_emb.inv_freq", ".attn.bias", ".attn.masked_bias"}

// hfLMPrefix is where a vision-language checkpoint keeps its language
// model (model.language_model.layers.N… for model.layers.N…); its
// vision and audio towers and their embedders (hfSkipPrefix) belong to a
// separate projector file in llama.cpp and are not converted.
const hfLMPrefix = "model.language_model."

var hfSkipPrefix = []string{"model.vision_tower.", "model.audio_tower.", "model.embed_vision.", "model.embed_audio.", "model.multi_modal_projector."}

// openHF maps a Hugging Face checkpoint's tensors to llama.cpp names with
// llama.cpp's converter's transforms: Llama Q/K rows permuted to
// interleaved RoPE order, GPT-2's Conv1D weights transposed, Gemma's norm
// gains stored as 1 + w, and each layer's per-expert matrices stacked into
// one 3-D tensor per kind (expert e is slab e).
func (s *source) openHF(in string, opts Options) error {
	if err := s.loadModel(in, opts); err != nil {
		return err
	}
	st, err := safetensors.OpenDir(in)
	if err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	s.closers = append(s.closers, st)
	c := &s.m.Config
	arch := c.Arch // model's names are llama.cpp's
	if arch == model.ArchGPTOSS {
		// Its fused, transposed experts (llamacpp.GptOssGateUp) are split
		// only by the model loader so far.
		return fmt.Errorf("%w: converting gpt-oss Hugging Face checkpoints (nanoserve runs the directory as it is)", ErrUnsupported)
	}
	if arch == model.ArchGranite || arch == model.ArchGraniteMoE {
		// Its scales and RoPE switch have no GGUF keys here yet, and its
		// fused experts are split only by the model loader.
		return fmt.Errorf("%w: converting Granite Hugging Face checkpoints (nanoserve runs the directory as it is)", ErrUnsupported)
	}
	permute := llamacpp.PermutesQK(arch) && c.RopeNeox
	if permute && c.RopeDim != c.HeadDim {
		return fmt.Errorf("%w: Llama with partial RoPE (%d of %d dims) cannot be permuted to llama.cpp's layout", ErrUnsupported, c.RopeDim, c.HeadDim)
	}
	seen := map[string]bool{}
	experts := map[string][]*srcTensor{} // llama.cpp name → per-expert 2-D tensors
	var order []string                   // merged expert tensors in first-seen order
	for _, t := range st.Tensors {
		if skipHF(t.Name) {
			continue
		}
		lmName := t.Name
		if rest, ok := strings.CutPrefix(lmName, hfLMPrefix); ok {
			lmName = "model." + rest // a vision-language checkpoint's language model
		}
		hn, ok := llamacpp.HFToGGUF(arch, lmName)
		if !ok {
			return fmt.Errorf("convert: unknown %s tensor %q in %s", arch, t.Name, filepath.Base(in))
		}
		name, layer := hn.GGUF, hn.Layer
		if name == "output.weight" && c.Tied {
			continue
		}
		key := name
		if hn.Expert >= 0 {
			key = fmt.Sprintf("%s#%d", name, hn.Expert)
		}
		if seen[key] {
			return fmt.Errorf("convert: tensors %q and another both map to %s", t.Name, key)
		}
		seen[key] = true
		typ, err := t.Type()
		if err != nil {
			return fmt.Errorf("convert: %w", err)
		}
		// Gemma 4's experts come stacked already: (experts, rows, cols),
		// llama.cpp's layout as it is.
		maxDims := 2
		if arch == model.ArchGemma4 && strings.Contains(name, "_exps.") {
			maxDims = 3
		}
		if len(t.Shape) < 1 || len(t.Shape) > maxDims {
			return fmt.Errorf("convert: tensor %q has %d dims, want 1 to %d", t.Name, len(t.Shape), maxDims)
		}
		st := &srcTensor{name: name, typ: typ, data: t.Data, layer: layer}
		for i := len(t.Shape) - 1; i >= 0; i-- {
			st.dims = append(st.dims, uint64(t.Shape[i]))
		}
		if typ != tensor.F32 && typ != tensor.F16 && typ != tensor.BF16 {
			if err := st.decode(); err != nil {
				return err
			}
		}
		conv1D := arch == model.ArchGPT2 && len(t.Shape) == 2 &&
			(strings.HasSuffix(name, "attn_qkv.weight") || strings.HasSuffix(name, "attn_output.weight") ||
				strings.HasSuffix(name, "ffn_up.weight") || strings.HasSuffix(name, "ffn_down.weight"))
		if conv1D {
			if err := st.transpose(); err != nil {
				return err
			}
		}
		if shift := llamacpp.NormShift(arch, name); shift != 0 {
			if err := st.decode(); err != nil {
				return err
			}
			for i := range st.f32 {
				st.f32[i] += shift
			}
		}
		if permute {
			heads := 0
			switch {
			case strings.HasSuffix(name, "attn_q.weight"), strings.HasSuffix(name, "attn_q.bias"):
				heads = c.Heads
			case strings.HasSuffix(name, "attn_k.weight"), strings.HasSuffix(name, "attn_k.bias"):
				heads = c.KVHeads
			}
			if heads > 0 {
				if err := st.permuteRoPE(heads); err != nil {
					return err
				}
			}
		}
		if hn.Expert >= 0 {
			es := experts[name]
			if es == nil {
				order = append(order, name)
			}
			for len(es) <= hn.Expert {
				es = append(es, nil)
			}
			es[hn.Expert] = st
			experts[name] = es
			continue
		}
		s.tensors = append(s.tensors, st)
	}
	for _, name := range order {
		t, err := stackExperts(name, experts[name])
		if err != nil {
			return err
		}
		s.tensors = append(s.tensors, t)
	}
	return nil
}

// stackExperts joins per-expert (rows, cols) matrices into one (experts,
// rows, cols) tensor, ggml dims [cols, rows, experts], as llama.cpp's
// converters merge them (torch.stack over the expert index).
func stackExperts(name string, es []*srcTensor) (*srcTensor, error) {
	first := es[0]
	for e, t := range es {
		if t == nil {
			return nil, fmt.Errorf("convert: %s: expert %d of %d missing", name, e, len(es))
		}
		if t.typ != first.typ || len(t.dims) != 2 || t.dims[0] != first.dims[0] || t.dims[1] != first.dims[1] {
			return nil, fmt.Errorf("convert: %s: expert %d has shape %v %s, expert 0 %v %s", name, e, t.dims, t.typ, first.dims, first.typ)
		}
	}
	out := &srcTensor{name: name, typ: first.typ, layer: first.layer,
		dims: []uint64{first.dims[0], first.dims[1], uint64(len(es))}}
	if first.f32 != nil {
		for _, t := range es {
			out.f32 = append(out.f32, t.f32...)
		}
		return out, nil
	}
	for _, t := range es {
		out.data = append(out.data, t.data...)
	}
	return out, nil
}

func skipHF(name string) bool {
	for _, suf := range hfSkip {
		if strings.HasSuffix(name, suf) {
			return true
		}
	}
	for _, pre := range hfSkipPrefix {
		if strings.HasPrefix(name, pre) {
			return true
		}
	}
	return false
}

// decode turns the tensor's data into float32 values (F64 sources).
func (t *srcTensor) decode() error {
	n := t.rows() * t.cols()
	v := make([]float32, n)
	switch t.typ {
	case tensor.F64:
		if len(t.data) != 8*n {
			return fmt.Errorf("convert: tensor %s: %d bytes for %d F64 values", t.name, len(t.data), n)
		}
		for i := range v {
			v[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(t.data[8*i:])))
		}
	default:
		if !tensor.Computable(t.typ) {
			return fmt.Errorf("%w: tensor %s has element type %s", ErrUnsupported, t.name, t.typ)
		}
		c := t.cols()
		for r := range t.rows() {
			t.row(v[r*c:(r+1)*c], r)
		}
	}
	t.f32, t.data, t.typ = v, nil, tensor.F32
	return nil
}

// transpose turns a (rows, cols) source into (cols, rows).
func (t *srcTensor) transpose() error {
	if t.f32 == nil {
		if err := t.decode(); err != nil {
			return err
		}
	}
	r, c := t.rows(), t.cols()
	out := make([]float32, r*c) // (c, r)
	for i := range r {
		for j := range c {
			out[j*r+i] = t.f32[i*c+j]
		}
	}
	t.f32 = out
	t.dims = []uint64{uint64(r), uint64(c)}
	return nil
}

// permuteRoPE reorders the rows (or, for a bias, the elements) of a Q or K
// projection with heads heads from NEOX halves to interleaved pairs.
func (t *srcTensor) permuteRoPE(heads int) error {
	if len(t.dims) == 1 { // bias: permute elements
		if t.f32 == nil {
			if err := t.decode(); err != nil {
				return err
			}
		}
		n := t.cols()
		if n%heads != 0 || (n/heads)%2 != 0 {
			return fmt.Errorf("convert: tensor %s: %d elements do not split into %d heads of even size", t.name, n, heads)
		}
		out := make([]float32, n)
		for r := range out {
			out[r] = t.f32[llamacpp.QKRowSource(r, n/heads)]
		}
		t.f32 = out
		return nil
	}
	n := t.rows()
	if n%heads != 0 || (n/heads)%2 != 0 {
		return fmt.Errorf("convert: tensor %s: %d rows do not split into %d heads of even size", t.name, n, heads)
	}
	hd := n / heads
	t.perm = func(r int) int { return llamacpp.QKRowSource(r, hd) }
	return nil
}
