package engine

import (
	"fmt"
)

// Embed returns the L2-normalised pooled final hidden state of each request
// (model.Model.Embed: the model's pooling, "last" by default). Each input
// is encoded as Encode does (PromptIDs or Prompt) and must fit the context.
// It runs outside the scheduler on a private KV cache per input, serialised
// with the scheduler's steps by the model's Forward lock: generating
// sequences' caches are never touched and no cache block stays allocated.
// It also returns each input's token count.
func (e *Engine) Embed(reqs []Request) (embs [][]float32, tokens []int, err error) {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return nil, nil, ErrClosed
	}
	if e.m == nil {
		return nil, nil, fmt.Errorf("engine: embeddings need a model (this engine runs a test forwarder)")
	}
	ids := make([][]int, len(reqs))
	for i := range reqs {
		if ids[i], err = e.Encode(&reqs[i]); err != nil {
			return nil, nil, fmt.Errorf("input %d: %w", i, err)
		}
		if len(ids[i]) > e.ctx {
			return nil, nil, fmt.Errorf("input %d: %w", i, &PromptTooLongError{Tokens: len(ids[i]), Limit: e.ctx})
		}
	}
	for _, t := range ids {
		v, err := e.m.Embed(t)
		if err != nil {
			return nil, nil, err
		}
		embs = append(embs, v)
		tokens = append(tokens, len(t))
	}
	return embs, tokens, nil
}
