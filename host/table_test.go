package host

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"nanoserve/engine"
	"nanoserve/internal/testshared"
	"nanoserve/model"
)

// testSpec is a served model: aidreams260K, each load a fresh model and
// engine.
func testSpec(t testing.TB, name string) Spec {
	dir := testshared.Dir(t)
	path, tok := dir+"/models/llama2c/aidreams260K.bin", dir+"/models/llama2c/aidreams-tok512.bin"
	return Spec{Names: []string{name}, Load: func() (*Loaded, error) {
		m, err := model.Load(path, model.Options{Tokenizer: tok, Threads: 1})
		if err != nil {
			return nil, err
		}
		eng, err := engine.New(m, engine.Options{CtxSize: 128})
		if err != nil {
			m.Close()
			return nil, err
		}
		return &Loaded{Engine: eng, Bytes: 1 << 20, Close: func() { eng.Close(); m.Close() }}, nil
	}}
}

// table is the table tests use: its value is the loaded model's engine.
type table = Table[*engine.Engine]

// closeLog records which models' engines were closed, in order.
type closeLog struct {
	mu     sync.Mutex
	closed []string
}

func (l *closeLog) add(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = append(l.closed, name)
}

func (l *closeLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.closed)
}

// waitFor polls until l holds want (evicted idle models close on their
// own goroutine).
func (l *closeLog) waitFor(t *testing.T, want ...string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !slices.Equal(l.get(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("closed %v, want %v", l.get(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// lruRouter is a router of the named models (each the aidreams model)
// whose engines log their closing, on a clock that ticks one second per
// reading, so "least recently used" never rests on timer resolution.
func lruRouter(t *testing.T, opts Options, names ...string) (*table, *closeLog) {
	t.Helper()
	log := &closeLog{}
	var specs []Spec
	for _, n := range names {
		spec := testSpec(t, n)
		load := spec.Load
		spec.Names = []string{n}
		spec.Load = func() (*Loaded, error) {
			lm, err := load()
			if err != nil {
				return nil, err
			}
			closeEng := lm.Close
			lm.Close = func() { log.add(n); closeEng() }
			return lm, nil
		}
		specs = append(specs, spec)
	}
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	rt, err := New(specs, opts, func(_ Spec, lm *Loaded) (*engine.Engine, error) { return lm.Engine, nil })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	var mu sync.Mutex
	clock := time.Unix(1_000_000, 0)
	rt.Now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(time.Second)
		return clock
	}
	return rt, log
}

// loadedNames lists the models loaded now, in spec order.
func loadedNames(rt *table) []string {
	var out []string
	for _, e := range rt.Entries() {
		if e.Loaded {
			out = append(out, e.Names[0])
		}
	}
	return out
}

func acquireName(t *testing.T, rt *table, name string) *Lease[*engine.Engine] {
	t.Helper()
	i, ok := rt.Lookup(name)
	if !ok {
		t.Fatalf("no model %q", name)
	}
	l, err := rt.Acquire(context.Background(), i)
	if err != nil {
		t.Fatalf("acquire %s: %v", name, err)
	}
	return l
}

// Past MaxLoaded the table unloads the least recently used model: with
// three models and room for two, the one used longest ago goes, not the
// one just used (with two models there is only one candidate, so the
// order is never tested). An idle model goes before a busy one, however
// recent.
func TestRouterEvictsLeastRecentlyUsed(t *testing.T) {
	rt, log := lruRouter(t, Options{MaxLoaded: 2}, "a", "b", "c")
	use := func(name string) { acquireName(t, rt, name).Release() }
	use("a")
	use("b")
	use("a") // a is now the more recent
	use("c") // over the limit: b, the least recently used, goes
	if got := loadedNames(rt); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("loaded %v after a, b, a, c: want [a c] (b least recently used)", got)
	}
	log.waitFor(t, "b")

	busy := acquireName(t, rt, "a") // a is busy, c idle and more recent
	use("c")
	use("b") // over the limit: c goes (idle), not a (busy, older)
	if got := loadedNames(rt); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("loaded %v: want [a b] (the idle c goes before the busy a)", got)
	}
	log.waitFor(t, "b", "c")
	busy.Release()
}

// A model unloaded while requests use it closes when the last of them
// ends, not the first: two requests on a, then b's load unloads a; a's
// engine must stay open until both release.
func TestRouterClosesUnloadedAfterLastRequest(t *testing.T) {
	rt, log := lruRouter(t, Options{MaxLoaded: 1}, "a", "b")
	first := acquireName(t, rt, "a")
	second := acquireName(t, rt, "a")
	b := acquireName(t, rt, "b") // unloads a, which is busy
	if got := loadedNames(rt); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("loaded %v, want [b]", got)
	}
	first.Release()
	if got := log.get(); len(got) != 0 {
		t.Fatalf("closed %v with a request still on a", got)
	}
	if first.Value().Heartbeat().IsZero() {
		t.Fatal("a's engine closed with a request still on it")
	}
	second.Release()
	if got := log.get(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("closed %v after a's last request, want [a]", got)
	}
	b.Release()
}

// A pulled model whose file names another model already answers to is
// served under its other names (the taken ones stay the other model's);
// one whose first name is served already is not added twice.
func TestTableAddTakenNames(t *testing.T) {
	rt, _ := lruRouter(t, Options{}, "aidreams", "aidreams.bin")
	spec := testSpec(t, "mha")
	spec.Names = []string{"hf.co/org/mha:Q8_0", "aidreams.bin", "mha"}
	rt.Add(spec)
	list := rt.List()
	if len(list) != 3 || !slices.Equal(list[2].Names, []string{"hf.co/org/mha:Q8_0", "mha"}) || !slices.Contains(list[1].Names, "aidreams.bin") {
		t.Fatalf("after add: %v, %v", list[1].Names, list[len(list)-1].Names)
	}
	rt.Add(spec)
	if len(rt.List()) != 3 {
		t.Errorf("adding the same first name again: %d models", len(rt.List()))
	}
}
