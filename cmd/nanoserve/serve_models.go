package main

// The models one `nanoserve serve` serves: each --model (a hub reference
// pulled at start), each model in --models-dir, their names and aliases,
// and how one is loaded into an engine with its manifest.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"nanoserve/chat"
	"nanoserve/engine"
	"nanoserve/host"
	"nanoserve/hub"
	"nanoserve/server"
)

// serveModels resolves the --model arguments (none: the built-in model)
// and adds the models of --models-dir (host.ListModels).
func serveModels(models []string, dir, revision string) ([]host.Served, error) {
	var out []host.Served
	if len(models) == 0 && dir == "" {
		models = []string{""}
	}
	for _, arg := range models {
		if arg == "" {
			p, err := builtinModelPath()
			if err != nil {
				return nil, err
			}
			out = append(out, host.Served{Path: p, Names: host.Names(servedModelName(""), p), Named: true})
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
		out = append(out, host.Served{Path: p, Names: host.Names(first, p), Named: true})
	}
	return host.ListModels(out, dir)
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

// loadServed loads one served model: cmd opens the model and picks its
// chat template and policy; host.Assemble plans its KV cache (its share of
// --kv-cache-memory), describes it and starts its engine.
func loadServed(mf *modelFlags, me host.Served, log *slog.Logger, tmplPath string, tf chat.ToolFormat, kv host.KVInputs,
	eo engine.Options, sf *specFlags) (*server.LoadedModel, error) {
	m, err := mf.load()
	if err != nil {
		return nil, err
	}
	opts := host.ModelOptions{ToolFormat: tf}
	if bp, err := builtinModelPath(); err == nil && me.Path == bp {
		// The built-in completion model: its policy and token healing
		// by default, as generate (builtin_policy.go).
		d := builtinDefaults()
		opts.Defaults, opts.TokenHealing, opts.NonEmpty = &d, true, true
	}
	if m.Tokenizer != nil {
		tmpl, err := loadChatTemplate(tmplPath, m, me.Path)
		if tmpl, err = serveTemplate(tmpl, err, tmplPath != "", log.With("model", me.Names[0])); err != nil {
			m.Close()
			return nil, fmt.Errorf("%s: %w", me.Names[0], err)
		}
		if tmpl != nil {
			opts.Template, opts.TemplateOptions = tmpl.Template, tmpl.Options
		}
	}
	eo.Grammar = grammarOptions
	return host.Assemble(host.Parts{Name: me.Names[0], Model: m, Options: opts, KV: kv, Engine: eo, Log: log,
		Spec: func(cacheTokens int) (engine.SpecOptions, func(), error) { return sf.options(mf, m, cacheTokens) }})
}

// describeServed is the manifest of a model not loaded yet: the model is
// opened (memory-mapped) and closed again.
func describeServed(mf *modelFlags, me host.Served, tmplPath string) (*server.Manifest, error) {
	m, err := mf.load()
	if err != nil {
		return nil, err
	}
	defer m.Close()
	if m.Tokenizer == nil {
		return nil, errors.New("the model has no tokenizer")
	}
	var tmpl *chat.Template
	if p, err := loadChatTemplate(tmplPath, m, me.Path); err == nil {
		tmpl = p.Template
	}
	return host.NewManifest(m, tmpl)
}
