package model

import (
	"errors"
	"fmt"
	"slices"

	"nanoserve/kvcache"
	"nanoserve/tensor"
)

// Batch is a set of tokens to run through the model, from any number of
// sequences, each with its position.
//
// Rules (checked by Forward, which returns an error and changes nothing
// when one is broken):
//   - Tokens, Pos and Seq have the same length n ≥ 1; Output is nil or n long.
//   - A sequence's tokens appear in increasing consecutive positions; its
//     first token in the batch has Pos ≤ Seq.Len (positions before it must
//     already be in the cache; Pos < Seq.Len rewinds: later cached positions
//     are forgotten).
//   - Every position has a reserved cache block (kvcache.Reserve) and, for
//     GPT-2, is below the context length (learned positions end there).
//
// Output selects the tokens whose logits Forward returns; nil means only
// the batch's last token. Hidden makes Forward return the output tokens'
// final hidden states instead (the final norm's output, before the LM head):
// (n_out, dim), as embeddings are pooled from.
type Batch struct {
	Tokens []int
	Pos    []int
	Seq    []*kvcache.Seq
	Output []bool
	Hidden bool
}

// ErrBatch is wrapped by every error about an invalid Batch.
var ErrBatch = errors.New("model: invalid batch")

// workspace holds the activations of one Forward call; it grows to the
// largest batch seen and is reused, so steady-state decoding does not
// allocate.
type workspace struct {
	n      int         // token capacity
	x      []float32   // (n, dim) residual stream
	xb     []float32   // (n, dim) normalised input of a sub-block
	q      []float32   // (n, q_dim)
	k, v   []float32   // (n, kv_dim)
	qkv    []float32   // (n, q_dim+2·kv_dim) fused projection output (GPT-2)
	att    []float32   // (n, q_dim) attention output
	hb     []float32   // (n, hidden)
	hb2    []float32   // (n, hidden)
	cos    []float32   // (n, rope_dim/2)
	sin    []float32   // (n, rope_dim/2)
	cosW   []float32   // (n, rope_dim/2) windowed layers' angles when they have their own base
	sinW   []float32   // (n, rope_dim/2)
	rc, rs []float32   // the current layer's cos and sin (cos/sin or cosW/sinW)
	slots  []int       // (n) cache row of each token
	outIdx []int       // (≤ n) batch indices with Output set
	xo     []float32   // (n_out, dim) final normalised rows of output tokens
	logits []float32   // (n_out, vocab)
	scores [][]float32 // (workers, ≥ queries·(max_pos+2) + attnTile·head_dim) the score rows of one attention pass's queries (attnPassQueries), then attendRange's Q8_0 tile
	pl     []float32   // (n, layers, per_layer) Gemma 4's per-layer inputs
	plh    []float32   // (n, per_layer) one layer's gated per-layer input
	plRow  []float32   // (layers·per_layer) one token's per-layer embedding row
	kpad   []float32   // (2, cache kv_dim) a narrower layer's K and V row, zero-padded to the cache's width
	xm, xr []float32   // (n, dim) Gemma 4 MoE: the dense FFN's output, the router's input
	b      Batch       // the batch being run
}

func grow(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}

func (m *Model) ensure(n, maxPos int) {
	ws := &m.ws
	c := &m.Config
	if ws.n < n {
		ws.n = n
		qd, kvd, hid, half := c.maxQDim(), c.maxKVDim(), c.maxHidden(), c.maxRopeDim()/2
		ws.x = make([]float32, n*c.Dim)
		ws.xb = make([]float32, n*c.Dim)
		ws.q = make([]float32, n*qd)
		ws.k = make([]float32, n*kvd)
		ws.v = make([]float32, n*kvd)
		ws.att = make([]float32, n*qd)
		ws.hb = make([]float32, n*hid)
		ws.hb2 = make([]float32, n*hid)
		ws.cos = make([]float32, n*half)
		ws.sin = make([]float32, n*half)
		if m.invFreqSWA != nil {
			ws.cosW = make([]float32, n*half)
			ws.sinW = make([]float32, n*half)
		}
		if c.Experts > 0 {
			m.moe.grow(n, c)
			if c.Arch == ArchGemma4 {
				ws.xm = make([]float32, n*c.Dim)
				ws.xr = make([]float32, n*c.Dim)
			}
		}
		if c.PerLayerDim > 0 {
			ws.pl = make([]float32, n*c.Layers*c.PerLayerDim)
			ws.plh = make([]float32, n*c.PerLayerDim)
			ws.plRow = make([]float32, c.Layers*c.PerLayerDim)
		}
		ws.slots = make([]int, n)
		ws.outIdx = make([]int, 0, n)
		if slices.ContainsFunc(m.w.layers, func(l layerWeights) bool { return l.wqkv != nil }) {
			ws.qkv = make([]float32, n*(qd+2*kvd))
		}
		ws.kpad = make([]float32, 2*c.CacheKVDim())
	}
	workers := m.pool.Threads()
	if len(ws.scores) < workers {
		ws.scores = make([][]float32, workers)
	}
	// the score rows of a pass (one extra per query for a sink), then a
	// Q8_0 tile
	need := c.attnPassQueries()*(maxPos+2) + attnTile*c.maxHeadDim()
	for i := range workers {
		if len(ws.scores[i]) < need {
			ws.scores[i] = make([]float32, max(need, 2*len(ws.scores[i])))
		}
	}
}

// validate checks b against the model and cache (see Batch).
func (m *Model) validate(b *Batch, c *kvcache.Cache) (nOut, maxPos int, err error) {
	n := len(b.Tokens)
	if n == 0 {
		return 0, 0, fmt.Errorf("%w: no tokens", ErrBatch)
	}
	if len(b.Pos) != n || len(b.Seq) != n || (b.Output != nil && len(b.Output) != n) {
		return 0, 0, fmt.Errorf("%w: %d tokens, %d positions, %d sequences, %d output flags", ErrBatch, n, len(b.Pos), len(b.Seq), len(b.Output))
	}
	if c == nil {
		return 0, 0, fmt.Errorf("%w: nil cache", ErrBatch)
	}
	if c.Layers != m.CacheLayers() || c.KVDim != m.CacheKVDim() {
		return 0, 0, fmt.Errorf("%w: cache holds %d layers × %d, model needs %d × %d", ErrBatch, c.Layers, c.KVDim, m.CacheLayers(), m.CacheKVDim())
	}
	if err := m.validateStates(b, c); err != nil {
		return 0, 0, err
	}
	if err := m.CheckKVType(c.Type); err != nil {
		return 0, 0, fmt.Errorf("%w: %v", ErrBatch, err)
	}
	for i, tok := range b.Tokens {
		if tok < 0 || tok >= m.Vocab {
			return 0, 0, fmt.Errorf("%w: token id %d out of range [0, %d)", ErrBatch, tok, m.Vocab)
		}
		s, p := b.Seq[i], b.Pos[i]
		if s == nil {
			return 0, 0, fmt.Errorf("%w: token %d has no sequence", ErrBatch, i)
		}
		if p < 0 {
			return 0, 0, fmt.Errorf("%w: negative position %d", ErrBatch, p)
		}
		// The sequence's length as seen by this token: after its last
		// earlier token in the batch, else its cached length.
		prev := -1
		for j := i - 1; j >= 0; j-- {
			if b.Seq[j] == s {
				prev = b.Pos[j]
				break
			}
		}
		if prev >= 0 && p != prev+1 {
			return 0, 0, fmt.Errorf("%w: position %d follows position %d of the same sequence", ErrBatch, p, prev)
		}
		if prev < 0 && p > s.Len {
			return 0, 0, fmt.Errorf("%w: position %d leaves a gap after the sequence's %d cached positions", ErrBatch, p, s.Len)
		}
		if p >= c.Capacity(s) {
			return 0, 0, fmt.Errorf("%w: position %d beyond the sequence's reserved capacity %d", ErrBatch, p, c.Capacity(s))
		}
		for _, blk := range s.Blocks[:p/c.BlockSize+1] {
			if blk < 0 || blk >= c.NumBlocks {
				return 0, 0, fmt.Errorf("%w: block id %d out of range", ErrBatch, blk)
			}
		}
		if m.w.posEmb != nil && p >= m.w.posEmb.Rows {
			return 0, 0, fmt.Errorf("%w: position %d exceeds context length %d", ErrBatch, p, m.w.posEmb.Rows)
		}
		maxPos = max(maxPos, p)
		if b.Output == nil && i == n-1 || b.Output != nil && b.Output[i] {
			nOut++
		}
	}
	return nOut, maxPos, nil
}

// Forward runs the batch: it writes each token's K and V into its
// sequence's cache slots, attends causally over the sequence's positions
// 0..pos, and returns the logits (n_out, vocab) of the tokens with Output
// set, in batch order.
//
// Sequence bookkeeping: on success, each sequence's Len becomes its last
// position in the batch + 1. On error nothing is written.
//
// The returned slice belongs to the Model and is valid until the next
// Forward call; copy what must outlive it. Calls are serialised.
func (m *Model) Forward(b Batch, c *kvcache.Cache) ([]float32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	// Work on a copy held by the Model so that b itself does not escape
	// (no allocation per call).
	m.ws.b = b
	defer func() { m.ws.b = Batch{} }()
	return m.forward(&m.ws.b, c)
}

func (m *Model) forward(b *Batch, c *kvcache.Cache) ([]float32, error) {
	nOut, maxPos, err := m.validate(b, c)
	if err != nil {
		return nil, err
	}
	n := len(b.Tokens)
	m.ensure(n, maxPos)
	ws := &m.ws
	cfg := &m.Config
	dim := cfg.Dim
	pool := m.pool
	w := &m.w

	// Embeddings, cache slots and RoPE angles of every token.
	half, halfW := len(m.invFreq), len(m.invFreqSWA)
	for i, tok := range b.Tokens {
		x := ws.x[i*dim : (i+1)*dim]
		tensor.DequantizeRow(x, w.tokEmb.Type, w.tokEmb.Row(tok))
		if cfg.EmbedScale != 0 {
			for j := range x {
				x[j] *= cfg.EmbedScale
			}
		}
		if w.posEmb != nil {
			pe := ws.xb[i*dim : (i+1)*dim]
			tensor.DequantizeRow(pe, w.posEmb.Type, w.posEmb.Row(b.Pos[i]))
			addTo(x, pe)
		}
		ws.slots[i] = c.Slot(b.Seq[i], b.Pos[i])
		if half > 0 {
			ropeTableScaled(ws.cos[i*half:(i+1)*half], ws.sin[i*half:(i+1)*half], m.invFreq, b.Pos[i], cfg.ropeMScale())
		}
		if halfW > 0 {
			ropeTableScaled(ws.cosW[i*halfW:(i+1)*halfW], ws.sinW[i*halfW:(i+1)*halfW], m.invFreqSWA, b.Pos[i], cfg.ropeMScale())
		}
	}
	if cfg.PerLayerDim > 0 {
		m.perLayerInputs(b, n)
	}

	m.startStates(b, c)
	for l := range w.layers {
		lw := &w.layers[l]
		qd, kvd := cfg.LayerQDim(l), cfg.LayerKVDim(l)
		// Attention block (or a hybrid model's recurrent mixer).
		m.norm(ws.xb[:n*dim], ws.x[:n*dim], lw.attnNorm, lw.attnNormB)
		if lw.rec != nil {
			m.recurrentMixer(b, c, lw, n)
			m.residual(n)
			m.ffn(l, lw, n)
			continue
		}
		q, k, v := ws.q[:n*qd], ws.k[:n*kvd], ws.v[:n*kvd]
		if cfg.AttnGate {
			m.gatedQuery(lw, q, k, v, n)
		} else if lw.wqkv != nil {
			wd := qd + 2*kvd
			qkv := ws.qkv[:n*wd]
			pool.MatMul(qkv, lw.wqkv, ws.xb[:n*dim], n)
			for i := range n {
				r := qkv[i*wd : (i+1)*wd]
				if lw.bqkv != nil {
					addTo(r, lw.bqkv)
				}
				copy(q[i*qd:(i+1)*qd], r[:qd])
				copy(k[i*kvd:(i+1)*kvd], r[qd:qd+kvd])
				copy(v[i*kvd:(i+1)*kvd], r[qd+kvd:])
			}
		} else if lw.wk != nil && lw.wv != nil && n == 1 {
			// Not fused (the types differ): one hand-off for the three.
			pool.MatMulShared(ws.xb[:dim], 1, []*tensor.Mat{lw.wq, lw.wk, lw.wv}, [][]float32{q, k, v})
			addBias(q, lw.bq, n)
			addBias(k, lw.bk, n)
			addBias(v, lw.bv, n)
		} else {
			pool.MatMul(q, lw.wq, ws.xb[:n*dim], n)
			addBias(q, lw.bq, n)
			if lw.wk != nil { // nil: a shared-KV layer, queries only
				pool.MatMul(k, lw.wk, ws.xb[:n*dim], n)
				addBias(k, lw.bk, n)
				if lw.wv != nil {
					pool.MatMul(v, lw.wv, ws.xb[:n*dim], n)
					addBias(v, lw.bv, n)
				} else {
					copy(v, k) // vFromK: Gemma 4's global layers without attn_v
				}
			}
		}
		if cfg.LayerRopeDim(l) > 0 || lw.qNorm != nil || cfg.VNorm {
			ws.rc, ws.rs = ws.cos, ws.sin
			if m.invFreqSWA != nil && cfg.Windowed(l) {
				ws.rc, ws.rs = ws.cosW, ws.sinW
			}
			m.ropeAll(l, lw, q, k, n)
		}
		if cfg.OwnsKV(l) {
			m.storeKV(b, c, lw.kvLayer, k, v, kvd, n)
		}
		m.attention(b, c, l, n) // with Qwen3.5's output gate (AttnGate)
		pool.MatMul(ws.xb[:n*dim], lw.wo, ws.att[:n*qd], n)
		addBias(ws.xb[:n*dim], lw.bo, n)
		if lw.attnPostNorm != nil {
			m.norm(ws.xb[:n*dim], ws.xb[:n*dim], lw.attnPostNorm, nil)
		}
		m.residual(n)
		m.ffn(l, lw, n)
	}
	return m.head(b, nOut, n)
}

// storeKV writes the n tokens' K and V rows (kvd wide) into cache layer
// kl. Converting a prompt's rows to the cache type (F16, Q8_0) is a
// serial section the other workers would sit out (~8% of a 110M F16
// prefill's CPU time), so a long batch of one sequence stores on the pool,
// by tokens: its positions are distinct, so are its slots, and each row's
// conversion is the same whoever runs it. Other batches (several
// sequences, whose slots the cache keeps apart too, but which decode steps
// keep short) and a layer narrower than the cache (one padding buffer)
// store on the caller.
func (m *Model) storeKV(b *Batch, c *kvcache.Cache, kl int, k, v []float32, kvd, n int) {
	ws := &m.ws
	ck := c.KVDim
	if kvd == ck && n*kvd >= parStoreMin && m.pool.Threads() > 1 && oneSeq(b) {
		j := &m.job
		j.c, j.l, j.x, j.o, j.width = c, kl, k, v, kvd
		m.parallel(jobStore, n, max(1, n/(4*m.pool.Threads())))
		return
	}
	for i := range n {
		kr, vr := k[i*kvd:(i+1)*kvd], v[i*kvd:(i+1)*kvd]
		if kvd < ck { // a narrower layer: its values, then zeros
			copy(ws.kpad[:kvd], kr)
			copy(ws.kpad[ck:ck+kvd], vr)
			kr, vr = ws.kpad[:ck], ws.kpad[ck:]
		}
		c.Store(kl, ws.slots[i], kr, vr)
	}
}

// oneSeq reports whether every token of b belongs to one sequence.
func oneSeq(b *Batch) bool {
	for _, s := range b.Seq[1:] {
		if s != b.Seq[0] {
			return false
		}
	}
	return true
}

// ffn runs layer l's feed-forward block (weights lw) on the residual
// stream ws.x (n rows): x += FFN(norm(x)), then Gemma 4's per-layer input
// block and output scale.
func (m *Model) ffn(l int, lw *layerWeights, n int) {
	ws := &m.ws
	cfg := &m.Config
	dim, hid := cfg.Dim, cfg.LayerHidden(l)
	pool := m.pool
	{
		m.norm(ws.xb[:n*dim], ws.x[:n*dim], lw.ffnNorm, lw.ffnNormB)
		hb := ws.hb[:n*hid]
		switch {
		case lw.g4 != nil:
			m.gemma4FFN(l, lw, n)
		case lw.router != nil:
			sh := m.sharedExpert(lw, n) // before moeFFN overwrites its input; nil without one
			m.moeFFN(lw, n)
			if sh != nil {
				addTo(ws.xb[:n*dim], sh)
			}
		case lw.wGate != nil:
			hb2 := ws.hb2[:n*hid]
			pool.MatMulShared(ws.xb[:n*dim], n, []*tensor.Mat{lw.wGate, lw.wUp}, [][]float32{hb, hb2})
			if cfg.GELUGate {
				m.elementwise(jobGeGLU, hb, hb2, hid)
			} else {
				m.elementwise(jobSwiGLU, hb, hb2, hid)
			}
		default:
			pool.MatMul(hb, lw.wUp, ws.xb[:n*dim], n)
			addBias(hb, lw.bUp, n)
			m.elementwise(jobGELU, hb, nil, hid)
		}
		if lw.router == nil {
			pool.MatMul(ws.xb[:n*dim], lw.wDown, hb, n)
			addBias(ws.xb[:n*dim], lw.bDown, n)
		}
		if lw.ffnPostNorm != nil {
			m.norm(ws.xb[:n*dim], ws.xb[:n*dim], lw.ffnPostNorm, nil)
		}
		m.residual(n)
		if lw.plGate != nil {
			m.perLayerBlock(l, lw, n)
		}
		if lw.outScale != nil {
			sc := lw.outScale[0]
			for i := range ws.x[:n*dim] {
				ws.x[i] *= sc
			}
		}
	}
}

// head runs the final norm and the output head over the batch's output
// tokens and advances each sequence's Len.
func (m *Model) head(b *Batch, nOut, n int) ([]float32, error) {
	ws := &m.ws
	cfg := &m.Config
	dim := cfg.Dim
	pool := m.pool
	w := &m.w
	// Final norm and output head over the output tokens only.
	ws.outIdx = ws.outIdx[:0]
	for i := range n {
		if b.Output == nil && i == n-1 || b.Output != nil && b.Output[i] {
			ws.outIdx = append(ws.outIdx, i)
		}
	}
	ws.xo = grow(ws.xo, nOut*dim)
	for j, i := range ws.outIdx {
		copy(ws.xo[j*dim:(j+1)*dim], ws.x[i*dim:(i+1)*dim])
	}
	m.norm(ws.xo, ws.xo, w.outNorm, w.outNormB)
	if b.Hidden {
		for i, s := range b.Seq {
			s.Len = b.Pos[i] + 1
		}
		return ws.xo, nil
	}
	ws.logits = grow(ws.logits, nOut*cfg.Vocab)
	if nOut > 0 {
		pool.MatMul(ws.logits, w.output, ws.xo, nOut)
		if c := cfg.FinalSoftcap; c > 0 {
			softcap(ws.logits, c)
		}
		if s := cfg.LogitScale; s != 0 {
			inv := 1 / s // granite.cpp: ggml_scale(cur, 1.0f/f_logit_scale)
			for i := range ws.logits[:nOut*cfg.Vocab] {
				ws.logits[i] *= inv
			}
		}
	}

	for i, s := range b.Seq {
		s.Len = b.Pos[i] + 1 // the last token of s in the batch sets it
	}
	return ws.logits, nil
}

// residual adds the block output ws.xb (n, dim) to the residual stream
// ws.x, times Granite's ResidualScale when it has one.
func (m *Model) residual(n int) {
	ws, dim := &m.ws, m.Dim
	xb := ws.xb[:n*dim]
	if s := m.ResidualScale; s != 0 {
		for i := range xb {
			xb[i] *= s
		}
	}
	addTo(ws.x[:n*dim], xb)
}

// normRows is norm on the calling goroutine.
func (m *Model) normRows(o, x, g, bias []float32) {
	d := m.Dim
	for i := 0; i < len(x); i += d {
		if m.Arch == ArchGPT2 {
			layerNorm(o[i:i+d], x[i:i+d], g, bias, m.NormEps)
		} else {
			rmsNorm(o[i:i+d], x[i:i+d], g, m.NormEps)
		}
	}
}

// addBias adds bias to each of the n rows of x (no-op for a nil bias).
func addBias(x, bias []float32, n int) {
	if bias == nil {
		return
	}
	d := len(bias)
	for i := range n {
		addTo(x[i*d:(i+1)*d], bias)
	}
}
