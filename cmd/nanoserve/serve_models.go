package main

// The models one `nanoserve serve` serves: each --model (a hub reference
// pulled at start), each model in --models-dir, their names and aliases,
// and how one is loaded into an engine with its manifest.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"nanoserve/chat"
	"nanoserve/engine"
	"nanoserve/gguf"
	"nanoserve/hub"
	"nanoserve/llamacpp"
	"nanoserve/model"
	"nanoserve/server"
)

// servedEntry is one model to serve.
type servedEntry struct {
	path  string   // local path ("": the built-in model)
	names []string // served name first
	named bool     // named with --model (loaded at start)
}

// serveModels resolves the --model arguments (none: the built-in model)
// and lists --models-dir.
func serveModels(models []string, dir, revision string) ([]servedEntry, error) {
	var out []servedEntry
	if len(models) == 0 && dir == "" {
		models = []string{""}
	}
	for _, arg := range models {
		if arg == "" {
			p, err := builtinModelPath()
			if err != nil {
				return nil, err
			}
			out = append(out, servedEntry{path: p, names: modelNames(servedModelName(""), p), named: true})
			continue
		}
		p, ref, err := resolveModel(arg, revision)
		if err != nil {
			return nil, err
		}
		first := servedModelName(p)
		if ref != "" {
			first = ref // a hub model answers to its reference first
		}
		out = append(out, servedEntry{path: p, names: modelNames(first, p), named: true})
	}
	if dir != "" {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("--models-dir: %w", err)
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			switch {
			case e.IsDir():
				if _, err := os.Stat(filepath.Join(p, "config.json")); err != nil {
					continue
				}
			case strings.EqualFold(filepath.Ext(e.Name()), ".gguf"):
				if m := splitPart.FindStringSubmatch(e.Name()); m != nil && m[1] != "00001" {
					continue // a later part of a split GGUF: its first part loads it
				}
			default:
				continue
			}
			if slices.ContainsFunc(out, func(o servedEntry) bool { return sameFile(o.path, p) }) {
				continue
			}
			out = append(out, servedEntry{path: p, names: modelNames(servedModelName(p), p)})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--models-dir %s holds no model (GGUF files or Hugging Face folders)", dir)
	}
	// A name two models share belongs to the first only (two files named
	// alike in different folders); the served name must stay unique.
	seen := map[string]bool{}
	for i := range out {
		if seen[out[i].names[0]] {
			return nil, fmt.Errorf("two models are served as %q: give one another name with --alias", out[i].names[0])
		}
		var keep []string
		for _, n := range out[i].names {
			if !seen[n] {
				seen[n] = true
				keep = append(keep, n)
			}
		}
		out[i].names = keep
	}
	return out, nil
}

// pullHub pulls an Ollama-style hub name (hf.co/ORG/REPO[:QUANT]) into the
// Hugging Face cache: the local path and the hub reference.
func pullHub(ctx context.Context, name, revision string) (string, string, error) {
	arg := strings.TrimPrefix(strings.TrimPrefix(name, "hf.co/"), "huggingface.co/")
	r, err := hub.ParseRef(arg)
	if err != nil {
		return "", "", err
	}
	c := hubClient()
	c.Progress = nil // a server logs, it draws no progress bars
	p, err := c.Pull(ctx, r, revision)
	if err != nil {
		return "", "", err
	}
	return p, r.String(), nil
}

var splitPart = regexp.MustCompile(`-(\d{5})-of-\d{5}\.gguf$`)

func sameFile(a, b string) bool {
	fa, ea := os.Stat(a)
	fb, eb := os.Stat(b)
	return ea == nil && eb == nil && os.SameFile(fa, fb)
}

// modelNames are the names a model answers to: first, and its file's base
// name with and without extension.
func modelNames(first, path string) []string {
	names := []string{first}
	base := filepath.Base(filepath.Clean(path))
	for _, n := range []string{base, strings.TrimSuffix(base, filepath.Ext(base))} {
		if n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// applyAliases adds each --alias NAME=MODEL to the model MODEL names.
func applyAliases(entries []servedEntry, aliases []string) error {
	for _, a := range aliases {
		name, target, ok := strings.Cut(a, "=")
		if !ok || name == "" || target == "" {
			return errFlag("alias", a, "want NAME=MODEL")
		}
		found := false
		for i := range entries {
			if slices.Contains(entries[i].names, target) {
				for j := range entries {
					if slices.Contains(entries[j].names, name) {
						return errFlag("alias", a, fmt.Sprintf("%q already names the model %q", name, entries[j].names[0]))
					}
				}
				entries[i].names = append(entries[i].names, name)
				found = true
				break
			}
		}
		if !found {
			var all []string
			for _, e := range entries {
				all = append(all, e.names[0])
			}
			return errFlag("alias", a, fmt.Sprintf("no served model is called %q (served: %s)", target, strings.Join(all, ", ")))
		}
	}
	return nil
}

// loadServed loads one served model: the model, its chat template, its KV
// cache plan (its share of --kv-cache-memory), its engine and manifest.
func loadServed(mf *modelFlags, me servedEntry, log *slog.Logger, tmplPath string, rf replyFlags, kv kvInputs,
	eo engine.Options, sf *specFlags) (*server.LoadedModel, error) {
	m, err := mf.load()
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*server.LoadedModel, error) {
		m.Close()
		return nil, fmt.Errorf("%s: %w", me.names[0], err)
	}
	if m.Tokenizer == nil {
		return fail(errors.New("the model has no tokenizer (pass one with --tokenizer)"))
	}
	opts := server.Options{ToolFormat: rf.tools, ReasoningFormat: rf.reasoning, ReasoningBudget: rf.budget, NoPrefillAssistant: rf.noPrefill, Thinking: rf.thinking}
	if bp, err := builtinModelPath(); err == nil && me.path == bp {
		// The built-in completion model: its policy and token healing
		// by default, as generate (builtin_policy.go).
		d := builtinDefaults()
		opts.Defaults, opts.TokenHealing, opts.NonEmpty = &d, true, true
	}
	tmpl, err := loadChatTemplate(tmplPath, m, me.path)
	if tmpl, err = serveTemplate(tmpl, err, tmplPath != "", log.With("model", me.names[0])); err != nil {
		return fail(err)
	}
	if tmpl != nil {
		opts.Template, opts.TemplateOptions = tmpl.Template, tmpl.Options
	}
	kv.bytesPerToken, kv.modelCtx, kv.stateBytes = m.KVBytesPerToken(mf.kv), m.ContextLen, m.StateBytes()
	kv.stateSlots = engine.StateSlots(kv.maxSeqs)
	plan, err := planKVCache(kv)
	if err != nil {
		return fail(err)
	}
	if plan.warning != "" {
		log.Warn(plan.warning, "model", me.names[0])
	}
	man, err := manifest(m, opts.Template)
	if err != nil {
		return fail(err)
	}
	opts.Manifest = man
	spec, closeDraft, err := sf.options(mf, m, plan.cacheTokens)
	if err != nil {
		return fail(err)
	}
	eo.CtxSize, eo.CacheTokens, eo.Spec = plan.ctx, plan.cacheTokens, spec
	eo.Grammar = grammarOptions
	eng, err := engine.New(m, eo)
	if err != nil {
		closeDraft()
		return fail(err)
	}
	log.Info("model ready", "model", me.names[0], "context", eng.CtxSize(), "max_seqs", eng.Options().MaxSeqs,
		"kv_cache_tokens", eng.Options().CacheTokens, "kv_cache_type", strings.ToLower(eng.Options().KVType.String()), "kv_cache_bytes", eng.CacheBytes(), "kv_cache_mib", eng.CacheBytes()>>20, "chat", opts.Template != nil)
	return &server.LoadedModel{Engine: eng, Options: opts, Bytes: man.SizeBytes + eng.CacheBytes(),
		Close: func() { eng.Close(); closeDraft(); m.Close() }}, nil
}

// describeServed is the manifest of a model not loaded yet: the model is
// opened (memory-mapped) and closed again.
func describeServed(mf *modelFlags, me servedEntry, tmplPath string) (*server.Manifest, error) {
	m, err := mf.load()
	if err != nil {
		return nil, err
	}
	defer m.Close()
	if m.Tokenizer == nil {
		return nil, errors.New("the model has no tokenizer")
	}
	var tmpl *chat.Template
	if p, err := loadChatTemplate(tmplPath, m, me.path); err == nil {
		tmpl = p.Template
	}
	return manifest(m, tmpl)
}

// manifest describes a loaded model. The weights' sha256 is read from the
// Hugging Face cache's blob name when the file is a cached LFS blob, else
// computed.
func manifest(m *model.Model, tmpl *chat.Template) (*server.Manifest, error) {
	man := &server.Manifest{Architecture: m.Arch, Format: m.Format, Parameters: m.ParamCount(), ContextLength: m.ContextLen,
		RecurrentStateBytes: m.StateBytes(),
		Tokenizer:           fmt.Sprintf("%s (%d tokens)", m.Tokenizer.Kind(), m.Tokenizer.Size())}
	counts := map[string]int{}
	for _, t := range m.Tensors {
		if len(t.Shape) == 2 {
			counts[t.Type.String()]++
		}
	}
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		if counts[k] > counts[man.Quantization] {
			man.Quantization = k
		}
	}
	if ft, ok := ggufFileType(m); ok { // a K-quant mix is named as llama-quantize named it
		man.Quantization = strings.ToUpper(ft.Name)
	}
	var sums []string
	for _, f := range m.Files {
		st, err := os.Stat(f)
		if err != nil {
			return nil, err
		}
		man.SizeBytes += st.Size()
		if t := st.ModTime(); t.After(man.ModifiedAt) {
			man.ModifiedAt = t
		}
		sum, err := fileSHA256(f)
		if err != nil {
			return nil, err
		}
		sums = append(sums, sum)
	}
	switch len(sums) {
	case 0:
	case 1:
		man.WeightsSHA256 = sums[0]
	default:
		h := sha256.Sum256([]byte(strings.Join(sums, "\n")))
		man.WeightsSHA256 = hex.EncodeToString(h[:])
	}
	if man.ModifiedAt.IsZero() {
		man.ModifiedAt = time.Unix(0, 0)
	}
	if tmpl != nil {
		h := sha256.Sum256([]byte(tmpl.Source()))
		man.TemplateSHA256 = hex.EncodeToString(h[:])
	}
	return man, nil
}

var blobName = regexp.MustCompile(`^[0-9a-f]{64}$`)

// fileSHA256 is a file's sha256: its name when it is a Hugging Face cache
// blob (the hub verified it on download), else computed.
func fileSHA256(path string) (string, error) {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		if b := filepath.Base(real); blobName.MatchString(b) && filepath.Base(filepath.Dir(real)) == "blobs" {
			return b, nil
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hashing %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ggufFileType is a GGUF model's general.file_type, when the file names
// one nanoserve knows.
func ggufFileType(m *model.Model) (llamacpp.FileType, bool) {
	if m.Format != "gguf" || len(m.Files) == 0 {
		return llamacpp.FileType{}, false
	}
	f, err := gguf.Open(m.Files[0])
	if err != nil {
		return llamacpp.FileType{}, false
	}
	defer f.Close()
	id, err := f.Uint("general.file_type")
	if err != nil || id > math.MaxUint32 {
		return llamacpp.FileType{}, false
	}
	return llamacpp.FileTypeByID(uint32(id))
}
