package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"nanoserve/gguf"
	"nanoserve/internal/testshared"
	"nanoserve/tensor"
)

// fixtures returns the Hugging Face test folders ({llama_gqa,qwen2,gpt2})
// made by shared/tools/fixturegen (generated once, cached).
func fixtures(t *testing.T) string {
	t.Helper()
	return testshared.Fixture(t, "hf")
}

type hfConfig struct {
	Vocab  int `json:"vocab_size"`
	Hidden int `json:"hidden_size"`
	Layers int `json:"num_hidden_layers"`
	NEmbd  int `json:"n_embd"`
	NLayer int `json:"n_layer"`
}

func readConfig(t *testing.T, dir string) hfConfig {
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c hfConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	if c.Hidden == 0 {
		c.Hidden, c.Layers = c.NEmbd, c.NLayer
	}
	return c
}

// TestFixtures opens the generated checkpoints and checks their tensors
// against config.json, and the token embedding against the GGUF file of the
// same model (F16 there; the values are exact in F16).
func TestFixtures(t *testing.T) {
	root := fixtures(t)
	cases := []struct {
		model, embed, gguf string
		perLayer, extra    int
	}{
		{"llama_gqa", "model.embed_tokens.weight", "llama_gqa/llama_gqa-F16.gguf", 9, 3},
		{"qwen2", "model.embed_tokens.weight", "qwen2/qwen2-F16.gguf", 12, 2},
		{"gpt2", "transformer.wte.weight", "gpt2/gpt2-F16.gguf", 12, 4},
	}
	for _, c := range cases {
		t.Run(c.model, func(t *testing.T) {
			dir := filepath.Join(root, c.model)
			cfg := readConfig(t, dir)
			f, err := OpenDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if c.perLayer > 0 && len(f.Tensors) != c.perLayer*cfg.Layers+c.extra {
				t.Errorf("%d tensors, want %d", len(f.Tensors), c.perLayer*cfg.Layers+c.extra)
			}
			if f.Metadata["format"] != "pt" {
				t.Errorf("metadata %v", f.Metadata)
			}
			for _, ts := range f.Tensors {
				if typ, err := ts.Type(); err != nil || typ != tensor.F32 || len(ts.Data) != 4*ts.Elements() {
					t.Errorf("%s: %s %v, %d bytes: %v", ts.Name, ts.DType, ts.Shape, len(ts.Data), err)
				}
			}
			emb, ok := f.Tensor(c.embed)
			if !ok {
				t.Fatalf("no %s", c.embed)
			}
			if fmt.Sprint(emb.Shape) != fmt.Sprint([]int{cfg.Vocab, cfg.Hidden}) {
				t.Fatalf("%s shape %v, config says [%d %d]", c.embed, emb.Shape, cfg.Vocab, cfg.Hidden)
			}
			g, err := gguf.Open(filepath.Join(testshared.Dir(t), "testdata", "gguf", c.gguf))
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			ge, ok := g.Tensor("token_embd.weight")
			if !ok || ge.Type != tensor.F16 || ge.Cols() != cfg.Hidden || ge.Rows() != cfg.Vocab {
				t.Fatalf("GGUF token_embd: %v", ge)
			}
			for i := 0; i < emb.Elements(); i++ {
				want := tensor.F16ToF32(binary.LittleEndian.Uint16(ge.Data[2*i:]))
				got := binary.LittleEndian.Uint32(emb.Data[4*i:])
				if got != math.Float32bits(want) {
					t.Fatalf("element %d: safetensors %08x, GGUF %v", i, got, want)
				}
			}
		})
	}
}

// TestSharded splits a generated checkpoint into three shards with an
// index and expects OpenDir to present the same tensors.
func TestSharded(t *testing.T) {
	single, err := Open(filepath.Join(fixtures(t), "llama_gqa", SingleFile))
	if err != nil {
		t.Fatal(err)
	}
	defer single.Close()
	dir := t.TempDir()
	shards := make([][]Tensor, 3)
	weightMap := map[string]string{}
	for i, ts := range single.Tensors {
		shards[i%3] = append(shards[i%3], *ts)
		weightMap[ts.Name] = fmt.Sprintf("model-%05d-of-00003.safetensors", i%3+1)
	}
	for i, s := range shards {
		if err := Write(filepath.Join(dir, fmt.Sprintf("model-%05d-of-00003.safetensors", i+1)), s, map[string]string{"format": "pt", "shard": fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	writeIndex := func(wm map[string]string) {
		raw, _ := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": 123}, "weight_map": wm})
		if err := os.WriteFile(filepath.Join(dir, IndexFile), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeIndex(weightMap)
	f, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Tensors) != len(single.Tensors) || f.Metadata["shard"] != "0" {
		t.Errorf("%d tensors (want %d), metadata %v", len(f.Tensors), len(single.Tensors), f.Metadata)
	}
	for _, want := range single.Tensors {
		got, ok := f.Tensor(want.Name)
		if !ok || got.DType != want.DType || fmt.Sprint(got.Shape) != fmt.Sprint(want.Shape) || !bytes.Equal(got.Data, want.Data) {
			t.Errorf("tensor %s differs after sharding", want.Name)
		}
	}
	f.Close()

	// A weight_map entry whose tensor is not in its shard.
	bad := map[string]string{"ghost": "model-00001-of-00003.safetensors"}
	for k, v := range weightMap {
		bad[k] = v
	}
	writeIndex(bad)
	if _, err := OpenDir(dir); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `"ghost"`) {
		t.Errorf("missing tensor: %v", err)
	}
	writeIndex(map[string]string{"x": "../model.safetensors"})
	if _, err := OpenDir(dir); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "not a file name") {
		t.Errorf("escaping shard path: %v", err)
	}
	writeIndex(map[string]string{"x": "missing.safetensors"})
	if _, err := OpenDir(dir); err == nil || !strings.Contains(err.Error(), "missing.safetensors") {
		t.Errorf("missing shard: %v", err)
	}
	// The same tensor in two shards.
	os.Remove(filepath.Join(dir, IndexFile))
	dupName := shards[0][0].Name
	Write(filepath.Join(dir, "dup.safetensors"), shards[0][:1], nil)
	writeIndex(map[string]string{dupName: "dup.safetensors", shards[1][0].Name: "model-00001-of-00003.safetensors"})
	if _, err := OpenDir(dir); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "is in both") {
		t.Errorf("duplicate across shards: %v", err)
	}
	if _, err := OpenDir(t.TempDir()); err == nil || !strings.Contains(err.Error(), "neither") {
		t.Errorf("empty dir: %v", err)
	}
}
