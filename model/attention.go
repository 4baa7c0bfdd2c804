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
// The cache's rows are float32, F16 or Q8_0 (kvRows): F16 rows go to
// kernels that widen each half in registers (attnScoresF16, attnAccumF16),
// a Q8_0 run is widened into an L1 tile first; either way the arithmetic
// is the float32 kernels', so the result is the float32 kernels' on the
// rounded values, bit for bit.
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
	parAttnMin  = 1 << 16
	parRowsMin  = 1 << 15
	parStoreMin = 1 << 13 // values stored into the KV cache (both K and V: twice this)
)

// attention computes ws.att (n, q_dim) for layer l: each token's query
// heads attend over its sequence's cached positions [start, pos].
func (m *Model) attention(b *Batch, c *kvcache.Cache, l, n int) {
	tasks := n * m.LayerKVHeads(l)
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
// (group, pos+1-start), each followed by the head's sink logit when the
// model has attention sinks (gpt-oss): the sink joins the softmax's
// denominator, Σ_p e^(s_p) + e^(sink), and contributes no value.
//
// Layer l reads the cache layer of model layer KVSource(l) (itself, or for
// a shared-KV layer the owner it shares; its kvLayer numbers the owners,
// skipping a hybrid model's recurrent layers) with its own head width.
func (m *Model) attendRange(b *Batch, c *kvcache.Cache, l, lo, hi int, scores []float32) {
	hd, qd := m.LayerHeadDim(l), m.LayerQDim(l)
	group := m.Heads / m.LayerKVHeads(l)
	n := len(b.Seq)
	scale := float32(m.attnScale())
	window, softc := m.Window(l), m.AttnSoftcap
	sinks := m.w.layers[l].sinks
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
		ns := np // score row stride
		if sinks != nil {
			ns++
		}
		kr.head(g*hd, hd)
		vr.head(g*hd, hd)
		for h0 := 0; h0 < group; h0 += len(sums) {
			hs := min(len(sums), group-h0) // heads in this pass
			q0 := i*qd + (g*group+h0)*hd   // first head's query
			for p := start; p <= pos; {
				row, cnt := cacheRun(s.Blocks, bs, p, min(pos, p+attnTile-1))
				kr.load(row, cnt)
				for j := range hs {
					sc := scores[j*ns+p-start : j*ns+p-start+cnt]
					kr.scores(sc, m.ws.q[q0+j*hd:q0+(j+1)*hd], row, cnt, scale)
				}
				p += cnt
			}
			for j := range hs {
				if softc > 0 {
					softcap(scores[j*ns:j*ns+np], softc)
				}
				if sinks != nil {
					scores[j*ns+np] = sinks[g*group+h0+j]
				}
				sums[j] = tensor.SoftmaxExp(scores[j*ns : (j+1)*ns])
				clear(m.ws.att[q0+j*hd : q0+(j+1)*hd])
			}
			for p := start; p <= pos; {
				row, cnt := cacheRun(s.Blocks, bs, p, min(pos, p+attnTile-1))
				vr.load(row, cnt)
				for j := range hs {
					vr.accum(m.ws.att[q0+j*hd:q0+(j+1)*hd], row, scores[j*ns+p-start:j*ns+p-start+cnt])
				}
				p += cnt
			}
			for j := range hs {
				out, inv := m.ws.att[q0+j*hd:q0+(j+1)*hd], 1/sums[j]
				for c := range out {
					out[c] *= inv
				}
				if m.AttnGate { // Qwen3.5: the head's output times σ(its gate), here on the workers
					for c, gt := range m.hw.gate[q0+j*hd : q0+(j+1)*hd] {
						out[c] *= sigmoid(gt)
					}
				}
			}
		}
	}
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
	w := r.hd / 32 * q8Block
	for i := range n {
		o := (row+i)*r.stride + r.off
		tensor.DequantizeBlocks(r.tile[i*r.hd:(i+1)*r.hd], tensor.Q8_0, r.e[o:o+w])
	}
}

// scores sets out[i] = scale · q·k for the n rows from row (loaded).
func (r *kvRows) scores(out, q []float32, row, n int, scale float32) {
	switch r.typ {
	case tensor.F32:
		attnScores(out, q, r.f[row*r.stride+r.off:], r.stride, n, scale)
	case tensor.F16:
		attnScoresF16(out, q, r.e[row*r.stride+r.off:], r.stride, n, scale)
	default:
		attnScores(out, q, r.tile, r.hd, n, scale)
	}
}

// accum adds Σ_i a[i]·v_i into out for the len(a) rows from row (loaded).
func (r *kvRows) accum(out []float32, row int, a []float32) {
	switch r.typ {
	case tensor.F32:
		attnAccum(out, r.f[row*r.stride+r.off:], r.stride, a)
	case tensor.F16:
		attnAccumF16(out, r.e[row*r.stride+r.off:], r.stride, a)
	default:
		attnAccum(out, r.tile, r.hd, a)
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
