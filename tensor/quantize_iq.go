package tensor

// Quantizers of the table formats (dequant_iq.go), mirroring what
// llama-quantize runs without an importance matrix, in float32 operation by
// operation: ggml's quantize_iq4_nl / quantize_iq4_xs (both
// quantize_row_iq4_nl_impl with 7 scale trials, weights x²) and
// quantize_row_mxfp4_ref.

import "math"

func init() {
	quantizers[IQ4_NL] = quantizeIQ4_NL
	quantizers[IQ4_XS] = quantizeIQ4_XS
	quantizers[MXFP4] = quantizeMXFP4
}

// bestIndexInt8 is the index of the level of the sorted table lv nearest
// to x (the upper one on ties), by bisection as ggml's best_index_int8.
func bestIndexInt8(lv *[16]int8, x float32) int {
	x = float32(x) // a product passed in must not fuse with the subtractions below
	if x <= float32(lv[0]) {
		return 0
	}
	if x >= float32(lv[15]) {
		return 15
	}
	ml, mu := 0, 15
	for mu-ml > 1 {
		mav := (ml + mu) / 2
		if x < float32(lv[mav]) {
			mu = mav
		} else {
			ml = mav
		}
	}
	if x-float32(lv[mu-1]) < float32(lv[mu])-x {
		return mu - 1
	}
	return mu
}

// iq4Block finds the scale of one block of 32 (weights x², ntry trials of
// the scale around max/−127, as ggml's quantize_row_iq4_nl_impl) and its
// codes in L.
func iq4Block(xb []float32, L []uint8, ntry int) float32 {
	const lv0 = -127
	var weight [32]float32
	var amax, vmax float32
	for j, v := range xb {
		weight[j] = v * v
		if a := qabs(v); a > amax {
			amax, vmax = a, v
		}
	}
	if amax < groupMaxEps {
		return 0
	}
	d := -vmax / lv0
	if ntry <= 0 {
		d = vmax / lv0
	}
	id := 1 / d
	var sumqx, sumq2 float32
	for j, v := range xb {
		l := bestIndexInt8(&kIQ4NL, id*v)
		L[j] = uint8(l)
		q := float32(kIQ4NL[l])
		w := weight[j]
		sumqx += float32(float32(w*q) * v)
		sumq2 += float32(float32(w*q) * q)
	}
	d = 0
	if sumq2 > 0 {
		d = sumqx / sumq2
	}
	best := d * sumqx
	for itry := -ntry; itry <= ntry; itry++ {
		id = float32(itry+lv0) / vmax
		sumqx, sumq2 = 0, 0
		for j, v := range xb {
			q := float32(kIQ4NL[bestIndexInt8(&kIQ4NL, id*v)])
			w := weight[j]
			sumqx += float32(float32(w*q) * v)
			sumq2 += float32(float32(w*q) * q)
		}
		if sumq2 > 0 && float32(sumqx*sumqx) > float32(best*sumq2) {
			d = sumqx / sumq2
			best = d * sumqx
		}
	}
	return d
}

// packNibbles32 stores the 32 codes L as a block's 16 bytes: element j in
// the low nibble of byte j, element 16+j in its high nibble.
func packNibbles32(qs []byte, L []uint8) {
	for j := range 16 {
		qs[j] = L[j] | L[16+j]<<4
	}
}

func quantizeIQ4_NL(dst []byte, src []float32) {
	var L [32]uint8
	for i := 0; i < len(src)/32; i++ {
		x := src[32*i : 32*i+32]
		b := dst[18*i : 18*i+18]
		s := iq4Block(x, L[:], 7)
		putF16(b, s)
		var id float32
		if s != 0 {
			id = 1 / s
		}
		for j, v := range x {
			L[j] = uint8(bestIndexInt8(&kIQ4NL, id*v))
		}
		packNibbles32(b[2:], L[:])
	}
}

func quantizeIQ4_XS(dst []byte, src []float32) {
	var L [32]uint8
	var scales [8]float32
	for i := 0; i < len(src)/qkK; i++ {
		x := src[qkK*i : qkK*i+qkK]
		b := dst[136*i : 136*i+136]
		var maxScale, amaxScale float32
		for ib := range 8 {
			scales[ib] = iq4Block(x[32*ib:32*ib+32], L[:], 7)
			if a := qabs(scales[ib]); a > amaxScale {
				amaxScale, maxScale = a, scales[ib]
			}
		}
		d := -maxScale / 32
		putF16(b, d)
		var id float32
		if d != 0 {
			id = 1 / d
		}
		var sh uint16
		for ib := range 8 {
			l := max(-32, min(31, nearestInt(id*scales[ib])))
			dl := d * float32(l)
			var idl float32
			if dl != 0 {
				idl = 1 / dl
			}
			for j, v := range x[32*ib : 32*ib+32] {
				L[j] = uint8(bestIndexInt8(&kIQ4NL, idl*v))
			}
			packNibbles32(b[8+16*ib:], L[:])
			l += 32
			if ib%2 == 0 {
				b[4+ib/2] = uint8(l & 0xF)
			} else {
				b[4+ib/2] |= uint8(l&0xF) << 4
			}
			sh |= uint16(l>>4) << (2 * ib)
		}
		b[2], b[3] = byte(sh), byte(sh>>8)
	}
}

// bestIndexFP4 is the code whose level times e is nearest to x (the first
// on ties, so +0 before −0), as ggml's best_index_mxfp4.
func bestIndexFP4(x, e float32) uint8 {
	best, bestErr := 0, qabs(float32(float32(kFP4[0])*e)-x)
	for i := 1; i < 16; i++ {
		if err := qabs(float32(float32(kFP4[i])*e) - x); err < bestErr {
			best, bestErr = i, err
		}
	}
	return uint8(best)
}

func quantizeMXFP4(dst []byte, src []float32) {
	for i := 0; i < len(src)/32; i++ {
		x := src[32*i : 32*i+32]
		b := dst[17*i : 17*i+17]
		var amax float32
		for _, v := range x {
			amax = max(amax, qabs(v))
		}
		// e = floor(log2 amax) − 2 + 127: the largest level, 6 = 1.5·2², then
		// lies in [amax/2, amax) after scaling.
		var e uint8
		if amax > 0 {
			f := float32(math.Floor(float64(float32(math.Log2(float64(amax)))))) - 2 + 127
			e = uint8(max(0, min(255, f)))
		}
		b[0] = e
		d := e8m0Half(e)
		for j := range 16 {
			b[1+j] = bestIndexFP4(x[j], d) | bestIndexFP4(x[16+j], d)<<4
		}
	}
}
