package model

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"nanoserve/internal/hfwrite"
	"nanoserve/internal/testshared"
)

// gemma4HFDir writes the Gemma 4 GGUF at path as a Hugging Face directory
// (hfwrite.Gemma4FromGGUF: transformers' names and config keys, written
// from modeling_gemma4.py / configuration_gemma4.py, not from the
// llamacpp table the loader reads through) with the fixture's vocabulary,
// the Llama-2 SentencePiece model, as tokenizer.model.
func gemma4HFDir(t *testing.T, path string, vl bool) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), fmt.Sprint("gemma4-hf-", vl))
	if err := hfwrite.Gemma4FromGGUF(path, dir, vl); err != nil {
		t.Fatal(err)
	}
	if err := hfwrite.SentencePieceTokenizer(dir, testshared.Path(t, "models/llama2c/llama2-tokenizer.model"), true); err != nil {
		t.Fatal(err)
	}
	return dir
}

// sameGemma4Config reports how two loaded Gemma 4 models' geometry
// differs ("" if not): head dims, KV heads and RoPE per layer kind,
// windows, shared-KV sources, FFN widths, per-layer inputs, experts,
// scales and the RoPE frequencies in use.
func sameGemma4Config(a, b *Model) string {
	var d []string
	ca, cb := &a.Config, &b.Config
	if ca.Arch != cb.Arch || ca.Dim != cb.Dim || ca.Layers != cb.Layers || ca.Heads != cb.Heads || ca.Vocab != cb.Vocab ||
		ca.HeadDim != cb.HeadDim || ca.HeadDimSWA != cb.HeadDimSWA || ca.KVHeads != cb.KVHeads || ca.KVHeadsSWA != cb.KVHeadsSWA ||
		ca.RopeDim != cb.RopeDim || ca.RopeDimSWA != cb.RopeDimSWA || ca.RopeTheta != cb.RopeTheta || ca.RopeThetaSWA != cb.RopeThetaSWA ||
		ca.SlidingWindow != cb.SlidingWindow || !slices.Equal(ca.SWALayers, cb.SWALayers) || ca.SharedKVLayers != cb.SharedKVLayers ||
		ca.PerLayerDim != cb.PerLayerDim || ca.VNorm != cb.VNorm || ca.QKNorm != cb.QKNorm || ca.attnScale() != cb.attnScale() ||
		ca.EmbedScale != cb.EmbedScale || ca.FinalSoftcap != cb.FinalSoftcap || ca.AttnSoftcap != cb.AttnSoftcap || ca.Tied != cb.Tied ||
		ca.Experts != cb.Experts || ca.ExpertsUsed != cb.ExpertsUsed || ca.ExpertHiddenDim != cb.ExpertHiddenDim || ca.NormEps != cb.NormEps ||
		ca.ContextLen != cb.ContextLen || ca.RopeNeox != cb.RopeNeox || ca.PostNorms != cb.PostNorms || ca.GELUGate != cb.GELUGate {
		d = append(d, fmt.Sprintf("configs:\n gguf %+v\n   hf %+v", *ca, *cb))
	}
	for l := range min(ca.Layers, cb.Layers) {
		if ca.LayerHidden(l) != cb.LayerHidden(l) || ca.KVSource(l) != cb.KVSource(l) || ca.LayerKVDim(l) != cb.LayerKVDim(l) {
			d = append(d, fmt.Sprintf("layer %d: ffn %d/%d, kv source %d/%d, kv dim %d/%d", l,
				ca.LayerHidden(l), cb.LayerHidden(l), ca.KVSource(l), cb.KVSource(l), ca.LayerKVDim(l), cb.LayerKVDim(l)))
		}
	}
	if !slices.Equal(a.invFreq, b.invFreq) || !slices.Equal(a.invFreqSWA, b.invFreqSWA) {
		d = append(d, fmt.Sprintf("RoPE frequencies: gguf %v / %v, hf %v / %v", a.invFreq, a.invFreqSWA, b.invFreq, b.invFreqSWA))
	}
	if a.KVBytesPerToken(0) != b.KVBytesPerToken(0) {
		d = append(d, fmt.Sprintf("KV bytes per token %d / %d", a.KVBytesPerToken(0), b.KVBytesPerToken(0)))
	}
	return strings.Join(d, "\n")
}

// gemma4SharedKV reports whether a checkpoint tensor is a shared-KV
// layer's (3, 4, 5 of the fixture) K/V projection or K norm.
func gemma4SharedKV(name string) bool {
	for _, l := range []string{"3", "4", "5"} {
		for _, w := range []string{"k_proj", "v_proj", "k_norm"} {
			if strings.HasSuffix(name, "layers."+l+".self_attn."+w+".weight") {
				return true
			}
		}
	}
	return false
}

// argmaxes is the argmax of each position's logits.
func argmaxes(logits []float32, vocab int) []int {
	out := make([]int, len(logits)/vocab)
	for p := range out {
		row := logits[p*vocab : (p+1)*vocab]
		for i, v := range row {
			if v > row[out[p]] {
				out[p] = i
			}
		}
	}
	return out
}

// TestGemma4HF: the gemma4 fixture (per-layer inputs, shared-KV layers,
// per-kind head dims, proportional RoPE on the global layers, double-wide
// MLPs, layer output scales, final soft-cap) written as a Hugging Face
// directory, both as Gemma4ForCausalLM and as the multimodal checkpoint's
// language model, and as transformers saves it (no K/V weights in the
// shared-KV layers), loads with the GGUF's geometry; on every golden prompt
// (and held-out text) its tokenizer gives llama.cpp's prompt ids, its
// logits equal the GGUF's bit for bit at every position, the argmax ids
// are the same, and greedy decoding reproduces llama.cpp's generated ids.
func TestGemma4HF(t *testing.T) {
	g, path := archPath(t, "gemma4", "F16")
	mg := mustLoad(t, path, Options{Threads: 2})
	worst := 0.0
	heldOut := []string{"Gemma 4 reads its per-layer inputs before the first block.", "x := map[string]int{\"a\": 1} // ok"}
	// The third form is a checkpoint as transformers saves it: no k_proj,
	// v_proj or k_norm in the shared-KV layers (3, 4, 5).
	for _, form := range []struct{ vl, saved bool }{{false, false}, {true, false}, {false, true}} {
		vl := form.vl
		dir := gemma4HFDir(t, path, vl)
		if form.saved {
			if err := hfwrite.DropTensors(dir, gemma4SharedKV); err != nil {
				t.Fatal(err)
			}
		}
		mh := mustLoad(t, dir, Options{Threads: 2})
		if d := sameGemma4Config(mg, mh); d != "" {
			t.Fatalf("vl %v: %s", vl, d)
		}
		shared := 0
		for _, td := range mh.Tensors {
			if gemma4SharedKV(td.Name) {
				shared++
			}
		}
		if want := map[bool]int{false: 9, true: 0}[form.saved]; shared != want {
			t.Fatalf("%+v: %d shared-KV layer K/V tensors in the directory, want %d", form, shared, want)
		}
		type seq struct {
			name     string
			toks     []int
			prompt   int   // prompt length
			greedy   []int // llama.cpp's generated ids (nil: held out)
			text     string
			wantText []int
		}
		var seqs []seq
		for k, p := range g.Prompts {
			seqs = append(seqs, seq{fmt.Sprint("golden ", k), append(slices.Clone(p.PromptIDs), p.GeneratedIDs...), len(p.PromptIDs), p.GeneratedIDs, p.Prompt, p.PromptIDs})
		}
		for k, s := range heldOut {
			ids := mg.Tokenizer.Encode(s, false)
			seqs = append(seqs, seq{fmt.Sprint("held out ", k), append([]int{1}, ids...), len(ids) + 1, nil, s, append([]int{1}, ids...)})
		}
		for _, s := range seqs {
			ids := mh.Tokenizer.Encode(s.text, false)
			if bos, ok := mh.Tokenizer.BOS(); ok && mh.Tokenizer.AddBOS() {
				ids = append([]int{bos}, ids...)
			}
			if !slices.Equal(ids, s.wantText) {
				t.Errorf("vl %v %s: Hugging Face tokenizer ids %v, want %v", vl, s.name, ids, s.wantText)
			}
			lg, lh := runSeq(t, mg, s.toks, 0), runSeq(t, mh, s.toks, 0)
			d, at := maxAbsDiff(lg, lh)
			worst = max(worst, d)
			if d != 0 { // the same bytes in the same layout: bit for bit
				t.Errorf("vl %v %s: Hugging Face logits differ from the GGUF's by %g at position %d id %d", vl, s.name, d, at/mg.Vocab, at%mg.Vocab)
			}
			ag, ah := argmaxes(lg, mg.Vocab), argmaxes(lh, mh.Vocab)
			if !slices.Equal(ag, ah) {
				t.Errorf("vl %v %s: argmax ids differ:\n gguf %v\n   hf %v", vl, s.name, ag, ah)
			}
			if s.greedy != nil && !slices.Equal(ah[s.prompt-1:len(s.toks)-1], s.greedy[:len(s.toks)-s.prompt]) {
				t.Errorf("vl %v %s: Hugging Face greedy ids %v, llama.cpp %v", vl, s.name, ah[s.prompt-1:], s.greedy)
			}
		}
	}
	t.Logf("%d sequences × 3 forms: max |Δ logit| Hugging Face vs GGUF = %.3g", len(g.Prompts)+len(heldOut), worst)
}

// TestGemma4HFLarger: the larger Gemma 4s' forms through Hugging Face
// directories — the 31B's attention (attention_k_eq_v: global layers with
// num_global_key_value_heads and no v_proj) and the 26B-A4B's mixture
// (enable_moe_block: router.proj/scale/per_expert_scale, 3-D
// experts.gate_up_proj and down_proj, the extra norms), written from the
// fixtures the GGUF tests build — load with the GGUF's geometry and give
// its logits bit for bit (no llama.cpp golden exists for these).
func TestGemma4HFLarger(t *testing.T) {
	g, _ := archPath(t, "gemma4", "F16")
	toks := append(slices.Clone(g.Prompts[0].PromptIDs), g.Prompts[0].GeneratedIDs...)
	for name, path := range map[string]string{"k_eq_v": gemma4LargePath(t), "moe": gemma4MoEFixture(t)} {
		t.Run(name, func(t *testing.T) {
			mg := mustLoad(t, path, Options{Threads: 2})
			for _, vl := range []bool{false, true} {
				mh := mustLoad(t, gemma4HFDir(t, path, vl), Options{Threads: 2})
				if d := sameGemma4Config(mg, mh); d != "" {
					t.Fatalf("vl %v: %s", vl, d)
				}
				d, at := maxAbsDiff(runSeq(t, mg, toks, 0), runSeq(t, mh, toks, 0))
				if d != 0 {
					t.Errorf("vl %v: Hugging Face logits differ from the GGUF's by %g at %d", vl, d, at)
				}
				t.Logf("vl %v: max |Δ logit| = %.3g", vl, d)
			}
		})
	}
}

// TestGemma4HFConfig: Gemma4TextConfig's rules and the forms llama.cpp's
// converter accepts — the last layer is global whatever layer_types says,
// per_layer_config may carry the global head width instead of
// global_head_dim (same model, same logits) — and settings llama.cpp
// would run differently are refused by name.
func TestGemma4HFConfig(t *testing.T) {
	_, path := archPath(t, "gemma4", "F16")
	dir := gemma4HFDir(t, path, false)
	orig, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	restore := func() {
		if err := os.WriteFile(filepath.Join(dir, "config.json"), orig, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set := func(fields map[string]any) {
		t.Helper()
		if err := hfwrite.SetConfig(dir, fields); err != nil {
			t.Fatal(err)
		}
	}
	toks := []int{1, 450, 4996, 17354, 1701, 29916, 432, 17204, 975, 278, 17366, 11203, 29889}
	want := runSeq(t, mustLoad(t, path, Options{Threads: 1}), toks, 0)

	set(map[string]any{"layer_types": []string{"sliding_attention", "sliding_attention", "full_attention", "sliding_attention", "sliding_attention", "sliding_attention"}})
	if m := mustLoad(t, dir, Options{Threads: 1}); m.Windowed(5) || !m.Windowed(4) {
		t.Errorf("layer_types ending in a sliding layer: windowed %v, want the last layer global", m.SWALayers)
	}
	restore()

	set(map[string]any{"global_head_dim": nil, "per_layer_config": map[string]any{"2": map[string]any{"head_dim": 32}, "5": map[string]any{"head_dim": 32}}})
	if d, at := maxAbsDiff(want, runSeq(t, mustLoad(t, dir, Options{Threads: 1}), toks, 0)); d != 0 {
		t.Errorf("per_layer_config's head_dim: logits differ by %g at %d", d, at)
	}
	restore()

	for _, tc := range []struct {
		fields map[string]any
		want   string
	}{
		{map[string]any{"hidden_activation": "gelu"}, `hidden_activation "gelu"`},
		{map[string]any{"attention_bias": true}, "attention_bias"},
		{map[string]any{"use_bidirectional_attention": "all"}, "use_bidirectional_attention"},
		{map[string]any{"global_head_dim": nil}, "needs global_head_dim"},
		{map[string]any{"head_dim": nil}, "needs head_dim"},
		{map[string]any{"layer_types": []string{"full_attention"}}, "layer_types has 1 entries for 6 layers"},
		{map[string]any{"rope_parameters": map[string]any{"full_attention": map[string]any{"rope_type": "default", "rope_theta": 1e6}}}, "rope_parameters.full_attention"},
		{map[string]any{"rope_parameters": map[string]any{"sliding_attention": map[string]any{"rope_type": "linear", "factor": 2}}}, "rope_parameters.sliding_attention"},
		{map[string]any{"rope_parameters": map[string]any{"full_attention": map[string]any{"rope_type": "proportional", "partial_rotary_factor": 1.5}}}, "partial_rotary_factor 1.5"},
		{map[string]any{"enable_moe_block": true}, "enable_moe_block needs num_experts"},
		{map[string]any{"hidden_size_per_layer_input": 4}, "embed_tokens_per_layer.weight has shape"},
	} {
		set(tc.fields)
		_, err := Load(dir, Options{Threads: 1})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one naming %q", tc.fields, err, tc.want)
		}
		restore()
	}
}

// TestGemma4HFBadMoE: a 26B-A4B-style directory whose config.json
// disagrees with its expert tensors, or that lacks a router tensor, is
// refused with an error naming the tensor, never a panic.
func TestGemma4HFBadMoE(t *testing.T) {
	dir := gemma4HFDir(t, gemma4MoEFixture(t), false)
	orig, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		fields map[string]any
		want   string
	}{
		{map[string]any{"moe_intermediate_size": 8}, "experts.gate_up_proj has shape [4 32 32], want [4 16 32]"},
		{map[string]any{"num_experts": 3}, "router.proj.weight has shape [4 32], want [3 32]"},
		{map[string]any{"top_k_experts": 0}, "enable_moe_block needs"},
	} {
		if err := hfwrite.SetConfig(dir, tc.fields); err != nil {
			t.Fatal(err)
		}
		_, err := Load(dir, Options{Threads: 1})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one naming %q", tc.fields, err, tc.want)
		}
		if err := os.WriteFile(filepath.Join(dir, "config.json"), orig, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := hfwrite.DropTensors(dir, func(n string) bool { return strings.HasSuffix(n, "layers.2.router.scale") }); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir, Options{Threads: 1}); err == nil || !strings.Contains(err.Error(), "missing tensor model.layers.2.router.scale") {
		t.Errorf("without layers.2.router.scale: error %v", err)
	}
}
