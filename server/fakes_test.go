package server

// Fakes through the generator interface: what tests put in place of (or
// around) a model's engine, instead of hooks in the production structs.

import (
	"context"
	"iter"
	"sync/atomic"

	"nanoserve/engine"
)

// scripted is a generator that answers a one-choice job with the reply f
// scripts for its request (to test how replies are read, e.g. tool calls,
// without a model that writes them).
type scripted func(ctx context.Context, req engine.Request) (iter.Seq[engine.Token], func() *engine.Result)

func (f scripted) SubmitAll(ctx context.Context, reqs []engine.Request) ([]tokenStream, error) {
	toks, res := f(ctx, reqs[0])
	return []tokenStream{scriptStream{toks, res}}, nil
}

type scriptStream struct {
	toks iter.Seq[engine.Token]
	res  func() *engine.Result
}

func (s scriptStream) Tokens() iter.Seq[engine.Token] { return s.toks }
func (s scriptStream) Results() []*engine.Result      { return []*engine.Result{s.res()} }

// paced runs every before each token the wrapped generator yields (a slow
// client, or a gate the test opens).
type paced struct {
	generator
	every func()
}

func (p paced) SubmitAll(ctx context.Context, reqs []engine.Request) ([]tokenStream, error) {
	sts, err := p.generator.SubmitAll(ctx, reqs)
	for i, st := range sts {
		sts[i] = pacedStream{st, p.every}
	}
	return sts, err
}

type pacedStream struct {
	tokenStream
	every func()
}

func (p pacedStream) Tokens() iter.Seq[engine.Token] {
	return func(yield func(engine.Token) bool) {
		for t := range p.tokenStream.Tokens() {
			p.every()
			if !yield(t) {
				return
			}
		}
	}
}

// panicOnce panics in the handler of the first job submitted to it, then
// submits to the wrapped generator.
type panicOnce struct {
	generator
	done atomic.Bool
}

func (p *panicOnce) SubmitAll(ctx context.Context, reqs []engine.Request) ([]tokenStream, error) {
	if p.done.CompareAndSwap(false, true) {
		panic("boom")
	}
	return p.generator.SubmitAll(ctx, reqs)
}
