package tensor

// The float GEMM of MatMul for n > rowwiseFloatMax tokens (and for
// quantized weights without an integer path): pack x into token panels,
// decode weight blocks to float32, multiply with the 6×16 micro-kernel.
// The regimes and block sizes are explained in matmul.go.

// pack writes token panel tg: b[tg][c][jj] = x[tg·16+jj][c], zero past n.
// Eight columns at a time: the 16 token rows are read as 16 sequential
// streams and each 16-float output row is written whole.
func (j *matJob) pack(tg int) {
	K := j.w.Cols
	b := j.s.shared.b[tg*K*gemmNR : (tg+1)*K*gemmNR]
	m := min(gemmNR, j.n-tg*gemmNR) // real tokens in this panel
	var rows [gemmNR][]float32
	for jj := range m {
		t := tg*gemmNR + jj
		rows[jj] = j.x[t*K : (t+1)*K]
	}
	c := 0
	for ; c+8 <= K; c += 8 {
		bc := b[c*gemmNR : (c+8)*gemmNR]
		for jj := range m {
			r := rows[jj][c : c+8]
			bc[jj], bc[16+jj], bc[32+jj], bc[48+jj] = r[0], r[1], r[2], r[3]
			bc[64+jj], bc[80+jj], bc[96+jj], bc[112+jj] = r[4], r[5], r[6], r[7]
		}
		if m < gemmNR {
			for i := range 8 {
				clear(bc[i*gemmNR+m : (i+1)*gemmNR])
			}
		}
	}
	for ; c < K; c++ {
		bc := b[c*gemmNR : (c+1)*gemmNR]
		for jj := range m {
			bc[jj] = rows[jj][c]
		}
		clear(bc[m:])
	}
}

// gemmBlock computes dst[t][r] for rows [r0, r1) (at most gemmMC) and all
// tokens.
func (j *matJob) gemmBlock(sc *workerScratch, r0, r1 int) {
	w := j.w
	K, rb, npad, t := w.Cols, w.RowBytes(), j.npad, w.Type
	m := r1 - r0
	mp := (m + gemmMR - 1) / gemmMR * gemmMR // rows padded to whole micro-tiles
	// c rows are npad+16 floats apart: with npad a multiple of 1024 (or
	// 512) a stride of exactly npad would put every row of a column in the
	// same L1 set, and the final transposition below would thrash.
	ldc := npad + gemmNR
	c := sc.c[:mp*ldc]
	direct := t == F32 && m == mp
	panels := npad / gemmNR
	// Token panels go in groups of gemmNP so that the decoded block a, the
	// group's B slices and its part of c stay in L2 together; with all
	// panels at once (n = 512: 512 KB of B per kc step) a was evicted and
	// re-read from L3 for every panel.
	// With more than one group, the whole row block is decoded once, into
	// af (~0.4 MB at K = 2048), rather than once per group: F16→F32
	// conversion was ~12% of an F16 prefill of 512 tokens; decoding once
	// gave +5-6% tok/s (and tok/cpu-s) on TinyLlama F16 pp512, five paired
	// runs on a noisy host.
	whole := !direct && panels > gemmNP
	if whole {
		sc.af = growBuf(sc.af, (K+gemmKC-1)/gemmKC*mp*gemmKC)
		for kb := 0; kb < K; kb += gemmKC {
			j.decodeBlock(sc.af[kb/gemmKC*mp*gemmKC:], r0, m, mp, kb, min(gemmKC, K-kb))
		}
	}
	for p0 := 0; p0 < panels; p0 += gemmNP {
		p1 := min(p0+gemmNP, panels)
		for kb := 0; kb < K; kb += gemmKC {
			kc := min(gemmKC, K-kb)
			var a []float32
			lda := gemmKC
			switch {
			case direct:
				a, lda = BytesF32(w.Data[r0*rb : r1*rb])[kb:], K
			case whole:
				a = sc.af[kb/gemmKC*mp*gemmKC:]
			default:
				a = sc.a[:mp*gemmKC]
				j.decodeBlock(a, r0, m, mp, kb, kc)
			}
			for tg := p0; tg < p1; tg++ {
				b := j.s.shared.b[(tg*K+kb)*gemmNR:]
				for g := 0; g < mp; g += gemmMR {
					gemmTile(a[g*lda:], lda, b, c[g*ldc+tg*gemmNR:], ldc, kc, kb > 0)
				}
			}
		}
	}
	transposeStore(j.dst, c, w.Rows, r0, m, j.n, ldc)
}

// decodeBlock writes columns [kb, kb+kc) of weight rows [r0, r0+m) as
// float32 into a (mp, gemmKC), zero rows past m.
func (j *matJob) decodeBlock(a []float32, r0, m, mp, kb, kc int) {
	w := j.w
	t, rb := w.Type, w.RowBytes()
	for i := range mp {
		ai := a[i*gemmKC : i*gemmKC+kc]
		if i >= m {
			clear(ai)
			continue
		}
		row := w.Data[(r0+i)*rb : (r0+i+1)*rb]
		if isFloat(t) {
			fb := floatBytes(t)
			cvtRow(ai, t, row[kb*fb:(kb+kc)*fb])
		} else {
			bs, bb := t.BlockSize(), t.blockBytes()
			dequantFast(ai, t, row[kb/bs*bb:(kb+kc)/bs*bb])
		}
	}
}

// transposeStore writes the (m, ldc) dstᵀ block c of rows [r0, r0+m)
// into dst (n, rows): eight tokens at a time, so c is read along its rows
// and the eight destination rows being written stay in L1 (one token at a
// time read c down a column, a cache line per element).
func transposeStore(dst, c []float32, rows, r0, m, n, ldc int) {
	for t0 := 0; t0 < n; t0 += 8 {
		t1 := min(t0+8, n)
		for i := range m {
			ci := c[i*ldc+t0 : i*ldc+t1]
			for k, v := range ci {
				dst[(t0+k)*rows+r0+i] = v
			}
		}
	}
}
