package tensor

import "runtime"

// Safe Go wrappers around the kernels: each checks its slice bounds once,
// calls the assembly (kernels_float_amd64.s) on the part it handles when hasSIMD
// is set, and finishes ragged tails, or everything on other machines, in
// plain Go.

// floatBytes is the element size of the plain float types.
func floatBytes(t DType) int {
	if t == F32 {
		return 4
	}
	return 2 // F16, BF16
}

// dot4 sets out[i] = Σ_c W_i[c]·x[c] for the four rows W_i = w[i*lda:]
// (lda in bytes; lda = 0 repeats one row) encoded as t ∈ {F32, F16, BF16},
// over c < len(x). The ymm kernels prefetch the rows three groups of four
// ahead (rows 12-15), for a caller walking adjacent rows.
func dot4(t DType, w []byte, lda int, x []float32, out *[4]float32) {
	dot4Ahead(t, w, lda, 12*lda, x, out)
}

// dot4Ahead is dot4 whose ymm kernel prefetches each row's stream pf bytes
// ahead of its current column (see PFSETUP in kernels_float_amd64.s); pf
// changes no result.
func dot4Ahead(t DType, w []byte, lda, pf int, x []float32, out *[4]float32) {
	n := len(x)
	*out = [4]float32{}
	if n == 0 {
		return
	}
	_ = w[3*lda+n*floatBytes(t)-1] // the assembly reads up to here
	n8 := 0
	if hasSIMD && n >= 8 {
		n8 = n &^ 7
		switch {
		case hasAVX512 && t == F32:
			dot4F32Z(&w[0], uintptr(lda), &x[0], n8, out)
		case hasAVX512 && t == F16:
			dot4F16Z(&w[0], uintptr(lda), &x[0], n8, out)
		case hasAVX512 && t == BF16:
			dot4BF16Z(&w[0], uintptr(lda), &x[0], n8, out)
		case t == F32:
			dot4F32SIMD(&w[0], uintptr(lda), &x[0], n8, out, uintptr(pf))
		case t == F16:
			dot4F16SIMD(&w[0], uintptr(lda), &x[0], n8, out, uintptr(pf))
		case t == BF16:
			dot4BF16SIMD(&w[0], uintptr(lda), &x[0], n8, out, uintptr(pf))
		}
	}
	if n8 < n {
		for i := range 4 {
			out[i] += dotGo(t, w[i*lda:], x, n8, n)
		}
	}
}

// dotRowsHalf sets dst[i] = row i · x for len(dst) F16 or BF16 rows (t)
// of len(x) values, row i at w[i·stride:], each by dot4's arithmetic (the
// zmm set's: dotRowsF16Z or dotRowsBF16Z, then the Cols%8 tail in Go, as
// dot4 adds it) — the n = 1 path of the 16-bit float types on AVX-512
// hosts, one read stream instead of dot4's four interleaved rows.
// Requires hasAVX512 (and so hasSIMD) and len(x) ≥ 8.
func dotRowsHalf(t DType, dst []float32, w []byte, stride int, x []float32) {
	n := len(x)
	rows := len(dst)
	if rows == 0 {
		return
	}
	_ = w[(rows-1)*stride+2*n-1]
	n8 := n &^ 7
	if !hasAVX512 || n8 == 0 || t != F16 && t != BF16 {
		panic("tensor: dotRowsHalf of " + t.String() + " without AVX-512 or with fewer than 8 columns")
	}
	if t == F16 {
		dotRowsF16Z(&w[0], uintptr(stride), &x[0], n8, rows, &dst[0])
	} else {
		dotRowsBF16Z(&w[0], uintptr(stride), &x[0], n8, rows, &dst[0])
	}
	if n8 < n {
		for i := range dst {
			dst[i] += dotGo(t, w[i*stride:], x, n8, n)
		}
	}
}

// dotGo is Σ_{lo≤c<hi} W[c]·x[c] for one row w encoded as t, in Go.
func dotGo(t DType, w []byte, x []float32, lo, hi int) float32 {
	var s0, s1, s2, s3 float32
	c := lo
	switch t {
	case F32:
		wf := BytesF32(w[:hi*4])
		for ; c+4 <= hi; c += 4 {
			s0 += wf[c] * x[c]
			s1 += wf[c+1] * x[c+1]
			s2 += wf[c+2] * x[c+2]
			s3 += wf[c+3] * x[c+3]
		}
		for ; c < hi; c++ {
			s0 += wf[c] * x[c]
		}
	case F16:
		for ; c < hi; c++ {
			s0 += F16ToF32(uint16(w[2*c])|uint16(w[2*c+1])<<8) * x[c]
		}
	case BF16:
		for ; c < hi; c++ {
			s0 += bf16ToF32(uint16(w[2*c])|uint16(w[2*c+1])<<8) * x[c]
		}
	}
	return (s0 + s1) + (s2 + s3)
}

// cvtRow decodes len(dst) elements of F32, F16 or BF16 from src.
func cvtRow(dst []float32, t DType, src []byte) {
	n := len(dst)
	if n == 0 {
		return
	}
	_ = src[n*floatBytes(t)-1]
	n8 := 0
	if hasSIMD && t != F32 {
		n8 = n &^ 7
		if n8 > 0 {
			if t == F16 {
				cvtF16SIMD(&dst[0], &src[0], n8)
			} else {
				cvtBF16SIMD(&dst[0], &src[0], n8)
			}
		}
	}
	switch t {
	case F32:
		copy(dst, BytesF32(src[:n*4]))
	case F16:
		for i := n8; i < n; i++ {
			dst[i] = F16ToF32(uint16(src[2*i]) | uint16(src[2*i+1])<<8)
		}
	case BF16:
		for i := n8; i < n; i++ {
			dst[i] = bf16ToF32(uint16(src[2*i]) | uint16(src[2*i+1])<<8)
		}
	}
}

// sumF32 is Σ v[i] (any order); with AVX2 it reads at full memory speed,
// which is what the bandwidth benchmark measures.
func sumF32(v []float32) float32 {
	var s float32
	n32 := 0
	if hasSIMD {
		n32 = len(v) &^ 31
		if n32 > 0 {
			s = sumF32SIMD(&v[0], n32)
		}
	}
	var s0, s1, s2, s3 float32
	i := n32
	for ; i+4 <= len(v); i += 4 {
		s0 += v[i]
		s1 += v[i+1]
		s2 += v[i+2]
		s3 += v[i+3]
	}
	for ; i < len(v); i++ {
		s0 += v[i]
	}
	return s + (s0 + s1) + (s2 + s3)
}

// FloatKernels names the kernel set the float weights (F32, F16, BF16)
// multiply with on this machine: "avx512" (zmm, hasAVX512), "avx2" (ymm),
// "neon", or "go". Each set is batch-invariant on its own and reduces in its
// own order (see matmul.go), so results agree across sets only to rounding;
// bench reports it beside the FMA peak of the matching vector width.
func FloatKernels() string {
	switch {
	case !hasSIMD:
		return "go"
	case hasAVX512:
		return "avx512"
	case runtime.GOARCH == "arm64":
		return "neon"
	}
	return "avx2"
}
