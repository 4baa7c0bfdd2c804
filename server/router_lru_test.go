package server

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"
)

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
func lruRouter(t *testing.T, opts RouterOptions, names ...string) (*router, *closeLog) {
	t.Helper()
	log := &closeLog{}
	for _, n := range names {
		spec := testSpec(t, "aidreams", nil)
		load := spec.Load
		spec.Names = []string{n}
		spec.Load = func() (*LoadedModel, error) {
			lm, err := load()
			if err != nil {
				return nil, err
			}
			closeEng := lm.Close
			lm.Close = func() { log.add(n); closeEng() }
			return lm, nil
		}
		opts.Models = append(opts.Models, spec)
	}
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := NewRouter(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	rt := s.router
	var mu sync.Mutex
	clock := time.Unix(1_000_000, 0)
	rt.now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(time.Second)
		return clock
	}
	return rt, log
}

// loadedNames lists the models loaded now, in spec order.
func loadedNames(rt *router) []string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	var out []string
	for _, sl := range rt.loadedLocked() {
		out = append(out, rt.list()[sl.spec].Names[0])
	}
	return out
}

func acquireName(t *testing.T, rt *router, name string) *slot {
	t.Helper()
	i, ok := rt.lookup(name)
	if !ok {
		t.Fatalf("no model %q", name)
	}
	sl, e := rt.acquire(context.Background(), i)
	if e != nil {
		t.Fatalf("acquire %s: %v", name, e.Message)
	}
	return sl
}

// Past MaxLoaded the router unloads the least recently used model: with
// three models and room for two, the one used longest ago goes, not the
// one just used (with two models there is only one candidate, so the
// order is never tested). An idle model goes before a busy one, however
// recent.
func TestRouterEvictsLeastRecentlyUsed(t *testing.T) {
	rt, log := lruRouter(t, RouterOptions{MaxLoaded: 2}, "a", "b", "c")
	use := func(name string) { rt.release(acquireName(t, rt, name)) }
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
	rt.release(busy)
}

// A model unloaded while requests use it closes when the last of them
// ends, not the first: two requests on a, then b's load unloads a; a's
// engine must stay open until both release.
func TestRouterClosesUnloadedAfterLastRequest(t *testing.T) {
	rt, log := lruRouter(t, RouterOptions{MaxLoaded: 1}, "a", "b")
	first := acquireName(t, rt, "a")
	second := acquireName(t, rt, "a")
	b := acquireName(t, rt, "b") // unloads a, which is busy
	if got := loadedNames(rt); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("loaded %v, want [b]", got)
	}
	rt.release(first)
	if got := log.get(); len(got) != 0 {
		t.Fatalf("closed %v with a request still on a", got)
	}
	if first.srv.eng.Heartbeat().IsZero() {
		t.Fatal("a's engine closed with a request still on it")
	}
	rt.release(second)
	if got := log.get(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("closed %v after a's last request, want [a]", got)
	}
	rt.release(b)
}
