// Package llamaserver lets llama.cpp's own server test suite
// (tools/server/tests in the llama.cpp source) measure `nanoserve serve`.
//
// The suite starts the binary named by $LLAMA_SERVER_BIN_PATH with
// llama-server's command line. The shim (internal/llamaserver/shim) is that
// binary: Translate turns the llama-server command line into a `nanoserve
// serve` one and the shim execs nanoserve with it, so the suite's SIGTERM
// reaches the server itself.
//
// Translate does three things:
//   - the suite's Hugging Face models (--hf-repo/--hf-file, which cannot be
//     downloaded here) become local models of ../shared of the same kind
//     (Presets: a tiny Llama for stories260K, a MoE for stories15M_MOE, the
//     built-in FIM model for the infill preset, ...);
//   - the llama-server flags that nanoserve spells differently are renamed
//     (--parallel → --max-seqs, --cors-origins → --cors-origin, ...), and
//     llama-server's --ctx-size (the cache of all slots; each slot gets
//     ctx/parallel unless --kv-unified) becomes nanoserve's per-sequence
//     --ctx-size and the shared --kv-cache-tokens;
//   - every other flag passes through when nanoserve serve knows a flag of
//     that name (so a flag nanoserve learns later is measured at once), and
//     is dropped otherwise (GPU layers, batch sizes, slots, ...), each drop
//     reported so the run log says what was not honoured.
package llamaserver

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Preset is a local stand-in for one of the suite's Hugging Face models.
type Preset struct {
	// Model is a path relative to the shared folder ("" = nanoserve's
	// built-in model, which has llama.cpp's FIM tokens).
	Model string
	// Tokenizer, relative to the shared folder, for llama2.c checkpoints.
	Tokenizer string
	// Extra nanoserve flags the stand-in needs.
	Extra []string
	// Why this model stands in for the suite's.
	Why string
}

// Presets maps the suite's --hf-repo (or "repo/file" when a repo holds
// several models) to a local model. Keys are matched without a ":QUANT"
// tail.
var Presets = map[string]Preset{
	// utils.py ServerPreset.tinyllama2 (stories260K: llama, SentencePiece
	// vocabulary, no chat template, n_ctx 512).
	"ggml-org/test-model-stories260K": {Model: "testdata/gguf/llama_gqa/llama_gqa-F16.gguf",
		Why: "a tiny Llama GGUF with the Llama-2 SentencePiece vocabulary, no chat template and a 512-token context, like stories260K; its EOS row is zeroed, so n_predict is always reached"},
	"ggml-org/models/tinyllamas/stories260K.gguf": {Model: "testdata/gguf/llama_gqa/llama_gqa-F16.gguf", Why: "as test-model-stories260K"},
	"ggml-org/models/tinyllamas/split/stories15M-q8_0-00001-of-00003.gguf": {Model: "testdata/gguf/llama_gqa/llama_gqa-Q8_0.gguf",
		Why: "a quantized tiny Llama (the suite's split file only checks that a split model loads)"},
	// bert_bge_small(_with_fa): an embedding model.
	"ggml-org/models/bert-bge-small/ggml-model-f16.gguf": {Model: "testdata/gguf/qwen2/qwen2-F16.gguf",
		Why: "nanoserve embeds with any model (pooled final hidden state); no BERT weights are shared"},
	// jina_reranker_tiny: nanoserve has no reranker; any model starts.
	"ggml-org/models/jina-reranker-v1-tiny-en/ggml-model-f16.gguf": {Model: "testdata/gguf/llama_gqa/llama_gqa-F16.gguf",
		Why: "no reranking model is shared (nanoserve has no /rerank)"},
	// tinyllama_infill: a model with FIM tokens.
	"ggml-org/test-model-stories260K-infill": {Model: "",
		Why: "nanoserve's built-in model has llama.cpp's FIM tokens"},
	// stories15m_moe: a mixture of experts.
	"ggml-org/stories15M_MOE": {Model: "testdata/gguf-archs/qwen3moe/qwen3moe-F16.gguf",
		Why: "a tiny MoE with the Llama-2 vocabulary"},
	// tinygemma3: a Gemma 3 (the suite adds its vision projector; nanoserve has none).
	"ggml-org/tinygemma3-GGUF": {Model: "testdata/gguf-archs/gemma3/gemma3-F16.gguf",
		Why: "a tiny Gemma 3 (no vision projector: nanoserve has no image input)"},
}

// renamed are llama-server flags nanoserve spells differently; the value
// is nanoserve's name. A "-" prefix on the llama-server side is normalised
// away before the lookup.
var renamed = map[string]string{
	"parallel":           "max-seqs",
	"np":                 "max-seqs",
	"c":                  "ctx-size",
	"t":                  "threads",
	"m":                  "model",
	"cors-origins":       "cors-origin",
	"ctk":                "kv-cache-type",
	"cache-type-k":       "kv-cache-type",
	"chat-template-file": "chat-template",
	"no-ui":              "no-webui",
}

// negated are llama-server's --no-X switches that nanoserve spells as a
// bool flag set to false: --no-slots → --slots=false.
var negated = map[string]string{
	"no-slots": "slots",
}

// boolFlags are llama-server flags without a value (the rest take one).
// Only the ones the suite's utils.py and tests pass need to be here; an
// unknown flag is an error, since its arity cannot be guessed.
var boolFlags = []string{
	"offline", "cont-batching", "no-cont-batching", "embedding", "embeddings", "reranking", "rerank",
	"metrics", "kv-unified", "swa-full", "slots", "no-slots", "verbose", "context-shift",
	"no-context-shift", "no-ui", "no-models-autoload", "jinja", "no-jinja", "no-mmproj",
	"no-cache-idle-slots", "ui-mcp-proxy", "backend_sampling", "no-webui", "strict-model-names",
	"no-warmup", "mlock", "no-mmap", "spm-infill", "cache-prompt", "no-cache-prompt", "ignore-eos",
	"escape", "no-escape", "special", "props",
}

// valueFlags are llama-server flags the suite passes with a value.
var valueFlags = []string{
	"port", "host", "temp", "seed", "model", "m", "model-url", "model-draft", "hf-repo", "hf-file",
	"models-dir", "models-max", "models-preset", "cors-origins", "batch-size", "b", "ubatch-size", "ub",
	"threads", "t", "n-gpu-layers", "ngl", "pooling", "alias", "tags", "ctx-size", "c", "parallel", "np",
	"ctk", "ctv", "cache-type-k", "cache-type-v", "fa", "flash-attn", "n-predict", "n", "slot-save-path",
	"grp-attn-n", "grp-attn-w", "lora", "spec-type", "api-key", "spec-draft-n-max", "spec-draft-n-min",
	"spec-synth-len", "spec-synth-rates", "reasoning-format", "reasoning", "reasoning-budget",
	"chat-template", "chat-template-file", "mmproj-url", "mmproj", "media-path", "sleep-idle-seconds",
	"cache-ram", "tools", "tools-runtime", "mcp-servers-config", "mcp-servers-json", "draft-max",
	"draft-min", "top-k", "top-p", "min-p", "repeat-penalty", "keep", "ctx-checkpoints",
	"cache-reuse", "chat-template-kwargs", "override-kv", "hf-repo-draft", "hf-file-draft", "timeout",
}

// Known describes the flags of `nanoserve serve`: name → takes a value.
type Known map[string]bool

// ParseHelp reads the flag list `nanoserve serve -h` prints (Go's flag
// package: "  -name type" for a flag with a value, "  -name" for a bool).
func ParseHelp(help string) Known {
	k := Known{}
	for line := range strings.SplitSeq(help, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(line, "  -") || !strings.HasPrefix(f[0], "-") {
			continue
		}
		k[strings.TrimLeft(f[0], "-")] = len(f) > 1
	}
	return k
}

// Translation is a nanoserve command line and what was left out of it.
type Translation struct {
	Args    []string // for `nanoserve serve`
	Dropped []string // llama-server flags nanoserve does not know (with values)
	Notes   []string // how the model was chosen
}

// Translate maps llama-server's argv (without the program name) to
// `nanoserve serve` arguments. shared is the ../shared folder; known is
// nanoserve serve's flag set (ParseHelp).
func Translate(argv []string, shared string, known Known) (Translation, error) {
	var t Translation
	var repo, file, ctx, parallel string
	modelGiven, unified, metrics := false, false, false
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		if !strings.HasPrefix(a, "-") {
			return t, fmt.Errorf("llamaserver: unexpected argument %q", a)
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		takes := slices.Contains(valueFlags, name)
		if !takes && !slices.Contains(boolFlags, name) {
			return t, fmt.Errorf("llamaserver: unknown llama-server flag %q (add it to the shim's flag table)", a)
		}
		if takes && !hasVal {
			if i+1 >= len(argv) {
				return t, fmt.Errorf("llamaserver: flag %q needs a value", a)
			}
			i++
			val, hasVal = argv[i], true
		}
		if pos, ok := negated[name]; ok && !hasVal {
			name, val, hasVal = pos, "false", true
		}
		switch name {
		case "ctx-size", "c":
			ctx = val
			continue
		case "parallel", "np":
			parallel = val
			continue
		case "kv-unified":
			unified = true
			continue
		case "metrics":
			metrics = true
		case "hf-repo":
			repo = val
			continue
		case "hf-file":
			file = val
			continue
		case "model", "m":
			modelGiven = true
		case "chat-template":
			// llama-server names a built-in template ("chatml", "llama3");
			// nanoserve takes a file: use llama.cpp's template of that name
			// when the source bundle has one, else drop it.
			if p, ok := templateFile(val); ok {
				val = p
			} else {
				t.Dropped = append(t.Dropped, a+" "+val)
				continue
			}
		}
		target := name
		if r, ok := renamed[name]; ok {
			target = r
		}
		wantsVal, ok := known[target]
		if !ok || wantsVal != takes && !(takes && !wantsVal && isBoolText(val)) {
			d := a
			if takes && !strings.Contains(a, "=") {
				d += " " + val
			}
			t.Dropped = append(t.Dropped, d)
			continue
		}
		switch {
		case takes && wantsVal:
			t.Args = append(t.Args, "--"+target, val)
		case takes: // a bool given as --flag=true|false
			t.Args = append(t.Args, "--"+target+"="+val)
		case hasVal:
			t.Args = append(t.Args, "--"+target+"="+val)
		default:
			t.Args = append(t.Args, "--"+target)
		}
	}
	t.Args = append(t.Args, contextArgs(ctx, parallel, unified)...)
	// llama-server serves /metrics only with --metrics; nanoserve's
	// default is on.
	if wants, ok := known["metrics"]; ok && !wants && !metrics {
		t.Args = append(t.Args, "--metrics=false")
	}
	// llama-server runs any --ctx-size, past the trained length too.
	if _, ok := known["allow-long-context"]; ok {
		t.Args = append(t.Args, "--allow-long-context")
	}
	if repo != "" && !modelGiven {
		p, ok := lookupPreset(repo, file)
		if !ok {
			return t, fmt.Errorf("llamaserver: no local stand-in for --hf-repo %s --hf-file %s (add one to Presets)", repo, file)
		}
		if p.Model != "" {
			t.Args = append([]string{"--model", filepath.Join(shared, p.Model)}, t.Args...)
		}
		if p.Tokenizer != "" {
			t.Args = append(t.Args, "--tokenizer", filepath.Join(shared, p.Tokenizer))
		}
		t.Args = append(t.Args, p.Extra...)
		name := repo
		if file != "" {
			name += "/" + file
		}
		model := p.Model
		if model == "" {
			model = "the built-in model"
		}
		t.Notes = append(t.Notes, fmt.Sprintf("%s → %s: %s", name, model, p.Why))
	}
	return t, nil
}

// contextArgs maps llama-server's context: --ctx-size N is the KV cache of
// all --parallel P slots together, each slot's context N/P — unless
// --kv-unified, where every slot may use all N. nanoserve's --ctx-size is
// one sequence's context and --kv-cache-tokens the cache they share.
func contextArgs(ctx, parallel string, unified bool) []string {
	var out []string
	n, err := strconv.Atoi(ctx)
	if ctx == "" || err != nil || n <= 0 {
		if ctx != "" {
			out = append(out, "--ctx-size", ctx)
		}
		if parallel != "" {
			out = append(out, "--max-seqs", parallel)
		}
		return out
	}
	per := n
	if p, err := strconv.Atoi(parallel); err == nil && p > 0 {
		out = append(out, "--max-seqs", parallel)
		if !unified {
			per = n / p
		}
	}
	return append(out, "--ctx-size", strconv.Itoa(per), "--kv-cache-tokens", ctx)
}

// lookupPreset finds the stand-in for repo (a ":QUANT" tail ignored) and
// file, trying "repo/file" first.
func lookupPreset(repo, file string) (Preset, bool) {
	repo, _, _ = strings.Cut(repo, ":")
	if file != "" {
		if p, ok := Presets[repo+"/"+file]; ok {
			return p, true
		}
	}
	p, ok := Presets[repo]
	return p, ok
}

func isBoolText(s string) bool {
	switch strings.ToLower(s) {
	case "true", "false", "1", "0", "on", "off":
		return true
	}
	return false
}

// TemplateDir is where the built-in templates are written as files (set
// by the shim: the server outlives it, so a lasting folder).
var TemplateDir string

// builtinTemplates are llama-server's built-in templates the suite names
// (llama.cpp's src/llama-chat.cpp layouts, not Jinja files: each message's
// content trimmed between its role markers, no system preamble), written
// here as Jinja for nanoserve's --chat-template. "chatml" is not among
// them: nanoserve falls back to ChatML by itself.
var builtinTemplates = map[string]string{
	"command-r": `{%- set tokens = {"system": "<|SYSTEM_TOKEN|>", "user": "<|USER_TOKEN|>", "assistant": "<|CHATBOT_TOKEN|>"} -%}` +
		`{%- for m in messages -%}{%- if m.role in tokens -%}` +
		`{{- "<|START_OF_TURN_TOKEN|>" + tokens[m.role] + (m.content | trim) + "<|END_OF_TURN_TOKEN|>" -}}` +
		`{%- endif -%}{%- endfor -%}` +
		`{%- if add_generation_prompt -%}{{- "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>" -}}{%- endif -%}`,
	"llama3": `{%- for m in messages -%}` +
		`{{- "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + (m.content | trim) + "<|eot_id|>" -}}` +
		`{%- endfor -%}` +
		`{%- if add_generation_prompt -%}{{- "<|start_header_id|>assistant<|end_header_id|>\n\n" -}}{%- endif -%}`,
}

// templateFile maps a llama-server built-in template name to a Jinja file
// of builtinTemplates' source in TemplateDir.
func templateFile(name string) (string, bool) {
	src, ok := builtinTemplates[name]
	if !ok || TemplateDir == "" {
		return "", false
	}
	p := filepath.Join(TemplateDir, "nanoserve-shim-"+name+".jinja")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		return "", false
	}
	return p, true
}
