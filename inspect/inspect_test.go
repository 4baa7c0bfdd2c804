package inspect

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"nanoserve/internal/testshared"
	"nanoserve/model"
)

// TestInspectArchs: inspect reports the hyperparameters of the newer
// architectures — windowed layers and their RoPE base, QK-norm, post
// norms, GeGLU, soft-caps, experts.
func TestInspectArchs(t *testing.T) {
	load := func(name string) (*Info, string) {
		t.Helper()
		p := testshared.Path(t, "testdata/gguf-archs/"+name+"/"+name+"-F16.gguf")
		m, err := model.Load(p, model.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		info, err := Describe(p, m, false)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		Print(&b, info)
		return info, b.String()
	}
	g3, text := load("gemma3")
	c := g3.Config
	if !slices.Equal(c.WindowedLayers, []int{0, 1, 2, 3, 4}) || c.RopeThetaSWA != 10000 || !c.QKNorm || !c.PostNorms ||
		c.FFNActivation != "geglu" || c.AttnScale != 0.25 || c.EmbedScale == 0 {
		t.Errorf("gemma3: %+v", c)
	}
	if !strings.Contains(text, "sliding window: 8 on layers [0 1 2 3 4]") || !strings.Contains(text, "theta 10000 on windowed layers") {
		t.Errorf("gemma3 text:\n%s", text)
	}
	g2, _ := load("gemma2")
	if g2.Config.AttnSoftcap != 50 || g2.Config.FinalSoftcap != 30 || !slices.Equal(g2.Config.WindowedLayers, []int{0, 2}) {
		t.Errorf("gemma2: %+v", g2.Config)
	}
	moe, text := load("qwen3moe")
	if moe.Config.Experts != 8 || moe.Config.ExpertsUsed != 2 || moe.Config.ExpertHiddenDim != 64 || moe.Config.FFNActivation != "moe-swiglu" {
		t.Errorf("qwen3moe: %+v", moe.Config)
	}
	if !strings.Contains(text, "experts:        8, 2 used per token, expert ffn 64") {
		t.Errorf("qwen3moe text:\n%s", text)
	}
	// Issue 31: Gemma 4's shared-KV layers own no cache, so the KV bytes
	// count 3 of its 6 layers; SmolLM3's RoPE-less layer; gpt-oss's sinks.
	g4, text := load("gemma4")
	if c := g4.Config; c.KVCacheLayers != 3 || !slices.Equal(c.SharedKVLayers, []int{3, 4, 5}) || !slices.Equal(c.KVSources, []int{1, 1, 2}) ||
		c.HeadDimSWA != 16 || c.PerLayerInput != 8 || !slices.Equal(c.FFNLengths, []int{64, 64, 64, 128, 128, 128}) || g4.KVBytesPerTok != 768 {
		t.Errorf("gemma4: %+v, kv bytes %d", c, g4.KVBytesPerTok)
	}
	if !strings.Contains(text, "shared kv:      layers [3 4 5] read the caches of layers [1 1 2] (3 of 6 layers own a cache)") ||
		!strings.Contains(text, "kv cache:       768 bytes per token (f16)") {
		t.Errorf("gemma4 text:\n%s", text)
	}
	sm, text := load("smollm3")
	if !slices.Equal(sm.Config.NoRopeLayers, []int{3}) || !strings.Contains(text, "no RoPE on layers [3]") {
		t.Errorf("smollm3: %+v\n%s", sm.Config, text)
	}
	oss, text := load("gpt-oss")
	if !oss.Config.AttnSinks || oss.Config.FFNActivation != "moe-swiglu-oai" || oss.Config.RopeScaling != "yarn" || !strings.Contains(text, "attention sinks") {
		t.Errorf("gpt-oss: %+v\n%s", oss.Config, text)
	}
}
