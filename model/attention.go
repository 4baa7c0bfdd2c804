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
// are consecutive (stride kv_dim), as are the rows of consecutive blocks
// with consecutive ids, so both loops run over strided runs of rows
// (cacheRun): attnScores (eight rows per step, q loaded once for the
// eight, in the assembly) and attnAccum (a 64-wide output held in
// registers over the whole run). The softmax is left unnormalised
// (tensor.SoftmaxExp, vectorised exp) and the HeadDim-wide output divided by the
// sum instead. Each (token, head) needs only its (pos+1)-float score row,
// so a worker's scratch is O(positions) (group·(pos+1) floats for a
// group's heads) and a long prompt never materialises an (n × n) matrix.
//
// Work is split by (token, KV group) tasks claimed in chunks by the
// workers of the model's tensor.Pool (For; the caller is worker 0), so a
// prefill's causal imbalance (later tokens attend over more positions)
// and a busy core both even out. Within a task the group's heads go
// through the cache rows tile by tile, so each K/V row is read from memory
// or L2 once per token and group, not once per head (see attendRange).

// Below these many multiply-adds a job runs on the calling goroutine:
// waking a worker costs microseconds.
const (
	parAttnMin = 1 << 16
	parRowsMin = 1 << 15
)

// attention computes ws.att (n, q_dim) for layer l: each token's query
// heads attend over its sequence's cached positions [start, pos].
func (m *Model) attention(b *Batch, c *kvcache.Cache, l, n int) {
	tasks := n * m.KVHeads
	work := 0
	for i := range n {
		work += b.Pos[i] + 1
	}
	work *= m.Heads * m.HeadDim
	if m.pool.Threads() <= 1 || work < parAttnMin {
		m.attendRange(b, c, l, 0, tasks, m.ws.scores[0])
		return
	}
	j := &m.job
	j.b, j.c, j.l = b, c, l
	m.parallel(jobAttn, tasks, tasks/(16*m.pool.Threads()))
}

// attnTile is how many cache rows attendRange runs through all heads of a
// group before moving on: 16 rows of a 64-wide head are 4 KB of K (or V),
// which stay in L1 while the group's heads reuse them. Cache rows are
// kv_dim apart (1 KB for TinyLlama), so rows 4 apart share L1 sets; 32
// rows already fill 8-way sets and measured 25% slower, 8 rows pay more
// per-call overhead (BenchmarkAttnPrefill).
const attnTile = 16

// attendRange handles the (token, KV group) tasks [lo, hi) of a batch of
// n tokens, task g·n + i for token i and group g: the group's query heads
// g·group .. g·group+group-1 share its K/V rows. Tasks are numbered
// group-major, so consecutive tasks read the same group's rows, which then
// stay in L2 from one token to the next (token-major order would cycle
// through the whole layer's cache for every token).
//
// For each tile of attnTile consecutive cache rows, every head of the
// group takes its scores (then, after the softmax, its weighted sum of V)
// from the tile while it is in L1. scores holds the group's score rows,
// (group, pos+1-start).
func (m *Model) attendRange(b *Batch, c *kvcache.Cache, l, lo, hi int, scores []float32) {
	hd, qd, kvd := m.HeadDim, m.QDim(), m.KVDim()
	group := m.Heads / m.KVHeads
	n := len(b.Seq)
	scale := float32(m.attnScale())
	window, softc := m.Window(l), m.AttnSoftcap
	kc, vc := c.K[l], c.V[l]
	bs := c.BlockSize
	var sums [16]float32 // softmax sums of up to 16 heads per group at a time
	for t := lo; t < hi; t++ {
		g, i := t/n, t%n
		s, pos := b.Seq[i], b.Pos[i]
		start := 0
		if window > 0 {
			start = max(0, pos-window+1)
		}
		np := pos + 1 - start
		ko := g * hd // offset of the group's K/V slice in a cache row
		for h0 := 0; h0 < group; h0 += len(sums) {
			hs := min(len(sums), group-h0) // heads in this pass
			q0 := i*qd + (g*group+h0)*hd   // first head's query
			for p := start; p <= pos; {
				row, cnt := cacheRun(s.Blocks, bs, p, min(pos, p+attnTile-1))
				k := kc[row*kvd+ko:]
				for j := range hs {
					sc := scores[j*np+p-start : j*np+p-start+cnt]
					attnScores(sc, m.ws.q[q0+j*hd:q0+(j+1)*hd], k, kvd, cnt, scale)
				}
				p += cnt
			}
			for j := range hs {
				if softc > 0 {
					softcap(scores[j*np:(j+1)*np], softc)
				}
				sums[j] = tensor.SoftmaxExp(scores[j*np : (j+1)*np])
				clear(m.ws.att[q0+j*hd : q0+(j+1)*hd])
			}
			for p := start; p <= pos; {
				row, cnt := cacheRun(s.Blocks, bs, p, min(pos, p+attnTile-1))
				v := vc[row*kvd+ko:]
				for j := range hs {
					attnAccum(m.ws.att[q0+j*hd:q0+(j+1)*hd], v, kvd, scores[j*np+p-start:j*np+p-start+cnt])
				}
				p += cnt
			}
			for j := range hs {
				out, inv := m.ws.att[q0+j*hd:q0+(j+1)*hd], 1/sums[j]
				for c := range out {
					out[c] *= inv
				}
			}
		}
	}
}

// cacheRun returns the cache row of position p of a sequence with block
// table blocks, and how many positions from p up to last lie in
// consecutive rows: the rest of p's block. It does not run on into a
// following block even when its id is consecutive: attnScores groups a
// run's rows eight and four at a time with per-group reduction orders, so
// a run that depended on which block ids the allocator handed out (the
// other sequences' history) would make a token's scores depend on its
// batch (batch invariance, see tensor's MatMul).
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
