package engine

import (
	"fmt"
	"slices"
)

// Reasoning gate. A reasoning model writes its thinking before its answer;
// structured output and forced tool calls constrain the answer, not the
// thinking. ReasoningGate wraps the answer's constraint: while the reply is
// inside its reasoning block the gate lets every token through except the
// end-of-generation ids (an answer must follow; without an answer
// constraint they stay allowed), and counts; once the
// reasoning is over — told by the caller's Answering, which sees each
// token's text (the caller parses the model's markers) — it builds the
// answer's processor with the tokens left and hands every later step to
// it. A budget bounds the thinking: after Budget reasoning tokens the gate
// forces the closing marker's tokens (Close), so the answer always gets
// its turn; the budget is also capped so that Close and the shortest
// answer (MinAnswer tokens) fit in MaxTokens.

// ReasoningGateOptions configure ReasoningGate.
type ReasoningGateOptions struct {
	// Answering is told the text of each token drawn while reasoning and
	// reports whether the reply has left its reasoning.
	Answering func(piece string) bool
	// Answer builds the answer's processor given the output tokens left
	// (0: no limit). nil: the gate only bounds the thinking.
	Answer func(left int) (LogitsProcessor, error)
	// MaxTokens is the whole output's budget (≤ 0: no limit).
	MaxTokens int
	// Budget caps the reasoning tokens (< 0: no cap of its own).
	Budget int
	// MinAnswer is the fewest tokens the answer needs (a grammar's
	// MinTokens); the cap keeps room for it and Close.
	MinAnswer int
	// Close is the text that ends the reasoning (e.g. "\n</think>\n\n"),
	// forced token by token when the budget runs out.
	Close string
	// StopIDs, like the end-of-generation ids, are masked while reasoning.
	StopIDs []int
}

// ReasoningGate returns the processor for one sequence whose reply starts
// inside a reasoning block.
func (e *Engine) ReasoningGate(o ReasoningGateOptions) (LogitsProcessor, error) {
	if o.Answering == nil {
		return nil, fmt.Errorf("engine: reasoning gate: no Answering callback")
	}
	g := &reasoningGate{o: o, piece: e.tok.Piece, ends: slices.Clone(o.StopIDs), cap: -1}
	for _, id := range append(slices.Clone(e.eog), e.tok.EOG()...) {
		if !slices.Contains(g.ends, id) {
			g.ends = append(g.ends, id)
		}
	}
	if o.Close != "" {
		g.close = e.tok.Encode(o.Close, true)
	}
	g.cap = o.Budget
	if o.MaxTokens > 0 {
		room := o.MaxTokens - o.MinAnswer - len(g.close)
		if room < 0 {
			room = 0
		}
		if g.cap < 0 || g.cap > room {
			g.cap = room
		}
	}
	if g.cap >= 0 && len(g.close) == 0 {
		return nil, fmt.Errorf("engine: reasoning gate: a reasoning budget needs the closing marker's text")
	}
	return g, nil
}

type reasoningGate struct {
	o      ReasoningGateOptions
	piece  func(id int) string
	ends   []int // masked while reasoning
	close  []int // the closing marker's tokens
	cap    int   // reasoning tokens allowed (< 0: any)
	used   int   // tokens drawn so far
	forced int   // close tokens forced so far (-1: not forcing)
	answer LogitsProcessor
	done   bool // the reasoning is over
}

func (g *reasoningGate) forcing() bool { return g.cap >= 0 && g.used >= g.cap }

func (g *reasoningGate) Process(logits []float32) error {
	if g.done {
		if g.answer == nil {
			return nil
		}
		return g.answer.Process(logits)
	}
	if g.forcing() {
		k := g.used - g.cap
		if k < len(g.close) {
			id := g.close[k]
			for i := range logits {
				if i != id {
					logits[i] = negInf
				}
			}
			return nil
		}
	}
	if g.o.Answer == nil {
		return nil // only a budget: the reply may end while thinking
	}
	for _, id := range g.ends {
		if id >= 0 && id < len(logits) {
			logits[id] = negInf
		}
	}
	return nil
}

func (g *reasoningGate) Accept(token int) error {
	if g.done {
		g.used++
		if g.answer == nil {
			return nil
		}
		return g.answer.Accept(token)
	}
	g.used++
	if !g.o.Answering(g.piece(token)) {
		if g.forcing() && g.used-g.cap >= len(g.close) {
			return fmt.Errorf("engine: reasoning gate: the forced closing marker did not end the reasoning")
		}
		return nil
	}
	g.done = true
	if g.o.Answer != nil {
		left := 0
		if g.o.MaxTokens > 0 {
			left = max(g.o.MaxTokens-g.used, 1)
		}
		p, err := g.o.Answer(left)
		if err != nil {
			return err
		}
		g.answer = p
	}
	return nil
}
