package model

import (
	"nanoserve/kvcache"
	"nanoserve/tensor"
)

// Attention over the paged cache.
//
// For token i (sequence s, position pos) and query head h of group
// g = h / (Heads/KVHeads), attention is
//
//	score[p] = q_h · K_g[p] / √HeadDim                 start ≤ p ≤ pos
//	a_h      = Σ_p softmax(score)[p] · V_g[p]
//
// where K_g[p] is the HeadDim-wide slice at offset g·HeadDim of the cache
// row Slot(s, p). Within a cache block the rows of consecutive positions
// are consecutive (stride kv_dim), so both loops run over strided runs of
// rows (cacheRun): attnScores (eight rows per step, q loaded once for the
// eight, in the assembly) and attnAccum (a 64-wide output held in
// registers over the whole run). The softmax is left unnormalised
// (tensor.SoftmaxExp, vectorised exp) and the HeadDim-wide output divided by the
// sum instead. Each (token, head) needs only its (pos+1)-float score row,
// so a worker's scratch is O(positions) (a pass's queries · (pos+1)
// floats) and a long prompt never materialises an (n × n) matrix.
//
// The queries that read the same K/V rows — a KV group's heads, and the
// consecutive tokens of a prompt — go through the rows together, three at
// a time in the multi-query kernels (attnScores3, attnAccum3): each row is
// read, widened and held in a register once for three queries. A score's
// arithmetic (one 8-lane FMA accumulator over the head's columns, one
// fold: attention_amd64.h) and an output column's (its rows' FMAs in
// position order) are the same in every kernel and for any split of a run
// of rows, so a token's attention is bit for bit the same alone or beside
// any other tokens (batch invariance), however the allocator laid out its
// blocks.
//
// The cache's rows are float32, F16 or Q8_0 (kvRows): F16 rows go to
// kernels that widen each half in registers (attnScoresF16, attnAccumF16),
// a Q8_0 run is widened into an L1 tile first; either way the arithmetic
// is the float32 kernels', so the result is the float32 kernels' on the
// rounded values, bit for bit.
//
// Work is split by (token block, KV group) tasks claimed in chunks by the
// workers of the model's tensor.Pool (For; the caller is worker 0), so a
// prefill's causal imbalance (later tokens attend over more positions)
// and a busy core both even out. Within a task the pass's queries go
// through the cache rows tile by tile, so each K/V row is read from memory
// or L2 once per pass, not once per head and token (see attendRange).

// Below these many multiply-adds a job runs on the calling goroutine:
// waking a worker costs microseconds.
const (
	parAttnMin  = 1 << 16
	parRowsMin  = 1 << 15
	parStoreMin = 1 << 13 // values stored into the KV cache (both K and V: twice this)
)

// attention computes ws.att (n, q_dim) for layer l: each token's query
// heads attend over its sequence's cached positions [start, pos].
func (m *Model) attention(b *Batch, c *kvcache.Cache, l, n int) {
	tasks := attnBlocks(n, m.Heads/m.LayerKVHeads(l)) * m.LayerKVHeads(l)
	work := 0
	for i := range n {
		work += b.Pos[i] + 1
	}
	work *= m.Heads * m.LayerHeadDim(l)
	if m.pool.Threads() <= 1 || work < parAttnMin {
		m.attendRange(b, c, l, 0, tasks, m.ws.scores[0])
		return
	}
	j := &m.job
	j.b, j.c, j.l = b, c, l
	m.parallel(jobAttn, tasks, tasks/(16*m.pool.Threads()))
}

// attnTile is how many cache rows attendRange runs through all queries of
// a pass before moving on: 16 rows of a 64-wide head are 4 KB of K (or V),
// which stay in L1 while the queries reuse them. Cache rows are
// kv_dim apart (1 KB for TinyLlama), so rows 4 apart share L1 sets; 32
// rows already fill 8-way sets and measured 25% slower, 8 rows pay more
// per-call overhead (BenchmarkAttnPrefill).
const attnTile = 16

// A task of attendRange is a block of attnTokens(group) consecutive tokens
// of the batch and one KV group: its queries are those tokens' heads of
// the group, so the consecutive tokens of a prompt share the group's K and
// V rows as a group's heads do (llama2.c's 110M has one head per group).
// The multi-query kernels take three queries at a time, so a block holds
// a multiple of three queries, at least attnQueries; attnPass (also a
// multiple of three) bounds the queries of one pass (their score rows are
// the worker's scratch).
const (
	attnQueries = 6
	attnPass    = 24
)

// attnTokens is the tokens of one task for KV groups of group heads: the
// fewest whose heads make at least attnQueries queries, a multiple of
// three (one head per group: 6; TinyLlama's 8: 3, 24 queries).
func attnTokens(group int) int {
	t := 1
	for t*group < attnQueries || t*group%3 != 0 {
		t++
	}
	return t
}

// attnBlocks is the number of token blocks of a batch of n tokens.
func attnBlocks(n, group int) int { tb := attnTokens(group); return (n + tb - 1) / tb }

// attnPassQueries is the most queries one pass of attendRange holds for
// the model's layers (its scratch: score rows of that many queries).
func (c *Config) attnPassQueries() int {
	q := 0
	for l := range c.Layers {
		g := c.Heads / c.LayerKVHeads(l)
		q = max(q, min(attnPass, attnTokens(g)*g))
	}
	return q
}

// attnQuery is one query of a pass: token i's head h, its query at q in
// ws.q (and output at q in ws.att), the positions [start, pos] it attends,
// and its score row at off in the scratch (np scores, then the sink's
// logit where the model has sinks).
type attnQuery struct {
	i, h, q         int
	start, pos, off int
}

// attendRange handles the tasks [lo, hi) of a batch of n tokens: task
// g·blocks + k is KV group g and the k-th block of attnTokens(group)
// batch tokens. Tasks are numbered group-major, so consecutive tasks read
// the same group's rows, which then stay in L2 from one block to the next
// (token-major order would cycle through the whole layer's cache for every
// token).
//
// A block's tokens that are consecutive positions of one sequence (a
// prompt's) are taken together: their heads of the group, token-major, are
// the queries of one pass (attnPass at most; a decode batch's tokens, one
// per sequence, each make their own pass). For each tile of attnTile
// consecutive cache rows every query takes its scores (then, after the
// softmax, its weighted sum of V) from the tile while it is in L1, three
// queries at a time where the multi-query kernels apply. scores holds the
// pass's score rows, each followed by the head's sink logit when the model
// has attention sinks (gpt-oss): the sink joins the softmax's
// denominator, Σ_p e^(s_p) + e^(sink), and contributes no value.
//
// Every (query, row) score and every output column has one arithmetic
// whichever kernel and grouping computes it (attention_amd64.h), so a
// token's attention is the same alone, beside its prompt's other tokens or
// in any batch.
//
// Layer l reads the cache layer of model layer KVSource(l) (itself, or for
// a shared-KV layer the owner it shares; its kvLayer numbers the owners,
// skipping a hybrid model's recurrent layers) with its own head width.
func (m *Model) attendRange(b *Batch, c *kvcache.Cache, l, lo, hi int, scores []float32) {
	hd := m.LayerHeadDim(l)
	group := m.Heads / m.LayerKVHeads(l)
	n := len(b.Seq)
	tb, nblk := attnTokens(group), attnBlocks(n, group)
	tw := attnTile * m.maxHeadDim()
	tile := scores[len(scores)-tw:] // Q8_0 scratch (forward.go sizes it)
	scores = scores[:len(scores)-tw]
	cl := m.w.layers[m.KVSource(l)].kvLayer
	kr, vr := layerRows(c, cl, tile), layerRows(c, cl, tile)
	if c.Type == tensor.F32 {
		vr.f = c.V[cl]
	} else {
		vr.e = c.VE[cl]
	}
	var qs [attnPass]attnQuery
	for t := lo; t < hi; t++ {
		g, k := t/nblk, t%nblk
		i0, i1 := k*tb, min(n, (k+1)*tb)
		kr.head(g*hd, hd)
		vr.head(g*hd, hd)
		for i := i0; i < i1; {
			e := i + 1 // tokens [i, e): consecutive positions of one sequence
			for e < i1 && b.Seq[e] == b.Seq[i] && b.Pos[e] == b.Pos[e-1]+1 {
				e++
			}
			total := (e - i) * group
			for q0 := 0; q0 < total; q0 += attnPass {
				pass := qs[:min(attnPass, total-q0)]
				m.passQueries(pass, b, l, i, g, q0, group)
				m.attendPass(pass, b.Seq[i], c.BlockSize, l, &kr, &vr, scores)
			}
			i = e
		}
	}
}

// passQueries fills pass with the queries q0.. of the tokens from batch
// index i and KV group g (token-major: query j is token i + j/group's head
// g·group + j%group) and lays out their score rows.
func (m *Model) passQueries(pass []attnQuery, b *Batch, l, i, g, q0, group int) {
	hd, qd := m.LayerHeadDim(l), m.LayerQDim(l)
	window := m.Window(l)
	off := 0
	for j := range pass {
		ti, h := i+(q0+j)/group, g*group+(q0+j)%group
		pos := b.Pos[ti]
		start := 0
		if window > 0 {
			start = max(0, pos-window+1)
		}
		pass[j] = attnQuery{i: ti, h: h, q: ti*qd + h*hd, start: start, pos: pos, off: off}
		off += pos + 1 - start
		if m.w.layers[l].sinks != nil {
			off++
		}
	}
}

// attendPass computes the attention outputs of the queries of one pass,
// all of sequence s (cache blocks of bs rows), from the K rows kr and V
// rows vr of layer l's cache.
func (m *Model) attendPass(pass []attnQuery, s *kvcache.Seq, bs, l int, kr, vr *kvRows, scores []float32) {
	hd := m.LayerHeadDim(l)
	scale := float32(m.attnScale())
	softc, sinks := m.AttnSoftcap, m.w.layers[l].sinks
	first, last := pass[0].start, pass[0].pos
	for _, q := range pass {
		first, last = min(first, q.start), max(last, q.pos)
	}
	var sums [attnPass]float32 // the queries' softmax sums
	var o3, x3 [3][]float32    // a chunk's outputs and queries (or weights)
	for p := first; p <= last; {
		row, cnt := cacheRun(s.Blocks, bs, p, min(last, p+attnTile-1))
		kr.load(row, cnt)
		for j0 := 0; j0 < len(pass); j0 += 3 {
			ch := pass[j0:min(len(pass), j0+3)]
			clo, chi := commonRows(ch, p, p+cnt-1)
			for t, q := range ch {
				lo, hi := max(p, q.start), min(p+cnt-1, q.pos)
				qv := m.ws.q[q.q : q.q+hd]
				if b := min(hi, clo-1); lo <= b { // before the common rows
					kr.scores(scores[q.off+lo-q.start:], qv, row+lo-p, b-lo+1, scale)
				}
				if a := max(lo, chi+1); a <= hi { // after them
					kr.scores(scores[q.off+a-q.start:], qv, row+a-p, hi-a+1, scale)
				}
				if clo <= chi {
					o3[t], x3[t] = scores[q.off+clo-q.start:], qv
				}
			}
			if clo <= chi {
				kr.scores3(o3[:len(ch)], x3[:len(ch)], row+clo-p, chi-clo+1, scale)
			}
		}
		p += cnt
	}
	for j, q := range pass {
		np := q.pos + 1 - q.start
		sc := scores[q.off : q.off+np]
		if softc > 0 {
			softcap(sc, softc)
		}
		if sinks != nil {
			scores[q.off+np] = sinks[q.h]
			sc = scores[q.off : q.off+np+1]
		}
		sums[j] = tensor.SoftmaxExp(sc)
		clear(m.ws.att[q.q : q.q+hd])
	}
	for p := first; p <= last; {
		row, cnt := cacheRun(s.Blocks, bs, p, min(last, p+attnTile-1))
		vr.load(row, cnt)
		for j0 := 0; j0 < len(pass); j0 += 3 {
			ch := pass[j0:min(len(pass), j0+3)]
			clo, chi := commonRows(ch, p, p+cnt-1)
			// Each query's rows in position order: those before the
			// common ones alone, the common ones together, the rest alone.
			for t, q := range ch {
				lo, hi := max(p, q.start), min(p+cnt-1, q.pos, clo-1)
				o3[t] = m.ws.att[q.q : q.q+hd]
				if lo <= hi {
					vr.accum(o3[t], row+lo-p, scores[q.off+lo-q.start:q.off+hi+1-q.start])
				}
				if clo <= chi {
					x3[t] = scores[q.off+clo-q.start : q.off+chi+1-q.start]
				}
			}
			if clo <= chi {
				vr.accum3(o3[:len(ch)], row+clo-p, x3[:len(ch)])
			}
			for t, q := range ch {
				lo, hi := max(p, q.start, chi+1), min(p+cnt-1, q.pos)
				if lo <= hi {
					vr.accum(o3[t], row+lo-p, scores[q.off+lo-q.start:q.off+hi+1-q.start])
				}
			}
		}
		p += cnt
	}
	for j, q := range pass {
		out, inv := m.ws.att[q.q:q.q+hd], 1/sums[j]
		for c := range out {
			out[c] *= inv
		}
		if m.AttnGate { // Qwen3.5: the head's output times σ(its gate), here on the workers
			tensor.MulSigmoid(out, m.hw.gate[q.q:q.q+hd])
		}
	}
}

// commonRows is the range [lo, hi] of positions within [p, last] that all
// queries of ch attend. When there is none, or a single query (it goes
// alone), it is the empty range just past last, so that every query's rows
// in the run lie before it.
func commonRows(ch []attnQuery, p, last int) (lo, hi int) {
	lo, hi = p, last
	for _, q := range ch {
		lo, hi = max(lo, q.start), min(hi, q.pos)
	}
	if len(ch) < 2 || lo > hi {
		return last + 1, last
	}
	return lo, hi
}

// kvRows is one layer's K (or V) storage as the kernels read it: float32
// rows (F32) or encoded rows (F16, Q8_0), stride apart (floats for F32,
// bytes otherwise), and the offset of the current KV group's head slice
// in a row in the same unit. F32 and F16 rows go to the kernels as they
// are; a Q8_0 run is first widened (load) into tile, hd floats a row:
// each value d·q is exact in float32, the tile is read by all the group's
// heads while in L1, and the float32 kernels then give the bits they give
// for an F32 cache of the same values.
type kvRows struct {
	typ         tensor.DType
	f           []float32 // F32: (rows, kv_dim)
	e           []byte    // F16, Q8_0: (rows, RowBytes)
	stride, off int
	hd          int
	tile        []float32 // Q8_0: (attnTile, hd) the loaded run's head slices
	base        int       // Q8_0: the cache row of the tile's first
}

// layerRows is layer l's K rows of c (the caller swaps in V); tile is
// attnTile·hd floats of scratch (Q8_0 only).
func layerRows(c *kvcache.Cache, l int, tile []float32) kvRows {
	if c.Type == tensor.F32 {
		return kvRows{typ: c.Type, f: c.K[l], stride: c.KVDim}
	}
	return kvRows{typ: c.Type, e: c.KE[l], stride: c.RowBytes, tile: tile}
}

// head points r at the head slice starting at value col (hd values; for
// Q8_0 col and hd are multiples of 32, so the slice is whole blocks).
func (r *kvRows) head(col, hd int) {
	r.hd = hd
	switch r.typ {
	case tensor.F32:
		r.off = col
	case tensor.F16:
		r.off = 2 * col
	default:
		r.off = col / 32 * q8Block
	}
}

// load prepares the n ≤ attnTile rows from row for scores and accum.
func (r *kvRows) load(row, n int) {
	if r.typ != tensor.Q8_0 {
		return
	}
	r.base = row
	w := r.hd / 32 * q8Block
	for i := range n {
		o := (row+i)*r.stride + r.off
		tensor.DequantizeBlocks(r.tile[i*r.hd:(i+1)*r.hd], tensor.Q8_0, r.e[o:o+w])
	}
}

// scores sets out[i] = scale · q·k for the n rows from row (within the
// loaded run).
func (r *kvRows) scores(out, q []float32, row, n int, scale float32) {
	switch r.typ {
	case tensor.F32:
		attnScores(out, q, r.f[row*r.stride+r.off:], r.stride, n, scale)
	case tensor.F16:
		attnScoresF16(out, q, r.e[row*r.stride+r.off:], r.stride, n, scale)
	default:
		attnScores(out, q, r.tile[(row-r.base)*r.hd:], r.hd, n, scale)
	}
}

// scores3 is scores for two or three queries q[t] into out[t], each with
// scores' bits: at once where a multi-query kernel applies.
func (r *kvRows) scores3(out, q [][]float32, row, n int, scale float32) {
	var done bool
	switch r.typ {
	case tensor.F32:
		done = attnScores3(out, q, r.f[row*r.stride+r.off:], r.stride, n, scale)
	case tensor.F16:
		done = attnScores3F16(out, q, r.e[row*r.stride+r.off:], r.stride, n, scale)
	default:
		done = attnScores3(out, q, r.tile[(row-r.base)*r.hd:], r.hd, n, scale)
	}
	if !done {
		for t := range q {
			r.scores(out[t], q[t], row, n, scale)
		}
	}
}

// accum adds Σ_i a[i]·v_i into out for the len(a) rows from row (within
// the loaded run).
func (r *kvRows) accum(out []float32, row int, a []float32) {
	switch r.typ {
	case tensor.F32:
		attnAccum(out, r.f[row*r.stride+r.off:], r.stride, a)
	case tensor.F16:
		attnAccumF16(out, r.e[row*r.stride+r.off:], r.stride, a)
	default:
		attnAccum(out, r.tile[(row-r.base)*r.hd:], r.hd, a)
	}
}

// accum3 is accum for two or three outputs out[t] with weights a[t] (of
// equal length), each with accum's bits: at once where a multi-query
// kernel applies.
func (r *kvRows) accum3(out [][]float32, row int, a [][]float32) {
	var done bool
	switch r.typ {
	case tensor.F32:
		done = attnAccum3(out, r.f[row*r.stride+r.off:], r.stride, a)
	case tensor.F16:
		done = attnAccum3F16(out, r.e[row*r.stride+r.off:], r.stride, a)
	default:
		done = attnAccum3(out, r.tile[(row-r.base)*r.hd:], r.hd, a)
	}
	if !done {
		for t := range out {
			r.accum(out[t], row, a[t])
		}
	}
}

// cacheRun returns the cache row of position p of a sequence with block
// table blocks, and how many positions from p up to last lie in
// consecutive rows: the rest of p's block. It does not run on into a
// following block even when its id is consecutive (no bit would change:
// the kernels' arithmetic does not depend on how rows are grouped; but a
// run's length then does not depend on the allocator either).
func cacheRun(blocks []int, bs, p, last int) (row, cnt int) {
	k := p / bs
	row = blocks[k]*bs + p%bs
	end := (k + 1) * bs // first position past the run
	return row, min(end, last+1) - p
}

// attnScoresGo is attnScores in plain Go.
func attnScoresGo(out, q, k []float32, stride, n int, scale float32) {
	hd := len(q)
	for i := range n {
		kr := k[i*stride : i*stride+hd]
		var s0, s1, s2, s3 float32
		c := 0
		for ; c+4 <= hd; c += 4 {
			s0 += q[c] * kr[c]
			s1 += q[c+1] * kr[c+1]
			s2 += q[c+2] * kr[c+2]
			s3 += q[c+3] * kr[c+3]
		}
		for ; c < hd; c++ {
			s0 += q[c] * kr[c]
		}
		out[i] = ((s0 + s1) + (s2 + s3)) * scale
	}
}

// attnAccumGo is attnAccum in plain Go.
func attnAccumGo(out, v []float32, stride int, a []float32) {
	hd := len(out)
	for i, ai := range a {
		vr := v[i*stride : i*stride+hd]
		for c, x := range vr {
			out[c] += ai * x
		}
	}
}

// f16le reads a little-endian IEEE half.
func f16le(b []byte) float32 { return tensor.F16ToF32(uint16(b[0]) | uint16(b[1])<<8) }

// attnScoresF16Go is attnScores over F16 rows in plain Go: k holds the n
// rows k_i = k[i·stride:] (stride in bytes) of len(q) halves each.
func attnScoresF16Go(out, q []float32, k []byte, stride, n int, scale float32) {
	hd := len(q)
	for i := range n {
		kr := k[i*stride : i*stride+2*hd]
		var s0, s1, s2, s3 float32
		c := 0
		for ; c+4 <= hd; c += 4 {
			s0 += q[c] * f16le(kr[2*c:])
			s1 += q[c+1] * f16le(kr[2*c+2:])
			s2 += q[c+2] * f16le(kr[2*c+4:])
			s3 += q[c+3] * f16le(kr[2*c+6:])
		}
		for ; c < hd; c++ {
			s0 += q[c] * f16le(kr[2*c:])
		}
		out[i] = ((s0 + s1) + (s2 + s3)) * scale
	}
}

// attnAccumF16Go is attnAccum over F16 rows in plain Go (stride in bytes).
func attnAccumF16Go(out []float32, v []byte, stride int, a []float32) {
	hd := len(out)
	for i, ai := range a {
		vr := v[i*stride : i*stride+2*hd]
		for c := range out {
			out[c] += ai * f16le(vr[2*c:])
		}
	}
}

// q8Block is the bytes of one Q8_0 block: a half scale d, then 32 int8 q
// (value d·q).
const q8Block = 34
