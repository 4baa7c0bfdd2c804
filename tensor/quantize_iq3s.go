package tensor

// The IQ3_S quantizer: ggml's quantize_iq3_s without an importance matrix
// (weights x², sub-blocks of 32), in float32 operation by operation so the
// bytes equal llama-quantize's.
//
// Per sub-block of 32, the signs are stored apart and the magnitudes |x|
// quantized: 19 trial scales around max|x|/15 round each group of four to
// levels l = round((|x|/s − 1)/2) ∈ 0..7; a group whose four levels are not
// a point of the 512-entry grid takes the nearest grid point (weighted by
// |x|) among its precomputed neighbours. The trial with the best
// Σwxq²/Σwq² wins; if any group was off the grid the groups are re-rounded
// at the winning scale and the scale refitted. The super-block scale d is
// max(sub-scale)/31 stored as fp16(1.033·d), each sub-scale a 4-bit odd
// multiple (1+2l).
//
// One quirk is kept for byte equality: a sub-block of zeros skips the
// advance of the qs and signs cursors (ggml's "continue"), so the next
// sub-block's grid indices and signs land in its slots.

import (
	"math"
	"sort"
	"sync"
)

func init() { quantizers[IQ3_S] = quantizeIQ3_S }

// iq3sTables are the grid lookups of the quantizer, built once: gridOf
// maps a 12-bit level code (3 bits per element) to its grid index, or -1;
// neighbours lists, for a code off the grid, the grid indices at the three
// smallest squared distances (of 2l+1 magnitudes), nearest first, ties by
// index (ggml's iq3xs_init_impl(512)).
var iq3sTables struct {
	once       sync.Once
	gridOf     [4096]int16
	neighbours [4096][]uint16
}

func iq3sInit() {
	t := &iq3sTables
	for i := range t.gridOf {
		t.gridOf[i] = -1
	}
	for i, c := range iq3sCodes {
		t.gridOf[c] = int16(i)
	}
	type cand struct{ d2, j int }
	cands := make([]cand, 512)
	for u := range 4096 {
		if t.gridOf[u] >= 0 {
			continue
		}
		for j, g := range iq3sGrid {
			d2 := 0
			for k := range 4 {
				d := int(g>>(8*k)&0xFF) - (2*(u>>(3*k)&7) + 1)
				d2 += d * d
			}
			cands[j] = cand{d2, j}
		}
		sort.Slice(cands, func(a, b int) bool {
			return cands[a].d2 < cands[b].d2 || cands[a].d2 == cands[b].d2 && cands[a].j < cands[b].j
		})
		var nb []uint16
		d2, distinct := cands[0].d2, 1
		for _, c := range cands {
			if c.d2 > d2 {
				if distinct == 3 {
					break
				}
				d2 = c.d2
				distinct++
			}
			nb = append(nb, uint16(c.j))
		}
		t.neighbours[u] = nb
	}
}

// iq3sBestNeighbour is the grid index among neighbours nearest to the
// magnitudes xv at scale s, distance Σ w·(s·g − x)², the first on ties; it
// writes the point's levels to L. (With NaN inputs no distance compares
// below the start, where ggml asserts: the first neighbour is taken.)
func iq3sBestNeighbour(neighbours []uint16, xv, w []float32, s float32, L []int8) int {
	best, bestD2 := int(neighbours[0]), float32(math.MaxFloat32)
	for _, j := range neighbours {
		g := iq3sGrid[j]
		var d2 float32
		for i := range 4 {
			diff := float32(s*float32(g>>(8*i)&0xFF)) - xv[i]
			d2 += float32(float32(w[i]*diff) * diff)
		}
		if d2 < bestD2 {
			best, bestD2 = int(j), d2
		}
	}
	g := iq3sGrid[best]
	for i := range 4 {
		L[i] = int8((g>>(8*i)&0xFF - 1) / 2)
	}
	return best
}

// iq3sLevels rounds four magnitudes at inverse scale id to levels 0..7 and
// returns their 12-bit code.
func iq3sLevels(xv []float32, id float32, L []int8) int {
	u := 0
	for i := range 4 {
		l := nearestInt(0.5 * float32(float32(id*xv[i])-1))
		L[i] = int8(max(0, min(7, l)))
		u |= int(L[i]) << (3 * i)
	}
	return u
}

// iq3sFit is Σ w·x·q and Σ w·q² for levels L (q = 2l+1).
func iq3sFit(w, xv []float32, L []int8) (sumqx, sumq2 float32) {
	for i := range w {
		q := float32(2*int32(L[i]) + 1)
		sumqx += float32(float32(w[i]*xv[i]) * q)
		sumq2 += float32(float32(w[i]*q) * q)
	}
	return
}

func quantizeIQ3_S(dst []byte, src []float32) {
	iq3sTables.once.Do(iq3sInit)
	t := &iq3sTables
	const bb = 110
	var weight, waux, xval [32]float32
	var L, Laux [32]int8
	var onGrid, onGridAux [8]bool
	var blockSigns [4]uint8
	var scales [8]float32
	for ibl := 0; ibl < len(src)/qkK; ibl++ {
		y := dst[bb*ibl : bb*ibl+bb]
		clear(y)
		qs, qh, signs := y[2:66], y[66:74], y[74:106]
		qsOff, signsOff := 0, 0
		var maxScale float32
		for ib := range 8 {
			xb := src[qkK*ibl+32*ib : qkK*ibl+32*ib+32]
			for i, v := range xb {
				weight[i] = v * v
				waux[i] = qsqrt(weight[i])
			}
			for k := range 4 {
				var s uint8
				for i := range 8 {
					if v := xb[8*k+i]; v >= 0 {
						xval[8*k+i] = v
					} else {
						xval[8*k+i] = -v
						s |= 1 << i
					}
				}
				blockSigns[k] = s
			}
			vmax := xval[0]
			for _, v := range xval[1:] {
				if !(vmax > v) {
					vmax = v
				}
			}
			clear(L[:])
			if vmax == 0 {
				scales[ib] = 0
				continue // (cursors not advanced: see the file comment)
			}
			var best float32
			scale := vmax / 15
			clear(onGrid[:])
			for is := -9; is <= 9; is++ {
				id := float32(15+float32(float32(is)*0.2)) / vmax
				thisScale := 1 / id
				for k := range 8 {
					u := iq3sLevels(xval[4*k:4*k+4], id, Laux[4*k:4*k+4])
					onGridAux[k] = t.gridOf[u] >= 0
					if !onGridAux[k] {
						iq3sBestNeighbour(t.neighbours[u], xval[4*k:4*k+4], waux[4*k:4*k+4], thisScale, Laux[4*k:4*k+4])
					}
				}
				sumqx, sumq2 := iq3sFit(weight[:], xval[:], Laux[:])
				if sumq2 > 0 && float32(sumqx*sumqx) > float32(best*sumq2) {
					scale = sumqx / sumq2
					best = scale * sumqx
					L = Laux
					onGrid = onGridAux
				}
			}
			off := false
			for _, g := range onGrid {
				off = off || !g
			}
			if off && scale > 0 {
				id := 1 / scale
				for k := range 8 {
					var tmp [4]int8
					u := iq3sLevels(xval[4*k:4*k+4], id, tmp[:])
					g := int(t.gridOf[u])
					if g < 0 {
						g = iq3sBestNeighbour(t.neighbours[u], xval[4*k:4*k+4], waux[4*k:4*k+4], scale, L[4*k:4*k+4])
					}
					p := iq3sGrid[g]
					for i := range 4 {
						L[4*k+i] = int8((p>>(8*i)&0xFF - 1) / 2)
					}
				}
				sumqx, sumq2 := iq3sFit(weight[:], xval[:], L[:])
				if sumq2 > 0 {
					scale = sumqx / sumq2
				}
			}
			if scale < 0 { // cannot happen (ggml guards it the same way)
				scale = -scale
				for k := range blockSigns {
					blockSigns[k] = ^blockSigns[k]
				}
			}
			for k := range 8 {
				u := 0
				for i := range 4 {
					u |= int(L[4*k+i]) << (3 * i)
				}
				g := max(0, int(t.gridOf[u])) // on the grid by construction (ggml aborts otherwise)
				qs[qsOff+k] = byte(g)
				qh[(ib*8+k)/8] |= byte(g>>8) << ((ib*8 + k) % 8)
			}
			qsOff += 8
			copy(signs[signsOff:signsOff+4], blockSigns[:])
			signsOff += 4
			scales[ib] = scale
			maxScale = max(maxScale, scale)
		}
		if maxScale == 0 {
			continue
		}
		d := maxScale / 31
		putF16(y, d*1.033)
		id := 1 / d
		for ib := 0; ib < 8; ib += 2 {
			l1 := max(0, min(15, nearestInt(0.5*float32(float32(id*scales[ib])-1))))
			l2 := max(0, min(15, nearestInt(0.5*float32(float32(id*scales[ib+1])-1))))
			y[106+ib/2] = byte(l1 | l2<<4)
		}
	}
}
