package main

// The models one `nanoserve serve` serves: each --model (a hub reference
// pulled at start), each model in --models-dir, their names and aliases
// (host.Source loads each).

import (
	"context"
	"strings"

	"nanoserve/host"
	"nanoserve/hub"
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
