package tensor

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// The fast matrix product, dst (n, Rows) = x (n, Cols) · Wᵀ, in two regimes.
//
// Decode, n = 1 (matrix-vector). Every weight is used once per token, so
// the product is bound by memory bandwidth, not arithmetic. TinyLlama-1.1B
// FFN up-projection, W (5632, 2048):
//
//	bytes  = 5632·2048·2 B (F16)  = 23.1 MB   FLOPs = 2·5632·2048 = 23.1 M
//	=> 1 FLOP per byte. At ~20 GB/s of DRAM bandwidth that is ~1.2 ms and
//	   20 GFLOP/s, a few % of the FMA units' ~100 GFLOP/s per core.
//
// So the kernel's only job is to stream W at full speed: dot4 reads four
// rows at once (four prefetch streams, x loaded once per four rows from L1),
// widening F16 (VCVTPH2PS) or BF16 (shift) in registers; workers claim
// 16-row-aligned chunks of rows. Block-quantized weights take llama.cpp's
// route: x is quantized once to 8 bits (quantizeActs) and each row is an
// integer dot product (AVX2 for Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K,
// Q6_K; dotQRows runs a whole chunk of rows per call), so a Q4_K row
// streams 0.56 B/weight and never expands to float.
//
// A few tokens (a decode step of several sequences, a short prompt) also
// take these kernels, over chunks of rows sized to stay in L2: W still
// comes from DRAM once, and the GEMM below would spend a whole 16-token
// panel on them. The rule depends on the weight type and n only, never on
// the CPU (rowwiseQuant):
//
//	K-quants (Q4_K, Q5_K, Q6_K)      n < rowwiseKMax = 64
//	other types with integer dots    n < rowwiseQuantMax = 16
//	F32, F16, BF16                   n ≤ rowwiseFloatMax = 4
//
// so for those quantized types every such n sees x rounded to 8 bits per
// block, exactly as n = 1 does (and as llama.cpp does for every n). The
// K-quants and Q8_0 run their tokens four at a time (dotQRowsX4,
// rowdot_quant_x4.go): each weight block is unpacked (or, for Q8_0, loaded and
// made unsigned) once in registers for four tokens (two for a group of
// two; a last single token takes the plain row dot), where token after
// token redid it per token. BenchmarkFewTokens,
// (5632, 2048), 1 thread, GFLOP/s against token-by-token row dots: Q4_K
// 61/42 at n = 2, 84/45 at n = 4, 87/58 at n = 8, 98/57 at n = 12; Q6_K
// 60/45, 83/42, 87/42, 91/48 (2 threads: 1.0-2.0×); Q8_0 44/33, 54/35,
// 65/40, 57/36. The K-quant kernels also beat the integer GEMM below up to
// n = 64 (BenchmarkKRowsVsQGEMM, 1 thread: Q4_K 81/43 at n = 16, 99/82 at
// 32, 85/73 at 64, even at 128; Q6_K 107/53, 111/75, 113/83, even), hence
// rowwiseKMax. Other types take the row dots one token after another.
//
// Prefill, n > 1 (matrix-matrix). Now each weight meets n tokens: 2·n FLOPs
// per weight, so with n = 512 the same matrix needs 11.8 GFLOP against
// 23 MB — compute bound (~0.1 s at 100 GFLOP/s/core), provided each
// weight is fetched from DRAM once and then reused from cache. Looping the
// matrix-vector kernel over tokens would re-read W n times. Instead
// (BLIS-style, in the transposed orientation dstᵀ = W · xᵀ):
//
//   - x is packed once per call into panels of 16 tokens, (Cols, 16) each,
//     zero-padded past n ("pack" phase, parallel over panels);
//   - workers claim blocks of gemmMC = 48 weight rows; for each slice of
//     gemmKC = 256 columns the block is decoded to float32 (F16/BF16
//     widened, quantized types dequantized by the AVX2 decoders of
//     dequant_amd64.s; F32 read in place), 48 KB that stay in L2, and
//     multiplied by gemmNP = 8 token panels (128 tokens) at a time, so the
//     block, those panels' B slices and their part of dstᵀ fit in L2
//     together;
//   - the 6×16 micro-kernel multiplies 6 rows of that block by one token
//     panel: per column, 2 loads + 6 broadcasts feed 12 FMAs into 12 YMM
//     accumulators (96 floats of dstᵀ), so it runs at the FMA pipes' rate;
//   - the block's (48, npad) dstᵀ lives in a per-worker buffer and is
//     transposed into dst at the end.
//
// Each weight is thus read from DRAM once per call and decoded once per
// 128 tokens, and reused from L1/L2 for all n tokens.
//
// Quantized weights of the K-quant types (Q4_K, Q5_K, Q6_K) take, from
// rowwiseKMax tokens on, the integer GEMM of gemm_quant.go instead on amd64
// (the multi-token row dots above win below that): x is quantized once per call
// to Q8_K (as the matrix-vector path and llama.cpp do, so every n sees the
// same 8-bit activations), weight blocks are unpacked to bytes and 2-row ×
// 4-token VPMADDUBSW tiles accumulate in int32: ~1.5× the float GEMM's
// rate per core from n = 32 on (BenchmarkQGEMM; about even at n = 16).
// The Q8_0 family's integer kernel, which needs a float scale step per 32
// products, wins only at a few hundred tokens (+15-25% at n = 512) and is
// used from qg8MinN = 256 on. An
// earlier attempt — the integer row dots for every token over an
// L2-resident chunk of rows — reached 35-55 GFLOP/s per core against 56-67
// for dequantize-then-FMA: without register tiling neither the unpacking
// nor the activation loads are shared.
const (
	gemmMC = 48  // weight rows per block (multiple of gemmMR)
	gemmKC = 256 // columns per block (multiple of every quant block size)
	gemmNP = 8   // token panels (of gemmNR) per pass over a row block

	// Few tokens take the matrix-vector kernels instead of the GEMM,
	// whose 16-token panels would be mostly padding: quantized weights of
	// the types with integer kernels (qdotType) for n < rowwiseQuantMax
	// (the K-quants: rowwiseKMax), with 8-bit activations as for n = 1
	// (the integer dot of one token costs about what the GEMM spends per
	// padded token), float weights for n ≤ rowwiseFloatMax (dot4 runs at
	// ~1/2-1/3 of the GEMM's rate per token). Chunks of rows are sized to
	// stay in L2.
	rowwiseQuantMax   = gemmNR
	rowwiseFloatMax   = 4
	rowwiseChunkBytes = 128 << 10
)

// rowwiseKMax: K-quant weights (Q4_K, Q5_K, Q6_K) take the row dots (four
// tokens at a time) for n < rowwiseKMax tokens and the GEMM from there on;
// see the comment at the top. A variable so tests can send small n to the
// GEMM.
var rowwiseKMax = 64

// workerScratch is one worker's reusable memory.
type workerScratch struct {
	rows []float32 // (4, Cols) dequantized rows, generic matrix-vector
	a    []float32 // (gemmMC, gemmKC) decoded weight block
	af   []float32 // (K/gemmKC, gemmMC, gemmKC) whole decoded row block, when several panel groups reuse it
	c    []float32 // (gemmMC, npad) dstᵀ of the current row block
	qa   []byte    // (qgMC, qgKSB, qgSB) unpacked quantized weight block
	dwf  []float32 // (qg8MC/8, qg8KB, 8) Q8_0-family block scales
}

// sharedScratch is filled in one phase and read by all workers in the next.
type sharedScratch struct {
	b   []float32 // (npad/16, Cols, 16) packed x panels
	dxv []float32 // (npad/4, blocks, 8) activation scales of 4-token groups
	xm  []int8    // (npad, Cols) activations in the integer kernels' layout
}

func growBuf(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

const (
	phaseMatVec = iota
	phasePack
	phaseGEMM
	phaseQQuant
	phaseQGEMM
)

// matJob is the task behind MatMul; one lives in each pool and is reused.
type matJob struct {
	s     *pool
	phase int
	dst   []float32
	w     *Mat
	x     []float32
	n     int
	npad  int  // n rounded up to gemmNR
	chunk int  // rows per claimed matrix-vector chunk
	quant bool // matrix-vector through s.acts (8-bit activations)
	x4    bool // quant, n > 1, four tokens at a time (dotQRowsX4)
	next  atomic.Int64
}

// MatMul computes dst = x · Wᵀ: x is (n, w.Cols), dst is (n, w.Rows),
// dst[t][r] = Σ_c W[r][c]·x[t][c]. n = 1 uses the bandwidth-bound
// matrix-vector kernels, n > 1 the blocked GEMM. Not safe for concurrent
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
	if n == 1 || rowwiseQuant(w.Type, n) || (n <= rowwiseFloatMax && isFloat(w.Type)) {
		// Matrix-vector kernels, one token after another over each chunk
		// of rows (for n > 1 the chunk is sized to stay in L2, so W is
		// still read from DRAM once).
		th := s.n
		if n == 1 {
			j.chunk = max(16, (w.Rows/(8*th)+15)&^15)
		} else {
			j.chunk = max(4, min(rowwiseChunkBytes/w.RowBytes(), w.Rows/(4*th))&^3)
		}
		if _, ok := actsFormat(w.Type); ok && quantizeActs(&s.acts, w.Type, x[:n*w.Cols]) == nil {
			j.quant = true
			if n > 1 && hasQdotX4(w.Type) {
				j.x4 = true
			}
			if j.x4 && w.Type != Q8_0 {
				// Scales of the groups of four tokens (qx4Group), (groups, nb, 8).
				nb := w.Cols / qkK
				s.shared.dxv = growBuf(s.shared.dxv, (n+3)/4*nb*8)
				var toks [4]int
				for t0 := 0; t0 < n; t0 += 4 {
					qx4Group(&toks, t0, n)
					qx4Scales(s.shared.dxv[t0/4*nb*8:], &s.acts, w.Cols, &toks)
				}
			}
		} else if !isFloat(w.Type) {
			for i := range s.scratch {
				s.scratch[i].rows = growBuf(s.scratch[i].rows, 4*w.Cols)
			}
		}
		j.phase = phaseMatVec
		s.run(j)
		j.dst, j.x, j.w = nil, nil, nil
		return
	}
	if qgemmType(w.Type, n) && w.Cols%w.Type.BlockSize() == 0 {
		j.qgemm()
		return
	}
	j.npad = (n + gemmNR - 1) / gemmNR * gemmNR
	s.shared.b = growBuf(s.shared.b, j.npad*w.Cols)
	for i := range s.scratch {
		sc := &s.scratch[i]
		sc.a = growBuf(sc.a, gemmMC*gemmKC)
		sc.c = growBuf(sc.c, gemmMC*(j.npad+gemmNR))
	}
	j.phase = phasePack
	s.run(j)
	j.phase = phaseGEMM
	j.next.Store(0)
	s.run(j)
	j.dst, j.x, j.w = nil, nil, nil
}

func isFloat(t DType) bool { return t == F32 || t == F16 || t == BF16 }

// rowwiseQuant reports whether MatMul of n > 1 tokens through type-t
// weights takes the row dots with 8-bit activations (a function of t and n
// only, whatever the CPU): n < rowwiseQuantMax for the types with integer
// row dots, n < rowwiseKMax for the K-quants.
func rowwiseQuant(t DType, n int) bool {
	switch t {
	case Q4_K, Q5_K, Q6_K:
		return n < rowwiseKMax
	}
	return n < rowwiseQuantMax && qdotType(t)
}

func (j *matJob) run(worker int) {
	sc := &j.s.scratch[worker]
	switch j.phase {
	case phaseMatVec:
		for {
			lo := int(j.next.Add(int64(j.chunk))) - j.chunk
			if lo >= j.w.Rows {
				return
			}
			j.matVec(sc, lo, min(lo+j.chunk, j.w.Rows))
		}
	case phasePack:
		for {
			tg := int(j.next.Add(1)) - 1
			if tg >= j.npad/gemmNR {
				return
			}
			j.pack(tg)
		}
	case phaseGEMM:
		for {
			r0 := int(j.next.Add(gemmMC)) - gemmMC
			if r0 >= j.w.Rows {
				return
			}
			j.gemmBlock(sc, r0, min(r0+gemmMC, j.w.Rows))
		}
	case phaseQQuant:
		for {
			g := int(j.next.Add(1)) - 1
			if g >= j.npad/qgNR {
				return
			}
			j.qgQuant(g)
		}
	case phaseQGEMM:
		for {
			mc := j.qgBlockRows()
			r0 := int(j.next.Add(int64(mc))) - mc
			if r0 >= j.w.Rows {
				return
			}
			j.qgemmBlock(sc, r0, min(r0+mc, j.w.Rows))
		}
	}
}

// matVec computes dst[t][r] for rows [lo, hi), token after token.
func (j *matJob) matVec(sc *workerScratch, lo, hi int) {
	w := j.w
	rb := w.RowBytes()
	for t := range j.n {
		x := j.x[t*w.Cols : (t+1)*w.Cols]
		dst := j.dst[t*w.Rows : (t+1)*w.Rows]
		var out [4]float32
		if isFloat(w.Type) {
			r := lo
			for ; r+4 <= hi; r += 4 {
				dot4(w.Type, w.Data[r*rb:], rb, x, &out)
				copy(dst[r:r+4], out[:])
			}
			for ; r < hi; r++ {
				dot4(w.Type, w.Data[r*rb:], 0, x, &out)
				dst[r] = out[0]
			}
			continue
		}
		if j.x4 {
			// Four tokens at a time: each weight block unpacked once for
			// all four (a single last token takes the row dots).
			if t%4 != 0 {
				continue
			}
			var toks [4]int
			if qx4Group(&toks, t, j.n) > 1 {
				var dxv []float32
				if w.Type != Q8_0 {
					nb := w.Cols / qkK
					dxv = j.s.shared.dxv[t/4*nb*8 : (t/4+1)*nb*8]
				}
				dotQRowsX4(w.Type, j.dst, w.Rows, w.Data, rb, lo, hi, w.Cols, &j.s.acts, &toks, dxv)
				continue
			}
		}
		if j.quant {
			// Integer dots against the 8-bit activations, as llama.cpp does.
			dotQRows(w.Type, dst[lo:hi], w.Data[lo*rb:], rb, w.Cols, &j.s.acts, t*w.Cols)
			continue
		}
		// Other types (n = 1 only): dequantize four rows, then the F32 kernel.
		buf := sc.rows[:4*w.Cols]
		for r := lo; r < hi; r += 4 {
			m := min(4, hi-r)
			for i := range m {
				dequantFast(buf[i*w.Cols:(i+1)*w.Cols], w.Type, w.Data[(r+i)*rb:(r+i+1)*rb])
			}
			dot4(F32, F32Bytes(buf), w.Cols*4, x, &out)
			copy(dst[r:r+m], out[:m])
		}
	}
}
