package tensor

import (
	"fmt"
	"math"
)

// actsFormat is the block format activations are quantized to for a dot
// product with weights of type wt: Q8_0, Q8_1 or Q8_K. ok is false when wt
// has no quantized dot product (plain float types included).
func actsFormat(wt DType) (f DType, ok bool) {
	switch wt {
	case Q4_0, Q5_0, Q8_0, IQ4_NL, MXFP4:
		return Q8_0, true
	case Q4_1, Q5_1:
		return Q8_1, true
	case Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS, IQ3_S:
		return Q8_K, true
	}
	return 0, false
}

// quantizedActs is an activation vector (or several laid end to end)
// quantized per block to 8 bits, in struct-of-arrays form so kernels can
// stream the int8 values. Values decode as Q[i]·D[i/blockSize], with
// blockSize 32 for Q8_0/Q8_1 and 256 for Q8_K. The buffers are reused by
// quantizeActs when large enough, so a steady-state decode loop does not
// allocate.
type quantizedActs struct {
	Format DType     // Q8_0, Q8_1 or Q8_K
	N      int       // number of elements
	Q      []int8    // (N) quantized values
	D      []float32 // (N/blockSize) block scales; fp16-rounded for Q8_0/Q8_1 as ggml stores them
	S      []float32 // Q8_1 only: (N/32) fp16(d·Σq) per block
	BSums  []int16   // Q8_K only: (N/16) sums of 16 consecutive Q
	QP     []int8    // Q8_K where kzActs: (N) Q with each super-block's 32-value sub-blocks paired as qdotQ4_KZ reads them (pairK4)
	NS     []int32   // Q8_0 for IQ4_NL and MXFP4 weights: (N/32) −128·Σq per block, the bias correction of the biased-level kernels (qdotIQ4_NLZV); empty otherwise
	QN     []int8    // Q8_0 for IQ4_NL and MXFP4 weights where nlPairActs(): (2·N rounded down to 512 per 8 blocks) Q and |Q| paired as the ymm row dots read them (pairNL), valid from element QNFrom on; empty otherwise
	QNFrom int       // the first element QN holds (a multiple of 256)
	Q4S    []int32   // Q8_0 for the packed Q4_0 kernels: (N/32) −8·Σq per block (q4Bias), empty until asked for
	FPS    []int32   // Q8_0 for the packed MXFP4 kernel: (N/32) −12·Σq per block (q4Bias), likewise
	Q5S    []int32   // Q8_0 for the packed Q5_0 kernels: (N/32) −16·Σq per block (q4Bias), likewise
}

func growI8(s []int8, n int) []int8 {
	if cap(s) < n {
		return make([]int8, n)
	}
	return s[:n]
}

func growF32(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// quantizeActs quantizes x into dst in the activation format for weights of
// type wt (see actsFormat), exactly as ggml's quantize_row_q8_0/q8_1/q8_K
// reference versions do. len(x) must be a multiple of the format's block
// size; x may hold several rows end to end if each row is.
func quantizeActs(dst *quantizedActs, wt DType, x []float32) error {
	return quantizeActsFrom(dst, wt, x, 0)
}

// quantizeActsFrom is quantizeActs with IQ4_NL's and MXFP4's paired layout
// (QN) built only from element pairFrom on: MatMul's tokens that take the
// row dots, not the tiles (copying every token's values twice over cost a
// prefill of TinyLlama-shaped IQ4_NL ~12% on a Zen 3 host).
func quantizeActsFrom(dst *quantizedActs, wt DType, x []float32, pairFrom int) error {
	if err := dst.resize(wt, len(x)); err != nil {
		return err
	}
	dst.quantizeBlocks(x, 0, len(x)/dst.Format.BlockSize())
	if dst.Format == Q8_K && kzActs {
		dst.QP = growI8(dst.QP, len(x))
		pairK4(dst.QP, dst.Q)
	}
	dst.NS, dst.Q4S, dst.FPS, dst.Q5S = dst.NS[:0], dst.Q4S[:0], dst.FPS[:0], dst.Q5S[:0]
	dst.QN, dst.QNFrom = dst.QN[:0], 0
	if dst.Format == Q8_0 && (wt == IQ4_NL || wt == MXFP4) {
		// The ymm row dots read QN, the others NS (dotQRows): one of the two.
		if nlPairActs() {
			dst.QN, dst.QNFrom = pairNL(dst.QN, dst.Q, pairFrom/256), pairFrom/256*256
		} else {
			dst.NS = biasSums(dst.NS, dst.Q, -128)
		}
	}
	return nil
}

// pairNL returns p (grown) holding, for every whole group g ≥ g0 of eight
// 32-value blocks of q (blocks 8g..8g+7, from q's start), 512 bytes in the order the
// ymm IQ4_NL/MXFP4 row dots read them: for each pair j = 0..3 of blocks
// b = 8g+j and b+4, whose code bytes share one register (block b in the
// low 128 bits, b+4 in the high), 128 bytes
//
//	q_b[0:16]  q_(b+4)[0:16]    the values of the low nibbles
//	q_b[16:32] q_(b+4)[16:32]   the values of the high nibbles
//	|…|, |…|                    the same two 32-byte rows in magnitude
//
// The kernel takes sign(q) onto the levels (VPSIGNB) and |q| as
// VPMADDUBSW's unsigned operand: the same products, the same exact block
// sums. |q| ≤ 127 (Q8_0 never holds −128).
func pairNL(p []int8, q []int8, g0 int) []int8 {
	groups := len(q) / 256
	if cap(p) < 512*groups {
		p = make([]int8, 512*groups)
	}
	p = p[:512*groups]
	for g := g0; g < groups; g++ {
		for j := range 4 {
			lo, hi := q[256*g+32*j:], q[256*g+32*(j+4):]
			o := p[512*g+128*j : 512*g+128*j+128]
			copy(o[0:16], lo[0:16])
			copy(o[16:32], hi[0:16])
			copy(o[32:48], lo[16:32])
			copy(o[48:64], hi[16:32])
			for i, v := range o[:64] {
				o[64+i] = max(v, -v)
			}
		}
	}
	return p
}

// biasSums returns ns (grown) holding bias·Σ q[32b : 32b+32] for every
// block b of q: with bias −128, what a dot against unsigned level+128
// bytes must add to be the dot against the signed levels (IQ4_NL, MXFP4);
// with −8, likewise for Q4_0's nibbles (q4Bias).
func biasSums(ns []int32, q []int8, bias int32) []int32 {
	nb := len(q) / 32
	if cap(ns) < nb {
		ns = make([]int32, nb)
	}
	ns = ns[:nb]
	for b := range ns {
		var s int32
		for _, v := range q[32*b : 32*b+32] {
			s += int32(v)
		}
		ns[b] = bias * s
	}
	return ns
}

// pairK4 sets p to q (Q8_K values) with each super-block's eight 32-value
// sub-blocks in the order 0, 2, 1, 3, 4, 6, 5, 7: the order in which
// qdotQ4_KZ unpacks a Q4_K super-block — 64 bytes of packed nibbles at a
// time, whose low nibbles are sub-blocks 2h and 2h+2 and high nibbles 2h+1
// and 2h+3 (h = 0, 2) — so that one 64-byte load of p meets each unpacked
// register. A permutation of whole sub-blocks: the same products, the same
// exact int32 lane sums.
func pairK4(p, q []int8) {
	for b := 0; b+qkK <= len(q); b += qkK {
		for h := 0; h < 8; h += 4 {
			o := b + 32*h
			copy(p[o:o+32], q[o:o+32])
			copy(p[o+32:o+64], q[o+64:o+96])
			copy(p[o+64:o+96], q[o+32:o+64])
			copy(p[o+96:o+128], q[o+96:o+128])
		}
	}
}

// resize sets dst up for n activations in the format for weights wt,
// growing the buffers only when too small.
func (dst *quantizedActs) resize(wt DType, n int) error {
	f, ok := actsFormat(wt)
	if !ok {
		return fmt.Errorf("tensor: no quantized dot product for %s weights", wt)
	}
	bs := f.BlockSize()
	if n%bs != 0 {
		return fmt.Errorf("tensor: %d activations is not a whole number of %d-element %s blocks", n, bs, f)
	}
	nb := n / bs
	dst.Format, dst.N = f, n
	dst.Q = growI8(dst.Q, n)
	dst.D = growF32(dst.D, nb)
	if f == Q8_1 {
		dst.S = growF32(dst.S, nb)
	}
	if f == Q8_K {
		if cap(dst.BSums) < n/16 {
			dst.BSums = make([]int16, n/16)
		}
		dst.BSums = dst.BSums[:n/16]
	}
	return nil
}

// quantizeBlocks quantizes blocks [b0, b1) of x (the whole vector, as
// sized by resize) into dst, with the AVX2 kernels when available.
func (dst *quantizedActs) quantizeBlocks(x []float32, b0, b1 int) {
	if hasSIMD {
		dst.quantizeBlocksSIMD(x, b0, b1)
		return
	}
	dst.quantizeBlocksRef(x, b0, b1)
}

// quantizeBlocksRef is the reference quantizer behind quantizeBlocks.
func (dst *quantizedActs) quantizeBlocksRef(x []float32, b0, b1 int) {
	switch f := dst.Format; f {
	case Q8_0, Q8_1:
		for b := b0; b < b1; b++ {
			xs := x[32*b : 32*b+32]
			q := dst.Q[32*b : 32*b+32]
			_, amax := signedMax(xs)
			d := amax / 127
			var id float32
			if d != 0 {
				id = 1 / d
			}
			dst.D[b] = F16ToF32(F32ToF16(d))
			var sum int32
			for j, v := range xs {
				q[j] = int8(roundAway(v * id))
				sum += int32(q[j])
			}
			if f == Q8_1 {
				dst.S[b] = F16ToF32(F32ToF16(float32(sum) * d))
			}
		}
	case Q8_K:
		for b := b0; b < b1; b++ {
			xs := x[qkK*b : qkK*b+qkK]
			q := dst.Q[qkK*b : qkK*b+qkK]
			vmax, amax := signedMax(xs)
			if amax == 0 {
				dst.D[b] = 0
				clear(q)
				clear(dst.BSums[16*b : 16*b+16])
				continue
			}
			iscale := -127 / vmax
			for j, v := range xs {
				q[j] = int8(min(127, nearestInt(iscale*v)))
			}
			for j := range 16 {
				var s int16
				for _, v := range q[16*j : 16*j+16] {
					s += int16(v)
				}
				dst.BSums[16*b+j] = s
			}
			dst.D[b] = 1 / iscale
		}
	}
}

// quantizeBlocksSIMD is quantizeBlocksRef with the two passes of
// quantize_acts_amd64.s and the per-block scale arithmetic in Go between them
// (the same float32 expressions as the reference, so the results are
// identical). Blocks whose scale is not finite or zero — all-zero blocks,
// subnormal maxima, infinities — and inputs holding a NaN take the
// reference path. Blocks go in groups of at most qaGroup so the per-group
// scales live on the stack.
func (dst *quantizedActs) quantizeBlocksSIMD(x []float32, b0, b1 int) {
	const qaGroup = 64
	var scale, dr [qaGroup]float32 // per-block scale for pass 2; raw d (Q8_1)
	var bad [qaGroup]bool
	switch f := dst.Format; f {
	case Q8_0, Q8_1:
		for g := b0; g < b1; g += qaGroup {
			n := min(qaGroup, b1-g)
			xs := x[32*g : 32*(g+n)]
			amax := dst.D[g : g+n] // pass 1 output, then the scales
			if qAbsMax32SIMD(&xs[0], n, &amax[0]) {
				dst.quantizeBlocksRef(x, g, g+n)
				continue
			}
			anyBad := false
			for i, a := range amax {
				d := a / 127
				var id float32
				if d != 0 {
					id = 1 / d
				}
				bad[i] = !(a <= math.MaxFloat32) || !(id <= math.MaxFloat32) // ±Inf input, or Inf id from a subnormal d
				anyBad = anyBad || bad[i]
				scale[i] = id
				if bad[i] {
					scale[i] = 0
				}
				dr[i] = d
				amax[i] = F16ToF32(F32ToF16(d))
			}
			q := dst.Q[32*g : 32*(g+n)]
			qRound32SIMD(&xs[0], &scale[0], n, &q[0])
			if f == Q8_1 {
				for i := range n {
					var sum int32
					for _, v := range q[32*i : 32*i+32] {
						sum += int32(v)
					}
					dst.S[g+i] = F16ToF32(F32ToF16(float32(sum) * dr[i]))
				}
			}
			if anyBad {
				for i := range n {
					if bad[i] {
						dst.quantizeBlocksRef(x, g+i, g+i+1)
					}
				}
			}
		}
	case Q8_K:
		for g := b0; g < b1; g += qaGroup {
			n := min(qaGroup, b1-g)
			xs := x[qkK*g : qkK*(g+n)]
			vmax := dst.D[g : g+n]
			if qVMax256SIMD(&xs[0], n, &vmax[0]) {
				dst.quantizeBlocksRef(x, g, g+n)
				continue
			}
			anyBad := false
			for i, v := range vmax {
				iscale := -127 / v
				bad[i] = v == 0 || !(qabs(v) <= math.MaxFloat32) || !(qabs(iscale) <= math.MaxFloat32)
				anyBad = anyBad || bad[i]
				scale[i] = iscale
				if bad[i] {
					scale[i] = 0
				}
				vmax[i] = 1 / iscale
			}
			qRound256SIMD(&xs[0], &scale[0], n, &dst.Q[qkK*g], &dst.BSums[16*g])
			if anyBad {
				for i := range n {
					if bad[i] {
						dst.quantizeBlocksRef(x, g+i, g+i+1)
					}
				}
			}
		}
	}
}
