package tensor

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// Multi-token row dots of IQ4_XS on AVX2 (hasXSTileY), eight tokens in the
// vector lanes.
//
// IQ4_XS's canonical arithmetic (rowdot_iq_ref.go) keeps eight float
// lanes per row and token; the tile (qdotXSTileY, rowdot_iq_xs_amd64.s)
// keeps each of those lanes as a register of 8 tokens, so each token's
// eight lanes take exactly the row dot's integer sums and float steps and
// end in the same fold: the row dot's bits (TestXSTile,
// TestMatMulBatchInvariant). A worker unpacks xsTileRows rows at a time
// (xsUnpack: levels signed and as magnitudes, scales as words, dw;
// 576 bytes per super-block) and runs every group of 8 tokens over them,
// group outer and row inner so that a group's packed activations (xsPack,
// 2080 bytes per super-block, packed once per MatMul) stay in L1 while
// the unpacked rows come from L2. Before the tiles, IQ4_XS prefill took
// the row dots token by token on AVX2 hosts: TinyLlama-shaped pp512 at
// 0.38× llama.cpp on a Zen 3 host.
//
// Where AVX-512 VNNI is present the eight-token zmm kernels (dotQRowsKX8)
// are taken instead; both give the row dots' bits.

const (
	xsTileTokens = 8
	xsTileRows   = 8
	xsTileMin    = 4 // a last group of 4-7 tokens takes a tile, its free lanes unused
	xsPackSB     = 2080
	xsWSSB       = 576
)

// useXSTile reports whether MatMul takes the IQ4_XS tiles for weights wt
// of n tokens.
func useXSTile(wt DType, n int) bool {
	return wt == IQ4_XS && hasXSTileY && qdotX4On && !useKx8(wt) && n >= xsTileMin
}

// xsTiled is how many of n tokens the tiles take: whole groups of 8 and a
// last group of at least xsTileMin.
func xsTiled(n int) int {
	if n%xsTileTokens >= xsTileMin {
		return n
	}
	return n &^ (xsTileTokens - 1)
}

// xsPackLen is the packed length in bytes of one group of 8 tokens for
// rows of n elements; xsWSLen a worker's xsTileRows unpacked rows.
func xsPackLen(n int) int { return n / qkK * xsPackSB }
func xsWSLen(n int) int   { return xsTileRows * n / qkK * xsWSSB }

// xsPack fills p (xsPackLen(n) bytes) with the m ≤ 8 tokens t0..t0+m−1 of
// the Q8_K activations a (rows of n elements): p[sb·2080 + 32c + 4t + i] =
// a.Q[(t0+t)·n + 256sb + 4c + i] (chunk c < 64, i < 4) and the float32
// a.D[(t0+t)·(n/256) + sb] at p[sb·2080 + 2048 + 4t]; lanes t ≥ m are zero.
func xsPack(p []byte, a *quantizedActs, n, t0, m int) {
	nb := n / qkK
	_ = p[nb*xsPackSB-1]
	q := unsafe.Slice((*byte)(unsafe.Pointer(&a.Q[0])), len(a.Q))
	for t := range xsTileTokens {
		for sb := range nb {
			blk := p[sb*xsPackSB : (sb+1)*xsPackSB]
			if t >= m {
				for c := range 65 {
					binary.LittleEndian.PutUint32(blk[32*c+4*t:], 0)
				}
				continue
			}
			row := q[(t0+t)*n+sb*qkK : (t0+t)*n+(sb+1)*qkK]
			for c := range 64 {
				copy(blk[32*c+4*t:32*c+4*t+4], row[4*c:4*c+4])
			}
			binary.LittleEndian.PutUint32(blk[2048+4*t:], math.Float32bits(a.D[(t0+t)*nb+sb]))
		}
	}
}

// xsUnpack writes one row's nb super-blocks (at w) into ws (576 bytes
// each, qdotXSTileY's layout): the levels by xsUnpackLevels, then the
// eight scales as word pairs (sc, sc) at 512 and dw at 544.
func xsUnpack(ws []byte, w []byte, nb int) {
	_ = ws[nb*xsWSSB-1]
	_ = w[nb*136-1]
	xsUnpackLevels(&ws[0], &w[0], nb)
	for sb := range nb {
		blk, o := w[sb*136:(sb+1)*136], ws[sb*xsWSSB:(sb+1)*xsWSSB]
		for ib := range 8 {
			sc := uint32(uint16(int16(iq4xsScale(blk, ib))))
			binary.LittleEndian.PutUint32(o[512+4*ib:], sc|sc<<16)
		}
		binary.LittleEndian.PutUint32(o[544:], math.Float32bits(f16At(blk)))
	}
}

// dotQRowsXSTile sets dst[t·ldd + r] = the row dot of row r of the IQ4_XS
// weights w (row r at w[r·stride], n elements) and token t, for rows
// [lo, hi) and tokens t < nt, from the groups' packed activations pk
// (xsPack, group g — tokens 8g.. — at g·xsPackLen(n)). ws is the worker's
// scratch (xsWSLen(n) bytes). Requires hasXSTileY.
func dotQRowsXSTile(dst []float32, ldd int, w []byte, stride, lo, hi, n int, pk []byte, nt int, ws []byte) {
	nb := n / qkK
	if n%qkK != 0 || nb == 0 {
		panic("tensor: dotQRowsXSTile: rows not whole super-blocks")
	}
	if nt == 0 || hi <= lo {
		return
	}
	pl := xsPackLen(n)
	ng := (nt + xsTileTokens - 1) / xsTileTokens
	_ = w[(hi-1)*stride+nb*136-1]
	_ = pk[ng*pl-1]
	_ = ws[xsWSLen(n)-1]
	_ = dst[(nt-1)*ldd+hi-1]
	wl := nb * xsWSSB
	var out [xsTileTokens]float32
	for r0 := lo; r0 < hi; r0 += xsTileRows {
		m := min(xsTileRows, hi-r0)
		for i := range m {
			xsUnpack(ws[i*wl:(i+1)*wl], w[(r0+i)*stride:], nb)
		}
		for g := range ng {
			for i := range m {
				qdotXSTileY(&out[0], &ws[i*wl], &pk[g*pl], nb)
				for tt := range min(xsTileTokens, nt-g*xsTileTokens) {
					dst[(g*xsTileTokens+tt)*ldd+r0+i] = out[tt]
				}
			}
		}
	}
}
