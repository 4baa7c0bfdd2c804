package tensor

// Reference quantizers. Each mirrors ggml's quantize_row_*_ref (the path
// llama.cpp's quantizer takes without an importance matrix) operation by
// operation in float32, so quantizing the same float32 input gives the same
// bytes as the files llama.cpp writes. Rounding conventions differ per
// format and are kept exactly: Q8_0/Q8_1 round half away from zero (roundf);
// Q4_x/Q5_x add 0.5 (or 8.5/16.5) and truncate; the K-quants round half to
// even (nearestInt).

import (
	"fmt"
	"math"
)

// groupMaxEps: groups whose largest magnitude is below this quantize to zero.
const groupMaxEps = 1e-15

// nearestInt rounds to the nearest integer, ties to even, the way ggml does:
// adding 1.5·2²³ leaves the rounded integer in the low mantissa bits. Valid
// for |f| ≤ 2²²−1; larger inputs give a meaningless (but safe) value.
//
// The explicit float32(f) rounds f first: a product passed in (iscale·x)
// must not fuse with the addition into one FMA, which arm64 would do
// after inlining and which rounds differently from ggml.
func nearestInt(f float32) int32 {
	v := float32(f) + 12582912
	return int32(math.Float32bits(v)&0x007fffff) - 0x00400000
}

// roundAway is C's roundf: to nearest, halves away from zero.
func roundAway(f float32) float32 { return float32(math.Round(float64(f))) }

func qabs(f float32) float32 { return math.Float32frombits(math.Float32bits(f) &^ (1 << 31)) }

func qsqrt(f float32) float32 { return float32(math.Sqrt(float64(f))) }

// QuantizeRow encodes src into dst in format t (one row, or many rows laid
// end to end). len(src) must be a multiple of t's block size and len(dst)
// exactly t.RowBytes(len(src)). Supported: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
// Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K, IQ4_NL, IQ4_XS, IQ3_S, MXFP4, and the
// plain F32, F16, BF16.
func QuantizeRow(dst []byte, t DType, src []float32) error {
	if t == F16 {
		// The KV cache's encoding, once per token and layer: the kernel.
		if len(dst) != 2*len(src) {
			return fmt.Errorf("tensor: %d %s elements need %d bytes, dst has %d", len(src), t, 2*len(src), len(dst))
		}
		encodeF16Row(dst, src)
		return nil
	}
	q, ok := quantizers[t]
	if !ok {
		if t == F32 || t == F16 || t == BF16 {
			q = quantizePlain(t)
		} else {
			return fmt.Errorf("tensor: no quantizer for %s", t)
		}
	}
	n, err := t.RowBytes(len(src))
	if err != nil {
		return err
	}
	if len(dst) != n {
		return fmt.Errorf("tensor: %d %s elements need %d bytes, dst has %d", len(src), t, n, len(dst))
	}
	q(dst, src)
	return nil
}

// CanQuantize reports whether QuantizeRow supports t.
func CanQuantize(t DType) bool {
	_, ok := quantizers[t]
	return ok || t == F32 || t == F16 || t == BF16
}

var quantizers = map[DType]func(dst []byte, src []float32){
	Q4_0: quantizeQ4_0,
	Q4_1: quantizeQ4_1,
	Q5_0: quantizeQ5_0,
	Q5_1: quantizeQ5_1,
	Q8_0: quantizeQ8_0,
	Q2_K: quantizeQ2_K,
	Q3_K: quantizeQ3_K,
	Q4_K: quantizeQ4_K,
	Q5_K: quantizeQ5_K,
	Q6_K: quantizeQ6_K,
	Q8_K: quantizeQ8_K,
}

func quantizePlain(t DType) func(dst []byte, src []float32) {
	return func(dst []byte, src []float32) {
		for i, v := range src {
			var u uint32
			switch t {
			case F32:
				u = math.Float32bits(v)
				dst[4*i], dst[4*i+1], dst[4*i+2], dst[4*i+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
				continue
			case F16:
				u = uint32(F32ToF16(v))
			case BF16:
				u = uint32(f32ToBF16(v))
			}
			dst[2*i], dst[2*i+1] = byte(u), byte(u>>8)
		}
	}
}

// signedMax returns the element of largest magnitude (the first one on ties)
// and that magnitude.
func signedMax(x []float32) (vmax, amax float32) {
	for _, v := range x {
		if a := qabs(v); a > amax {
			amax, vmax = a, v
		}
	}
	return vmax, amax
}

func quantizeQ4_0(dst []byte, src []float32) {
	for i := 0; i < len(src)/32; i++ {
		x := src[i*32 : (i+1)*32]
		b := dst[i*18 : (i+1)*18]
		vmax, _ := signedMax(x)
		d := vmax / -8
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(b, d)
		for j := range 16 {
			x0 := float32(x[j] * id) // rounded: no fused multiply-add (arm64)
			x1 := float32(x[16+j] * id)
			b[2+j] = uint8(min(15, int32(x0+8.5))) | uint8(min(15, int32(x1+8.5)))<<4
		}
	}
}

func minMax(x []float32) (lo, hi float32) {
	lo, hi = math.MaxFloat32, -math.MaxFloat32
	for _, v := range x {
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	return lo, hi
}

func quantizeQ4_1(dst []byte, src []float32) {
	for i := 0; i < len(src)/32; i++ {
		x := src[i*32 : (i+1)*32]
		b := dst[i*20 : (i+1)*20]
		lo, hi := minMax(x)
		d := (hi - lo) / 15
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(b, d)
		putF16(b[2:], lo)
		for j := range 16 {
			x0 := float32((x[j] - lo) * id)
			x1 := float32((x[16+j] - lo) * id)
			b[4+j] = uint8(min(15, int32(x0+0.5))) | uint8(min(15, int32(x1+0.5)))<<4
		}
	}
}

func putU32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

func quantizeQ5_0(dst []byte, src []float32) {
	for i := 0; i < len(src)/32; i++ {
		x := src[i*32 : (i+1)*32]
		b := dst[i*22 : (i+1)*22]
		vmax, _ := signedMax(x)
		d := vmax / -16
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(b, d)
		var qh uint32
		for j := range 16 {
			x0 := float32(x[j] * id) // rounded: no fused multiply-add (arm64)
			x1 := float32(x[16+j] * id)
			xi0 := uint32(min(31, int32(x0+16.5)))
			xi1 := uint32(min(31, int32(x1+16.5)))
			b[6+j] = uint8(xi0&0xF | (xi1&0xF)<<4)
			qh |= (xi0 & 0x10 >> 4) << j
			qh |= (xi1 & 0x10 >> 4) << (j + 16)
		}
		putU32(b[2:], qh)
	}
}

func quantizeQ5_1(dst []byte, src []float32) {
	for i := 0; i < len(src)/32; i++ {
		x := src[i*32 : (i+1)*32]
		b := dst[i*24 : (i+1)*24]
		lo, hi := minMax(x)
		d := (hi - lo) / 31
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(b, d)
		putF16(b[2:], lo)
		var qh uint32
		for j := range 16 {
			x0 := float32((x[j] - lo) * id)
			x1 := float32((x[16+j] - lo) * id)
			xi0 := uint32(uint8(int32(x0 + 0.5)))
			xi1 := uint32(uint8(int32(x1 + 0.5)))
			b[8+j] = uint8(xi0&0xF | (xi1&0xF)<<4)
			qh |= (xi0 & 0x10 >> 4) << j
			qh |= (xi1 & 0x10 >> 4) << (j + 16)
		}
		putU32(b[4:], qh)
	}
}

func quantizeQ8_0(dst []byte, src []float32) {
	for i := 0; i < len(src)/32; i++ {
		x := src[i*32 : (i+1)*32]
		b := dst[i*34 : (i+1)*34]
		_, amax := signedMax(x)
		d := amax / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(b, d)
		for j := range 32 {
			b[2+j] = byte(int8(roundAway(x[j] * id)))
		}
	}
}

// quantizeQ8_1 writes ggml's 36-byte Q8_1 blocks (used by tests to check
// quantizeActs; Q8_1 is not a storage type here).
func quantizeQ8_1(dst []byte, src []float32) {
	for i := 0; i < len(src)/32; i++ {
		x := src[i*32 : (i+1)*32]
		b := dst[i*36 : (i+1)*36]
		_, amax := signedMax(x)
		d := amax / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(b, d)
		var sum int32
		for j := range 32 {
			q := int8(roundAway(x[j] * id))
			b[4+j] = byte(q)
			sum += int32(q)
		}
		putF16(b[2:], float32(sum)*d)
	}
}

// makeQXQuants picks a symmetric scale for the n values x with levels
// −nmax..nmax−1 (ggml's make_qx_quants with rmse_type 1 and no importance
// weights): start from the scale mapping the largest-magnitude value to
// −nmax, then try 18 nearby scales and keep the one maximising
// (Σw·x·l)²/Σw·l² with weights w = x², i.e. the least weighted squared
// error after refitting the scale. L receives levels offset by nmax.
func makeQXQuants(nmax int32, x []float32, L []int8) float32 {
	vmax, amax := signedMax(x)
	if amax < groupMaxEps {
		for i := range x {
			L[i] = 0
		}
		return 0
	}
	fnmax := float32(nmax)
	iscale := -fnmax / vmax
	var sumlx, suml2 float32
	for i, v := range x {
		l := max(-nmax, min(nmax-1, nearestInt(iscale*v)))
		L[i] = int8(l + nmax)
		w := v * v
		sumlx += float32(float32(w*v) * float32(l))
		suml2 += float32(float32(w*float32(l)) * float32(l))
	}
	var scale float32
	if suml2 != 0 {
		scale = sumlx / suml2
	}
	best := scale * sumlx
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(fnmax + float32(0.1*float32(is))) / vmax
		sumlx, suml2 = 0, 0
		for _, v := range x {
			l := max(-nmax, min(nmax-1, nearestInt(iscale*v)))
			w := v * v
			sumlx += float32(float32(w*v) * float32(l))
			suml2 += float32(float32(w*float32(l)) * float32(l))
		}
		if suml2 > 0 && float32(sumlx*sumlx) > float32(best*suml2) {
			for i, v := range x {
				L[i] = int8(nmax + max(-nmax, min(nmax-1, nearestInt(iscale*v))))
			}
			scale = sumlx / suml2
			best = scale * sumlx
		}
	}
	return scale
}

// makeQKX2Quants fits an asymmetric code x ≈ scale·l − min, l in 0..nmax,
// to the n values x under weights w (ggml's make_qkx2_quants): start from
// the min/max range, then for nstep+1 candidate inverse scales
// (rmin + rdelta·is + nmax)/(max − min) quantize, solve the weighted
// least-squares problem for (scale, min) given the levels, and keep the best
// weighted error (squared, or absolute if useMAD). Returns the scale and
// the (non-negative) min; L receives the levels. Laux is scratch.
func makeQKX2Quants(nmax int32, x, w []float32, L, Laux []uint8, rmin, rdelta float32, nstep int, useMAD bool) (scale, theMin float32) {
	n := len(x)
	lo, hi := x[0], x[0]
	sumW := w[0]
	sumX := sumW * x[0]
	for i := 1; i < n; i++ {
		if x[i] < lo {
			lo = x[i]
		}
		if x[i] > hi {
			hi = x[i]
		}
		sumW += w[i]
		sumX += float32(w[i] * x[i])
	}
	if lo > 0 {
		lo = 0
	}
	if hi == lo {
		for i := range n {
			L[i] = 0
		}
		return 0, -lo
	}
	fnmax := float32(nmax)
	iscale := fnmax / (hi - lo)
	scale = 1 / iscale
	var bestErr float32
	for i := range n {
		l := nearestInt(iscale * (x[i] - lo))
		L[i] = uint8(max(0, min(nmax, l)))
		diff := float32(float32(scale*float32(L[i]))+lo) - x[i]
		if useMAD {
			diff = qabs(diff)
		} else {
			diff = diff * diff
		}
		bestErr += float32(w[i] * diff)
	}
	if nstep < 1 {
		return scale, -lo
	}
	for is := 0; is <= nstep; is++ {
		iscale = float32(float32(rmin+float32(rdelta*float32(is)))+fnmax) / (hi - lo)
		var sumL, sumL2, sumXL float32
		for i := range n {
			l := max(0, min(nmax, nearestInt(iscale*(x[i]-lo))))
			Laux[i] = uint8(l)
			fl := float32(l)
			wl := float32(w[i] * fl)
			sumL += wl
			sumL2 += float32(wl * fl)
			sumXL += float32(wl * x[i])
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D > 0 {
			thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
			thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
			if thisMin > 0 {
				thisMin = 0
				thisScale = sumXL / sumL2
			}
			var curErr float32
			for i := range n {
				diff := float32(float32(thisScale*float32(Laux[i]))+thisMin) - x[i]
				if useMAD {
					diff = qabs(diff)
				} else {
					diff = diff * diff
				}
				curErr += float32(w[i] * diff)
			}
			if curErr < bestErr {
				copy(L[:n], Laux[:n])
				bestErr = curErr
				scale = thisScale
				lo = thisMin
			}
		}
	}
	return scale, -lo
}

// makeQ3Quants is ggml's make_q3_quants with do_rmse: symmetric levels
// −nmax..nmax−1 refined coordinate-wise (up to 5 sweeps) to maximise
// (Σw·x·l)²/Σw·l² with w = x². L receives levels offset by nmax.
func makeQ3Quants(nmax int32, x []float32, L []int8) float32 {
	vmax, amax := signedMax(x)
	if amax < groupMaxEps {
		for i := range x {
			L[i] = 0
		}
		return 0
	}
	iscale := -float32(nmax) / vmax
	var sumlx, suml2 float32
	for i, v := range x {
		l := max(-nmax, min(nmax-1, nearestInt(iscale*v)))
		L[i] = int8(l)
		w := v * v
		sumlx += float32(float32(w*v) * float32(l))
		suml2 += float32(float32(w*float32(l)) * float32(l))
	}
	for range 5 {
		changed := 0
		for i, v := range x {
			w := v * v
			li := float32(L[i])
			slx := sumlx - float32(float32(w*v)*li)
			if slx > 0 {
				sl2 := suml2 - float32(float32(w*li)*li)
				nl := max(-nmax, min(nmax-1, nearestInt(float32(v*sl2)/slx)))
				if nl != int32(L[i]) {
					fl := float32(nl)
					slx += float32(float32(w*v) * fl)
					sl2 += float32(float32(w*fl) * fl)
					if sl2 > 0 && float32(float32(slx*slx)*suml2) > float32(float32(sumlx*sumlx)*sl2) {
						L[i] = int8(nl)
						sumlx, suml2 = slx, sl2
						changed++
					}
				}
			}
		}
		if changed == 0 {
			break
		}
	}
	for i := range x {
		L[i] += int8(nmax)
	}
	if suml2 > 0 {
		return sumlx / suml2
	}
	return 0
}

func quantizeQ2_K(dst []byte, src []float32) {
	var L [qkK]uint8
	var Laux [16]uint8
	var weights [16]float32
	var mins, scales [16]float32
	const q4scale = 15
	for i := 0; i < len(src)/qkK; i++ {
		x := src[i*qkK : (i+1)*qkK]
		b := dst[i*84 : (i+1)*84]
		bScales, qs := b[0:16], b[16:80]
		var maxScale, maxMin float32
		for j := range 16 {
			xs := x[16*j : 16*j+16]
			for l := range 16 {
				weights[l] = qabs(xs[l])
			}
			scales[j], mins[j] = makeQKX2Quants(3, xs, weights[:], L[16*j:16*j+16], Laux[:], -0.5, 0.1, 15, true)
			maxScale = max(maxScale, scales[j])
			maxMin = max(maxMin, mins[j])
		}
		var d, dmin float32
		if maxScale > 0 {
			iscale := q4scale / maxScale
			for j := range 16 {
				bScales[j] = uint8(nearestInt(iscale * scales[j]))
			}
			d = putF16(b[80:], maxScale/q4scale)
		} else {
			for j := range 16 {
				bScales[j] = 0
			}
			d = putF16(b[80:], 0)
		}
		if maxMin > 0 {
			iscale := q4scale / maxMin
			for j := range 16 {
				bScales[j] |= uint8(nearestInt(iscale*mins[j])) << 4
			}
			dmin = putF16(b[82:], maxMin/q4scale)
		} else {
			dmin = putF16(b[82:], 0)
		}
		for j := range 16 {
			dd := d * float32(bScales[j]&0xF)
			if dd == 0 {
				continue
			}
			dm := dmin * float32(bScales[j]>>4)
			for ii := range 16 {
				l := nearestInt((x[16*j+ii] + dm) / dd)
				L[16*j+ii] = uint8(max(0, min(3, l)))
			}
		}
		for j := 0; j < qkK; j += 128 {
			for l := range 32 {
				qs[j/4+l] = L[j+l] | L[j+l+32]<<2 | L[j+l+64]<<4 | L[j+l+96]<<6
			}
		}
	}
}

func quantizeQ3_K(dst []byte, src []float32) {
	var L [qkK]int8
	var scales [16]float32
	for i := 0; i < len(src)/qkK; i++ {
		x := src[i*qkK : (i+1)*qkK]
		b := dst[i*110 : (i+1)*110]
		hmask, qs, bScales := b[0:32], b[32:96], b[96:108]
		var maxScale, amax float32
		for j := range 16 {
			scales[j] = makeQ3Quants(4, x[16*j:16*j+16], L[16*j:16*j+16])
			if s := qabs(scales[j]); s > amax {
				amax, maxScale = s, scales[j]
			}
		}
		clear(bScales)
		var d float32
		if maxScale != 0 {
			iscale := -32 / maxScale
			for j := range 16 {
				l := uint8(max(-32, min(31, int32(int8(nearestInt(iscale*scales[j]))))) + 32)
				if j < 8 {
					bScales[j] = l & 0xF
				} else {
					bScales[j-8] |= (l & 0xF) << 4
				}
				bScales[j%4+8] |= (l >> 4) << (2 * (j / 4))
			}
			d = putF16(b[108:], 1/iscale)
		} else {
			d = putF16(b[108:], 0)
		}
		var sc [16]int8
		q3Scales(&sc, bScales)
		for j := range 16 {
			dd := d * float32(sc[j])
			if dd == 0 {
				continue
			}
			for ii := range 16 {
				l := nearestInt(x[16*j+ii] / dd)
				L[16*j+ii] = int8(max(-4, min(3, l)) + 4)
			}
		}
		clear(hmask)
		m, hm := 0, uint8(1)
		for j := range qkK {
			if L[j] > 3 {
				hmask[m] |= hm
				L[j] -= 4
			}
			if m++; m == qkK/8 {
				m, hm = 0, hm<<1
			}
		}
		for j := 0; j < qkK; j += 128 {
			for l := range 32 {
				qs[j/4+l] = uint8(L[j+l] | L[j+l+32]<<2 | L[j+l+64]<<4 | L[j+l+96]<<6)
			}
		}
	}
}

// quantizeQ45K is quantize_row_q4_K_ref (nmax 15) and quantize_row_q5_K_ref
// (nmax 31): per 32-element sub-block an asymmetric fit weighted by
// rms(x)+|x|, then the 8 scales and 8 mins are themselves quantized to 6
// bits against fp16 super-scales, and the values re-quantized against the
// final scales.
func quantizeQ45K(nmax int32, x []float32, b []byte, L *[qkK]uint8) {
	var Laux [32]uint8
	var weights [32]float32
	var mins, scales [8]float32
	rmin, nstep := float32(-1), 20
	if nmax == 31 {
		rmin, nstep = -0.5, 15
	}
	var maxScale, maxMin float32
	for j := range 8 {
		xs := x[32*j : 32*j+32]
		var sumX2 float32
		for _, v := range xs {
			sumX2 += float32(v * v)
		}
		avX := qsqrt(sumX2 / 32)
		for l, v := range xs {
			weights[l] = avX + qabs(v)
		}
		scales[j], mins[j] = makeQKX2Quants(nmax, xs, weights[:], L[32*j:32*j+32], Laux[:], rmin, 0.1, nstep, false)
		maxScale = max(maxScale, scales[j])
		maxMin = max(maxMin, mins[j])
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	sc := b[4:16]
	for j := range 8 {
		ls := min(63, uint8(nearestInt(invScale*scales[j])))
		lm := min(63, uint8(nearestInt(invMin*mins[j])))
		if j < 4 {
			sc[j] = ls
			sc[j+4] = lm
		} else {
			sc[j+4] = ls&0xF | (lm&0xF)<<4
			sc[j-4] |= (ls >> 4) << 6
			sc[j] |= (lm >> 4) << 6
		}
	}
	d := putF16(b[0:], maxScale/63)
	dmin := putF16(b[2:], maxMin/63)
	for j := range 8 {
		s, m := scaleMinK4(j, sc)
		dd := d * float32(s)
		if dd == 0 {
			continue
		}
		dm := dmin * float32(m)
		for ii := range 32 {
			l := nearestInt((x[32*j+ii] + dm) / dd)
			L[32*j+ii] = uint8(max(0, min(nmax, l)))
		}
	}
}

func quantizeQ4_K(dst []byte, src []float32) {
	var L [qkK]uint8
	for i := 0; i < len(src)/qkK; i++ {
		b := dst[i*144 : (i+1)*144]
		quantizeQ45K(15, src[i*qkK:(i+1)*qkK], b, &L)
		q := b[16:144]
		for j := 0; j < 4; j++ {
			for l := range 32 {
				q[32*j+l] = L[64*j+l] | L[64*j+l+32]<<4
			}
		}
	}
}

func quantizeQ5_K(dst []byte, src []float32) {
	var L [qkK]uint8
	for i := 0; i < len(src)/qkK; i++ {
		b := dst[i*176 : (i+1)*176]
		quantizeQ45K(31, src[i*qkK:(i+1)*qkK], b, &L)
		qh, ql := b[16:48], b[48:176]
		clear(qh)
		m1, m2 := uint8(1), uint8(2)
		for n := 0; n < 4; n++ {
			for j := range 32 {
				l1 := L[64*n+j]
				if l1 > 15 {
					l1 -= 16
					qh[j] |= m1
				}
				l2 := L[64*n+j+32]
				if l2 > 15 {
					l2 -= 16
					qh[j] |= m2
				}
				ql[32*n+j] = l1 | l2<<4
			}
			m1 <<= 2
			m2 <<= 2
		}
	}
}

func quantizeQ6_K(dst []byte, src []float32) {
	var L [qkK]int8
	var scales [16]float32
	for i := 0; i < len(src)/qkK; i++ {
		x := src[i*qkK : (i+1)*qkK]
		b := dst[i*210 : (i+1)*210]
		var maxScale, maxAbsScale float32
		for ib := range 16 {
			s := makeQXQuants(32, x[16*ib:16*ib+16], L[16*ib:16*ib+16])
			scales[ib] = s
			if a := qabs(s); a > maxAbsScale {
				maxAbsScale, maxScale = a, s
			}
		}
		if maxAbsScale < groupMaxEps {
			clear(b)
			continue
		}
		iscale := -128 / maxScale
		d := putF16(b[208:], 1/iscale)
		sc := b[192:208]
		for ib := range 16 {
			sc[ib] = uint8(int8(min(127, nearestInt(iscale*scales[ib]))))
		}
		for j := range 16 {
			dd := d * float32(int8(sc[j]))
			if dd == 0 {
				continue
			}
			for ii := range 16 {
				l := nearestInt(x[16*j+ii] / dd)
				L[16*j+ii] = int8(max(-32, min(31, l)) + 32)
			}
		}
		for h := 0; h < 2; h++ {
			ql := b[64*h : 64*h+64]
			qh := b[128+32*h : 128+32*h+32]
			Lh := L[128*h : 128*h+128]
			for l := range 32 {
				q1, q2, q3, q4 := uint8(Lh[l]), uint8(Lh[l+32]), uint8(Lh[l+64]), uint8(Lh[l+96])
				ql[l] = q1&0xF | (q3&0xF)<<4
				ql[l+32] = q2&0xF | (q4&0xF)<<4
				qh[l] = q1>>4 | (q2>>4)<<2 | (q3>>4)<<4 | (q4>>4)<<6
			}
		}
	}
}

func quantizeQ8_K(dst []byte, src []float32) {
	for i := 0; i < len(src)/qkK; i++ {
		x := src[i*qkK : (i+1)*qkK]
		b := dst[i*292 : (i+1)*292]
		vmax, amax := signedMax(x)
		if amax == 0 {
			clear(b)
			continue
		}
		iscale := -127 / vmax
		qs := b[4:260]
		for j, v := range x {
			qs[j] = byte(int8(min(127, nearestInt(iscale*v))))
		}
		for j := range 16 {
			var s int32
			for _, q := range qs[16*j : 16*j+16] {
				s += int32(int8(q))
			}
			b[260+2*j], b[261+2*j] = byte(s), byte(s>>8)
		}
		putU32(b, math.Float32bits(1/iscale))
	}
}
