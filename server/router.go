package server

// Several models per server. NewRouter makes a Server that holds no engine
// of its own: it answers the paths about the server as a whole (/health,
// /ready, /metrics, /v1/models, /api/tags, /api/ps, /api/version,
// /api/pull) itself and sends every other request to the server of the
// model its "model" field names (ModelFor), each model with its own engine.
//
// Names: a model answers to each of ModelSpec.Names (its served name first,
// then its file's base name with and without extension, its aliases) and
// to any of them with Ollama's default tag ":latest". A request without a
// model field goes to the first model; an unknown name is a 404
// (model_not_found) that lists the served names.
//
// Loading: a model loads on its first request (requests that arrive while
// it loads wait for it; ModelSpec.Preload ones load in Preload, before the
// server reports ready). Past RouterOptions.MaxLoaded loaded models, or
// past RouterOptions.MemoryBudget bytes, the least recently used other
// model (idle ones before busy ones) is unloaded: it leaves the table at
// once, so new requests load it afresh, but its engine is closed only when
// its last in-flight request has ended (a reference count), so unloading
// never cuts a request. Ollama's keep_alive sets how long a model stays
// loaded once idle (0: unload as soon as it is idle; negative: forever,
// the default).

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"nanoserve/engine"
)

// Manifest describes a served model: what /v1/models, /api/tags and
// /api/show report.
type Manifest struct {
	Architecture   string `json:"architecture"`
	Format         string `json:"format"`       // gguf, hf or llama2c
	Quantization   string `json:"quantization"` // a GGUF's general.file_type as llama-quantize names it (Q4_K_M, Q8_0, F16), else the weight matrices' most common type
	Parameters     int64  `json:"parameters"`
	ContextLength  int    `json:"context_length"` // positions the model was trained for
	Tokenizer      string `json:"tokenizer"`      // kind and vocabulary size
	WeightsSHA256  string `json:"weights_sha256"` // one file: its sha256; several: of their sha256s in load order
	TemplateSHA256 string `json:"template_sha256,omitempty"`
	SizeBytes      int64  `json:"size_bytes"` // of the weight files
	// RecurrentStateBytes is one sequence's recurrent state (hybrid models:
	// Qwen3.5, LFM2), held beside its KV blocks under --kv-cache-memory; 0
	// for attention-only models.
	RecurrentStateBytes int64     `json:"recurrent_state_bytes,omitempty"`
	ModifiedAt          time.Time `json:"modified_at"`
}

// ModelSpec is one model a multi-model server may serve.
type ModelSpec struct {
	// Names the model answers to; the first is the one responses report.
	Names []string
	// Load opens the model and its engine. The router calls it at most
	// once at a time per model.
	Load func() (*LoadedModel, error)
	// Preload: load the model in Server.Preload (a model named at start);
	// else on its first request.
	Preload bool
	// Describe, if set, tells the manifest of a model not loaded yet
	// (Preload runs it in the background for each such model), so the
	// listings describe every model.
	Describe func() (*Manifest, error)
}

// LoadedModel is a model Load opened.
type LoadedModel struct {
	Engine *engine.Engine
	// Options are the model's own: Template, TemplateOptions, ToolFormat,
	// Defaults, Manifest. The server-wide fields (timeouts, limits, logger)
	// come from RouterOptions.Options; ModelNames from ModelSpec.Names.
	Options Options
	// Bytes is the memory the model holds (weights and KV cache), counted
	// against RouterOptions.MemoryBudget.
	Bytes int64
	// Close releases the engine and the model (called once, when the model
	// is unloaded and idle, or at Server.Close).
	Close func()

	srv *Server // New's model, made already
}

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

// list is the models served, in order.
func (rt *router) list() []ModelSpec { return *rt.specs.Load() }

// add serves one more model (pulled at run time). Its first name already
// served means it is served already (a pull of the same name that finished
// first): nothing is added. Its other names that other models hold stay
// theirs (two repositories' files may be named alike).
func (rt *router) add(m ModelSpec) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	old := rt.list()
	taken := func(n string) bool {
		return slices.ContainsFunc(old, func(o ModelSpec) bool { return slices.Contains(o.Names, n) })
	}
	if taken(m.Names[0]) {
		return nil
	}
	m.Names = slices.DeleteFunc(slices.Clone(m.Names), taken)
	ns := append(slices.Clip(old), m)
	rt.specs.Store(&ns)
	return nil
}

// router is a multi-model server's model table.
type router struct {
	front     *Front
	opts      Options
	specs     atomic.Pointer[[]ModelSpec] // append-only (a pull adds one); indices are stable
	pull      func(ctx context.Context, name string) (ModelSpec, error)
	pullRef   func(name string) (string, error)
	maxLoaded int
	budget    int64
	ready     atomic.Bool // Preload finished
	now       func() time.Time

	// newServer, a test hook, sees each model's server as it is made.
	newServer func(name string, s *Server)

	mu        sync.Mutex
	slots     map[int]*slot // by spec index: the models loaded or loading
	manifests map[int]*Manifest
	loads     int
	unloads   int
	closed    bool
}

// slot is one load of a model.
type slot struct {
	spec    int
	done    chan struct{} // closed when the load finished (srv or err set)
	srv     *Server
	lm      *LoadedModel
	err     error
	refs    int       // requests using it
	used    time.Time // last acquired or released
	gone    bool      // out of the table; closed when refs reaches 0
	expires time.Time // keep_alive: unload once idle past it (zero: never)
	timer   *time.Timer
}

// NewRouter makes a server of several models (see the top of router.go).
func NewRouter(opts RouterOptions) (*Front, error) {
	if len(opts.Models) == 0 {
		return nil, fmt.Errorf("server: a multi-model server needs at least one model")
	}
	seen := map[string]bool{}
	for i, m := range opts.Models {
		if len(m.Names) == 0 || m.Load == nil {
			return nil, fmt.Errorf("server: model %d has no name or no loader", i)
		}
		for _, n := range m.Names {
			if n == "" || seen[n] {
				return nil, fmt.Errorf("server: model name %q is empty or names two models", n)
			}
			seen[n] = true
		}
	}
	o := opts.Options
	front := newFront(o)
	o.Logger = front.log
	rt := &router{front: front, opts: o, pull: opts.Pull, pullRef: opts.PullRef, maxLoaded: opts.MaxLoaded, budget: opts.MemoryBudget,
		now: time.Now, slots: map[int]*slot{}, manifests: map[int]*Manifest{}}
	models := slices.Clone(opts.Models)
	rt.specs.Store(&models)
	front.router = rt
	return front, nil
}

// modelFor returns the server of the model a request's model field names
// ("": the first model), loading the model if it is not loaded, and a
// release function to call when the request is done (a model is never
// closed while a request holds it). Unknown names are a 404 naming the
// served models; a model that fails to load is a 500.
func (f *Front) modelFor(ctx context.Context, name string) (*Server, func(), *apiError) {
	i, ok := f.router.lookup(name)
	if !ok {
		return nil, nil, unknownModel(name, f.router.servedNames())
	}
	sl, e := f.router.acquire(ctx, i)
	if e != nil {
		return nil, nil, e
	}
	var once sync.Once
	return sl.srv, func() { once.Do(func() { f.router.release(sl) }) }, nil
}

// Preload loads the models marked Preload (up to MaxLoaded of them), then
// marks the server ready. A model that fails to load is an error.
func (f *Front) Preload(ctx context.Context) error {
	rt := f.router
	n := 0
	for i, m := range rt.list() {
		if !m.Preload || rt.maxLoaded > 0 && n >= rt.maxLoaded {
			continue
		}
		sl, e := rt.acquire(ctx, i)
		if e != nil {
			return fmt.Errorf("server: model %q: %s", m.Names[0], e.Message)
		}
		rt.release(sl)
		n++
	}
	rt.ready.Store(true)
	go rt.describe()
	return nil
}

// describe fills in the manifests of the models not loaded yet.
func (rt *router) describe() {
	for i, m := range rt.list() {
		rt.mu.Lock()
		known := rt.manifests[i] != nil || rt.closed
		rt.mu.Unlock()
		if known || m.Describe == nil {
			continue
		}
		man, err := m.Describe()
		if err != nil {
			rt.front.log.Warn("server: describing a model failed", "model", m.Names[0], "err", err)
			continue
		}
		rt.mu.Lock()
		if rt.manifests[i] == nil {
			rt.manifests[i] = man
		}
		rt.mu.Unlock()
	}
}

// Close unloads every model of a multi-model server (waiting for none:
// call it after Serve returned). A server of one engine has nothing to
// close (its engine is the caller's).
func (f *Front) Close() {
	rt := f.router
	rt.mu.Lock()
	rt.closed = true
	var victims []*slot
	for _, sl := range rt.slots {
		if sl.srv != nil && rt.unloadLocked(sl) {
			victims = append(victims, sl)
		}
	}
	rt.mu.Unlock()
	for _, sl := range victims {
		sl.lm.Close()
	}
}

// servedNames are the first names of every model.
func (rt *router) servedNames() []string {
	specs := rt.list()
	out := make([]string, len(specs))
	for i, m := range specs {
		out[i] = m.Names[0]
	}
	return out
}

// lookup finds the model a request's model field names.
func (rt *router) lookup(name string) (int, bool) {
	if name == "" {
		return 0, true
	}
	for i, m := range rt.list() {
		if matchName(m.Names, name) {
			return i, true
		}
	}
	return 0, false
}

// acquire returns model i's loaded slot holding one reference, loading it
// (or waiting for the load under way) as needed.
func (rt *router) acquire(ctx context.Context, i int) (*slot, *apiError) {
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		return nil, &apiError{status: http.StatusServiceUnavailable, Type: "server_error", Code: strp("shutting_down"),
			Message: "the server is shutting down", retryAfter: 1}
	}
	sl := rt.slots[i]
	loader := sl == nil
	if loader {
		sl = &slot{spec: i, done: make(chan struct{})}
		rt.slots[i] = sl
	}
	sl.refs++
	sl.used = rt.now()
	if sl.timer != nil {
		sl.timer.Stop()
		sl.timer = nil
	}
	rt.mu.Unlock()
	if loader {
		rt.load(sl)
	} else {
		select {
		case <-sl.done:
		case <-ctx.Done():
			rt.release(sl)
			return nil, &apiError{status: http.StatusServiceUnavailable, Type: "server_error",
				Message: fmt.Sprintf("the request ended while the model %q was loading", rt.list()[i].Names[0])}
		}
	}
	if sl.err != nil {
		rt.release(sl)
		return nil, &apiError{status: http.StatusInternalServerError, Type: "server_error", Code: strp("model_load_failed"),
			Message: fmt.Sprintf("loading the model %q failed: %v", rt.list()[i].Names[0], sl.err)}
	}
	return sl, nil
}

// loaded puts model i in the table as loaded (New's model, made already)
// and marks the table ready.
func (rt *router) loaded(i int, srv *Server, lm *LoadedModel) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	sl := &slot{spec: i, done: make(chan struct{}), srv: srv, lm: lm, used: rt.now()}
	close(sl.done)
	srv.keepAlive = func(d time.Duration) { rt.keepAlive(sl, d) }
	if srv.manifest != nil {
		rt.manifests[i] = srv.manifest
	}
	rt.slots[i] = sl
	rt.loads++
	rt.ready.Store(true)
}

// load runs the model's loader for sl, then unloads what the limits say.
func (rt *router) load(sl *slot) {
	spec := rt.list()[sl.spec]
	start := time.Now()
	srv, lm, err := rt.open(spec)
	rt.mu.Lock()
	if err != nil {
		sl.err = err
		if rt.slots[sl.spec] == sl {
			delete(rt.slots, sl.spec)
		}
	} else {
		sl.srv, sl.lm = srv, lm
		rt.loads++
		if srv.manifest != nil {
			rt.manifests[sl.spec] = srv.manifest
		}
		srv.keepAlive = func(d time.Duration) { rt.keepAlive(sl, d) }
	}
	rt.mu.Unlock()
	close(sl.done)
	if err != nil {
		rt.front.log.Error("server: loading a model failed", "model", spec.Names[0], "err", err)
		return
	}
	rt.front.log.Info("model loaded", "model", spec.Names[0], "ms", time.Since(start).Milliseconds(), "bytes", lm.Bytes)
	rt.evict(sl)
}

func (rt *router) open(spec ModelSpec) (srv *Server, lm *LoadedModel, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("server: the model loader panicked: %v", v)
		}
	}()
	lm, err = spec.Load()
	if err != nil {
		return nil, nil, err
	}
	o := lm.Options
	w := rt.opts
	w.ModelNames = spec.Names
	w.Template, w.TemplateOptions, w.ToolFormat, w.Defaults, w.Manifest = o.Template, o.TemplateOptions, o.ToolFormat, o.Defaults, o.Manifest
	w.TokenHealing, w.NonEmpty = o.TokenHealing, o.NonEmpty
	srv = lm.srv
	if srv == nil {
		if srv, err = newModelServer(lm.Engine, w); err != nil {
			lm.Close()
			return nil, nil, err
		}
	}
	if rt.newServer != nil {
		rt.newServer(spec.Names[0], srv)
	}
	return srv, lm, nil
}

// release drops one reference; the last one of an unloaded model closes it.
func (rt *router) release(sl *slot) {
	rt.mu.Lock()
	sl.refs--
	sl.used = rt.now()
	closeNow := sl.gone && sl.refs == 0 && sl.srv != nil
	if !sl.gone && sl.refs == 0 && sl.srv != nil && !sl.expires.IsZero() {
		d := max(sl.expires.Sub(rt.now()), 0)
		sl.timer = time.AfterFunc(d, func() { rt.expire(sl) })
	}
	rt.mu.Unlock()
	if closeNow {
		rt.front.log.Info("model unloaded", "model", rt.list()[sl.spec].Names[0])
		sl.lm.Close()
	}
}

// expire unloads an idle model whose keep_alive has run out.
func (rt *router) expire(sl *slot) {
	rt.mu.Lock()
	closeNow := !sl.gone && sl.refs == 0 && !sl.expires.IsZero() && !rt.now().Before(sl.expires) && rt.unloadLocked(sl)
	rt.mu.Unlock()
	if closeNow {
		rt.front.log.Info("model unloaded (keep_alive ran out)", "model", rt.list()[sl.spec].Names[0])
		sl.lm.Close()
	}
}

// keepAlive sets how long sl's model stays loaded once idle (Ollama's
// keep_alive): 0 unloads it when its requests end, negative keeps it.
func (rt *router) keepAlive(sl *slot, d time.Duration) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	switch {
	case d < 0:
		sl.expires = time.Time{}
	case d == 0:
		rt.unloadLocked(sl) // the caller holds a reference: closed at its release
	default:
		sl.expires = rt.now().Add(d)
	}
}

// unloadLocked takes sl out of the table and reports whether it is idle
// (the caller then closes it; else its last release does).
func (rt *router) unloadLocked(sl *slot) bool {
	if sl.gone {
		return false
	}
	sl.gone = true
	if rt.slots[sl.spec] == sl {
		delete(rt.slots, sl.spec)
	}
	if sl.timer != nil {
		sl.timer.Stop()
		sl.timer = nil
	}
	rt.unloads++
	return sl.refs == 0
}

// loadedLocked are the models loaded and not unloaded, by spec index.
func (rt *router) loadedLocked() []*slot {
	var out []*slot
	for _, sl := range rt.slots {
		if sl.srv != nil && !sl.gone {
			out = append(out, sl)
		}
	}
	slices.SortFunc(out, func(a, b *slot) int { return a.spec - b.spec })
	return out
}

// evict unloads models other than keep while the loaded ones are over
// MaxLoaded or MemoryBudget: idle ones first, then the least recently
// used.
func (rt *router) evict(keep *slot) {
	rt.mu.Lock()
	var victims []*slot
	for {
		loaded := rt.loadedLocked()
		var bytes int64
		for _, sl := range loaded {
			bytes += sl.lm.Bytes
		}
		if !(rt.maxLoaded > 0 && len(loaded) > rt.maxLoaded || rt.budget > 0 && bytes > rt.budget) {
			break
		}
		var v *slot
		for _, sl := range loaded {
			if sl == keep {
				continue
			}
			if v == nil || (sl.refs == 0) != (v.refs == 0) && sl.refs == 0 || (sl.refs == 0) == (v.refs == 0) && sl.used.Before(v.used) {
				v = sl
			}
		}
		if v == nil {
			break
		}
		if rt.unloadLocked(v) {
			victims = append(victims, v)
		}
		rt.front.log.Info("unloading the least recently used model", "model", rt.list()[v.spec].Names[0], "in_flight", v.refs)
	}
	rt.mu.Unlock()
	for _, sl := range victims {
		go sl.lm.Close() // not on the request that loaded a model
	}
}
