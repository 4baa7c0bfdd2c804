package tensor

import "math"

// quantizeBlocksSIMD is quantizeBlocksRef with the two passes of
// quantacts_amd64.s and the per-block scale arithmetic in Go between them
// (the same float32 expressions as the reference, so the results are
// identical). Blocks whose scale is not finite or zero — all-zero blocks,
// subnormal maxima, infinities — and inputs holding a NaN take the
// reference path. Blocks go in groups of at most qaGroup so the per-group
// scales live on the stack.
func (dst *QuantizedActs) quantizeBlocksSIMD(x []float32, b0, b1 int) {
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
