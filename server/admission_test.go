package server

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"nanoserve/engine"
)

// gateProcessor blocks the engine's scheduler loop in its first Process
// until gate closes (entered is closed when it got there), so requests
// submitted meanwhile stay waiting.
type gateProcessor struct {
	once    *sync.Once
	entered chan struct{}
	gate    chan struct{}
}

func (g gateProcessor) Process([]float32) error {
	g.once.Do(func() { close(g.entered) })
	<-g.gate
	return nil
}
func (g gateProcessor) Accept(int) error { return nil }

// A request of several prompts was admitted prompt by prompt: when the
// queue filled part-way it got 429, but the prompts already queued stayed
// (cancelled, until the scheduler came round to them), so
// vllm:num_requests_waiting stayed up and the next normal request got 429
// too. Now a request is admitted whole or not at all: after the 429 the
// queue holds what it held before, a request of more prompts than the
// queue can ever hold is a 400, and the next request is admitted.
func TestAdmissionWholeOrNothing(t *testing.T) {
	const maxQueue = 8
	ts := newEngineServer(t, engine.Options{MaxSeqs: 1, MaxQueue: maxQueue},
		func(o *Options) { o.ModelNames, o.Template = []string{"m"}, nil })
	eng := ts.eng
	waiting := func() float64 { return metricValue(t, ts, `vllm:num_requests_waiting{model_name="m"}`) }

	// Hold the scheduler in a step; three more requests wait behind it.
	g := gateProcessor{once: new(sync.Once), entered: make(chan struct{}), gate: make(chan struct{})}
	opened := false
	open := func() {
		if !opened {
			opened = true
			close(g.gate)
		}
	}
	defer open()
	blocker, err := eng.Submit(context.Background(), engine.Request{Prompt: "x", Policy: greedy(2),
		Processors: func() []engine.LogitsProcessor { return []engine.LogitsProcessor{g} }})
	if err != nil {
		t.Fatal(err)
	}
	<-g.entered
	var held []*engine.Stream
	for range 3 {
		st, err := eng.Submit(context.Background(), engine.Request{Prompt: "y", Policy: greedy(1)})
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, st)
	}
	if w := waiting(); w != 3 {
		t.Fatalf("waiting %v before the batch, want 3", w)
	}

	prompts := func(n int) string { return `{"prompt":["a"` + strings.Repeat(`,"a"`, n-1) + `],"max_tokens":1}` }
	// 3 waiting + 6 > 8: refused whole. A request admitted in part would
	// wait behind the held step: answer within 20 s or fail (not hang).
	type answer struct {
		code int
		b    []byte
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := http.Post(ts.url+"/v1/completions", "application/json", strings.NewReader(prompts(6)))
		if err != nil {
			answered <- answer{}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answered <- answer{resp.StatusCode, b}
	}()
	var a answer
	select {
	case a = <-answered:
	case <-time.After(20 * time.Second):
		t.Fatalf("6 prompts with 3 of 8 waiting: no answer in 20 s (admitted in part and queued?), want 429 at once")
	}
	code, b := a.code, a.b
	if code != http.StatusTooManyRequests {
		t.Fatalf("6 prompts with 3 of 8 waiting: %d %s, want 429", code, b)
	}
	if w := waiting(); w != 3 {
		t.Errorf("after the 429: %v waiting, want the 3 from before (nothing of the refused request)", w)
	}
	// More prompts than the queue can ever hold: a 400 naming the limit.
	code, _, b = ts.post(t, "/v1/completions", prompts(maxQueue+1))
	if code != http.StatusBadRequest || !strings.Contains(string(b), "queue of 8") || !strings.Contains(string(b), `"param":"prompt"`) {
		t.Errorf("%d prompts with a queue of %d: %d %s, want 400 naming the queue", maxQueue+1, maxQueue, code, b)
	}
	if w := waiting(); w != 3 {
		t.Errorf("after the 400: %v waiting, want 3", w)
	}

	// The next normal request is admitted (it waits behind the blocker).
	done := make(chan int, 1)
	go func() {
		resp, err := http.Post(ts.url+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"z","max_tokens":1}`))
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	deadline := time.Now().Add(10 * time.Second)
	for waiting() != 4 {
		select {
		case code := <-done:
			open()
			t.Fatalf("the next request answered %d while the scheduler was held, want it queued", code)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			open()
			t.Fatalf("the next request is not queued: %v waiting, want 4", waiting())
		}
	}
	open()
	if code := <-done; code != http.StatusOK {
		t.Errorf("the next normal request: %d, want 200", code)
	}
	for _, st := range append(held, blocker) {
		for range st.Tokens() {
		}
	}
	for w := waiting(); w != 0; w = waiting() {
		if time.Now().After(deadline) {
			t.Fatalf("vllm:num_requests_waiting stays %v, want 0", w)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
