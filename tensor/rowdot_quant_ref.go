package tensor

// Quantized dot products, the way llama.cpp's CPU backend computes
// W·x for block-quantized W: the activation vector x is first quantized per
// block to 8 bits (Q8_0 blocks for Q4_0/Q5_0/Q8_0 weights, Q8_1 for
// Q4_1/Q5_1, whose per-block offset m needs Σq of the activation block, and
// Q8_K super-blocks for the K-quants, which carry 16-element sums bsums for
// the same reason). Then each weight block meets the activation block of the
// same columns in a pure integer dot product, and only the block result is
// scaled in float:
//
//	Q4_0·Q8_0: dw·da · Σ (qw−8)·qa
//	Q4_1·Q8_1: dw·da · Σ qw·qa  +  mw·sa            (sa = da·Σqa)
//	K-quants:  dW·da · Σ_sub sc_sub·Σ qw·qa  −  dminW·da · Σ_sub m_sub·Σ qa
//
// This is faster than dequantizing (integer multiply-adds, no per-element
// float work) and differs from the float path only by the 8-bit rounding of
// x, whose error is ~0.3% of |x| per element and averages out in the sum.
// dotDequant (dequantize W, float32 dot with exact x) is the precision
// reference.

import "math"

// dotQ returns Σ w[i]·a[off+i] over the n elements encoded in the weight row
// w (n = len(w)/BlockBytes·BlockSize) using the integer block dot products.
// a must have been quantized for weight type wt, and off must be a multiple
// of the activation block size with off+n ≤ a.N (a row of a batch quantized
// in one call sits at off = t·cols). Misuse (activations quantized for
// another weight family, off out of range) panics: it is a programming error.
func dotQ(wt DType, w []byte, a *quantizedActs, off int) float32 {
	if f, ok := actsFormat(wt); !ok || f != a.Format {
		panic("tensor: dotQ: " + wt.String() + " weights with " + a.Format.String() + " activations")
	}
	switch wt {
	case Q4_0:
		return dotQ4_0(w, a.Q[off:], a.D[off/32:])
	case Q4_1:
		return dotQ4_1(w, a.Q[off:], a.D[off/32:], a.S[off/32:])
	case Q5_0:
		return dotQ5_0(w, a.Q[off:], a.D[off/32:])
	case Q5_1:
		return dotQ5_1(w, a.Q[off:], a.D[off/32:], a.S[off/32:])
	case Q8_0:
		return dotQ8_0(w, a.Q[off:], a.D[off/32:])
	case Q2_K:
		return dotQ2_K(w, a.Q[off:], a.D[off/qkK:], a.BSums[off/16:])
	case Q3_K:
		return dotQ3_K(w, a.Q[off:], a.D[off/qkK:])
	case Q4_K:
		return dotQ4_K(w, a.Q[off:], a.D[off/qkK:], a.BSums[off/16:])
	case Q5_K:
		return dotQ5_K(w, a.Q[off:], a.D[off/qkK:], a.BSums[off/16:])
	case Q6_K:
		return dotQ6_K(w, a.Q[off:], a.D[off/qkK:])
	case IQ4_NL:
		return dotIQ4_NL(w, a.Q[off:], a.D[off/32:])
	case MXFP4:
		return dotMXFP4(w, a.Q[off:], a.D[off/32:])
	case IQ4_XS:
		return dotIQ4_XS(w, a.Q[off:], a.D[off/qkK:])
	case IQ3_S:
		return dotIQ3_S(w, a.Q[off:], a.D[off/qkK:])
	}
	panic("unreachable")
}

func dotQ4_0(w []byte, q []int8, d []float32) float32 {
	var sum float32
	for b := 0; b < len(w)/18; b++ {
		blk := w[18*b : 18*b+18]
		qs, y := blk[2:18], q[32*b:32*b+32]
		var s int32
		for j := range 16 {
			s += (int32(qs[j]&0xF)-8)*int32(y[j]) + (int32(qs[j]>>4)-8)*int32(y[j+16])
		}
		// Rounded step by step (no fused multiply-add), as the packed
		// kernels compute it (rowdot_q4x8.go).
		sum += float32(float32(f16At(blk)*d[b]) * float32(s))
	}
	return sum
}

func dotQ4_1(w []byte, q []int8, d, s []float32) float32 {
	var sum float32
	for b := 0; b < len(w)/20; b++ {
		blk := w[20*b : 20*b+20]
		qs, y := blk[4:20], q[32*b:32*b+32]
		var si int32
		for j := range 16 {
			si += int32(qs[j]&0xF)*int32(y[j]) + int32(qs[j]>>4)*int32(y[j+16])
		}
		sum += float32(float32(f16At(blk)*d[b])*float32(si)) + float32(f16At(blk[2:])*s[b])
	}
	return sum
}

func dotQ5_0(w []byte, q []int8, d []float32) float32 {
	var sum float32
	for b := 0; b < len(w)/22; b++ {
		blk := w[22*b : 22*b+22]
		qh, qs, y := u32At(blk[2:]), blk[6:22], q[32*b:32*b+32]
		var s int32
		for j := range 16 {
			x0 := int32(qs[j]&0xF|uint8(qh>>j<<4)&0x10) - 16
			x1 := int32(qs[j]>>4|uint8(qh>>(j+12))&0x10) - 16
			s += x0*int32(y[j]) + x1*int32(y[j+16])
		}
		// Rounded step by step, as the packed kernels (rowdot_q4x8.go).
		sum += float32(float32(f16At(blk)*d[b]) * float32(s))
	}
	return sum
}

func dotQ5_1(w []byte, q []int8, d, s []float32) float32 {
	var sum float32
	for b := 0; b < len(w)/24; b++ {
		blk := w[24*b : 24*b+24]
		qh, qs, y := u32At(blk[4:]), blk[8:24], q[32*b:32*b+32]
		var si int32
		for j := range 16 {
			x0 := int32(qs[j]&0xF | uint8(qh>>j<<4)&0x10)
			x1 := int32(qs[j]>>4 | uint8(qh>>(j+12))&0x10)
			si += x0*int32(y[j]) + x1*int32(y[j+16])
		}
		sum += float32(float32(f16At(blk)*d[b])*float32(si)) + float32(f16At(blk[2:])*s[b])
	}
	return sum
}

func dotQ8_0(w []byte, q []int8, d []float32) float32 {
	var sum float32
	for b := 0; b < len(w)/34; b++ {
		blk := w[34*b : 34*b+34]
		qs, y := blk[2:34], q[32*b:32*b+32]
		var s int32
		for j := range 32 {
			s += int32(int8(qs[j])) * int32(y[j])
		}
		// Rounded step by step, as the packed kernels (rowdot_q4x8.go).
		sum += float32(float32(f16At(blk)*d[b]) * float32(s))
	}
	return sum
}

// minSumK4 returns Σ_j m_j·(bsums[2j]+bsums[2j+1]) over the 8 sub-blocks of
// 32 of a Q4_K/Q5_K super-block: the min term's Σqa per sub-block.
func minSumK4(scales []byte, bsums []int16) int32 {
	var s int32
	for j := range 8 {
		_, m := scaleMinK4(j, scales)
		s += int32(m) * (int32(bsums[2*j]) + int32(bsums[2*j+1]))
	}
	return s
}

// dotQ2_K and dotQ3_K take the table formats' lane arithmetic
// (rowdot_iq_ref.go; their AVX2 kernels are in rowdot_iq_amd64.s): lane l
// sums, over the super-block's eight 32-element chunks, the exact
// sub-block-scaled integer products of elements 4l..4l+3, then
// acc_l ← acc_l + float32(s·float32(P_l)) with s = float32(da·d), folded by
// fold8. Q2_K's min term is one more scalar accumulator,
// m ← m + float32(dmin·float32(Σ_j m_j·bsum_j)), subtracted at the end.

func dotQ2_K(w []byte, q []int8, d []float32, bsums []int16) float32 {
	var acc [8]float32
	var macc float32
	for b := 0; b < len(w)/84; b++ {
		blk := w[84*b : 84*b+84]
		scales, qs := blk[0:16], blk[16:80]
		y := q[qkK*b : qkK*b+qkK]
		bs := bsums[16*b : 16*b+16]
		var summs int32
		for j := range 16 {
			summs += int32(bs[j]) * int32(scales[j]>>4)
		}
		var lane [8]int32
		for c := range 8 { // chunk c: elements 32c..32c+31, bits 2(c%4) of qs[32(c/4)+l]
			qq, yy, sh := qs[32*(c/4):32*(c/4)+32], y[32*c:32*c+32], uint(2*(c%4))
			for l := range 32 {
				lane[l/4] += int32(scales[2*c+l/16]&0xF) * int32(qq[l]>>sh&3) * int32(yy[l])
			}
		}
		dall := d[b] * f16At(blk[80:])
		dmin := d[b] * f16At(blk[82:])
		for l, p := range lane {
			acc[l] += float32(dall * float32(p))
		}
		macc += float32(dmin * float32(summs))
	}
	return fold8(&acc) - macc
}

func dotQ3_K(w []byte, q []int8, d []float32) float32 {
	var acc [8]float32
	var sc [16]int8
	for b := 0; b < len(w)/110; b++ {
		blk := w[110*b : 110*b+110]
		hm, qs := blk[0:32], blk[32:96]
		q3Scales(&sc, blk[96:108])
		y := q[qkK*b : qkK*b+qkK]
		var lane [8]int32
		for c := range 8 { // chunk c as Q2_K's; high bit c of hm[l], clear: −4
			qq, yy, sh := qs[32*(c/4):32*(c/4)+32], y[32*c:32*c+32], uint(2*(c%4))
			for l := range 32 {
				v := int32(qq[l] >> sh & 3)
				if hm[l]>>c&1 == 0 {
					v -= 4
				}
				lane[l/4] += int32(sc[2*c+l/16]) * v * int32(yy[l])
			}
		}
		s := d[b] * f16At(blk[108:])
		for l, p := range lane {
			acc[l] += float32(s * float32(p))
		}
	}
	return fold8(&acc)
}

func dotQ4_K(w []byte, q []int8, d []float32, bsums []int16) float32 {
	var sum float32
	for b := 0; b < len(w)/144; b++ {
		blk := w[144*b : 144*b+144]
		scales, qs := blk[4:16], blk[16:144]
		y := q[qkK*b : qkK*b+qkK]
		var isum int32
		for j := 0; j < 4; j++ {
			sc1, _ := scaleMinK4(2*j, scales)
			sc2, _ := scaleMinK4(2*j+1, scales)
			qq, yy := qs[32*j:32*j+32], y[64*j:64*j+64]
			var s1, s2 int32
			for l := range 32 {
				s1 += int32(qq[l]&0xF) * int32(yy[l])
				s2 += int32(qq[l]>>4) * int32(yy[l+32])
			}
			isum += int32(sc1)*s1 + int32(sc2)*s2
		}
		msum := minSumK4(scales, bsums[16*b:16*b+16])
		sum += float32(float32(f16At(blk)*d[b])*float32(isum)) - float32(float32(f16At(blk[2:])*d[b])*float32(msum))
	}
	return sum
}

func dotQ5_K(w []byte, q []int8, d []float32, bsums []int16) float32 {
	var sum float32
	for b := 0; b < len(w)/176; b++ {
		blk := w[176*b : 176*b+176]
		scales, qh, ql := blk[4:16], blk[16:48], blk[48:176]
		y := q[qkK*b : qkK*b+qkK]
		var isum int32
		for j := 0; j < 4; j++ {
			sc1, _ := scaleMinK4(2*j, scales)
			sc2, _ := scaleMinK4(2*j+1, scales)
			qq, yy := ql[32*j:32*j+32], y[64*j:64*j+64]
			sh := uint(2 * j)
			var s1, s2 int32
			for l := range 32 {
				v1 := int32(qq[l]&0xF) | int32(qh[l]>>sh&1)<<4
				v2 := int32(qq[l]>>4) | int32(qh[l]>>(sh+1)&1)<<4
				s1 += v1 * int32(yy[l])
				s2 += v2 * int32(yy[l+32])
			}
			isum += int32(sc1)*s1 + int32(sc2)*s2
		}
		msum := minSumK4(scales, bsums[16*b:16*b+16])
		sum += float32(float32(f16At(blk)*d[b])*float32(isum)) - float32(float32(f16At(blk[2:])*d[b])*float32(msum))
	}
	return sum
}

func dotQ6_K(w []byte, q []int8, d []float32) float32 {
	var sum float32
	for b := 0; b < len(w)/210; b++ {
		blk := w[210*b : 210*b+210]
		var isum int32
		for n := 0; n < 2; n++ {
			ql := blk[64*n : 64*n+64]
			qh := blk[128+32*n : 128+32*n+32]
			sc := blk[192+8*n : 192+8*n+8]
			y := q[qkK*b+128*n : qkK*b+128*n+128]
			var s [8]int32 // per 16-element sub-block
			for l := range 32 {
				is := l / 16
				q1 := int32(ql[l]&0xF|(qh[l]&3)<<4) - 32
				q2 := int32(ql[l+32]&0xF|(qh[l]>>2&3)<<4) - 32
				q3 := int32(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
				q4 := int32(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
				s[is] += q1 * int32(y[l])
				s[is+2] += q2 * int32(y[l+32])
				s[is+4] += q3 * int32(y[l+64])
				s[is+6] += q4 * int32(y[l+96])
			}
			for j := range 8 {
				isum += int32(int8(sc[j])) * s[j]
			}
		}
		sum += float32(d[b]*f16At(blk[208:])) * float32(isum)
	}
	return sum
}

// dotDequant is the float reference for dotQ: Σ w[i]·x[i] with the weight
// row w (type t, len(x) elements) decoded to float32 256 elements at a time
// and x used exactly, accumulated in float32 in order — the same value
// matMulRef computes. It does not allocate.
func dotDequant(t DType, w []byte, x []float32) float32 {
	bs, bb := t.BlockSize(), t.blockBytes()
	var buf [qkK]float32
	var s float32
	for i := 0; i < len(x); i += qkK {
		m := min(qkK, len(x)-i)
		if !dequantRow(buf[:m], t, w[i/bs*bb:(i+m)/bs*bb]) {
			return float32(math.NaN())
		}
		for j, v := range buf[:m] {
			s += v * x[i+j]
		}
	}
	return s
}

// matMulQuant is the quantized-activation counterpart of matMulRef over
// weight rows [lo, hi): x (n, w.Cols) is quantized per block to 8 bits (see
// actsFormat) and dst[t][r] = dotQ(W row r, x row t). Types without a
// quantized dot product (F32, F16, BF16) fall back to matMulRef. It
// allocates the quantized activations; matMulQuantActs reuses them.
func matMulQuant(dst []float32, w *Mat, x []float32, n, lo, hi int) {
	var a quantizedActs
	if err := quantizeActs(&a, w.Type, x[:n*w.Cols]); err != nil {
		matMulRef(dst, w, x, n, lo, hi)
		return
	}
	matMulQuantActs(dst, w, &a, n, lo, hi)
}

// matMulQuantActs is matMulQuant with x already quantized by
// quantizeActs(a, w.Type, x) — quantize once, then split rows over workers.
func matMulQuantActs(dst []float32, w *Mat, a *quantizedActs, n, lo, hi int) {
	for r := lo; r < hi; r++ {
		row := w.Row(r)
		for t := 0; t < n; t++ {
			dst[t*w.Rows+r] = dotQ(w.Type, row, a, t*w.Cols)
		}
	}
}
