// Package host keeps the models a server serves: their names, loading on
// first use, reference counts, unloading the least recently used past a
// count or memory budget, and Ollama's keep_alive — the model lifecycle,
// apart from the HTTP routes that use it (as Ollama's scheduler sits beside
// its routes) — and assembling a servable model's parts: the KV cache plan
// (kvplan.go), the manifest with its hashes (manifest.go), and the names a
// model answers to (names.go).
//
// Names: a model answers to each of Spec.Names (its served name first,
// then its file's base name with and without extension, its aliases) and
// to any of them with Ollama's default tag ":latest". A lookup without a
// name finds the first model.
//
// Loading: a model loads on its first Acquire (acquires that arrive while
// it loads wait for it; Spec.Preload ones load in Preload). Past
// Options.MaxLoaded loaded models, or past Options.MemoryBudget bytes, the
// least recently used other model (idle ones before busy ones) is unloaded:
// it leaves the table at once, so new acquires load it afresh, but it is
// closed only when its last lease is released (a reference count), so
// unloading never cuts a request. KeepAlive sets how long a model stays
// loaded once idle (0: unload as soon as it is idle; negative: forever,
// the default).
package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"nanoserve/chat"
	"nanoserve/engine"
	"nanoserve/sample"
)

// Spec is one model a table may serve.
type Spec struct {
	// Names the model answers to; the first is the one responses report.
	Names []string
	// Aliases are the names of Names the operator gave (the listings'
	// aliases, as llama-server's --alias set), Tags its labels (--tags).
	Aliases, Tags []string
	// Load opens the model and its engine. The table calls it at most
	// once at a time per model.
	Load func() (*Loaded, error)
	// Preload: load the model in Table.Preload (a model named at start);
	// else on its first acquire.
	Preload bool
	// Describe, if set, tells the manifest of a model not loaded yet
	// (Preload runs it in the background for each such model), so the
	// listings describe every model.
	Describe func() (*Manifest, error)
}

// Loaded is a model Load opened.
type Loaded struct {
	Engine *engine.Engine
	// Options are the model's own serving options.
	Options ModelOptions
	// Bytes is the memory the model holds (weights and KV cache), counted
	// against Options.MemoryBudget.
	Bytes int64
	// Close releases the engine and the model (called once, when the model
	// is unloaded and idle, or at Table.Close).
	Close func()
}

// ModelOptions are what a served model brings besides its engine.
type ModelOptions struct {
	// Template renders chat messages (nil: the model has none);
	// TemplateOptions carries the BOS/EOS texts and extra variables.
	Template        *chat.Template
	TemplateOptions chat.Options
	// ToolFormat is how the model writes tool calls ("": from the template).
	ToolFormat chat.ToolFormat
	// Defaults is the sampling policy requests start from (nil: the
	// model's generation_config.json over sample.Defaults).
	Defaults *sample.Policy
	// TokenHealing and NonEmpty are the completion defaults of the
	// built-in completion model (see server.Options).
	TokenHealing, NonEmpty bool
	// BlockStop: completions end at the end of the block the prompt
	// opened (the built-in code model; see server.Options.BlockStop).
	BlockStop bool
	// Manifest describes the model (nil: unknown).
	Manifest *Manifest
}

// Options configure a Table.
type Options struct {
	// MaxLoaded, if > 0, is how many models may be loaded at once.
	MaxLoaded int
	// MemoryBudget, if > 0, is the most Loaded.Bytes the loaded models may
	// hold together (the model an acquire needs is loaded regardless).
	MemoryBudget int64
	// Logger receives loads, unloads and load failures (nil: slog.Default()).
	Logger *slog.Logger
}

// Errors of Acquire.
var (
	// ErrClosed: the table is closing (the server shuts down).
	ErrClosed = errors.New("host: the server is shutting down")
	// ErrLoadAborted: the acquire's context ended while the model loaded.
	ErrLoadAborted = errors.New("host: the request ended while the model was loading")
)

// LoadError is a model whose Load failed.
type LoadError struct {
	Model string
	Err   error
}

func (e *LoadError) Error() string {
	return fmt.Sprintf("loading the model %q failed: %v", e.Model, e.Err)
}
func (e *LoadError) Unwrap() error { return e.Err }

// Table is the models of a server. T is what the server makes of a loaded
// model (its handler), made once per load by the table's make function.
type Table[T any] struct {
	specs     atomic.Pointer[[]Spec] // append-only (Add); indices are stable
	make      func(Spec, *Loaded) (T, error)
	maxLoaded int
	budget    int64
	log       *slog.Logger
	ready     atomic.Bool // Preload finished
	// Now is the clock of keep_alive and least-recent use (tests move it).
	Now func() time.Time

	mu        sync.Mutex
	slots     map[int]*slot[T] // by spec index: the models loaded or loading
	manifests map[int]*Manifest
	loads     int
	unloads   int
	closed    bool
}

// slot is one load of a model.
type slot[T any] struct {
	spec    int
	done    chan struct{} // closed when the load finished (val or err set)
	val     T
	lm      *Loaded
	err     error
	refs    int       // leases
	used    time.Time // last acquired or released
	gone    bool      // out of the table; closed when refs reaches 0
	expires time.Time // keep_alive: unload once idle past it (zero: never)
	timer   *time.Timer
}

// Lease is one acquire of a loaded model; Release ends it.
type Lease[T any] struct {
	t    *Table[T]
	sl   *slot[T]
	once sync.Once
}

// Value is what the table's make function made of the model.
func (l *Lease[T]) Value() T { return l.sl.val }

// Release ends the lease (once; later calls do nothing).
func (l *Lease[T]) Release() { l.once.Do(func() { l.t.release(l.sl) }) }

// KeepAlive sets how long the leased model stays loaded once idle
// (Ollama's keep_alive): 0 unloads it when its leases end, negative keeps
// it.
func (l *Lease[T]) KeepAlive(d time.Duration) { l.t.keepAlive(l.sl, d) }

// New makes a table of models; make turns each loaded model into T.
func New[T any](models []Spec, opts Options, make func(Spec, *Loaded) (T, error)) (*Table[T], error) {
	if len(models) == 0 {
		return nil, fmt.Errorf("host: a server needs at least one model")
	}
	seen := map[string]bool{}
	for i, m := range models {
		if len(m.Names) == 0 || m.Load == nil {
			return nil, fmt.Errorf("host: model %d has no name or no loader", i)
		}
		for _, n := range m.Names {
			if n == "" || seen[n] {
				return nil, fmt.Errorf("host: model name %q is empty or names two models", n)
			}
			seen[n] = true
		}
	}
	t := &Table[T]{make: make, maxLoaded: opts.MaxLoaded, budget: opts.MemoryBudget, log: opts.Logger, Now: time.Now,
		slots: map[int]*slot[T]{}, manifests: map[int]*Manifest{}}
	if t.log == nil {
		t.log = slog.Default()
	}
	ms := slices.Clone(models)
	t.specs.Store(&ms)
	return t, nil
}

// List is the models served, in order.
func (t *Table[T]) List() []Spec { return *t.specs.Load() }

// Add serves one more model (pulled at run time). Its first name already
// served means it is served already (a pull of the same name that finished
// first): nothing is added. Its other names that other models hold stay
// theirs (two repositories' files may be named alike).
func (t *Table[T]) Add(m Spec) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.List()
	taken := func(n string) bool {
		return slices.ContainsFunc(old, func(o Spec) bool { return slices.Contains(o.Names, n) })
	}
	if taken(m.Names[0]) {
		return
	}
	m.Names = slices.DeleteFunc(slices.Clone(m.Names), taken)
	ns := append(slices.Clip(old), m)
	t.specs.Store(&ns)
}

// Names are the first names of every model.
func (t *Table[T]) Names() []string {
	specs := t.List()
	out := make([]string, len(specs))
	for i, m := range specs {
		out[i] = m.Names[0]
	}
	return out
}

// MatchName reports whether a request's model field names a model that
// answers to names: one of them exactly, or one with Ollama's default tag
// (":latest").
func MatchName(names []string, name string) bool {
	if slices.Contains(names, name) {
		return true
	}
	base, ok := strings.CutSuffix(name, ":latest")
	return ok && base != "" && slices.Contains(names, base)
}

// Lookup finds the model a request's model field names ("": the first).
func (t *Table[T]) Lookup(name string) (int, bool) {
	if name == "" {
		return 0, true
	}
	for i, m := range t.List() {
		if MatchName(m.Names, name) {
			return i, true
		}
	}
	return 0, false
}

// Ready reports whether Preload has finished.
func (t *Table[T]) Ready() bool { return t.ready.Load() }

// Preload loads the models marked Preload (up to MaxLoaded of them), then
// marks the table ready and describes the others in the background. A
// model that fails to load is an error.
func (t *Table[T]) Preload(ctx context.Context) error {
	n := 0
	for i, m := range t.List() {
		if !m.Preload || t.maxLoaded > 0 && n >= t.maxLoaded {
			continue
		}
		l, err := t.Acquire(ctx, i)
		if err != nil {
			return fmt.Errorf("host: model %q: %w", m.Names[0], err)
		}
		l.Release()
		n++
	}
	t.ready.Store(true)
	go t.describe()
	return nil
}

// Put puts model i in the table as loaded, with its value made already (a
// server of one engine), and marks the table ready.
func (t *Table[T]) Put(i int, val T, lm *Loaded) {
	t.mu.Lock()
	defer t.mu.Unlock()
	sl := &slot[T]{spec: i, done: make(chan struct{}), val: val, lm: lm, used: t.Now()}
	close(sl.done)
	if lm.Options.Manifest != nil {
		t.manifests[i] = lm.Options.Manifest
	}
	t.slots[i] = sl
	t.loads++
	t.ready.Store(true)
}

// describe fills in the manifests of the models not loaded yet.
func (t *Table[T]) describe() {
	for i, m := range t.List() {
		t.mu.Lock()
		known := t.manifests[i] != nil || t.closed
		t.mu.Unlock()
		if known || m.Describe == nil {
			continue
		}
		man, err := m.Describe()
		if err != nil {
			t.log.Warn("host: describing a model failed", "model", m.Names[0], "err", err)
			continue
		}
		t.mu.Lock()
		if t.manifests[i] == nil {
			t.manifests[i] = man
		}
		t.mu.Unlock()
	}
}

// Close unloads every model (waiting for none: call it after the server
// stopped).
func (t *Table[T]) Close() {
	t.mu.Lock()
	t.closed = true
	var victims []*slot[T]
	for _, sl := range t.slots {
		if sl.lm != nil && t.unloadLocked(sl) {
			victims = append(victims, sl)
		}
	}
	t.mu.Unlock()
	for _, sl := range victims {
		sl.lm.Close()
	}
}

// Acquire returns model i loaded, holding one reference until the lease
// is released, loading it (or waiting for the load under way) as needed.
// Errors: ErrClosed, ErrLoadAborted (ctx ended while waiting), *LoadError.
func (t *Table[T]) Acquire(ctx context.Context, i int) (*Lease[T], error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, ErrClosed
	}
	sl := t.slots[i]
	loader := sl == nil
	if loader {
		sl = &slot[T]{spec: i, done: make(chan struct{})}
		t.slots[i] = sl
	}
	sl.refs++
	sl.used = t.Now()
	if sl.timer != nil {
		sl.timer.Stop()
		sl.timer = nil
	}
	t.mu.Unlock()
	if loader {
		t.load(sl)
	} else {
		select {
		case <-sl.done:
		case <-ctx.Done():
			t.release(sl)
			return nil, fmt.Errorf("%w (%q)", ErrLoadAborted, t.List()[i].Names[0])
		}
	}
	if sl.err != nil {
		t.release(sl)
		return nil, &LoadError{t.List()[i].Names[0], sl.err}
	}
	return &Lease[T]{t: t, sl: sl}, nil
}

// load runs the model's loader for sl, then unloads what the limits say.
func (t *Table[T]) load(sl *slot[T]) {
	spec := t.List()[sl.spec]
	start := time.Now()
	val, lm, err := t.open(spec)
	t.mu.Lock()
	if err != nil {
		sl.err = err
		if t.slots[sl.spec] == sl {
			delete(t.slots, sl.spec)
		}
	} else {
		sl.val, sl.lm = val, lm
		t.loads++
		if lm.Options.Manifest != nil {
			t.manifests[sl.spec] = lm.Options.Manifest
		}
	}
	t.mu.Unlock()
	close(sl.done)
	if err != nil {
		t.log.Error("server: loading a model failed", "model", spec.Names[0], "err", err)
		return
	}
	weights := ""
	if lm.Engine != nil && lm.Engine.Model() != nil {
		weights = lm.Engine.Model().WeightMemory().String()
	}
	t.log.Info("model loaded", "model", spec.Names[0], "ms", time.Since(start).Milliseconds(), "bytes", lm.Bytes, "weights", weights)
	t.evict(sl)
}

func (t *Table[T]) open(spec Spec) (val T, lm *Loaded, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("host: the model loader panicked: %v", v)
		}
	}()
	if lm, err = spec.Load(); err != nil {
		return val, nil, err
	}
	if val, err = t.make(spec, lm); err != nil {
		lm.Close()
		return val, nil, err
	}
	return val, lm, nil
}

// release drops one reference; the last one of an unloaded model closes it.
func (t *Table[T]) release(sl *slot[T]) {
	t.mu.Lock()
	sl.refs--
	sl.used = t.Now()
	closeNow := sl.gone && sl.refs == 0 && sl.lm != nil
	if !sl.gone && sl.refs == 0 && sl.lm != nil && !sl.expires.IsZero() {
		d := max(sl.expires.Sub(t.Now()), 0)
		sl.timer = time.AfterFunc(d, func() { t.expire(sl) })
	}
	t.mu.Unlock()
	if closeNow {
		t.log.Info("model unloaded", "model", t.List()[sl.spec].Names[0])
		sl.lm.Close()
	}
}

// expire unloads an idle model whose keep_alive has run out.
func (t *Table[T]) expire(sl *slot[T]) {
	t.mu.Lock()
	closeNow := !sl.gone && sl.refs == 0 && !sl.expires.IsZero() && !t.Now().Before(sl.expires) && t.unloadLocked(sl)
	t.mu.Unlock()
	if closeNow {
		t.log.Info("model unloaded (keep_alive ran out)", "model", t.List()[sl.spec].Names[0])
		sl.lm.Close()
	}
}

func (t *Table[T]) keepAlive(sl *slot[T], d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case d < 0:
		sl.expires = time.Time{}
	case d == 0:
		t.unloadLocked(sl) // the caller holds a reference: closed at its release
	default:
		sl.expires = t.Now().Add(d)
	}
}

// unloadLocked takes sl out of the table and reports whether it is idle
// (the caller then closes it; else its last release does).
func (t *Table[T]) unloadLocked(sl *slot[T]) bool {
	if sl.gone {
		return false
	}
	sl.gone = true
	if t.slots[sl.spec] == sl {
		delete(t.slots, sl.spec)
	}
	if sl.timer != nil {
		sl.timer.Stop()
		sl.timer = nil
	}
	t.unloads++
	return sl.refs == 0
}

// loadedLocked are the models loaded and not unloaded, by spec index.
func (t *Table[T]) loadedLocked() []*slot[T] {
	var out []*slot[T]
	for _, sl := range t.slots {
		if sl.lm != nil && !sl.gone {
			out = append(out, sl)
		}
	}
	slices.SortFunc(out, func(a, b *slot[T]) int { return a.spec - b.spec })
	return out
}

// evict unloads models other than keep while the loaded ones are over
// MaxLoaded or MemoryBudget: idle ones first, then the least recently
// used.
func (t *Table[T]) evict(keep *slot[T]) {
	t.mu.Lock()
	var victims []*slot[T]
	for {
		loaded := t.loadedLocked()
		var bytes int64
		for _, sl := range loaded {
			bytes += sl.lm.Bytes
		}
		if !(t.maxLoaded > 0 && len(loaded) > t.maxLoaded || t.budget > 0 && bytes > t.budget) {
			break
		}
		var v *slot[T]
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
		if t.unloadLocked(v) {
			victims = append(victims, v)
		}
		t.log.Info("unloading the least recently used model", "model", t.List()[v.spec].Names[0], "in_flight", v.refs)
	}
	t.mu.Unlock()
	for _, sl := range victims {
		go sl.lm.Close() // not on the request that loaded a model
	}
}

// Entry is one model as the listings see it.
type Entry[T any] struct {
	Names    []string
	Aliases  []string  // Spec.Aliases
	Tags     []string  // Spec.Tags
	Manifest *Manifest // nil: not known yet
	Loaded   bool
	Value    T         // the loaded model's (zero when not loaded)
	Bytes    int64     // held when loaded
	Expires  time.Time // keep_alive's end (zero: kept loaded)
}

// Entries are the served models in order.
func (t *Table[T]) Entries() []Entry[T] {
	t.mu.Lock()
	defer t.mu.Unlock()
	specs := t.List()
	out := make([]Entry[T], len(specs))
	for i, m := range specs {
		out[i] = Entry[T]{Names: m.Names, Aliases: m.Aliases, Tags: m.Tags, Manifest: t.manifests[i]}
	}
	for _, sl := range t.loadedLocked() {
		e := &out[sl.spec]
		e.Loaded, e.Value, e.Bytes, e.Expires = true, sl.val, sl.lm.Bytes, sl.expires
	}
	return out
}

// Counts are the table's gauges: models loaded now, loads and unloads so
// far.
func (t *Table[T]) Counts() (loaded, loads, unloads int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.loadedLocked()), t.loads, t.unloads
}
