// Package inspect describes a model as `nanoserve inspect` reports it:
// Describe reads a loaded model (model.Model) into an Info — architecture
// and shapes, the blocks its layers enable (QK-norm, post norms, soft-caps,
// experts, sinks, RoPE-less and windowed layers, per-kind head sizes,
// shared-KV layers), tensor types and parameter count, the weight files
// and their SHA-256, the KV cache's bytes per token for each cache type,
// recurrent state, tokenizer and special tokens, chat template and, for a
// model `nanoserve train` wrote, its training manifest — and Print writes
// it as text. Info's JSON is the --json schema.
//
// Describe reads only what the model already holds (its Config, tensor
// list and tokenizer) plus the files it names, so the numbers are the ones
// the engine runs with: KV bytes per token are model.KVBytesPerToken, the
// bytes NewCacheType allocates per position.
package inspect

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"nanoserve/kvcache"
	"nanoserve/model"
	"nanoserve/tensor"
	"nanoserve/tokenizer"
	"nanoserve/train"
)

// Info is what `nanoserve inspect` reports (the --json schema).
type Info struct {
	Path          string             `json:"path"`
	Format        string             `json:"format"`
	Architecture  string             `json:"architecture"`
	Config        Config             `json:"config"`
	Params        int64              `json:"params"`
	TensorCount   int                `json:"tensor_count"`
	TensorTypes   map[string]int     `json:"tensor_types"`
	FileBytes     int64              `json:"file_bytes"`
	Files         []File             `json:"files"`
	KVBytesPerTok int64              `json:"kv_bytes_per_token"` // F16, the default --kv-cache-type
	Weights       model.WeightMemory `json:"weights"`            // where the default load holds the weights, and its memory
	KVBytesByType map[string]int64   `json:"kv_bytes_per_token_by_type"`
	// Hybrid models: the recurrent layers and one sequence's state.
	RecurrentLayers []int           `json:"recurrent_layers,omitempty"`
	StateBytes      int64           `json:"recurrent_state_bytes,omitempty"`
	Tokenizer       *Tokenizer      `json:"tokenizer"`
	EOG             []int           `json:"eog_ids"`
	ChatTemplate    bool            `json:"chat_template"`
	ChatTmplBytes   int             `json:"chat_template_bytes"`
	Training        *train.Manifest `json:"training,omitempty"` // for models nanoserve trained
}

// Config is the model's hyperparameters and the blocks its layers enable.
type Config struct {
	Dim           int     `json:"dim"`
	HiddenDim     int     `json:"hidden_dim"`
	Layers        int     `json:"layers"`
	Heads         int     `json:"heads"`
	KVHeads       int     `json:"kv_heads"`
	HeadDim       int     `json:"head_dim"`
	Vocab         int     `json:"vocab"`
	ContextLen    int     `json:"context_length"`
	NormEps       float32 `json:"norm_eps"`
	RopeTheta     float64 `json:"rope_theta,omitempty"`
	RopeDim       int     `json:"rope_dim,omitempty"`
	RopeLayout    string  `json:"rope_layout,omitempty"`
	RopeScaling   string  `json:"rope_scaling,omitempty"`
	SlidingWindow int     `json:"sliding_window,omitempty"`
	// WindowedLayers lists the layers that use the sliding window (absent:
	// every layer when sliding_window is set).
	WindowedLayers []int   `json:"windowed_layers,omitempty"`
	RopeThetaSWA   float64 `json:"rope_theta_swa,omitempty"`
	RopeFactors    string  `json:"rope_factors,omitempty"`
	RopeAttnFactor float64 `json:"rope_attn_factor,omitempty"`
	Tied           bool    `json:"tied_embeddings"`

	QKNorm          bool    `json:"qk_norm,omitempty"`
	PostNorms       bool    `json:"post_norms,omitempty"`
	FFNActivation   string  `json:"ffn_activation"`
	EmbedScale      float32 `json:"embedding_scale,omitempty"`
	AttnScale       float64 `json:"attention_scale"`
	AttnSoftcap     float32 `json:"attention_softcap,omitempty"`
	FinalSoftcap    float32 `json:"final_logit_softcap,omitempty"`
	Experts         int     `json:"experts,omitempty"`
	ExpertsUsed     int     `json:"experts_used,omitempty"`
	ExpertHiddenDim int     `json:"expert_hidden_dim,omitempty"`

	// Per-layer variations (issue 31).
	NoRopeLayers   []int `json:"no_rope_layers,omitempty"`   // layers without RoPE (SmolLM3)
	HeadDimSWA     int   `json:"head_dim_swa,omitempty"`     // head dim of the windowed layers (Gemma 4)
	KVHeadsSWA     int   `json:"kv_heads_swa,omitempty"`     // KV heads of the windowed layers (Gemma 4 31B)
	FFNLengths     []int `json:"ffn_lengths,omitempty"`      // FFN width per layer
	KVCacheLayers  int   `json:"kv_cache_layers"`            // layers that own a KV cache (KV bytes count only these)
	SharedKVLayers []int `json:"shared_kv_layers,omitempty"` // layers reading another layer's cache
	KVSources      []int `json:"kv_sources,omitempty"`       // the cache layer each of SharedKVLayers reads
	PerLayerInput  int   `json:"per_layer_input,omitempty"`  // Gemma 4's per-layer input width
	AttnSinks      bool  `json:"attention_sinks,omitempty"`  // gpt-oss
}

// File is one weight file: its size and, unless skipped, its SHA-256.
type File struct {
	Path   string `json:"path"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256,omitempty"`
}

// Tokenizer is the model's tokenizer: kind, size, BOS rule, special tokens.
type Tokenizer struct {
	Kind    string  `json:"kind"`
	Size    int     `json:"size"`
	AddBOS  bool    `json:"add_bos"`
	Special []Token `json:"special"`
	// FIMLayout is how FIM prompts are laid out for the model by default:
	// "psm", or "spm" for a model trained suffix first ("" : no FIM).
	FIMLayout string `json:"fim_layout,omitempty"`
}

// Token is one special token: its role (bos, eos, eog, fim_pre, ...), id and text.
type Token struct {
	Role string `json:"role"`
	ID   int    `json:"id"`
	Text string `json:"text"`
}

// Describe reports the model m loaded from path; hash adds each weight
// file's SHA-256 (reading every byte).
func Describe(path string, m *model.Model, hash bool) (*Info, error) {
	c := m.Config
	info := &Info{
		Path: path, Format: c.Format, Architecture: c.Arch,
		Config: Config{Dim: c.Dim, HiddenDim: c.HiddenDim, Layers: c.Layers, Heads: c.Heads, KVHeads: c.KVHeads,
			HeadDim: c.HeadDim, Vocab: c.Vocab, ContextLen: c.ContextLen, NormEps: c.NormEps,
			SlidingWindow: c.SlidingWindow, Tied: c.Tied, RopeScaling: c.RopeScaling.Type,
			RopeThetaSWA: c.RopeThetaSWA, RopeFactors: c.RopeFactors, RopeAttnFactor: c.RopeAttnFactor,
			QKNorm: c.QKNorm, PostNorms: c.PostNorms, FFNActivation: c.FFNActivation(), EmbedScale: c.EmbedScale,
			AttnScale: c.AttentionScale(), AttnSoftcap: c.AttnSoftcap, FinalSoftcap: c.FinalSoftcap,
			Experts: c.Experts, ExpertsUsed: c.ExpertsUsed, ExpertHiddenDim: c.ExpertHiddenDim},
		Params: m.ParamCount(), TensorCount: len(m.Tensors), TensorTypes: map[string]int{},
		KVBytesPerTok: m.KVBytesPerToken(tensor.F16), Weights: m.WeightMemory(), KVBytesByType: kvBytesByType(m), EOG: m.Gen.EOG, StateBytes: m.StateBytes(),
		ChatTemplate: m.Gen.ChatTemplate != "", ChatTmplBytes: len(m.Gen.ChatTemplate),
	}
	ic := &info.Config
	ic.KVHeadsSWA = c.KVHeadsSWA
	ic.HeadDimSWA, ic.FFNLengths, ic.KVCacheLayers, ic.PerLayerInput, ic.AttnSinks = c.HeadDimSWA, c.FFNLengths, c.CacheLayers(), c.PerLayerDim, c.AttnSinks
	for l := range c.Layers {
		if c.RopeDim > 0 && c.LayerRopeDim(l) == 0 {
			ic.NoRopeLayers = append(ic.NoRopeLayers, l)
		}
		if c.SharesKV(l) {
			ic.SharedKVLayers, ic.KVSources = append(ic.SharedKVLayers, l), append(ic.KVSources, c.KVSource(l))
		}
	}
	for l, r := range c.Recurrent {
		if r {
			info.RecurrentLayers = append(info.RecurrentLayers, l)
		}
	}
	if c.SWALayers != nil {
		for l, w := range c.SWALayers {
			if w {
				info.Config.WindowedLayers = append(info.Config.WindowedLayers, l)
			}
		}
	}
	if c.RopeDim > 0 {
		info.Config.RopeTheta, info.Config.RopeDim, info.Config.RopeLayout = c.RopeTheta, c.RopeDim, "interleaved"
		if c.RopeNeox {
			info.Config.RopeLayout = "neox"
		}
	}
	for _, t := range m.Tensors {
		info.TensorTypes[t.Type.String()]++
	}
	for _, p := range m.Files {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, err
		}
		fi := File{Path: p, Bytes: st.Size()}
		if hash {
			h := sha256.New()
			if _, err := io.Copy(h, f); err != nil {
				f.Close()
				return nil, fmt.Errorf("hashing %s: %w", p, err)
			}
			fi.SHA256 = hex.EncodeToString(h.Sum(nil))
		}
		f.Close()
		info.FileBytes += fi.Bytes
		info.Files = append(info.Files, fi)
	}
	if t := m.Tokenizer; t != nil {
		ti := &Tokenizer{Kind: t.Kind(), Size: t.Size(), AddBOS: t.AddBOS()}
		if id, ok := t.BOS(); ok {
			ti.Special = append(ti.Special, Token{"bos", id, t.Token(id)})
		}
		if id, ok := t.EOS(); ok {
			ti.Special = append(ti.Special, Token{"eos", id, t.Token(id)})
		}
		for _, id := range t.EOG() {
			ti.Special = append(ti.Special, Token{"eog", id, t.Token(id)})
		}
		f := t.FIM()
		for _, e := range []struct {
			role string
			o    tokenizer.OptID
		}{{"fim_pre", f.Pre}, {"fim_suf", f.Suf}, {"fim_mid", f.Mid}, {"fim_pad", f.Pad}, {"fim_rep", f.Rep}, {"fim_sep", f.Sep}} {
			if e.o.OK {
				ti.Special = append(ti.Special, Token{e.role, e.o.ID, t.Token(e.o.ID)})
			}
		}
		if f.OK() {
			ti.FIMLayout = "psm"
			if f.SuffixFirst {
				ti.FIMLayout = "spm"
			}
		}
		info.Tokenizer = ti
	}
	if c.Format == "gguf" && len(m.Files) == 1 {
		man, ok, err := train.ReadManifest(m.Files[0])
		if err != nil {
			return nil, err
		}
		if ok {
			info.Training = &man
		}
	}
	return info, nil
}

// Print writes in as the text `nanoserve inspect` prints.
func Print(w io.Writer, in *Info) {
	printShape(w, in)
	printBlocks(w, in)
	printSizes(w, in)
	printTokenizer(w, in)
	printTraining(w, in)
}

// printShape writes the file, architecture, dimensions, positions and window.
func printShape(w io.Writer, in *Info) {
	c := in.Config
	fmt.Fprintf(w, "model:          %s\n", in.Path)
	fmt.Fprintf(w, "format:         %s\n", in.Format)
	fmt.Fprintf(w, "architecture:   %s\n", in.Architecture)
	fmt.Fprintf(w, "dimensions:     dim %d, ffn %d, %d layers, %d heads (%d kv, head dim %d), vocab %d\n",
		c.Dim, c.HiddenDim, c.Layers, c.Heads, c.KVHeads, c.HeadDim, c.Vocab)
	fmt.Fprintf(w, "context length: %d\n", c.ContextLen)
	fmt.Fprintf(w, "norm eps:       %g\n", c.NormEps)
	if c.RopeDim > 0 {
		fmt.Fprintf(w, "rope:           theta %g, %d dims, %s", c.RopeTheta, c.RopeDim, c.RopeLayout)
		if c.RopeScaling != "" {
			fmt.Fprintf(w, ", %s scaling", c.RopeScaling)
		}
		if c.RopeFactors != "" {
			fmt.Fprintf(w, ", factors %s", c.RopeFactors)
		}
		if c.RopeAttnFactor != 0 {
			fmt.Fprintf(w, ", attn_factor %g", c.RopeAttnFactor)
		}
		if c.RopeThetaSWA != 0 {
			fmt.Fprintf(w, ", theta %g on windowed layers", c.RopeThetaSWA)
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintln(w, "positions:      learned")
	}
	if c.SlidingWindow > 0 {
		fmt.Fprintf(w, "sliding window: %d", c.SlidingWindow)
		if c.WindowedLayers != nil {
			fmt.Fprintf(w, " on layers %v", c.WindowedLayers)
		}
		fmt.Fprintln(w)
	}
}

// printBlocks writes the blocks the layers enable and the experts.
func printBlocks(w io.Writer, in *Info) {
	c := in.Config
	var blocks []string
	if c.QKNorm {
		blocks = append(blocks, "QK-norm")
	}
	if c.PostNorms {
		blocks = append(blocks, "post-norms")
	}
	if c.EmbedScale != 0 {
		blocks = append(blocks, fmt.Sprintf("embeddings ×%g", c.EmbedScale))
	}
	if c.AttnSoftcap != 0 {
		blocks = append(blocks, fmt.Sprintf("attention soft-cap %g", c.AttnSoftcap))
	}
	if c.FinalSoftcap != 0 {
		blocks = append(blocks, fmt.Sprintf("final soft-cap %g", c.FinalSoftcap))
	}
	if c.AttnSinks {
		blocks = append(blocks, "attention sinks")
	}
	if c.NoRopeLayers != nil {
		blocks = append(blocks, fmt.Sprintf("no RoPE on layers %v", c.NoRopeLayers))
	}
	if c.HeadDimSWA != 0 {
		blocks = append(blocks, fmt.Sprintf("head dim %d on windowed layers", c.HeadDimSWA))
	}
	if c.KVHeadsSWA != 0 {
		blocks = append(blocks, fmt.Sprintf("%d kv heads on windowed layers", c.KVHeadsSWA))
	}
	if c.PerLayerInput != 0 {
		blocks = append(blocks, fmt.Sprintf("per-layer inputs %d wide", c.PerLayerInput))
	}
	fmt.Fprintf(w, "blocks:         %s FFN, attention scale %.4g", c.FFNActivation, c.AttnScale)
	if len(blocks) > 0 {
		fmt.Fprintf(w, ", %s", strings.Join(blocks, ", "))
	}
	fmt.Fprintln(w)
	if c.Experts > 0 {
		fmt.Fprintf(w, "experts:        %d, %d used per token, expert ffn %d\n", c.Experts, c.ExpertsUsed, c.ExpertHiddenDim)
	}
}

// printSizes writes parameters, tensors, files, hashes and the KV cache and state bytes.
func printSizes(w io.Writer, in *Info) {
	c := in.Config
	fmt.Fprintf(w, "tied output:    %v\n", c.Tied)
	fmt.Fprintf(w, "parameters:     %d (%.2fM)\n", in.Params, float64(in.Params)/1e6)
	types := make([]string, 0, len(in.TensorTypes))
	for t, n := range in.TensorTypes {
		types = append(types, fmt.Sprintf("%s×%d", t, n))
	}
	sort.Strings(types)
	fmt.Fprintf(w, "tensors:        %d (%s)\n", in.TensorCount, strings.Join(types, ", "))
	fmt.Fprintf(w, "file size:      %d bytes (%.1f MiB)\n", in.FileBytes, float64(in.FileBytes)/(1<<20))
	for _, f := range in.Files {
		if f.SHA256 != "" {
			fmt.Fprintf(w, "sha256:         %s  %s\n", f.SHA256, f.Path)
		}
	}
	if c.SharedKVLayers != nil {
		fmt.Fprintf(w, "shared kv:      layers %v read the caches of layers %v (%d of %d layers own a cache)\n", c.SharedKVLayers, c.KVSources, c.KVCacheLayers, c.Layers)
	}
	if in.Weights.Placement != "" {
		fmt.Fprintf(w, "weights memory: %s\n", in.Weights)
	}
	fmt.Fprintf(w, "kv cache:       %d bytes per token (f16)", in.KVBytesPerTok)
	for _, t := range []string{"f32", "q8_0"} {
		if b, ok := in.KVBytesByType[t]; ok {
			fmt.Fprintf(w, ", %d (%s)", b, t)
		}
	}
	fmt.Fprintln(w)
	if in.StateBytes > 0 {
		fmt.Fprintf(w, "recurrent:      layers %v, %d bytes of state per sequence (beside the kv cache, same budget)\n", in.RecurrentLayers, in.StateBytes)
	}
}

// printTokenizer writes the tokenizer, its special tokens and FIM layout, and the chat template.
func printTokenizer(w io.Writer, in *Info) {
	if t := in.Tokenizer; t != nil {
		fmt.Fprintf(w, "tokenizer:      %s, %d tokens, add BOS %v\n", t.Kind, t.Size, t.AddBOS)
		for _, s := range t.Special {
			fmt.Fprintf(w, "  %-7s %7d  %q\n", s.Role, s.ID, s.Text)
		}
		switch t.FIMLayout {
		case "spm":
			fmt.Fprintln(w, "  fill in the middle: suffix first (SPM; trained so — /infill lays prompts out that way)")
		case "psm":
			fmt.Fprintln(w, "  fill in the middle: prefix first (PSM; --spm-infill for suffix first)")
		}
	} else {
		fmt.Fprintln(w, "tokenizer:      none (pass --tokenizer)")
	}
	fmt.Fprintf(w, "chat template:  %v", in.ChatTemplate)
	if in.ChatTemplate {
		fmt.Fprintf(w, " (%d bytes)", in.ChatTmplBytes)
	}
	fmt.Fprintln(w)
}

// printTraining writes the training manifest of a model nanoserve trained.
func printTraining(w io.Writer, in *Info) {
	if m := in.Training; m != nil {
		fmt.Fprintf(w, "trained by:     nanoserve train, %d steps, %d tokens, seed %d\n", m.Steps, m.Tokens, m.Seed)
		fmt.Fprintf(w, "  corpus        %s (sha256 %s)\n", m.Corpus, m.CorpusSHA256)
		fmt.Fprintf(w, "  tokenizer     %s\n", m.TokenizerDesc)
		fmt.Fprintf(w, "  hyperparams   %s\n", m.Hyperparams)
		if m.FIMRate > 0 {
			fmt.Fprintf(w, "  fill-in-mid   %.2f of training chunks (PSM and SPM, llama-server's /infill layout)\n", m.FIMRate)
		}
		if m.InitFrom != "" {
			fmt.Fprintf(w, "  fine-tuned    from %s\n", m.InitFrom)
		}
		fmt.Fprintf(w, "  held-out      %.4f nats/token, %.4f bits/byte (KN trigram baseline %.4f bits/byte)\n", m.HeldOutLoss, m.HeldOutBPB, m.BaselineBPB)
		if m.FIMEval != "" {
			fmt.Fprintf(w, "  fim-eval      %s\n", strings.ReplaceAll(strings.TrimSpace(m.FIMEval), "\n", "\n                "))
		}
		fmt.Fprintf(w, "  command       %s\n", m.Command)
	}
}

// kvBytesByType is the KV bytes per token of each --kv-cache-type the
// model can use.
func kvBytesByType(m *model.Model) map[string]int64 {
	out := map[string]int64{}
	for _, name := range []string{"f32", "f16", "q8_0"} {
		t, _ := kvcache.ParseType(name)
		if m.CheckKVType(t) == nil {
			out[name] = m.KVBytesPerToken(t)
		}
	}
	return out
}
