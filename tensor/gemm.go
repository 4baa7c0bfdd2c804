package tensor

import (
	"fmt"
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
// route: x is quantized once to 8 bits (QuantizeActs) and each row is an
// integer dot product (AVX2 for Q8_0, Q4_K, Q6_K; dotQFast), so a Q4_K
// row streams 0.56 B/weight and never expands to float.
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
//     gemmKC = 256 columns the block is decoded once to float32 (F16/BF16
//     widened, quantized types dequantized; F32 read in place), 48 KB that
//     stay in L2;
//   - the 6×16 micro-kernel multiplies 6 rows of that block by one token
//     panel: per column, 2 loads + 6 broadcasts feed 12 FMAs into 12 YMM
//     accumulators (96 floats of dstᵀ), so it runs at the FMA pipes' rate;
//   - the block's (48, npad) dstᵀ lives in a per-worker buffer and is
//     transposed into dst at the end.
//
// Each weight is thus read from DRAM once and decoded once per call, and
// reused from L1/L2 for all n tokens.
const (
	gemmMC = 48  // weight rows per block (multiple of gemmMR)
	gemmKC = 256 // columns per block (multiple of every quant block size)

	// qgemmChunkBytes bounds the weight bytes of one chunk of rows in the
	// quantized prefill path, so the chunk stays in L2 while every token
	// passes over it.
	qgemmChunkBytes = 96 << 10
)

// useQGEMM selects the integer-dot prefill path for quantized weights
// (benchmarks flip it to compare with the dequantizing GEMM).
var useQGEMM = true

// workerScratch is one worker's reusable memory.
type workerScratch struct {
	rows []float32 // (4, Cols) dequantized rows, generic matrix-vector
	a    []float32 // (gemmMC, gemmKC) decoded weight block
	c    []float32 // (gemmMC, npad) dstᵀ of the current row block
}

// sharedScratch is filled in one phase and read by all workers in the next.
type sharedScratch struct {
	b []float32 // (npad/16, Cols, 16) packed x panels
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
	phaseQuantize // x → s.acts, one token per claim
	phaseQGEMM    // integer dots, a chunk of rows × all tokens per claim
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
	next  atomic.Int64
}

// MatMul computes dst = x · Wᵀ: x is (n, w.Cols), dst is (n, w.Rows),
// dst[t][r] = Σ_c W[r][c]·x[t][c]. n = 1 uses the bandwidth-bound
// matrix-vector kernels, n > 1 the blocked GEMM. Not safe for concurrent
// use of one Pool; a nil Pool computes on the calling goroutine.
func (p *Pool) MatMul(dst []float32, w *Mat, x []float32, n int) {
	if n <= 0 || w.Rows == 0 {
		return
	}
	if len(x) < n*w.Cols || len(dst) < n*w.Rows {
		panic(fmt.Sprintf("tensor: MatMul of (%d, %d) weights by %d tokens needs x %d and dst %d floats, have %d and %d",
			w.Rows, w.Cols, n, n*w.Cols, n*w.Rows, len(x), len(dst)))
	}
	var s *pool
	if p == nil {
		s = &pool{n: 1, scratch: make([]workerScratch, 1)}
	} else {
		s = p.pool
	}
	j := &s.mm
	*j = matJob{s: s, dst: dst, w: w, x: x, n: n}
	if n == 1 {
		th := s.n
		j.chunk = max(16, (w.Rows/(8*th)+15)&^15)
		if _, ok := ActsFormat(w.Type); ok && QuantizeActs(&s.acts, w.Type, x[:w.Cols]) == nil {
			j.quant = true
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
	if useQGEMM && hasQdotKernel(w.Type) && s.acts.resize(w.Type, n*w.Cols) == nil {
		// Quantized weights with an integer-dot kernel: quantize every
		// token once (in parallel), then stream each chunk of rows from
		// memory once and dot it, from L2, with every token.
		j.phase = phaseQuantize
		s.run(j)
		rb := w.RowBytes()
		th := s.n
		j.chunk = max(4, min(qgemmChunkBytes/rb, (w.Rows+4*th-1)/(4*th)))
		j.phase = phaseQGEMM
		j.next.Store(0)
		s.run(j)
		j.dst, j.x, j.w = nil, nil, nil
		return
	}
	j.npad = (n + gemmNR - 1) / gemmNR * gemmNR
	s.shared.b = growBuf(s.shared.b, j.npad*w.Cols)
	for i := range s.scratch {
		sc := &s.scratch[i]
		sc.a = growBuf(sc.a, gemmMC*gemmKC)
		sc.c = growBuf(sc.c, gemmMC*j.npad)
	}
	j.phase = phasePack
	s.run(j)
	j.phase = phaseGEMM
	j.next.Store(0)
	s.run(j)
	j.dst, j.x, j.w = nil, nil, nil
}

func isFloat(t DType) bool { return t == F32 || t == F16 || t == BF16 }

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
	case phaseQuantize:
		bpt := j.w.Cols / j.s.acts.Format.BlockSize() // blocks per token
		for {
			t := int(j.next.Add(1)) - 1
			if t >= j.n {
				return
			}
			j.s.acts.quantizeBlocks(j.x, t*bpt, (t+1)*bpt)
		}
	case phaseQGEMM:
		w := j.w
		rb := w.RowBytes()
		for {
			lo := int(j.next.Add(int64(j.chunk))) - j.chunk
			if lo >= w.Rows {
				return
			}
			hi := min(lo+j.chunk, w.Rows)
			for t := range j.n {
				dotQRows(w.Type, j.dst[t*w.Rows+lo:t*w.Rows+hi], w.Data[lo*rb:], rb, w.Cols, &j.s.acts, t*w.Cols)
			}
		}
	case phaseGEMM:
		for {
			r0 := int(j.next.Add(gemmMC)) - gemmMC
			if r0 >= j.w.Rows {
				return
			}
			j.gemmBlock(sc, r0, min(r0+gemmMC, j.w.Rows))
		}
	}
}

// matVec computes dst[r] for rows [lo, hi) of a single token.
func (j *matJob) matVec(sc *workerScratch, lo, hi int) {
	w, dst := j.w, j.dst
	x := j.x[:w.Cols]
	rb := w.RowBytes()
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
		return
	}
	if j.quant {
		// Integer dots against the 8-bit activations, as llama.cpp does.
		dotQRows(w.Type, dst[lo:hi], w.Data[lo*rb:], rb, w.Cols, &j.s.acts, 0)
		return
	}
	// Other types: dequantize four rows, then the F32 kernel.
	buf := sc.rows[:4*w.Cols]
	for r := lo; r < hi; r += 4 {
		m := min(4, hi-r)
		for i := range m {
			DequantizeRow(buf[i*w.Cols:(i+1)*w.Cols], w.Type, w.Data[(r+i)*rb:(r+i+1)*rb])
		}
		dot4(F32, F32Bytes(buf), w.Cols*4, x, &out)
		copy(dst[r:r+m], out[:m])
	}
}

// pack writes token panel tg: b[tg][c][jj] = x[tg·16+jj][c], zero past n.
func (j *matJob) pack(tg int) {
	K := j.w.Cols
	b := j.s.shared.b[tg*K*gemmNR : (tg+1)*K*gemmNR]
	for jj := range gemmNR {
		t := tg*gemmNR + jj
		if t >= j.n {
			for c := range K {
				b[c*gemmNR+jj] = 0
			}
			continue
		}
		for c, v := range j.x[t*K : (t+1)*K] {
			b[c*gemmNR+jj] = v
		}
	}
}

// gemmBlock computes dst[t][r] for rows [r0, r1) (at most gemmMC) and all
// tokens.
func (j *matJob) gemmBlock(sc *workerScratch, r0, r1 int) {
	w := j.w
	K, rb, npad, t := w.Cols, w.RowBytes(), j.npad, w.Type
	m := r1 - r0
	mp := (m + gemmMR - 1) / gemmMR * gemmMR // rows padded to whole micro-tiles
	c := sc.c[:mp*npad]
	direct := t == F32 && m == mp
	for kb := 0; kb < K; kb += gemmKC {
		kc := min(gemmKC, K-kb)
		var a []float32
		var lda int
		if direct {
			a, lda = BytesF32(w.Data[r0*rb : r1*rb])[kb:], K
		} else {
			a, lda = sc.a[:mp*gemmKC], gemmKC
			for i := range mp {
				ai := a[i*lda : i*lda+kc]
				if i >= m {
					clear(ai)
					continue
				}
				row := w.Data[(r0+i)*rb : (r0+i+1)*rb]
				if isFloat(t) {
					fb := floatBytes(t)
					cvtRow(ai, t, row[kb*fb:(kb+kc)*fb])
				} else {
					bs, bb := t.BlockSize(), t.BlockBytes()
					DequantizeRow(ai, t, row[kb/bs*bb:(kb+kc)/bs*bb])
				}
			}
		}
		for tg := 0; tg < npad/gemmNR; tg++ {
			b := j.s.shared.b[(tg*K+kb)*gemmNR:]
			for g := 0; g < mp; g += gemmMR {
				gemmTile(a[g*lda:], lda, b, c[g*npad+tg*gemmNR:], npad, kc, kb > 0)
			}
		}
	}
	// dstᵀ block → dst.
	rows := w.Rows
	for i := range m {
		ci := c[i*npad : i*npad+j.n]
		for tok, v := range ci {
			j.dst[tok*rows+r0+i] = v
		}
	}
}
