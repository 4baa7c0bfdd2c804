package model

import (
	"errors"
	"fmt"
	"math"

	"nanoserve/kvcache"
)

// Pooling types of Config.Pooling: how a sequence's final hidden states
// h_0..h_{L-1} (the final norm's output, before the LM head) become one
// embedding e, which Embed then L2-normalises (e / ‖e‖).
const (
	PoolNone = "none" // per-token states only: Embed refuses
	PoolMean = "mean" // e = (1/L) Σ_i h_i
	PoolCLS  = "cls"  // e = h_0 (the first token's state)
	PoolLast = "last" // e = h_{L-1}: a causal model's only state that saw the whole input
)

// ErrPooling is wrapped by Embed's error for a pooling it cannot do.
var ErrPooling = errors.New("model: unsupported pooling")

// Embed runs tokens as one prefill on a private KV cache (never the
// engine's: concurrent generation's sequences are untouched, and nothing
// remains allocated afterwards) and returns the L2-normalised pooled final
// hidden state (dim). Config.Pooling chooses the pooling; "" means PoolLast,
// the natural choice for a decoder-only model. Forward's lock serialises it
// with other Forward calls.
func (m *Model) Embed(tokens []int) ([]float32, error) {
	pool := m.Pooling
	if pool == "" {
		pool = PoolLast
	}
	if pool != PoolMean && pool != PoolCLS && pool != PoolLast {
		return nil, fmt.Errorf("%w %q", ErrPooling, pool)
	}
	L := len(tokens)
	if L == 0 {
		return nil, fmt.Errorf("%w: no tokens", ErrBatch)
	}
	c, err := m.NewCache(L)
	if err != nil {
		return nil, err
	}
	s := &kvcache.Seq{}
	if err := c.Reserve(s, L); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	b := Batch{Tokens: tokens, Pos: make([]int, L), Seq: make([]*kvcache.Seq, L), Output: make([]bool, L), Hidden: true}
	for i := range L {
		b.Pos[i], b.Seq[i] = i, s
		b.Output[i] = pool == PoolMean || pool == PoolCLS && i == 0 || pool == PoolLast && i == L-1
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ws.b = b
	defer func() { m.ws.b = Batch{} }()
	h, err := m.forward(&m.ws.b, c) // (n_out, dim)
	if err != nil {
		return nil, err
	}
	dim := m.Dim
	e := make([]float64, dim)
	for i := 0; i < len(h); i += dim {
		for j, v := range h[i : i+dim] {
			e[j] += float64(v)
		}
	}
	var ss float64
	for _, v := range e {
		ss += v * v
	}
	out := make([]float32, dim)
	if ss == 0 {
		return out, nil
	}
	inv := 1 / math.Sqrt(ss) // mean's 1/L cancels in the normalisation
	for j, v := range e {
		out[j] = float32(v * inv)
	}
	return out, nil
}
