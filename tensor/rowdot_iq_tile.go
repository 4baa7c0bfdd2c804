package tensor

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// Multi-token row dots of IQ4_NL and MXFP4, tokens in the vector lanes:
// 16 per 512-bit register (hasNLZV), or 8 per 256-bit one on AVX2
// (hasNLTileY, below).
//
// The canonical arithmetic of these types (rowdot_iq_ref.go) takes one
// float step per block and token: the block's exact integer dot P_b, then
// acc ← acc + float32(s_b·float32(P_b)). So a tile can put 16 tokens in
// the 16 lanes of a register and keep each lane a whole (row, token) dot,
// as llama.cpp's repacked IQ4_NL/MXFP4 GEMMs do: per block and row, eight
// VPDPBUSD (one per 4-element chunk, the row's four levels broadcast from
// memory against the 16 tokens' four activations) and four float
// instructions for 16 tokens, where the eight-lane arithmetic it replaced
// took four float instructions per block for every two tokens.
//
// Per chunk of rows a worker unpacks four rows at a time once
// (nlUnpack4: signed levels, −128·Σlevel per block for the bias of the
// activations, dw as float32; 160 bytes per block) and runs every group
// of 16 tokens over them (qdotNLTileZ, 4 rows × 16 tokens per call); the
// groups' activations are packed once per MatMul (nlPack, 576 bytes per
// block and group). Rows past the last four and tokens past the last 16
// take the row dots, whose bits the tiles reproduce.
//
// On AVX2 without AVX-512 (hasNLTileY) the same groups of 16 run as two
// halves of 8 tokens (qdotNLTileY, rowdot_iq_nl_amd64.s: 4 rows × 8
// tokens, VPSIGNB/VPMADDUBSW/VPMADDWD for the missing VPDPBUSD), over rows
// unpacked as magnitudes and signed levels (nlUnpack4…Y, 272 bytes per
// block) — the same canonical steps, so the same bits. Before them these
// types' prefill took the row dots token by token: TinyLlama-shaped
// IQ4_XS/MXFP4 prefill at 0.28-0.44× llama.cpp on a Zen 3 host.

// nlTileTokens is the tile's token count; nlTileRows its row count. On
// zmm a last group of nlTileMin to 15 tokens takes a tile too, its free
// lanes unused (a tile of 16 costs about as much as four tokens' row
// dots). On ymm the packed one-token kernels (rowdot_q4x8.go) take a last
// partial group: TinyLlama-shaped IQ4_NL/MXFP4, interleaved x2, pp4
// 19-28 (a tile) vs 53-65 tok/s, pp8 34-59 vs 57-70, pp12 37-57 vs 61-66.
const (
	nlTileTokens = 16
	nlTileRows   = 4
	nlTileMin    = 4
)

// useNLTile reports whether MatMul takes the tiles for weights wt.
func useNLTile(wt DType) bool {
	return (wt == IQ4_NL || wt == MXFP4) && (nlTileZ() || hasNLTileY) && qdotX4On
}

// nlTiles reports whether MatMul takes the tiles for w: IQ4_NL and MXFP4
// where they do not run on their packed rows' four-token kernels (on
// zmm, IQ4_NL's tiles; q4x8Four).
func nlTiles(w *Mat) bool {
	return useNLTile(w.Type) && !(useQ4x8(w) && q4x8Four(w.Type))
}

// nlTileZ reports whether the tiles run on 512-bit registers (else ymm).
func nlTileZ() bool { return hasNLZV && hasKZ }

// nlTiled is how many of n tokens the tiles take: whole groups of 16 and,
// on zmm or without the packed kernels, a last group of at least
// nlTileMin.
func nlTiled(n int) int {
	if n%nlTileTokens >= nlTileMin && (nlTileZ() || !q4x8Arch || !hasSIMD) {
		return n
	}
	return n &^ (nlTileTokens - 1)
}

// nlPackLen is the packed length in bytes of one group of 16 tokens for
// rows of n elements; nlWSLen a worker's unpacked four rows (160 bytes
// per block for the zmm tiles, 272 for the ymm ones: room for either).
func nlPackLen(n int) int { return n / 32 * 576 }
func nlWSLen(n int) int   { return n / 32 * 272 }

// nlPack fills p (nlPackLen(n) bytes) with the m ≤ 16 tokens t0..t0+m−1
// of the Q8_0 activations a (rows of n elements): p[b·576 + 64k + 4t + i]
// = a.Q[(t0+t)·n + 32b + 4k + i] XOR 0x80 (i < 4), and the float32
// a.D[(t0+t)·(n/32) + b] at p[b·576 + 512 + 4t]; lanes t ≥ m are zero.
func nlPack(p []byte, a *quantizedActs, n, t0, m int) {
	nb := n / 32
	_ = p[nb*576-1]
	q := unsafe.Slice((*byte)(unsafe.Pointer(&a.Q[0])), len(a.Q))
	for t := range nlTileTokens {
		if t >= m {
			for b := range nb {
				blk := p[b*576 : b*576+576]
				for k := range 9 {
					binary.LittleEndian.PutUint32(blk[64*k+4*t:], 0)
				}
			}
			continue
		}
		row := q[(t0+t)*n : (t0+t+1)*n]
		d := a.D[(t0+t)*nb : (t0+t+1)*nb]
		for b := range nb {
			blk := p[b*576 : b*576+576]
			for k := range 8 {
				v := binary.LittleEndian.Uint32(row[32*b+4*k:])
				binary.LittleEndian.PutUint32(blk[64*k+4*t:], v^0x80808080)
			}
			binary.LittleEndian.PutUint32(blk[512+4*t:], math.Float32bits(d[b]))
		}
	}
}

// dotQRowsNLTile sets dst[t·ldd + r] = the row dot of row r of the
// weights w (type wt, row r at w[r·stride], n elements) and token t, for
// rows [lo, hi) and tokens t < nt, from the groups' packed activations pk
// (nlPack, group g — tokens 16g.. — at g·nlPackLen(n)) and the Q8_0
// activations a (for the rows past the last four). ws is the worker's
// scratch (nlWSLen(n) bytes). Requires useNLTile(wt).
func dotQRowsNLTile(wt DType, dst []float32, ldd int, w []byte, stride, lo, hi, n int, pk []byte, nt int, a *quantizedActs, ws []byte) {
	nb := n / 32
	if n%32 != 0 || nb == 0 {
		panic("tensor: dotQRowsNLTile: rows not whole blocks")
	}
	if nt == 0 || hi <= lo {
		return
	}
	_, bb := qBlock(wt)
	pl := nlPackLen(n)
	ng := (nt + nlTileTokens - 1) / nlTileTokens
	_ = w[(hi-1)*stride+nb*bb-1]
	_ = pk[ng*pl-1]
	_ = ws[nlWSLen(n)-1]
	_ = dst[(nt-1)*ldd+hi-1]
	z := nlTileZ()
	r := lo
	for ; r+nlTileRows <= hi; r += nlTileRows {
		nlUnpack4(wt, z, ws, w[r*stride:], stride, nb)
		if z {
			for t := 0; t < nt; t += nlTileTokens {
				mask := 1<<min(nlTileTokens, nt-t) - 1
				qdotNLTileZ(&dst[t*ldd+r], ldd, &ws[0], &pk[t/nlTileTokens*pl], nb, mask)
			}
		} else {
			nlTileY4(wt == MXFP4, dst[r:], ldd, ws, pk, pl, nb, nt)
		}
	}
	for ; r < hi; r++ {
		for t := range nt {
			dotQRows(wt, dst[t*ldd+r:t*ldd+r+1], w[r*stride:], stride, n, a, t*n)
		}
	}
}

// nlUnpack4 unpacks four rows of wt (at w, w+stride, ...) into ws for the
// zmm tiles (z) or the ymm ones.
func nlUnpack4(wt DType, z bool, ws, w []byte, stride, nb int) {
	switch {
	case wt == IQ4_NL && z:
		nlUnpack4IQ4NL(&ws[0], &w[0], uintptr(stride), nb, nil)
	case wt == IQ4_NL:
		nlUnpack4IQ4NLY(&ws[0], &w[0], uintptr(stride), nb, nil)
	case wt == MXFP4 && z:
		nlUnpack4MXFP4(&ws[0], &w[0], uintptr(stride), nb, unsafe.Pointer(&e8m0HalfTab[0]))
	case wt == MXFP4:
		nlUnpack4MXFP4Y(&ws[0], &w[0], uintptr(stride), nb, unsafe.Pointer(&e8m0HalfTab[0]))
	default:
		panic("tensor: dotQRowsNLTile: " + wt.String())
	}
}

// nlTileY4 runs the ymm tiles (hasNLTileY) of the four rows unpacked in ws
// over tokens t < nt, each group of 16 (pl bytes each in pk) as two halves
// of 8, and sets dst[t·ldd + i] for row i < 4 of them.
func nlTileY4(mx bool, dst []float32, ldd int, ws, pk []byte, pl, nb, nt int) {
	var out [nlTileRows * 8]float32
	for t := 0; t < nt; t += 8 {
		if pkt := &pk[t/nlTileTokens*pl+t%nlTileTokens*4]; mx {
			qdotNLTileYMX(&out[0], &ws[0], pkt, nb)
		} else {
			qdotNLTileY(&out[0], &ws[0], pkt, nb)
		}
		for tt := range min(8, nt-t) {
			d := dst[(t+tt)*ldd : (t+tt)*ldd+nlTileRows]
			for i := range d {
				d[i] = out[8*i+tt]
			}
		}
	}
}
