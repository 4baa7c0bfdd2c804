package main

// The models one `nanoserve serve` serves: each --model (a hub reference
// pulled at start), each model in --models-dir, their names and aliases,
// and how one is loaded into an engine with its manifest.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"nanoserve/chat"
	"nanoserve/engine"
	"nanoserve/host"
	"nanoserve/hub"
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
func loadServed(mf *modelFlags, me servedEntry, log *slog.Logger, tmplPath string, tf chat.ToolFormat, kv kvInputs,
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
	opts := host.ModelOptions{ToolFormat: tf}
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
	man, err := host.NewManifest(m, opts.Template)
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
	return host.NewManifest(m, tmpl)
}
