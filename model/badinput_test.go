package model

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"nanoserve/gguf"
	"nanoserve/tensor"
)

// tinyGGUF describes a small llama GGUF: dim 8, 1 layer, 2 heads, 1 kv
// head, ffn 16, vocab 10. Tests edit it before writing.
type tinyGGUF struct {
	arch    string
	kv      map[string]gguf.Value
	tensors map[string]tinyTensor
	order   []string
}

type tinyTensor struct {
	typ  tensor.DType
	dims []uint64
}

func newTinyGGUF() *tinyGGUF {
	g := &tinyGGUF{arch: "llama", kv: map[string]gguf.Value{}, tensors: map[string]tinyTensor{}}
	g.kv["llama.context_length"] = gguf.Uint32(16)
	g.kv["llama.embedding_length"] = gguf.Uint32(8)
	g.kv["llama.block_count"] = gguf.Uint32(1)
	g.kv["llama.feed_forward_length"] = gguf.Uint32(16)
	g.kv["llama.attention.head_count"] = gguf.Uint32(2)
	g.kv["llama.attention.head_count_kv"] = gguf.Uint32(1)
	g.kv["llama.attention.layer_norm_rms_epsilon"] = gguf.Float32(1e-5)
	add := func(name string, dims ...uint64) {
		g.tensors[name] = tinyTensor{tensor.F32, dims}
		g.order = append(g.order, name)
	}
	add("token_embd.weight", 8, 10)
	add("blk.0.attn_norm.weight", 8)
	add("blk.0.attn_q.weight", 8, 8)
	add("blk.0.attn_k.weight", 8, 4)
	add("blk.0.attn_v.weight", 8, 4)
	add("blk.0.attn_output.weight", 8, 8)
	add("blk.0.ffn_norm.weight", 8)
	add("blk.0.ffn_gate.weight", 8, 16)
	add("blk.0.ffn_up.weight", 8, 16)
	add("blk.0.ffn_down.weight", 16, 8)
	add("output_norm.weight", 8)
	return g
}

func (g *tinyGGUF) write(t *testing.T) string {
	t.Helper()
	w := gguf.NewWriter()
	if err := w.AddKV("general.architecture", gguf.String(g.arch)); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"context_length", "embedding_length", "block_count", "feed_forward_length",
		"attention.head_count", "attention.head_count_kv", "attention.layer_norm_rms_epsilon"} {
		if v, ok := g.kv["llama."+k]; ok {
			if err := w.AddKV(g.arch+"."+k, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, name := range g.order {
		tt, ok := g.tensors[name]
		if !ok {
			continue
		}
		n := uint64(1)
		for _, d := range tt.dims {
			n *= d
		}
		rb, err := tt.typ.RowBytes(int(tt.dims[0]))
		if err != nil {
			t.Fatal(err)
		}
		data := make([]byte, uint64(rb)*n/tt.dims[0])
		if tt.typ == tensor.F32 {
			v := tensor.BytesF32(data)
			for i := range v {
				v[i] = 0.01 * float32(i%7)
			}
		}
		if err := w.AddTensor(name, tt.typ, tt.dims, data); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := w.WriteFile(p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestGGUFTiny(t *testing.T) {
	m := mustLoad(t, newTinyGGUF().write(t), Options{})
	if !m.Tied || m.Vocab != 10 || m.HeadDim != 4 || m.Tokenizer != nil {
		t.Errorf("config %+v", m.Config)
	}
	checkCacheParity(t, m, []int{1, 2, 3, 4, 5, 9, 0}, 1e-5)
}

func TestGGUFBadInput(t *testing.T) {
	cases := []struct {
		name string
		edit func(g *tinyGGUF)
		want string
	}{
		{"missing tensor", func(g *tinyGGUF) { delete(g.tensors, "blk.0.ffn_gate.weight") }, "missing tensor blk.0.ffn_gate.weight"},
		{"missing norm", func(g *tinyGGUF) { delete(g.tensors, "output_norm.weight") }, "missing tensor output_norm.weight"},
		{"shape mismatch", func(g *tinyGGUF) { g.tensors["blk.0.attn_k.weight"] = tinyTensor{tensor.F32, []uint64{8, 8}} }, "tensor blk.0.attn_k.weight has dims [8 8], want [8 4]"},
		{"vector shape", func(g *tinyGGUF) { g.tensors["blk.0.attn_norm.weight"] = tinyTensor{tensor.F32, []uint64{7}} }, "tensor blk.0.attn_norm.weight has dims [7]"},
		{"unsupported type", func(g *tinyGGUF) { g.tensors["blk.0.attn_q.weight"] = tinyTensor{tensor.I32, []uint64{8, 8}} }, "tensor blk.0.attn_q.weight has unsupported type I32"},
		{"unknown arch", func(g *tinyGGUF) { g.arch = "mamba" }, `unknown architecture "mamba"`},
		{"missing hparam", func(g *tinyGGUF) { delete(g.kv, "llama.block_count") }, "llama.block_count"},
		{"heads not dividing", func(g *tinyGGUF) { g.kv["llama.attention.head_count"] = gguf.Uint32(3) }, "not a multiple"},
		{"zero layers", func(g *tinyGGUF) { g.kv["llama.block_count"] = gguf.Uint32(0) }, "invalid dimensions"},
	}
	for _, tc := range cases {
		g := newTinyGGUF()
		tc.edit(g)
		_, err := Load(g.write(t), Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
		if tc.name == "unknown arch" && !errors.Is(err, ErrUnknownArch) {
			t.Errorf("unknown arch: %v is not ErrUnknownArch", err)
		}
	}
}

func TestHFBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(cfg string) string {
		if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	_, err := Load(write(`{"architectures": ["MambaForCausalLM"]}`), Options{})
	if !errors.Is(err, ErrUnknownArch) || !strings.Contains(err.Error(), "MambaForCausalLM") {
		t.Errorf("unknown architecture: %v", err)
	}
	_, err = Load(write(`{"architectures": ["LlamaForCausalLM"], "hidden_size": 8, "num_attention_heads": 2, "rope_scaling": {"rope_type": "dynamic", "factor": 4}}`), Options{})
	if err == nil || !strings.Contains(err.Error(), `rope_scaling type "dynamic"`) {
		t.Errorf("dynamic: %v", err)
	}
	_, err = Load(write(`{"architectures": ["LlamaForCausalLM"], "hidden_size": 8, "num_attention_heads": 2}`), Options{})
	if err == nil || !strings.Contains(err.Error(), "model.safetensors") {
		t.Errorf("no weights: %v", err)
	}
	_, err = Load(write(`{"architectures": `), Options{})
	if err == nil || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("bad json: %v", err)
	}
	// A real directory with a config that disagrees with the weights.
	src := filepath.Join(hfFixtures(t), "qwen2")
	d2 := t.TempDir()
	for _, f := range []string{"model.safetensors", "tokenizer.json"} {
		if err := os.Symlink(filepath.Join(src, f), filepath.Join(d2, f)); err != nil {
			t.Skip(err)
		}
	}
	raw, _ := os.ReadFile(filepath.Join(src, "config.json"))
	bad := strings.Replace(string(raw), `"intermediate_size": 160`, `"intermediate_size": 128`, 1)
	if err := os.WriteFile(filepath.Join(d2, "config.json"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(d2, Options{})
	if err == nil || !strings.Contains(err.Error(), "model.layers.0.mlp.gate_proj.weight has shape [160 64], want [128 64]") {
		t.Errorf("shape mismatch: %v", err)
	}
}
