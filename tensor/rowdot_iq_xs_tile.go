package tensor

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// Multi-token row dots of IQ4_XS and IQ3_S on AVX2 (hasXSTileY): rows
// unpacked once, then run against many tokens.
//
// IQ4_XS's canonical arithmetic (rowdot_iq_ref.go) keeps eight float
// lanes per row and token, lane l summing elements 4l..4l+3 of every
// sub-block. A worker unpacks xsTileRows rows at a time (xsUnpack: levels
// signed and as magnitudes, scales as words, dw; 576 bytes per
// super-block) and runs every group of tokens over them, group outer and
// row inner, so that a group's activations stay in L1 while the unpacked
// rows come from L1/L2:
//
//   - IQ4_XS: two rows × four tokens per call (qdotXSTileK,
//     rowdot_iq_xs_amd64.s) with the elements in the vector lanes as in
//     the row dot, each (row, token) one register of its eight lanes,
//     straight from the quantized activations;
//   - IQ3_S: one row × eight tokens (qdotXSTileY3S), each of the row dot's
//     lanes a register of 8 tokens, the tokens packed once per MatMul
//     (xsPack, 2080 bytes per super-block, biased to unsigned bytes).
//
// Either way each (row, token) takes exactly the row dot's integer sums
// and float steps and ends in the same fold: the row dot's bits
// (TestXSTile, TestMatMulBatchInvariant). Before the tiles, IQ4_XS
// prefill took the row dots token by token on AVX2 hosts: TinyLlama-shaped
// pp512 at 0.38× llama.cpp on a Zen 3 host.
//
// IQ3_S has the same lane arithmetic (lane g takes group g, elements
// 4g..4g+3, of every sub-block, times the sub-block's scale), so its rows
// are unpacked from its grid into the same layout: magnitudes from
// iq3sGrid, signs from the sign bits, the odd scales 1+2s (xsUnpack). Its
// row dots, one grid lookup per group and token, made IQ3_S prefill slower
// than its decode (TinyLlama-shaped pp512 5.4 tok/s, 0.07× llama.cpp, on a
// Zen 3 host).
//
// Where AVX-512 VNNI is present the eight-token zmm kernels (dotQRowsKX8)
// are taken instead; both give the row dots' bits.

const (
	xsTileTokens = 8
	xsKTokens    = 4 // IQ4_XS: tokens per qdotXSTileK (two rows each)
	xsTileRows   = 8
	// Only whole groups: a row's unpacking costs about a token's row dot
	// (IQ3_S more). IQ3_S's 8-token tiles of fewer tokens measured slower
	// than the row dots (TinyLlama-shaped pp4 on a Zen 3 host: 4.8 vs 9.1
	// tok/s; pp8 9.9 vs 8.0), and xsTiled gives it none below 8. IQ4_XS's
	// 2×4 tile (qdotXSTileK) pays from one group of 4 (interleaved ×3,
	// 2026-12-07: pp4 26-36 vs 22-25 tok/s on the row dots, pp6 27-39 vs
	// 24-27; the old 8-token tile had lost at pp4, 19.6 vs 26.8).
	xsTileMin = 4
	xsPackSB  = 2080
	xsWSSB    = 576
)

// useXSTile reports whether MatMul takes the IQ4_XS tiles for weights wt
// of n tokens.
func useXSTile(wt DType, n int) bool {
	return (wt == IQ4_XS || wt == IQ3_S) && hasXSTileY && qdotX4On && !useKx8(wt) && n >= xsTileMin
}

// xsTiled is how many of n tokens the tiles of wt take: IQ4_XS's the
// whole groups of xsKTokens, IQ3_S's those of 8.
func xsTiled(wt DType, n int) int {
	if wt == IQ4_XS {
		return n &^ (xsKTokens - 1)
	}
	return n &^ (xsTileTokens - 1)
}

// xsPackLen is the packed length in bytes of one group of 8 tokens for
// rows of n elements; xsWSLen a worker's xsTileRows unpacked rows.
func xsPackLen(n int) int { return n / qkK * xsPackSB }
func xsWSLen(n int) int   { return xsTileRows * n / qkK * xsWSSB }

// xsPack fills p (xsPackLen(n) bytes) with the m ≤ 8 tokens t0..t0+m−1 of
// the Q8_K activations a (rows of n elements) for IQ3_S's tile
// (qdotXSTileY3S): p[sb·2080 + 32c + 4t + i] = a.Q[(t0+t)·n + 256sb + 4c +
// i] + 128 as an unsigned byte (chunk c < 64, i < 4) and the float32
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
			for c := range 64 { // four bytes at a time, a+128 as unsigned bytes
				binary.LittleEndian.PutUint32(blk[32*c+4*t:], binary.LittleEndian.Uint32(row[4*c:])^0x80808080)
			}
			binary.LittleEndian.PutUint32(blk[2048+4*t:], math.Float32bits(a.D[(t0+t)*nb+sb]))
		}
	}
}

// xsUnpackGo makes xsUnpack take its Go IQ3_S path where the assembly
// (xsUnpackIQ3S) would run (tests: the two agree).
var xsUnpackGo = false

// xsUnpack writes one row's nb super-blocks of type wt (IQ4_XS or IQ3_S,
// at w) into ws (576 bytes each, qdotXSTileY's layout): the levels'
// magnitudes at 0 and signed at 256 in element order (IQ4_XS's by
// xsUnpackLevels), the eight scales as word pairs (sc, sc) at 512 and dw
// at 544; for IQ3_S the first 32 bytes instead hold the eight lanes' bias
// corrections −128·Σ_ib sc_ib·(lane's four signed levels) of its tile
// (qdotXSTileY3S), which never reads the magnitudes.
func xsUnpack(wt DType, ws []byte, w []byte, nb int) {
	_, bb := qBlock(wt)
	_ = ws[nb*xsWSSB-1]
	_ = w[nb*bb-1]
	switch {
	case wt == IQ4_XS:
		xsUnpackLevels(&ws[0], &w[0], nb)
		// The scales and dw: iq4xsScale for the eight sub-blocks at once
		// from the block's scales_h (16 bits: 2 per sub-block) and scales_l
		// (32 bits: 4 per sub-block).
		for sb := range nb {
			blk := w[sb*bb : sb*bb+8 : sb*bb+8]
			o := ws[sb*xsWSSB+512 : sb*xsWSSB+548 : sb*xsWSSB+548]
			sh := uint32(binary.LittleEndian.Uint16(blk[2:]))
			sl := binary.LittleEndian.Uint32(blk[4:])
			for ib := range 8 {
				u := uint32(uint16(int16(int32(sl>>(4*ib)&0xF|(sh>>(2*ib)&3)<<4) - 32)))
				binary.LittleEndian.PutUint32(o[4*ib:], u|u<<16)
			}
			binary.LittleEndian.PutUint32(o[32:], math.Float32bits(f16At(blk)))
		}
		return
	case hasSIMD && !xsUnpackGo:
		xsUnpackIQ3S(&ws[0], &w[0], nb)
		return
	}
	// IQ3_S in Go: its grid and signs, scales and corrections.
	for sb := range nb {
		blk, o := w[sb*bb:(sb+1)*bb], ws[sb*xsWSSB:(sb+1)*xsWSSB]
		var corr [8]int32 // the lanes' −128·Σ sc·Σ level (qdotXSTileY3S)
		for ib := range 8 {
			sc := iq3sScale(blk, ib)
			qs, qh, sg := blk[2+8*ib:2+8*ib+8], uint32(blk[66+ib]), blk[74+4*ib:74+4*ib+4]
			mag, lv := o[32*ib:32*ib+32], o[256+32*ib:256+32*ib+32]
			for g := range 8 {
				// Magnitudes from the grid; a byte x negated where its sign
				// bit is set: (x XOR 0xff) + 1, no carry out as x ≥ 1.
				grid := iq3sGrid[uint32(qs[g])|qh>>g&1<<8]
				m := iq3sNeg[sg[g/2]>>(4*(g%2))&0xF]
				binary.LittleEndian.PutUint32(mag[4*g:], grid)
				binary.LittleEndian.PutUint32(lv[4*g:], grid^m+m&0x01010101)
				for i := range 4 {
					corr[g] += sc * int32(int8(lv[4*g+i]))
				}
			}
			u := uint32(uint16(int16(sc)))
			binary.LittleEndian.PutUint32(o[512+4*ib:], u|u<<16)
		}
		binary.LittleEndian.PutUint32(o[544:], math.Float32bits(f16At(blk)))
		for l, c := range corr {
			binary.LittleEndian.PutUint32(o[4*l:], uint32(-128*c))
		}
	}
}

// dotQRowsXSTile sets dst[t·ldd + r] = the row dot of row r of the
// weights w (IQ4_XS or IQ3_S: wt) (row r at w[r·stride], n elements) and
// token t of the activations a, for rows [lo, hi) and tokens t < nt
// (xsTiled(wt, ·): whole groups of xsKTokens for IQ4_XS, of 8 or a last
// partial group for IQ3_S, whose groups come packed in pk: xsPack, group g
// — tokens 8g.. — at g·xsPackLen(n)). ws is the worker's scratch
// (xsWSLen(n) bytes). Requires hasXSTileY.
func dotQRowsXSTile(wt DType, dst []float32, ldd int, w []byte, stride, lo, hi, n int, a *quantizedActs, pk []byte, nt int, ws []byte) {
	nb := n / qkK
	if n%qkK != 0 || nb == 0 {
		panic("tensor: dotQRowsXSTile: rows not whole super-blocks")
	}
	if nt == 0 || hi <= lo {
		return
	}
	_, bb := qBlock(wt)
	_ = w[(hi-1)*stride+nb*bb-1]
	_ = ws[xsWSLen(n)-1]
	_ = dst[(nt-1)*ldd+hi-1]
	wl := nb * xsWSSB
	if wt == IQ4_XS {
		if nt%xsKTokens != 0 {
			panic("tensor: dotQRowsXSTile: IQ4_XS tokens not whole groups of 4")
		}
		_ = a.Q[nt*n-1]
		_ = a.D[nt*nb-1]
		var out [2 * xsKTokens]float32
		for r0 := lo; r0 < hi; r0 += xsTileRows {
			m := min(xsTileRows, hi-r0)
			for i := range m {
				xsUnpack(wt, ws[i*wl:(i+1)*wl], w[(r0+i)*stride:], nb)
			}
			for t0 := 0; t0 < nt; t0 += xsKTokens {
				for i := 0; i < m; i += 2 {
					wsl := wl // the pair's second row; an odd last row is run twice
					if i+1 == m {
						wsl = 0
					}
					qdotXSTileK(&out[0], &ws[i*wl], uintptr(wsl), &a.Q[t0*n], uintptr(n), &a.D[t0*nb], uintptr(4*nb), nb)
					for tt := range xsKTokens {
						dst[(t0+tt)*ldd+r0+i] = out[tt]
						if i+1 < m {
							dst[(t0+tt)*ldd+r0+i+1] = out[xsKTokens+tt]
						}
					}
				}
			}
		}
		return
	}
	pl := xsPackLen(n)
	ng := (nt + xsTileTokens - 1) / xsTileTokens
	_ = pk[ng*pl-1]
	var out [xsTileTokens]float32
	for r0 := lo; r0 < hi; r0 += xsTileRows {
		m := min(xsTileRows, hi-r0)
		for i := range m {
			xsUnpack(wt, ws[i*wl:(i+1)*wl], w[(r0+i)*stride:], nb)
		}
		for g := range ng {
			for i := range m {
				qdotXSTileY3S(&out[0], &ws[i*wl], &pk[g*pl], nb)
				for tt := range min(xsTileTokens, nt-g*xsTileTokens) {
					dst[(g*xsTileTokens+tt)*ldd+r0+i] = out[tt]
				}
			}
		}
	}
}

// iq3sNeg maps four sign bits to a mask of 0xff bytes where a bit is set.
var iq3sNeg = func() (t [16]uint32) {
	for i := range t {
		for j := range 4 {
			if i>>j&1 != 0 {
				t[i] |= 0xff << (8 * j)
			}
		}
	}
	return
}()
