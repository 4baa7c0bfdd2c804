package server

// Several models per server. The front answers the paths about the server
// as a whole (front_models.go) and runs every other request on the model
// its "model" field names, each model with its own engine and handler
// (Server). The model table — names, loading on first use, reference
// counts, least-recently-used and memory eviction, keep_alive — is
// host.Table (package host); this file makes a front over one and turns a
// loaded model into its handler.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"nanoserve/host"
)

// Manifest describes a served model: what /v1/models, /api/tags and
// /api/show report (host.NewManifest makes one).
type Manifest = host.Manifest

// ModelSpec is one model a multi-model server may serve.
type ModelSpec = host.Spec

// LoadedModel is a model ModelSpec.Load opened; its Options are the
// model's own (template, tool format, defaults, manifest), the server-wide
// ones come from RouterOptions.Options and the names from ModelSpec.Names.
type LoadedModel = host.Loaded

// RouterOptions configure a multi-model server.
type RouterOptions struct {
	Options // server-wide; MaxPending applies to each model
	Models  []ModelSpec
	// MaxLoaded, if > 0, is how many models may be loaded at once.
	MaxLoaded int
	// MemoryBudget, if > 0, is the most LoadedModel.Bytes the loaded models
	// may hold together (the model a request needs is loaded regardless).
	MemoryBudget int64
	// Pull, if set, answers Ollama's /api/pull of a Hugging Face name
	// (hf.co/ORG/REPO[:QUANT]): it downloads the model and returns its
	// spec, which the server then serves. nil: /api/pull answers 400.
	Pull func(ctx context.Context, name string) (ModelSpec, error)
	// PullRef, if set, checks a pull's name before anything is written or
	// downloaded and returns the hub reference it names (ORG/REPO:QUANT,
	// a name the model answers to once served): an error is a 400, and a
	// reference a served model already answers to is pulled already.
	PullRef func(name string) (string, error)
}

// NewRouter makes a server of several models (see the top of router.go).
func NewRouter(opts RouterOptions) (*Front, error) { return newRouter(opts, nil) }

// newRouter is NewRouter; onModel, if set, sees each model's handler as it
// is made (tests put fakes behind its generator).
func newRouter(opts RouterOptions, onModel func(name string, s *Server)) (*Front, error) {
	o := opts.Options
	f := newFront(o)
	o.Logger = f.log
	make := func(spec host.Spec, lm *host.Loaded) (*Server, error) {
		w := o
		w.ModelNames = spec.Names
		mo := lm.Options
		w.Template, w.TemplateOptions, w.ToolFormat, w.Defaults, w.Manifest = mo.Template, mo.TemplateOptions, mo.ToolFormat, mo.Defaults, mo.Manifest
		w.TokenHealing, w.NonEmpty = mo.TokenHealing, mo.NonEmpty
		s, err := newModelServer(lm.Engine, w)
		if err == nil && onModel != nil {
			onModel(spec.Names[0], s)
		}
		return s, err
	}
	t, err := host.New(opts.Models, host.Options{MaxLoaded: opts.MaxLoaded, MemoryBudget: opts.MemoryBudget, Logger: f.log}, make)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	f.models, f.pull, f.pullRef = t, opts.Pull, opts.PullRef
	return f, nil
}

// modelOptions are the model's own fields of opts, as a LoadedModel
// carries them.
func modelOptions(opts Options) host.ModelOptions {
	return host.ModelOptions{Template: opts.Template, TemplateOptions: opts.TemplateOptions, ToolFormat: opts.ToolFormat,
		Defaults: opts.Defaults, TokenHealing: opts.TokenHealing, NonEmpty: opts.NonEmpty, Manifest: opts.Manifest}
}

// leaseKey is the request context key of the model lease a request holds.
type leaseKey struct{}

// modelFor returns the handler of the model a request's model field names
// ("": the first model), loading the model if it is not loaded, and the
// lease to release when the request is done (a model is never closed
// while a request holds it). Unknown names are a 404 naming the served
// models; a model that fails to load is a 500.
func (f *Front) modelFor(ctx context.Context, name string) (*host.Lease[*Server], *apiError) {
	i, ok := f.models.Lookup(name)
	if !ok {
		return nil, unknownModel(name, f.models.Names())
	}
	l, err := f.models.Acquire(ctx, i)
	var le *host.LoadError
	switch {
	case err == nil:
		return l, nil
	case errors.Is(err, host.ErrClosed):
		return nil, &apiError{status: http.StatusServiceUnavailable, Type: "server_error", Code: strp("shutting_down"),
			Message: "the server is shutting down", retryAfter: 1}
	case errors.As(err, &le):
		return nil, &apiError{status: http.StatusInternalServerError, Type: "server_error", Code: strp("model_load_failed"), Message: le.Error()}
	}
	return nil, &apiError{status: http.StatusServiceUnavailable, Type: "server_error",
		Message: fmt.Sprintf("the request ended while the model %q was loading", f.models.List()[i].Names[0])}
}

// Preload loads the models marked Preload (up to MaxLoaded of them), then
// marks the server ready. A model that fails to load is an error.
func (f *Front) Preload(ctx context.Context) error {
	if err := f.models.Preload(ctx); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}

// Close unloads every model (waiting for none: call it after Serve
// returned). A server of one engine (New) leaves its engine open: it is
// the caller's.
func (f *Front) Close() { f.models.Close() }

// applyKeepAlive passes Ollama's keep_alive to the model table for the
// model the request holds.
func (s *Server) applyKeepAlive(ctx context.Context, raw []byte) (time.Duration, bool, *apiError) {
	d, ok, e := keepAlive(raw)
	if l, held := ctx.Value(leaseKey{}).(*host.Lease[*Server]); e == nil && ok && held {
		l.KeepAlive(d)
	}
	return d, ok, e
}
