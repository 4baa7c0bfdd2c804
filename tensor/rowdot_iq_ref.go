package tensor

// The reference integer dots of the table formats (dequant_iq.go) against
// 8-bit activations, in the canonical arithmetic every kernel of this
// package reproduces bit for bit (the assembly of rowdot_iq_amd64.s, the
// pure-Go fallback: one order for every n and every machine, see matmul.go).
// llama.cpp pairs IQ4_NL and MXFP4 with Q8_0 activations, IQ4_XS and IQ3_S
// with Q8_K (ggml-cpu's vec_dot_type); so does actsFormat.
//
// IQ4_XS and IQ3_S run on eight float lanes, lane l (0..7) taking, from
// each 32-element sub-block, the exact integer sum over its elements
// 4l..4l+3 — how a 256-bit register holds a block: 32 levels in element
// order, VPMADDUBSW then VPMADDWD summing four neighbours per 32-bit lane.
//
// IQ4_NL, MXFP4 (blocks of 32, Q8_0 activations) instead take one float
// per block, not eight: the block's exact integer dot P_b =
// Σ_{i<32} level(i)·qa(i), then
//
//	acc ← acc + float32(s_b·float32(P_b)),  acc from 0, block after block,
//
// with s_b = float32(dw_b·da_b) (dw: the fp16 d, or MXFP4's 2^(e−128)): a
// multiply then an add, never fused; the row's value is acc (no fold).
// One float step per block and token is what lets the multi-token kernels
// (rowdot_iq_tile.go) keep tokens in the vector lanes, as llama.cpp's
// repacked IQ4_NL/MXFP4 GEMMs do, instead of eight float lanes per block
// and token; the row dots reduce each block's integer lanes to P_b.
//
// IQ4_XS, IQ3_S (super-blocks of 256 = 8 sub-blocks of 32, Q8_K
// activations): the lane's integer sum over the whole super-block,
// P_bl = Σ_ib scale_ib·p_(ib)l (exact in int32), then as above
// acc_l ← acc_l + float32(s_b·float32(P_bl)), s_b = float32(dw_b·da_b).
//
// The row's value is the fold ((a0+a1)+(a2+a3))+((a4+a5)+(a6+a7)).

// fold8 is the canonical fold of eight float lanes.
func fold8(a *[8]float32) float32 {
	return float32(float32(a[0]+a[1])+float32(a[2]+a[3])) + float32(float32(a[4]+a[5])+float32(a[6]+a[7]))
}

// dotNL32 is the 32-element table formats' dot: blocks of bb bytes whose
// last 16 hold the codes, levels lv, per-block weight scale dw(block).
func dotNL32(w []byte, bb int, lv *[16]int8, dw func(blk []byte) float32, q []int8, d []float32) float32 {
	var acc float32
	for b := 0; b < len(w)/bb; b++ {
		blk := w[bb*b : bb*b+bb]
		qs, y := blk[bb-16:bb], q[32*b:32*b+32]
		var p int32
		for k := range 16 {
			p += int32(lv[qs[k]&0xF])*int32(y[k]) + int32(lv[qs[k]>>4])*int32(y[k+16])
		}
		s := float32(dw(blk) * d[b])
		acc += float32(s * float32(p))
	}
	return acc
}

func dwIQ4NL(blk []byte) float32 { return f16At(blk) }
func dwMXFP4(blk []byte) float32 { return e8m0Half(blk[0]) }

func dotIQ4_NL(w []byte, q []int8, d []float32) float32 {
	return dotNL32(w, 18, &kIQ4NL, dwIQ4NL, q, d)
}

func dotMXFP4(w []byte, q []int8, d []float32) float32 {
	return dotNL32(w, 17, &kFP4, dwMXFP4, q, d)
}

func dotIQ4_XS(w []byte, q []int8, d []float32) float32 {
	var acc [8]float32
	for b := 0; b < len(w)/136; b++ {
		blk := w[136*b : 136*b+136]
		y := q[qkK*b : qkK*b+qkK]
		var lane [8]int32
		for ib := range 8 {
			qs, yy := blk[8+16*ib:8+16*ib+16], y[32*ib:32*ib+32]
			sc := iq4xsScale(blk, ib)
			for l := range 4 {
				var lo, hi int32
				for k := 4 * l; k < 4*l+4; k++ {
					lo += int32(kIQ4NL[qs[k]&0xF]) * int32(yy[k])
					hi += int32(kIQ4NL[qs[k]>>4]) * int32(yy[k+16])
				}
				lane[l] += sc * lo
				lane[l+4] += sc * hi
			}
		}
		s := f16At(blk) * d[b]
		for l, p := range lane {
			acc[l] += float32(s * float32(p))
		}
	}
	return fold8(&acc)
}

func dotIQ3_S(w []byte, q []int8, d []float32) float32 {
	var acc [8]float32
	for b := 0; b < len(w)/110; b++ {
		blk := w[110*b : 110*b+110]
		y := q[qkK*b : qkK*b+qkK]
		var lane [8]int32
		for ib := range 8 {
			sc := iq3sScale(blk, ib)
			for g := range 8 { // group g is lane g
				grid, signs := iq3sGroup(blk, ib, g)
				var p int32
				for j := range 4 {
					v := int32(grid>>(8*j)&0xFF) * int32(y[32*ib+4*g+j])
					if signs>>j&1 != 0 {
						v = -v
					}
					p += v
				}
				lane[g] += sc * p
			}
		}
		s := f16At(blk) * d[b]
		for l, p := range lane {
			acc[l] += float32(s * float32(p))
		}
	}
	return fold8(&acc)
}
