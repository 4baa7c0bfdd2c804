package convert

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"nanoserve/gguf"
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
	case isGGUF(in):
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

func isGGUF(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [4]byte
	_, err = io.ReadFull(f, b[:])
	return err == nil && string(b[:]) == gguf.Magic
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

// Hugging Face tensor names (after the "model." / "transformer." prefix)
// and their llama.cpp names; "%d" is the layer.
var (
	hfLlamaNames = map[string]string{
		"embed_tokens.weight":                       "token_embd.weight",
		"norm.weight":                               "output_norm.weight",
		"lm_head.weight":                            "output.weight",
		"layers.%d.input_layernorm.weight":          "blk.%d.attn_norm.weight",
		"layers.%d.self_attn.q_proj.weight":         "blk.%d.attn_q.weight",
		"layers.%d.self_attn.q_proj.bias":           "blk.%d.attn_q.bias",
		"layers.%d.self_attn.k_proj.weight":         "blk.%d.attn_k.weight",
		"layers.%d.self_attn.k_proj.bias":           "blk.%d.attn_k.bias",
		"layers.%d.self_attn.v_proj.weight":         "blk.%d.attn_v.weight",
		"layers.%d.self_attn.v_proj.bias":           "blk.%d.attn_v.bias",
		"layers.%d.self_attn.o_proj.weight":         "blk.%d.attn_output.weight",
		"layers.%d.self_attn.o_proj.bias":           "blk.%d.attn_output.bias",
		"layers.%d.post_attention_layernorm.weight": "blk.%d.ffn_norm.weight",
		"layers.%d.mlp.gate_proj.weight":            "blk.%d.ffn_gate.weight",
		"layers.%d.mlp.up_proj.weight":              "blk.%d.ffn_up.weight",
		"layers.%d.mlp.down_proj.weight":            "blk.%d.ffn_down.weight",
		"layers.%d.mlp.gate_proj.bias":              "blk.%d.ffn_gate.bias",
		"layers.%d.mlp.up_proj.bias":                "blk.%d.ffn_up.bias",
		"layers.%d.mlp.down_proj.bias":              "blk.%d.ffn_down.bias",
	}
	hfGPT2Names = map[string]string{
		"wte.weight":              "token_embd.weight",
		"wpe.weight":              "position_embd.weight",
		"ln_f.weight":             "output_norm.weight",
		"ln_f.bias":               "output_norm.bias",
		"lm_head.weight":          "output.weight",
		"h.%d.ln_1.weight":        "blk.%d.attn_norm.weight",
		"h.%d.ln_1.bias":          "blk.%d.attn_norm.bias",
		"h.%d.attn.c_attn.weight": "blk.%d.attn_qkv.weight",
		"h.%d.attn.c_attn.bias":   "blk.%d.attn_qkv.bias",
		"h.%d.attn.c_proj.weight": "blk.%d.attn_output.weight",
		"h.%d.attn.c_proj.bias":   "blk.%d.attn_output.bias",
		"h.%d.ln_2.weight":        "blk.%d.ffn_norm.weight",
		"h.%d.ln_2.bias":          "blk.%d.ffn_norm.bias",
		"h.%d.mlp.c_fc.weight":    "blk.%d.ffn_up.weight",
		"h.%d.mlp.c_fc.bias":      "blk.%d.ffn_up.bias",
		"h.%d.mlp.c_proj.weight":  "blk.%d.ffn_down.weight",
		"h.%d.mlp.c_proj.bias":    "blk.%d.ffn_down.bias",
	}
	// hfSkip are suffixes of non-weight buffers some checkpoints carry.
	hfSkip = []string{".rotary_emb.inv_freq", ".attn.bias", ".attn.masked_bias"}
)

// mapHFName returns the llama.cpp name and layer of a Hugging Face tensor
// ("" if the name is unknown).
func mapHFName(arch, name string) (string, int) {
	table := hfLlamaNames
	prefixes := []string{"model."}
	if arch == model.ArchGPT2 {
		table = hfGPT2Names
		prefixes = []string{"transformer."}
	}
	if name == "lm_head.weight" {
		return table[name], -1
	}
	for _, p := range prefixes {
		name = strings.TrimPrefix(name, p)
	}
	if g, ok := table[name]; ok && !strings.Contains(name, "%d") {
		return g, -1
	}
	// Replace the first run of digits after a '.' with %d.
	for i := 0; i < len(name); i++ {
		if name[i] < '0' || name[i] > '9' || i == 0 || name[i-1] != '.' {
			continue
		}
		j := i
		for j < len(name) && name[j] >= '0' && name[j] <= '9' {
			j++
		}
		l, err := strconv.Atoi(name[i:j])
		if err != nil {
			return "", -1
		}
		if g, ok := table[name[:i]+"%d"+name[j:]]; ok {
			return fmt.Sprintf(g, l), l
		}
		return "", -1
	}
	return "", -1
}

// openHF maps a Hugging Face checkpoint's tensors to llama.cpp names,
// permuting Llama Q/K rows to interleaved RoPE order and transposing
// GPT-2's Conv1D weights.
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
	permute := c.Arch == model.ArchLlama && c.RopeNeox
	if permute && c.RopeDim != c.HeadDim {
		return fmt.Errorf("%w: Llama with partial RoPE (%d of %d dims) cannot be permuted to llama.cpp's layout", ErrUnsupported, c.RopeDim, c.HeadDim)
	}
	seen := map[string]bool{}
	for _, t := range st.Tensors {
		if skipHF(t.Name) {
			continue
		}
		name, layer := mapHFName(c.Arch, t.Name)
		if name == "" {
			return fmt.Errorf("convert: unknown %s tensor %q in %s", c.Arch, t.Name, filepath.Base(in))
		}
		if name == "output.weight" && c.Tied {
			continue
		}
		if seen[name] {
			return fmt.Errorf("convert: tensors %q and another both map to %s", t.Name, name)
		}
		seen[name] = true
		typ, err := t.Type()
		if err != nil {
			return fmt.Errorf("convert: %w", err)
		}
		if len(t.Shape) < 1 || len(t.Shape) > 2 {
			return fmt.Errorf("convert: tensor %q has %d dims, want 1 or 2", t.Name, len(t.Shape))
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
		conv1D := c.Arch == model.ArchGPT2 && len(t.Shape) == 2 &&
			(strings.HasSuffix(name, "attn_qkv.weight") || strings.HasSuffix(name, "attn_output.weight") ||
				strings.HasSuffix(name, "ffn_up.weight") || strings.HasSuffix(name, "ffn_down.weight"))
		if conv1D {
			if err := st.transpose(); err != nil {
				return err
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
		s.tensors = append(s.tensors, st)
	}
	return nil
}

func skipHF(name string) bool {
	for _, suf := range hfSkip {
		if strings.HasSuffix(name, suf) {
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

// ropeRow maps row r of a matrix of heads×hd rows in interleaved order to
// its row in halves order: within a head, local row 2i+j comes from
// j·hd/2+i.
func ropeRow(r, hd int) int {
	h, local := r/hd, r%hd
	return h*hd + (local%2)*(hd/2) + local/2
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
			out[r] = t.f32[ropeRow(r, n/heads)]
		}
		t.f32 = out
		return nil
	}
	n := t.rows()
	if n%heads != 0 || (n/heads)%2 != 0 {
		return fmt.Errorf("convert: tensor %s: %d rows do not split into %d heads of even size", t.name, n, heads)
	}
	hd := n / heads
	t.perm = func(r int) int { return ropeRow(r, hd) }
	return nil
}
