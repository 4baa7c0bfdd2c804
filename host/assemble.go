package host

// Assembling a servable model from its opened parts: the KV cache plan
// (its share of --kv-cache-memory), the manifest, the engine, and what the
// table holds of it.

import (
	"fmt"
	"log/slog"
	"strings"

	"nanoserve/engine"
	"nanoserve/model"
)

// Parts are an opened model and what it is served with.
type Parts struct {
	Name    string       // the served name (errors and log lines say it)
	Model   *model.Model // opened; Assemble owns it from here (closes it on failure)
	Options ModelOptions // template, tool format, defaults (Manifest is filled in)
	KV      KVInputs     // the budget: Memory, MemoryFlag, Ctx, MaxSeqs, Tokens (the model's own sizes are filled in)
	Engine  engine.Options
	// Spec, if set, gives the speculative-decoding options for a cache of
	// cacheTokens positions and a function releasing what they hold (a
	// draft model).
	Spec func(cacheTokens int) (engine.SpecOptions, func(), error)
	Log  *slog.Logger // nil: slog.Default()
}

// Assemble plans the model's KV cache, describes it and starts its engine:
// the Loaded a Spec's Load returns. Its Bytes are the weights' and the KV
// cache's; its Close stops the engine and releases the draft and the model.
func Assemble(p Parts) (*Loaded, error) {
	m, log := p.Model, p.Log
	if log == nil {
		log = slog.Default()
	}
	closeDraft := func() {}
	fail := func(err error) (*Loaded, error) {
		closeDraft()
		m.Close()
		return nil, fmt.Errorf("%s: %w", p.Name, err)
	}
	if m.Tokenizer == nil {
		return fail(fmt.Errorf("the model has no tokenizer (pass one with --tokenizer)"))
	}
	kv := p.KV
	kv.BytesPerToken, kv.ModelCtx, kv.StateBytes = m.KVBytesPerToken(p.Engine.KVType), m.ContextLen, m.StateBytes()
	kv.StateSlots = engine.StateSlots(kv.MaxSeqs)
	plan, err := PlanKV(kv)
	if err != nil {
		return fail(err)
	}
	if plan.Warning != "" {
		log.Warn(plan.Warning, "model", p.Name)
	}
	opts := p.Options
	if opts.Manifest, err = NewManifest(m, opts.Template); err != nil {
		return fail(err)
	}
	eo := p.Engine
	eo.CtxSize, eo.CacheTokens = plan.Ctx, plan.CacheTokens
	if p.Spec != nil {
		if eo.Spec, closeDraft, err = p.Spec(plan.CacheTokens); err != nil {
			closeDraft = func() {}
			return fail(err)
		}
	}
	eng, err := engine.New(m, eo)
	if err != nil {
		return fail(err)
	}
	log.Info("model ready", "model", p.Name, "context", eng.CtxSize(), "max_seqs", eng.Options().MaxSeqs,
		"kv_cache_tokens", eng.Options().CacheTokens, "kv_cache_type", strings.ToLower(eng.Options().KVType.String()),
		"kv_cache_bytes", eng.CacheBytes(), "kv_cache_mib", eng.CacheBytes()>>20, "chat", opts.Template != nil)
	return &Loaded{Engine: eng, Options: opts, Bytes: opts.Manifest.SizeBytes + eng.CacheBytes(),
		Close: func() { eng.Close(); closeDraft(); m.Close() }}, nil
}
