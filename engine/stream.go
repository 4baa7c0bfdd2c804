package engine

import (
	"context"
	"iter"
	"sync"
)

// Stream is a submitted request: its tokens as they land and its results.
// Tokens and Result are meant for one goroutine.
type Stream struct {
	e      *Engine
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex // protects the following fields
	toks   []Token    // landed, not yet taken by Tokens
	res    []*Result  // per choice, set when it ends
	left   int        // choices still running
	notify chan struct{}
	dirty  bool // (under the engine's cmu) in the engine's landed list

	yielded   []int // per choice: tokens Tokens yielded (Logprobs entries)
	delivered []int // per choice: of those, generated ids (not Stop)
	text      [][]byte
	broke     bool
}

// N is the number of choices.
func (st *Stream) N() int { return len(st.res) }

// Cancel stops the request (its results end "cancelled").
func (st *Stream) Cancel() { st.cancel(); st.e.poke() }

// Tokens yields every choice's tokens as they land (Token.Index tells the
// choice) and returns when all choices have ended. Breaking out of the
// loop cancels the request: the results then hold exactly the tokens
// yielded, with finish reason "cancelled".
func (st *Stream) Tokens() iter.Seq[Token] {
	return func(yield func(Token) bool) {
		n := len(st.res)
		st.yielded, st.delivered, st.text = make([]int, n), make([]int, n), make([][]byte, n)
		for {
			toks, end := st.take()
			for _, t := range toks {
				st.yielded[t.Index]++
				if !t.Stop {
					st.delivered[t.Index]++
				}
				st.text[t.Index] = append(st.text[t.Index], t.Text...)
				if !yield(t) {
					st.broke = true
					st.Cancel()
					st.wait()
					return
				}
			}
			if end {
				return
			}
			st.await()
		}
	}
}

// take returns the landed tokens and whether every choice has ended (then
// they are the last: a choice ends after its last token landed).
func (st *Stream) take() ([]Token, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	t := st.toks
	st.toks = nil
	return t, st.left == 0
}

// await blocks until something lands; when the request's context ends it
// wakes the scheduler once, which reaps the request.
func (st *Stream) await() {
	select {
	case <-st.notify:
	case <-st.ctx.Done():
		st.e.poke()
		<-st.notify
	}
}

// wait blocks until every choice has ended.
func (st *Stream) wait() {
	for {
		st.mu.Lock()
		left := st.left
		st.mu.Unlock()
		if left == 0 {
			return
		}
		st.await()
	}
}

// Result waits for the request to end and returns choice 0's Result.
func (st *Stream) Result() *Result { return st.Results()[0] }

// Results waits for the request to end and returns every choice's Result,
// by index.
func (st *Stream) Results() []*Result {
	st.wait()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.broke {
		// The scheduler may have run ahead of the caller: keep what the
		// caller saw.
		for i, res := range st.res {
			res.IDs = res.IDs[:min(st.delivered[i], len(res.IDs))]
			res.Logprobs = res.Logprobs[:min(st.yielded[i], len(res.Logprobs))]
			res.Text = string(st.text[i])
			res.Usage.CompletionTokens = len(res.IDs)
			res.FinishReason, res.Err = FinishCancelled, nil
		}
		st.broke = false
	}
	return st.res
}

// push lands t; the reader is woken once per step, after it (deliver), not
// per token: a speculative step lands several tokens, and each wake of a
// parked reader costs the scheduler a futex call.
func (st *Stream) push(t Token) {
	st.mu.Lock()
	st.toks = append(st.toks, t)
	st.mu.Unlock()
}

func (st *Stream) finish(res *Result) {
	st.mu.Lock()
	st.res[res.Index] = res
	st.left--
	if st.left == 0 {
		st.cancel() // release the context's resources
	}
	st.mu.Unlock()
	st.signal()
}

func (st *Stream) signal() {
	select {
	case st.notify <- struct{}{}:
	default:
	}
}
