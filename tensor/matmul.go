package tensor

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// The fast matrix product, dst (n, Rows) = x (n, Cols) · Wᵀ.
//
// # Batch invariance
//
// Every (weight row, token) product is computed by one canonical
// arithmetic that depends on the weight type and Cols only — never on n,
// on which other tokens share the call, on the number of workers or on
// where a row falls in a chunk:
//
//	F32, F16, BF16   dot4's: the row widened exactly to float32, one 8-lane
//	                 FMA accumulator over the columns in order (lane l:
//	                 columns ≡ l mod 8), folded ((v0+v1)+(v2+v3)) +
//	                 ((v4+v5)+(v6+v7)), then the Cols%8 tail added in Go
//	                 (dotGo). On AVX-512F hosts (hasAVX512) the zmm
//	                 kernels' instead: one 16-lane accumulator (lane l:
//	                 columns ≡ l mod 16; a last 8 columns masked into
//	                 lanes 0-7), folded v_l + v_(l+8), then as above
//	Q4_0 … Q6_K,     x quantized per token and block to 8 bits
//	IQ4_NL, IQ4_XS,  (quantizeActs), then the integer row dot of dotQRows
//	IQ3_S, MXFP4     (per-block int32 sums, the kernel's float steps in
//	(actsFormat)     block order; the table formats' in rowdot_iq_ref.go).
//	                 Q4_0, Q4_1, Q5_0, Q5_1: the reference dot's, one
//	                 float per row, acc = fl(acc + fl(fl(dw·da)·s)) (plus
//	                 fl(mw·sa) for Q4_1, Q5_1) block after block, on amd64
//	                 over rows packed eight per register (rowdot_q4x8.go,
//	                 with IQ4_NL and MXFP4), the same bits on every path.
//	                 Q8_0 likewise (packed) where the AVX-512 Q8_0
//	                 kernels do not run; where they do (hasQ8Z, hasVNNI),
//	                 eight lanes (lane l: elements 4l..4l+3 of each
//	                 block), acc_l += fl(dw·da)·s_l fused, folded as dot4
//	other types      the row dequantized to float32 (dequantFast), then
//	                 dot4's F32 arithmetic
//
// Kernels that handle several tokens at once must reproduce that
// arithmetic bit for bit, lanes running along K as in the row dots, never
// across tokens: the float GEMM tiles (tileKernel, 4 rows × 3 or 2 tokens, each
// (row, token) with dot4's accumulator and fold) and the multi-token
// quantized row dots (dotQRowsX4, for the types whose kernels are proven
// identical: x4Invariant; dotQRowsX8, Q8_0 eight tokens at a time on
// 512-bit registers where the CPU has AVX-512 VNNI, whose single-token
// row dot is on zmm too, the ymm one's bits: hasQ8Z; dotQRowsKX8, the
// K-quants likewise with AVX-512 BW+VNNI, whose single-token zmm kernels
// give the ymm kernels' bits: hasKZ; dotQRowsNLTile, IQ4_NL and MXFP4 16
// tokens at a time in the vector lanes where AVX-512 has VBMI (hasNLZV),
// 8 at a time on AVX2 (hasNLTileY); dotQRowsXSTile, IQ4_XS 2 rows × 4
// tokens at a time on AVX2 where the zmm kernels are not taken, and IQ3_S
// 8 tokens: hasXSTileY).
// So a token's output row is bit-identical
// whether it is multiplied alone, beside 63 other decodes or inside a
// 512-token prefill chunk, and greedy decoding does not change with server
// load (TestMatMulBatchInvariant here, TestBatchInvariant in model,
// TestConcurrentGreedyInvariant in engine). The
// guarantee is per machine and build: the amd64 zmm kernels (hasAVX512),
// the ymm ones (AVX2, or hasAVX512 off), NEON and the pure-Go fallback
// (hasSIMD off) are each invariant — within a set dot4 and every tile
// share one order bit for bit — and agree with each other only to float
// rounding (the parity tests), as each set reduces in its own order.
//
// Decode, n = 1 (matrix-vector), is bound by memory bandwidth, not
// arithmetic. TinyLlama-1.1B FFN up-projection, W (5632, 2048):
//
//	bytes  = 5632·2048·2 B (F16)  = 23.1 MB   FLOPs = 2·5632·2048 = 23.1 M
//	=> 1 FLOP per byte. At ~20 GB/s of DRAM bandwidth that is ~1.2 ms and
//	   20 GFLOP/s, a few % of the FMA units' ~100 GFLOP/s per core.
//
// So the kernel's only job is to stream W at full speed: dot4 reads four
// rows at once (four prefetch streams, x loaded once per four rows from L1),
// widening F16 (VCVTPH2PS) or BF16 (shift) in registers; workers claim
// 16-row-aligned chunks of rows, from a contiguous region per worker first
// (claims.go). Block-quantized weights take llama.cpp's
// route: x is quantized once to 8 bits (quantizeActs) and each row is an
// integer dot product (AVX2 for Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K,
// Q6_K; dotQRows runs a whole chunk of rows per call), so a Q4_K row
// streams 0.56 B/weight and never expands to float.
//
// On the AVX-512 kernels (the 2-CPU Zen 5 VM of issue 36) the decode rate
// is set by how the row stream is fetched more than by arithmetic: one
// read stream per core (F16, BF16: dotRowsHalf one row at a time instead of
// dot4's four interleaved rows; Q8_0: qdotQ8_0Z keeps one row at a time
// although two rows would double its in-cache rate), prefetched into L2
// 16-32 KB ahead — several 4 KiB pages, so page walks and DRAM latency
// start early — with every line of the stream covered. Measured per
// CPU-second from DRAM: Q8_0 ~1.3×, F16 ~1.2×, K-quants ~1.1× over the
// near L1 prefetch the ymm kernels keep (tuned on AVX2 hosts). The ymm
// float row dots get one long stream per row of their four instead: a
// decode chunk is read as four runs of a quarter of its rows side by side
// (dot4Rows), each prefetched 512 bytes ahead.
//
// Several tokens (a decode step of several sequences, a prefill chunk)
// take the same row kernels over chunks of rows sized to stay in L2, so W
// still comes from DRAM once per call: quantized types token after token,
// or four at a time where dotQRowsX4 shares each block's unpacking among
// the tokens (rowdot_quant_x4.go); float types from n > rowwiseFloatMax
// the tile GEMM: a worker claims blocks of 16-tileMC rows and runs 4×3 tiles (4×2 for
// the last two or four tokens; on ymm a block of exactly 4 or 7 tokens
// starts with a four-token tile, see tileTokens; on zmm 4×6 tiles first, the 24
// accumulators filling the 32 zmm registers) over them, the rows read in place (F16 by
// VCVTPH2PS, BF16 by a shift, in the tile's loop: no widened copy), token
// groups outer so the group's activations stay in L1 while the block's
// rows come from L1/L2. Each weight is thus read from DRAM once per call.
//
// Before batch invariance (issue 16) larger n took a BLIS-style packed
// 6×16 float GEMM and, for the K-quants from 64 tokens and the Q8_0
// family from 256, an integer GEMM with tokens in the vector lanes; both
// reduced over K in another order than the row dots, so a token's logits
// moved with the size of its batch. The tiles that replace them vectorize
// along K like the row dots (tinyBLAS-style) and reduce the same way.
const (
	tileMR  = 4  // weight rows per float tile
	tileNR  = 3  // tokens per float tile
	tileNRZ = 6  // tokens per float tile on zmm (hasAVX512), 2-5 left as on ymm
	tileNR4 = 4  // tokens per ymm four-token tile (pairs of rows): a block's first pass of 4 or 7 tokens
	tileMC  = 64 // most rows per claimed block of the tile GEMM (multiple of tileMR)

	// rowwiseFloatMax: float weights take dot4 token after token for
	// n ≤ rowwiseFloatMax (same arithmetic as the tile GEMM), the tile
	// GEMM above: from n = 2 the tiles, which widen F16 in registers as
	// dot4 does, share each weight load among 2-3 tokens
	// (BenchmarkGEMM/F16 n=4: ~1.3× the row dots). Chunks of rows of the
	// row dots are sized to stay in L2.
	rowwiseFloatMax   = 1
	rowwiseChunkBytes = 128 << 10

	// decodeChunkBytes caps a one-token product's chunk of rows (see
	// decodeChunk).
	decodeChunkBytes = 256 << 10
)

// decodeChunk is the rows per claimed chunk of a one-token (decode)
// product of w on threads workers: an eighth of a worker's share, but at
// most decodeChunkBytes of weights, in multiples of 16 rows (a dst cache
// line). The cap bounds the end-of-job imbalance: the last chunk runs on
// one core while the others have nothing left to claim, and an eighth of
// a share of a large matrix was megabytes — Qwen3.5-2B's F16 output
// projection (248,320 × 2048) 63 MB, 2.5 ms on one core, TinyLlama's 4-8
// MB. 256 KiB is ~10 µs of one core's stream; a worker still claims its
// region's chunks in order, so its read stream runs on across them.
func decodeChunk(w *Mat, threads int) int {
	c := (w.Rows/(8*threads) + 15) &^ 15
	if rb := w.RowBytes(); rb > 0 {
		c = min(c, (decodeChunkBytes/rb)&^15)
	}
	return max(16, c)
}

// workerScratch is one worker's reusable memory.
type workerScratch struct {
	rows []float32 // (4, Cols) dequantized rows, generic matrix-vector
	acc  []float32 // (tilePanelGroups, tiles, tileAccLen) unfolded tile accumulators between panels (tileF16Panels)
	nlw  []byte    // (nlWSLen(Cols)) four unpacked IQ4_NL/MXFP4 rows (dotQRowsNLTile), or (xsWSLen(Cols)) IQ4_XS rows (dotQRowsXSTile)
	rowq []byte    // (chunk, RowBytes) a chunk of packed IQ4_NL/MXFP4 rows back in their file encoding for the tiles (q4x8Rows)
}

// sharedScratch is filled in one phase and read by all workers in the next.
type sharedScratch struct {
	dxv []float32 // (ceil(n/4), qx4DxvLen) activation scales of 4-token groups
	q8  []byte    // (n/8, qx8PackLen) packed activations of 8-token groups (qx8Pack); packed types: (ceil(q4x8T4Tokens(n)/4), Cols/32·q4x8ActLen) of 4-token groups (q4x8ActGroups)
	dx8 []float32 // (n/8, Cols/32, 8) their block scales
	bsk []int16   // (n/8, qx8PackKLen) packed bsums of 8-token groups, K-quants (qx8PackK)
	dzk []float32 // (n/8, qx8PackKLen) their packed scales
}

func growBytes(s []byte, n int) []byte {
	if cap(s) < n {
		return make([]byte, n)
	}
	return s[:n]
}

func growI16(s []int16, n int) []int16 {
	if cap(s) < n {
		return make([]int16, n)
	}
	return s[:n]
}

func growBuf(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

const (
	phaseMatVec = iota
	phaseTile
)

// matJob is the task behind MatMul; one lives in each pool and is reused.
type matJob struct {
	s     *pool
	phase int
	dst   []float32
	w     *Mat
	x     []float32
	n     int
	chunk int    // rows per claimed matrix-vector chunk or tile block (at most, see claims)
	unit  int    // matrix-vector rows per claim index: 16, or chunk when that is no multiple of 16
	quant bool   // matrix-vector through s.acts (8-bit activations)
	x4    bool   // quant, n > 1, four tokens at a time (dotQRowsX4)
	x8    bool   // x4 and Q8_0 on AVX-512 VNNI: the first n&^7 tokens eight at a time (dotQRowsX8)
	nlt   bool   // IQ4_NL or MXFP4 with tiles (useNLTile): the first nlTiled(n) tokens sixteen at a time (dotQRowsNLTile)
	xst   bool   // IQ4_XS or IQ3_S with ymm tiles (useXSTile): the first xsTiled(w.Type, n) tokens (dotQRowsXSTile)
	kx8   bool   // a K-quant (Q4_K, Q5_K, Q6_K) or IQ4_XS on AVX-512 BW+VNNI: likewise (dotQRowsKX8)
	q4    []byte // quant, a type on the packed kernels (useQ4x8): w's packed rows (dotQ4x8)
	next  atomic.Int64
}

// MatMul computes dst = x · Wᵀ: x is (n, w.Cols), dst is (n, w.Rows),
// dst[t][r] = Σ_c W[r][c]·x[t][c], each (r, t) by the canonical arithmetic
// of W's type whatever n is (see the top of the file). Not safe for concurrent
// use of one Pool; a nil Pool computes on the calling goroutine and
// allocates nothing in steady state (see inlinePools).
func (p *Pool) MatMul(dst []float32, w *Mat, x []float32, n int) {
	if n <= 0 || w.Rows == 0 {
		return
	}
	if len(x) < n*w.Cols || len(dst) < n*w.Rows {
		panic(fmt.Sprintf("tensor: MatMul of (%d, %d) weights by %d tokens needs x %d and dst %d floats, have %d and %d",
			w.Rows, w.Cols, n, n*w.Cols, n*w.Rows, len(x), len(dst)))
	}
	if p == nil {
		s := inlinePools.Get().(*pool)
		s.matMul(dst, w, x, n)
		inlinePools.Put(s)
		return
	}
	p.pool.matMul(dst, w, x, n)
}

// inlinePools holds one-worker pools whose scratch a nil *Pool borrows for
// one MatMul, so that steady-state calls allocate nothing there either.
var inlinePools = sync.Pool{New: func() any { return &pool{n: 1, scratch: make([]workerScratch, 1)} }}

// matMul is MatMul on s's workers.
func (s *pool) matMul(dst []float32, w *Mat, x []float32, n int) {
	j := &s.mm
	*j = matJob{s: s, dst: dst, w: w, x: x, n: n}
	if n > rowwiseFloatMax && useTile(w) {
		j.phase = phaseTile
		// Blocks of 16 to tileMC rows, at least four per worker: the more
		// rows a block holds, the fewer times the tokens' activations (at
		// n = 512, K = 2048: 4 MB, from L3) pass through the core; 64 rows
		// of 2048 F16 columns (256 KiB) still sit in L2.
		j.chunk = max(16, min(tileMC, w.Rows/(4*s.n))&^15)
		s.run(j)
		j.dst, j.x, j.w, j.q4 = nil, nil, nil, nil
		return
	}
	// Row kernels, one token (or group of four) after another over each
	// chunk of rows (for n > 1 the chunk is sized to stay in L2, so W is
	// still read from DRAM once).
	th := s.n
	if n == 1 {
		j.chunk = decodeChunk(w, th)
	} else {
		j.chunk = max(4, min(rowwiseChunkBytes/w.RowBytes(), w.Rows/(4*th))&^3)
		if useQ4x8(w) {
			j.chunk = max(8, j.chunk&^7) // whole groups of the packed rows
		}
	}
	pairFrom := 0 // the tiles' tokens need no paired values (quantizeActsFrom)
	if nlTiled(n) > 0 && nlTiles(w) {
		pairFrom = nlTiled(n) * w.Cols
	}
	if useQ4x8(w) {
		pairFrom = n * w.Cols // nor do the packed kernels'
	}
	if _, ok := actsFormat(w.Type); ok && quantizeActsFrom(&s.acts, w.Type, x[:n*w.Cols], pairFrom) == nil {
		j.quant = true
		if useQ4x8(w) {
			// Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4, Q8_0: the rows packed eight
			// at a time (by Prepare or now), the tokens' block biases, and
			// for the types with four-token kernels groups of four tokens'
			// activations interleaved once for all workers.
			j.q4 = w.q4x8()
			s.acts.q4Bias(w.Type)
			if q4x8Four(w.Type) {
				s.shared.q8 = growBytes(s.shared.q8, (q4x8T4Tokens(n)+3)/4*(w.Cols/32*q4x8ActLen))
				q4x8ActGroups(s.shared.q8, w.Type, &s.acts, w.Cols, n)
			}
		}
		if n > 1 && hasQdotX4(w.Type) && j.q4 == nil {
			j.x4 = true // (Q8_0 packed takes its own four-token kernel)
		}
		if j.x4 {
			// Scales of the groups of four tokens (qx4Group), (groups,
			// qx4DxvLen): (nb, 8) for the K-quants, (nb, 4) for Q8_0.
			g := qx4DxvLen(w.Type, w.Cols)
			s.shared.dxv = growBuf(s.shared.dxv, (n+3)/4*g)
			var toks [4]int
			for t0 := 0; t0 < n; t0 += 4 {
				qx4Group(&toks, t0, n)
				qx4Prep(s.shared.dxv[t0/4*g:(t0/4+1)*g], w.Type, &s.acts, w.Cols, &toks)
			}
		}
		if nlTiled(n) > 0 && nlTiles(w) {
			// Groups of 16 tokens packed once for all workers; each
			// worker unpacks its rows into its own scratch.
			j.nlt = true
			nt, pl := nlTiled(n), nlPackLen(w.Cols)
			ng := (nt + nlTileTokens - 1) / nlTileTokens
			s.shared.q8 = growBytes(s.shared.q8, ng*pl)
			for g := range ng {
				nlPack(s.shared.q8[g*pl:(g+1)*pl], &s.acts, w.Cols, g*nlTileTokens, min(nlTileTokens, nt-g*nlTileTokens))
			}
			for i := range s.scratch {
				s.scratch[i].nlw = growBytes(s.scratch[i].nlw, nlWSLen(w.Cols))
				if j.q4 != nil {
					s.scratch[i].rowq = growBytes(s.scratch[i].rowq, j.chunk*w.RowBytes())
				}
			}
		}
		if useXSTile(w.Type, n) && xsTiled(w.Type, n) > 0 {
			// IQ3_S: groups of 8 tokens packed once for all workers (IQ4_XS's
			// tile reads the activations as quantized); each worker unpacks
			// its rows into its own scratch.
			j.xst = true
			if w.Type == IQ3_S {
				nt, pl := xsTiled(w.Type, n), xsPackLen(w.Cols)
				ng := (nt + xsTileTokens - 1) / xsTileTokens
				s.shared.q8 = growBytes(s.shared.q8, ng*pl)
				for g := range ng {
					xsPack(s.shared.q8[g*pl:(g+1)*pl], &s.acts, w.Cols, g*xsTileTokens, min(xsTileTokens, nt-g*xsTileTokens))
				}
			}
			for i := range s.scratch {
				s.scratch[i].nlw = growBytes(s.scratch[i].nlw, xsWSLen(w.Cols))
			}
		}
		if n >= 8 && j.x4 && useQ8x8(w.Type) {
			// Groups of eight tokens (Q8_0 activations), packed once for
			// all workers.
			j.x8 = true
			pl, dl := qx8PackLen(w.Cols), w.Cols/32*8
			s.shared.q8 = growBytes(s.shared.q8, n/8*pl)
			s.shared.dx8 = growBuf(s.shared.dx8, n/8*dl)
			for t0 := 0; t0+8 <= n; t0 += 8 {
				qx8Pack(s.shared.q8[t0/8*pl:(t0/8+1)*pl], s.shared.dx8[t0/8*dl:(t0/8+1)*dl], &s.acts, w.Cols, t0)
			}
		}
		if n >= 8 && useKx8(w.Type) {
			// Groups of eight tokens for the K-quants and IQ4_XS on
			// AVX-512: bsums and scales packed by token pairs.
			j.kx8 = true
			lb, ld := qx8PackKLen(w.Cols)
			s.shared.bsk = growI16(s.shared.bsk, n/8*lb)
			s.shared.dzk = growBuf(s.shared.dzk, n/8*ld)
			for t0 := 0; t0+8 <= n; t0 += 8 {
				qx8PackK(s.shared.bsk[t0/8*lb:(t0/8+1)*lb], s.shared.dzk[t0/8*ld:(t0/8+1)*ld], &s.acts, w.Cols, t0)
			}
		}
	} else if !isFloat(w.Type) {
		for i := range s.scratch {
			s.scratch[i].rows = growBuf(s.scratch[i].rows, 4*w.Cols)
		}
	}
	j.phase = phaseMatVec
	j.unit = j.chunk // claimed in units of 16 rows where the chunk is made of them
	if j.chunk%16 == 0 {
		j.unit = 16
	}
	s.cl.reset(s.n, (w.Rows+j.unit-1)/j.unit, j.chunk/j.unit)
	s.run(j)
	j.dst, j.x, j.w, j.q4 = nil, nil, nil, nil
}

func isFloat(t DType) bool { return t == F32 || t == F16 || t == BF16 }

// useTile reports whether float weights w can take the tile GEMM here:
// the kernel exists (amd64 with AVX2/FMA) and rows hold at least one
// 16-column step.
func useTile(w *Mat) bool {
	return isFloat(w.Type) && hasTileArch && hasSIMD && w.Cols >= 16
}

func (j *matJob) run(worker int) {
	sc := &j.s.scratch[worker]
	switch j.phase {
	case phaseMatVec:
		// Chunks from the worker's own contiguous region first (claims.go).
		for r := worker; ; {
			u0, u1, ok := j.s.cl.claim(&r)
			if !ok {
				return
			}
			j.matVec(sc, u0*j.unit, min(u1*j.unit, j.w.Rows))
		}
	case phaseTile:
		for {
			r0, r1, ok := j.claimBlock()
			if !ok {
				return
			}
			j.tileBlock(sc, r0, r1)
		}
	}
}

// claimBlock claims the tile GEMM's next block of rows: j.chunk rows
// while many are left, then smaller blocks (a multiple of 16 rows, at
// least 16), a quarter of what is left per worker pair, so the workers
// run out of rows together and the end-of-job barrier waits on a
// 16-row block rather than a 64-row one. A row's sums do not depend on
// the block it falls in. With fixed 64-row blocks the caller waited 3-4%
// of a 110M F16 pp128 at the barriers, 1.2-1.8% with these; its pp128
// measured +5-10% (interleaved x3, 2 threads, Zen 3, 2026-12-07), and
// BenchmarkGEMMSmall 0-25% by shape and round (GFLOP/s, 768x768 n=128
// 116-126 -> 138-144, 2048x768 n=512 137-146 -> 149-161).
func (j *matJob) claimBlock() (r0, r1 int, ok bool) {
	rows := int64(j.w.Rows)
	for {
		cur := j.next.Load()
		if cur >= rows {
			return 0, 0, false
		}
		sz := min(int64(j.chunk), max(16, ((rows-cur)/int64(2*j.s.n)+15)&^15))
		if j.next.CompareAndSwap(cur, cur+sz) {
			return int(cur), int(min(cur+sz, rows)), true
		}
	}
}

// matVec computes dst[t][r] for rows [lo, hi), token after token (or four
// tokens at a time).
func (j *matJob) matVec(sc *workerScratch, lo, hi int) {
	w := j.w
	rb := w.RowBytes()
	switch {
	case isFloat(w.Type):
		for t := range j.n {
			j.dot4Rows(lo, hi, t)
		}
	case j.q4 != nil && !j.nlt:
		// Eight packed rows at a time: four tokens then one (Q4_0, Q4_1,
		// Q5_0, Q5_1, MXFP4, Q8_0), or one at a time (IQ4_NL with too few
		// tokens for its tiles).
		dotQ4x8(w.Type, j.dst, w.Rows, j.q4, w.Rows, lo, hi, w.Cols, &j.s.acts, j.s.shared.q8, 0, j.n)
	case j.quant:
		t0 := 0
		if j.nlt {
			// Sixteen tokens at a time in the vector lanes.
			t0 = nlTiled(j.n)
			if j.q4 == nil {
				dotQRowsNLTile(w.Type, j.dst, w.Rows, w.Data, rb, lo, hi, w.Cols, j.s.shared.q8, t0, &j.s.acts, sc.nlw)
			} else {
				// The chunk's rows from the packed copy (the original is
				// not kept in fast memory), in their file encoding; the
				// rest of the tokens on the packed rows, one at a time.
				rows := sc.rowq[:(hi-lo)*rb]
				q4x8Rows(rows, w.Type, j.q4, lo, hi, w.Cols)
				dotQRowsNLTile(w.Type, j.dst[lo:], w.Rows, rows, rb, 0, hi-lo, w.Cols, j.s.shared.q8, t0, &j.s.acts, sc.nlw)
				dotQ4x8(w.Type, j.dst, w.Rows, j.q4, w.Rows, lo, hi, w.Cols, &j.s.acts, nil, t0, j.n)
				return
			}
		}
		if j.xst {
			// Two rows by four tokens (IQ4_XS) or eight tokens in the
			// vector lanes (IQ3_S) at a time.
			t0 = xsTiled(w.Type, j.n)
			dotQRowsXSTile(w.Type, j.dst, w.Rows, w.Data, rb, lo, hi, w.Cols, &j.s.acts, j.s.shared.q8, t0, sc.nlw)
		}
		for t := t0; t < j.n; t++ {
			if j.x8 && t%8 == 0 && t+8 <= j.n {
				// Eight tokens at a time, two per 512-bit register.
				pl, dl := qx8PackLen(w.Cols), w.Cols/32*8
				dotQRowsX8(j.dst, w.Rows, w.Data, rb, lo, hi, w.Cols, j.s.shared.q8[t/8*pl:(t/8+1)*pl], j.s.shared.dx8[t/8*dl:(t/8+1)*dl], t)
				t += 7
				continue
			}
			if j.kx8 && t%8 == 0 && t+8 <= j.n {
				lb, ld := qx8PackKLen(w.Cols)
				dotQRowsKX8(w.Type, j.dst, w.Rows, w.Data, rb, lo, hi, w.Cols, &j.s.acts, j.s.shared.bsk[t/8*lb:(t/8+1)*lb], j.s.shared.dzk[t/8*ld:(t/8+1)*ld], t)
				t += 7
				continue
			}
			if j.x4 && t%4 == 0 {
				// Four tokens at a time: each weight block unpacked once for
				// all four (a single last token takes the row dots).
				var toks [4]int
				if m := qx4Group(&toks, t, j.n); m > 1 {
					g := qx4DxvLen(w.Type, w.Cols)
					dxv := j.s.shared.dxv[t/4*g : (t/4+1)*g]
					dotQRowsX4(w.Type, j.dst, w.Rows, w.Data, rb, lo, hi, w.Cols, &j.s.acts, &toks, dxv)
					t += m - 1
					continue
				}
			}
			// Integer dots against the 8-bit activations, as llama.cpp does.
			dotQRows(w.Type, j.dst[t*w.Rows+lo:t*w.Rows+hi], w.Data[lo*rb:], rb, w.Cols, &j.s.acts, t*w.Cols)
		}
	default:
		// Other types: dequantize four rows once, then the F32 dot for
		// every token.
		buf := sc.rows[:4*w.Cols]
		var out [4]float32
		for r := lo; r < hi; r += 4 {
			m := min(4, hi-r)
			for i := range m {
				dequantFast(buf[i*w.Cols:(i+1)*w.Cols], w.Type, w.Data[(r+i)*rb:(r+i+1)*rb])
			}
			lda := w.Cols * 4
			if m == 1 {
				lda = 0
			}
			for t := range j.n {
				dot4(F32, F32Bytes(buf), lda, j.x[t*w.Cols:(t+1)*w.Cols], &out)
				copy(j.dst[t*w.Rows+r:t*w.Rows+r+m], out[:m])
			}
		}
	}
}

// dot4Rows sets dst[t][r] for float weights, rows [lo, hi), one token.
//
// On ymm and other non-zmm hosts the rows are read as four streams: with
// q = (hi-lo)/4, each dot4 call takes rows lo+i, lo+q+i, lo+2q+i and
// lo+3q+i (lda = q rows), so each of its four rows continues the one the
// previous call read in its stream, and the chunk is four sequential runs
// of q rows rather than groups of four adjacent rows each started afresh.
// A row's arithmetic is dot4's either way; only the order of the rows
// changes. Rows of a few KB had streamed from DRAM at ~2/3 of the rate of
// long ones (the hardware prefetcher restarts at every row): one thread,
// F16, BenchmarkDecodeRowLength-style, 768×768 ~12 -> ~18 GB/s, 2048×1024
// (Qwen3.5-0.8B's width) ~13 -> ~21, 2048×2048 ~18 -> ~22.
func (j *matJob) dot4Rows(lo, hi, t int) {
	w := j.w
	rb := w.RowBytes()
	x := j.x[t*w.Cols : (t+1)*w.Cols]
	dst := j.dst[t*w.Rows : (t+1)*w.Rows]
	if (w.Type == F16 || w.Type == BF16) && hasAVX512 && w.Cols >= 8 {
		// One row at a time, dot4's bits (dotRowsHalf).
		dotRowsHalf(w.Type, dst[lo:hi], w.Data[lo*rb:], rb, x)
		return
	}
	var out [4]float32
	r := lo
	if hasAVX512 {
		// (F32 on zmm: adjacent rows, as measured there.)
		for ; r+4 <= hi; r += 4 {
			dot4(w.Type, w.Data[r*rb:], rb, x, &out)
			copy(dst[r:r+4], out[:])
		}
	} else if q := (hi - lo) / 4; q > 0 {
		for i := range q {
			dot4Ahead(w.Type, w.Data[(lo+i)*rb:], q*rb, dot4StreamAhead, x, &out)
			dst[lo+i], dst[lo+q+i], dst[lo+2*q+i], dst[lo+3*q+i] = out[0], out[1], out[2], out[3]
		}
		r = lo + 4*q
	}
	for ; r < hi; r++ {
		dot4(w.Type, w.Data[r*rb:], 0, x, &out)
		dst[r] = out[0]
	}
}

// dot4StreamAhead is how far ahead along each of dot4Rows' four streams
// the ymm kernels prefetch, in bytes. With the rows in streams the hardware
// prefetcher does most of the work: 0 (the line being read), 512, 1024 and
// 2048 measured within the runs' noise of each other, 2048 often a little
// slower (F16 and F32, 768×768, 2048×1024 and 1024×3584, 1 and 2 threads,
// Zen 3, 2026-12-07).
const dot4StreamAhead = 512

// tileBlock computes dst[t][r] for float weights, rows [r0, r1) (at most
// tileMC) and all tokens: 4-row tiles of 3 tokens (2 for the last two or
// four), token groups outer so the block's rows stay in L1/L2 while the
// groups pass over them; the rows are read in place (F16 and BF16 widened
// in registers). The last m%4 rows and a lone token take dot4, whose
// arithmetic the tiles share.
func (j *matJob) tileBlock(sc *workerScratch, r0, r1 int) {
	w := j.w
	K, rb := w.Cols, w.RowBytes()
	m := r1 - r0
	k8 := K &^ 7
	mt := m &^ (tileMR - 1)
	t0 := 0
	if w.Type == F16 && hasAVX512 && k8 > tilePanelK && mt > 0 {
		t0 = j.tileF16Panels(sc, r0, r1)
	}
	for t0 < j.n {
		nt := tileTokens(j.n-t0, j.n)
		if nt == 1 {
			j.dot4Rows(r0, r1, t0)
			t0++
			continue
		}
		xt := j.x[t0*K : (t0+nt)*K]
		dt := j.dst[t0*w.Rows : (t0+nt)*w.Rows]
		if mt > 0 {
			a := w.Data[r0*rb : (r0+mt)*rb]
			if t0 == 0 && nt <= tileNR && mt >= 2*tileMR && !hasAVX512 {
				tileStreams(w.Type, nt, a, rb, xt, K, k8, dt[r0:], w.Rows, mt/tileMR)
			} else {
				tileKernel(w.Type, nt, a, rb, xt, K, k8, dt[r0:], w.Rows, mt/tileMR)
			}
			if k8 < K {
				// The Cols%8 tail, added to the tiles' sums as dot4 adds it.
				for r := range mt {
					for t := range nt {
						dt[t*w.Rows+r0+r] += dotGo(w.Type, a[r*rb:(r+1)*rb], xt[t*K:(t+1)*K], k8, K)
					}
				}
			}
		}
		if mt < m {
			for t := t0; t < t0+nt; t++ {
				j.dot4Rows(r0+mt, r1, t)
			}
		}
		t0 += nt
	}
}

// Long F16 rows on zmm (K > tilePanelK: TinyLlama's down projection, K =
// 5632; Qwen3.5-0.8B's, 3584) are multiplied panel by panel of columns:
// a 4×6 tile reads six tokens' activations, 6·K·4 bytes, which from
// K ≈ 2048 no longer stay in the 48 KB L1 beside the rows while the
// block's tiles pass over them, and the tile ran at ~80% of its in-cache
// rate (BenchmarkGEMM-style, cpuGFLOP/s: K = 1024 ~177, 3584 ~150, 5632
// ~145). Panels of tilePanelK columns keep the group's activations in L1;
// each tile's 24 accumulators are kept unfolded in the worker's scratch
// between panels (tileF16x6ZP), which changes no bit: every (row, token)
// still sees one 16-lane accumulator over its columns in order. Other
// sizes measured no better (interleaved A/B, 6 rounds, F16 n = 128 on 2
// threads, GFLOP/s ratio to these; shapes 2048×2048, 2048×6144, 6144×2048,
// 2026-12-06): tileMC 128 0.98, 0.99, 1.02; tilePanelK 2048 (K = 2048 in
// one panel) 1.00, 0.96, 1.01; tilePanelK 512, tilePanelGroups 4 or 16
// within the runs' ±5%. The ymm tiles (AVX2 hosts) take no panels: a
// 4×3 panel kernel (accumulators kept in scratch as here) measured slower
// at every setting tried on a Zen 3 host (TinyLlama's gate and down
// projections, n = 512 on 2 threads, cpuGFLOP/s medians of 3-5
// interleaved runs, 2026-12-07: none ~84 and ~75-84; panels of 1024 or
// 512 columns, 2-8 groups per pass, 69-82 and 69-77).
const (
	tilePanelK      = 1024    // columns per panel (a multiple of 16)
	tilePanelGroups = 8       // 6-token groups per pass over the panels (their accumulators: 8·16 tiles·1.5 KB in L2)
	tileAccLen      = 24 * 16 // floats of one 4×6 tile's accumulators
)

// tileF16Panels runs, for F16 rows [r0, r1) of a block, the leading
// 6-token groups (those tileTokens gives 6) panel by panel, then their
// Cols%8 tails and the block's last m%4 rows, and returns the first token
// it did not compute.
func (j *matJob) tileF16Panels(sc *workerScratch, r0, r1 int) int {
	w := j.w
	K, rb, ld := w.Cols, w.RowBytes(), w.Rows
	k8 := K &^ 7
	m := r1 - r0
	mt := m &^ (tileMR - 1)
	tiles := mt / tileMR
	g6 := 0 // leading 6-token groups, as tileBlock's loop would take them
	for t := 0; t < j.n && tileTokens(j.n-t, j.n) == tileNRZ; t += tileNRZ {
		g6++
	}
	if g6 == 0 {
		return 0
	}
	// Every panel call reads rows r0.. at most 2·k8 bytes in, tokens up
	// to 6·g6 and writes dst within those tokens' rows: checked once here.
	_ = w.Data[(r0+mt-1)*rb+2*k8-1]
	_ = j.x[(tileNRZ*g6-1)*K+k8-1]
	_ = j.dst[(tileNRZ*g6-1)*ld+r0+mt-1]
	sc.acc = growBuf(sc.acc, tilePanelGroups*tiles*tileAccLen)
	for gb0 := 0; gb0 < g6; gb0 += tilePanelGroups {
		gb := min(tilePanelGroups, g6-gb0)
		for kc0 := 0; kc0 < k8; kc0 += tilePanelK {
			kc := min(tilePanelK, k8-kc0)
			mode := 0
			if kc0 > 0 {
				mode |= 1
			}
			if kc0+kc == k8 {
				mode |= 2
			}
			for g := range gb {
				t0 := (gb0 + g) * tileNRZ
				for i := range tiles {
					r := r0 + i*tileMR
					tileF16x6ZP(&w.Data[r*rb+2*kc0], uintptr(rb), &j.x[t0*K+kc0], uintptr(4*K), kc,
						&j.dst[t0*ld+r], uintptr(4*ld), &sc.acc[(g*tiles+i)*tileAccLen], mode)
				}
			}
		}
		for g := range gb {
			t0 := (gb0 + g) * tileNRZ
			if k8 < K {
				// The Cols%8 tail, added as dot4 adds it.
				for r := r0; r < r0+mt; r++ {
					for t := t0; t < t0+tileNRZ; t++ {
						j.dst[t*ld+r] += dotGo(F16, w.Data[r*rb:(r+1)*rb], j.x[t*K:(t+1)*K], k8, K)
					}
				}
			}
			if mt < m {
				for t := t0; t < t0+tileNRZ; t++ {
					j.dot4Rows(r0+mt, r1, t)
				}
			}
		}
	}
	return g6 * tileNRZ
}

// tileTokens is how many of the rem tokens left the next tile takes: 3,
// or 2 when 2 or 4 are left (2+2 rather than 3+1), 1 (dot4) for a lone
// token. On ymm a block of 4 or 7 tokens (rem = n: the first pass) takes
// the four-token tile first: a block of a few tokens is bound by the
// first read of its rows from DRAM, and 2+2 or 3+2+2 passes read them
// two or three times (BenchmarkGEMM F16 on a Zen 3 host, interleaved x3,
// GFLOP/s: n=7, 512 columns, one thread 38-46 -> 55-58). Later passes
// find the rows in L2, where the four-token tile is the slower (its four
// tokens' columns, 32 KB at K = 2048, no longer stay in L1: with the
// tile on every last 4 too, a MoE-shaped pp512, a third of whose experts
// end on 4, measured ~5% slower). n = 5 as 4+1 measured slower, n = 6
// and 8 as 4+2 and 4+4 no better than 3+3 and 3+3+2. With the first pass
// of 2 or 3 tokens in streams (tileStreams), 3+2+2 for 7 tokens measured
// 8-15% faster in BenchmarkFewTokensFloat at three of four shapes, but in
// the model Qwen3.5-0.8B F16 pp7 was 3-10% slower and TinyLlama's equal
// (2 threads, interleaved x2, 2026-12-07), so 7 keeps 4+3.
func tileTokens(rem, n int) int {
	if hasAVX512 && (rem == tileNRZ || rem >= 8) {
		return tileNRZ // zmm: 4×6 tiles while 6 fit (7 left: 3+2+2)
	}
	switch rem {
	case 1:
		return 1
	case 2:
		return 2
	case 4, 7:
		if !hasAVX512 && rem == n {
			return tileNR4 // ymm: 4, 4+3 (the rows read once for four tokens)
		}
		if rem == 4 {
			return 2
		}
	}
	return tileNR
}

// tileStreams is tileKernel (same arguments, the same results bit for bit)
// with the rows read as four streams, as dot4Rows reads them: with q =
// tiles, tile i takes rows i, q+i, 2q+i and 3q+i (lda = q rows), so each
// of its rows continues the row the previous tile read in its stream, and
// writes its sums into dst through a small buffer. A block's first pass
// (ymm 4×2 and 4×3 tiles, which prefetch nothing themselves) reads its rows
// from DRAM; for two or three tokens that read is the cost, and four
// adjacent rows a few KB long restarted the hardware prefetcher at every
// tile. BenchmarkGEMM-style F16, one thread, interleaved ×2, GFLOP/s
// (2026-12-07, Zen 3): 2048×2048 n=2 30-31 -> 38-39, n=3 40-41 -> 51;
// 2048×1024 n=2 22 -> 37-39, n=3 30-31 -> 47-53; 512×2048 n=2 33 -> 43-44,
// n=3 45 -> 56-58. Later passes find the rows in L2 and take tileKernel;
// the four-token tile keeps adjacent rows and its own prefetch of the pair
// after next (in streams it measured 5-25% slower with that prefetch, and
// from 10% slower to 10% faster by shape with the prefetch moved along its
// first stream: 2048×1024, 2048×2048, 512×2048, n = 4 and 7).
func tileStreams(ty DType, nt int, a []byte, lda int, x []float32, ldx, k int, dst []float32, ldd, tiles int) {
	q := tiles
	var sums [tileNR * tileMR]float32 // (nt, 4): tile i's rows i, q+i, 2q+i, 3q+i for each token
	for i := range q {
		tileKernel(ty, nt, a[i*lda:], q*lda, x, ldx, k, sums[:], tileMR, 1)
		for t := range nt {
			for r := range tileMR {
				dst[t*ldd+r*q+i] = sums[t*tileMR+r]
			}
		}
	}
}

// tileKernel runs the float tile of type ty for tiles 4-row tiles of a
// (rows of stride lda bytes, tile i's first row 4i) and nt (2 or 3) tokens of x
// (stride ldx floats) over k columns (a positive multiple of 8):
// dst[t·ldd+r] = row r · token t by dot4's arithmetic, r < 4·tiles. The
// ymm tiles take all of them in one call.
func tileKernel(ty DType, nt int, a []byte, lda int, x []float32, ldx, k int, dst []float32, ldd, tiles int) {
	_ = a[(tiles*tileMR-1)*lda+k*floatBytes(ty)-1]
	_ = x[(nt-1)*ldx+k-1]
	_ = dst[(nt-1)*ldd+tiles*tileMR-1]
	if k&7 != 0 || k == 0 || tiles < 1 || nt < 2 || nt > tileNR && !(nt == tileNRZ && hasAVX512) && !(nt == tileNR4 && !hasAVX512) {
		panic("tensor: tileKernel: k not a positive multiple of 8, no tiles or tokens not 2, 3 (or 6 on zmm, 4 on ymm)")
	}
	pa, la, px, lx, pd, ld := &a[0], uintptr(lda), &x[0], uintptr(ldx*4), &dst[0], uintptr(ldd*4)
	if hasAVX512 {
		for i := range tiles {
			tileKernelZ(ty, nt, &a[i*tileMR*lda], la, px, lx, k, &dst[i*tileMR], ld)
		}
		return
	}
	switch {
	case ty == F32 && nt == tileNR4:
		tileF32x4SIMD(pa, la, px, lx, k, pd, ld, tiles)
	case ty == F16 && nt == tileNR4:
		tileF16x4SIMD(pa, la, px, lx, k, pd, ld, tiles)
	case ty == BF16 && nt == tileNR4:
		tileBF16x4SIMD(pa, la, px, lx, k, pd, ld, tiles)
	case ty == F32 && nt == 3:
		tileF32x3SIMD(pa, la, px, lx, k, pd, ld, tiles)
	case ty == F16 && nt == 3:
		tileF16x3SIMD(pa, la, px, lx, k, pd, ld, tiles)
	case ty == BF16 && nt == 3:
		tileBF16x3SIMD(pa, la, px, lx, k, pd, ld, tiles)
	case ty == F32:
		tileF32x2SIMD(pa, la, px, lx, k, pd, ld, tiles)
	case ty == F16:
		tileF16x2SIMD(pa, la, px, lx, k, pd, ld, tiles)
	case ty == BF16:
		tileBF16x2SIMD(pa, la, px, lx, k, pd, ld, tiles)
	default:
		panic("tensor: tileKernel: " + ty.String() + " is not a float type")
	}
}

// tileKernelZ is one 4-row tile on zmm (AVX-512F): tileKernel's zmm path.
func tileKernelZ(ty DType, nt int, pa *byte, la uintptr, px *float32, lx uintptr, k int, pd *float32, ld uintptr) {
	switch {
	case ty == F32 && nt == 6:
		tileF32x6Z(pa, la, px, lx, k, pd, ld)
	case ty == F16 && nt == 6:
		tileF16x6Z(pa, la, px, lx, k, pd, ld)
	case ty == BF16 && nt == 6:
		tileBF16x6Z(pa, la, px, lx, k, pd, ld)
	case ty == F32 && nt == 3:
		tileF32x3Z(pa, la, px, lx, k, pd, ld)
	case ty == F16 && nt == 3:
		tileF16x3Z(pa, la, px, lx, k, pd, ld)
	case ty == BF16 && nt == 3:
		tileBF16x3Z(pa, la, px, lx, k, pd, ld)
	case ty == F32:
		tileF32x2Z(pa, la, px, lx, k, pd, ld)
	case ty == F16:
		tileF16x2Z(pa, la, px, lx, k, pd, ld)
	case ty == BF16:
		tileBF16x2Z(pa, la, px, lx, k, pd, ld)
	default:
		panic("tensor: tileKernel: " + ty.String() + " is not a float type")
	}
}
