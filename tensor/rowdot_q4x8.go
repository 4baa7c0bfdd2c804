package tensor

import (
	"encoding/binary"
	"math"
	"runtime"
	"sync"
	"unsafe"

	"nanoserve/internal/mmap"
)

// Q4_0 (and Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4, Q8_0) weights with their
// rows interleaved eight at a time.
//
// The row dot (one row against one token) spends most of its work on
// horizontal bookkeeping: a Q4_0 block is 32 nibbles and one fp16 scale,
// so each block needs its own unpack, sign trick, int→float convert,
// scale product and FMA, ~16 vector instructions per 18 bytes; decode
// then runs at about half of the memory bandwidth. llama.cpp repacks Q4_0
// on x86 for the same reason (its q4_0_8x8). Here a Mat's Q4_0 rows are
// copied once, on first use by MatMul, into groups of eight rows:
//
//	group g, block b (144 bytes, groups one after another, blocks in order):
//	  [0:16)    dw of rows 8g..8g+7 (fp16)
//	  [16:144)  four 32-byte chunks; chunk c, dword r = row 8g+r's
//	            nibble bytes 4c..4c+3
//
// so one 32-byte load holds eight rows' elements 4c..4c+3 (low nibbles)
// and 16+4c..16+4c+3 (high nibbles), and each vector lane belongs to one
// row. The kernels (rowdot_q4x8_amd64.s) multiply the unsigned nibbles by
// the token's four activations broadcast to every lane, add the eight
// products of a block as words, and add the bias −8·Σq (q4Bias) to get
// the exact block sums Σ (nib−8)·q of eight rows at once; then per lane
// the float steps of the reference dotQ4_0, p = fl(fl(dw·da)·s) and
// acc = fl(acc + p), block after block. The float work is thus per
// block and eight rows, not per block and row (~6 instructions per
// element group instead of ~16 per row), and every path — one token
// (qdotQ4_0x8T1), four (qdotQ4_0x8T4), the pure-Go dotQ4_0 — computes
// the same bits: Q4_0 is batch invariant across kernel sets too.
//
// Q5_0 packs likewise with its rows' qh words beside the scales (176
// bytes a group-block): its kernels (qdotQ5_0x8T1, qdotQ5_0x8T4) OR each
// element's fifth bit in as 0x10 (a VPSHUFB of the qh byte, one compare)
// and add the bias −16·Σq; the reference dotQ5_0's float steps are
// Q4_0's. Before, its row dots ran TinyLlama-shaped Q5_0 at pp512 ~43,
// tg ~21 tok/s; packed ~85 and ~30.
//
// Q4_1 and Q5_1 (a min mw beside the scale, unsigned values: no bias)
// pack their mins beside the scales (160 and 192 bytes a group-block);
// per lane the reference dotQ4_1's steps, p = fl(fl(dw·da)·s),
// m = fl(mw·sa) with sa the token's Q8_1 block sum, acc = fl(acc +
// fl(p + m)). Their row dots had taken prefill token after token:
// TinyLlama-shaped Q4_1 pp512 ~34 → ~100 tok/s, tg ~26 → ~45; Q5_1 pp512
// ~25 → ~80, tg ~22 → ~33.
//
// IQ4_NL and MXFP4 have the same block shape (32 nibbles, one scale) and
// the same canonical arithmetic (rowdot_iq_ref.go), so their rows pack
// alike — IQ4_NL's fp16 dw copied, MXFP4's E8M0 scale stored as the
// bf16 of e8m0Half (a power of two: exact) — and one-token kernels
// (qdotIQ4_NLx8T1, qdotMXFP4x8T1) pick each nibble's level by VPSHUFB:
// IQ4_NL's magnitudes against the activations signed by the levels
// (VPSIGNB), MXFP4's levels plus 12 against the activations with the
// bias −12·Σq. Both have four-token kernels too, which replace their
// 16-token tiles (rowdot_iq_tile.go; the same bits) on ymm: MXFP4's
// (qdotMXFP4x8T4, each token's block summed in two halves as Q5_0's)
// TinyLlama-shaped pp512 93-102 → 99-113 tok/s; IQ4_NL's
// (qdotIQ4_NLx8T4), one chunk at a time — its levels and their
// magnitudes for the low and high nibbles in four registers, the signs
// moved to each token's activations as for Q8_0 — pp8 49-57 → 70-76,
// pp128 72-78 → 79-92, pp512 68-71 → 77-85 (interleaved, 2 rounds).
// Where the tiles run on zmm (nlTileZ), IQ4_NL keeps them and its
// packed one-token kernel takes the rest. Row dot rate, L2-resident: IQ4_NL/MXFP4 ~11
// GB/s per core, compute-bound at decode; the packed ones stream at
// memory speed (TinyLlama-shaped tg64 ~27 → ~40 tok/s).
//
// Q8_0 packs eight 32-byte chunks of signed bytes behind the scales (272
// bytes a group-block) where the AVX-512 Q8_0 kernels do not run (hasQ8Z,
// hasVNNI; they keep qdotQ8_0SIMD's eight-lane arithmetic): VPMADDUBSW
// takes the weights' magnitudes against the activations given their signs
// (VPSIGNB), each chunk goes to dwords at once, and the reference
// dotQ8_0's float steps are Q4_0's. Its eight-lane row dots had left
// ~11 vector instructions per row and block; packed, ~6, and four tokens
// share each chunk's load and magnitudes: TinyLlama-shaped Q8_0 pp512
// ~55 → ~85 tok/s (qdotQ8_0x8T1 streams 35 GB/s per core L2-resident
// against 22 for the row dot: decode stays at memory speed).
//
// Cost: the packed copy is as large as the weights; it is made by
// Prepare at load (or on the first product) in its own anonymous memory,
// advised for 2 MiB pages above that size (decode streams it, and 4 KiB
// pages cost a TLB miss each), and released with the Mat. The file's
// pages of the original are then no longer read by MatMul: page cache the
// kernel can drop. A last group of fewer than eight rows is padded with
// zero rows.

const (
	q4x8Block  = 144 // bytes of one packed block of a group (Q5_0: q5x8Block)
	q5x8Block  = 176 // Q5_0's: the scales, the eight rows' qh dwords, the chunks
	q41x8Block = 160 // Q4_1's: the scales, the mins, the chunks
	q51x8Block = 192 // Q5_1's: the scales, the mins, the qh dwords, the chunks
	q8x8Block  = 272 // Q8_0's: the scales, eight chunks of signed bytes
	q4x8ActLen = 160 // bytes of one block of a 4-token activation group (q4x8Acts)
)

// useQ4x8 reports whether MatMul runs w on the packed kernels: Q4_0,
// Q4_1, Q5_0, Q5_1, MXFP4, Q8_0 (without the AVX-512 Q8_0 kernels), and
// IQ4_NL (on zmm only for the tokens its tiles do not take).
func useQ4x8(w *Mat) bool {
	switch w.Type {
	case Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4:
		return q4x8Arch && hasSIMD && w.Cols%32 == 0 && w.Cols > 0
	case Q8_0:
		// Not where the AVX-512 Q8_0 kernels run (hasQ8Z, hasVNNI): they
		// keep the eight-lane arithmetic of qdotQ8_0SIMD.
		return q4x8Arch && hasSIMD && !hasQ8Z && !hasVNNI && w.Cols%32 == 0 && w.Cols > 0
	}
	return false
}

// q4x8BlockOf is the bytes of one packed block of a group for type wt.
func q4x8BlockOf(wt DType) int {
	switch wt {
	case Q5_0:
		return q5x8Block
	case Q4_1:
		return q41x8Block
	case Q5_1:
		return q51x8Block
	case Q8_0:
		return q8x8Block
	}
	return q4x8Block
}

// q4x8Four reports whether wt has four-token packed kernels here (IQ4_NL
// takes its 16-token tiles on zmm, rowdot_iq_tile.go).
func q4x8Four(wt DType) bool {
	switch wt {
	case Q4_0, Q4_1, Q5_0, Q5_1, MXFP4, Q8_0:
		return true
	case IQ4_NL:
		return !nlTileZ() // (its 16-token zmm tiles where they run)
	}
	return false
}

// q4x8Mu serializes the packing of matrices, so two pools meeting one
// matrix for the first time do not both copy it.
var q4x8Mu sync.Mutex

// Prepare makes w ready for MatMul now rather than on its first product
// and returns the bytes of memory that took: a Q4_0, Q4_1, Q5_0, Q5_1,
// IQ4_NL, MXFP4 or Q8_0 (useQ4x8) matrix on amd64 with AVX2 is copied into rows packed
// eight at a time (see the top of the file), which MatMul then reads
// instead of w.Data. Other matrices need nothing (0). Safe for
// concurrent use.
func (w *Mat) Prepare() int64 {
	if !useQ4x8(w) {
		return 0
	}
	return int64(len(w.q4x8()))
}

// Repacked reports whether MatMul multiplies by a packed copy of w (made by
// Prepare, or by the first product) instead of reading w.Data: then w.Data
// need not be in fast memory, only where Row and the dequantizers find it.
func (w *Mat) Repacked() bool { return useQ4x8(w) }

// q4x8 returns w's rows packed for the kernels (see the top of the file),
// packing them on first use.
func (w *Mat) q4x8() []byte {
	if p := w.packed.Load(); p != nil {
		return *p
	}
	q4x8Mu.Lock()
	defer q4x8Mu.Unlock()
	if p := w.packed.Load(); p != nil {
		return *p
	}
	nb := w.Cols / 32
	size := (w.Rows + 7) / 8 * nb * q4x8BlockOf(w.Type)
	var p []byte
	if size >= 2<<20 {
		// Its own mapping in 2 MiB pages, unmapped once w is unreachable
		// (MatMul holds w while it reads the copy).
		if mp, err := mmap.Anon(size); err == nil {
			p = mp.Bytes()
			runtime.AddCleanup(w, func(mp *mmap.Mapping) { mp.Close() }, mp)
		}
	}
	if p == nil {
		p = make([]byte, size)
	}
	packRows8(p, w.Type, w.Data, w.Rows, w.Cols)
	w.packed.Store(&p)
	return p
}

// packRows8 fills out (zeroed, (rows+7)/8·cols/32·q4x8BlockOf(wt) bytes) with
// the packed copy of the matrix (rows, cols) of type wt (any useQ4x8
// type) in data, the groups shared among the CPUs.
func packRows8(out []byte, wt DType, data []byte, rows, cols int) {
	nb := cols / 32
	groups := (rows + 7) / 8
	var wg sync.WaitGroup
	workers := min(runtime.GOMAXPROCS(0), groups)
	for wk := range workers {
		wg.Go(func() {
			for g := wk; g < groups; g += workers {
				gl := nb * q4x8BlockOf(wt)
				packGroup8(out[g*gl:(g+1)*gl], wt, data, rows, g, nb)
			}
		})
	}
	wg.Wait()
}

// packGroup8 writes group g (rows 8g..8g+7, absent ones left zero)
// of the matrix data (nb blocks per row) of type wt into out. The fp16
// scales (and Q4_1's/Q5_1's mins, the 16 bytes after them) are copied;
// MXFP4's E8M0 byte becomes the bf16 of e8m0Half (exact: the top half of
// its float32 bits); Q5_0's and Q5_1's qh go to dword r of the 32 bytes
// after those; the chunks follow.
func packGroup8(out []byte, wt DType, data []byte, rows, g, nb int) {
	nc := 4 // 32-byte chunks: 16 bytes of nibbles a row, or Q8_0's 32 bytes
	if wt == Q8_0 {
		nc = 8
	}
	bb, pb := wt.blockBytes(), q4x8BlockOf(wt) // block bytes, packed block bytes
	co := pb - 32*nc                           // the chunks' offset: after the scales, mins, qh
	rb := nb * bb
	_ = out[nb*pb-1]
	po := unsafe.Pointer(&out[0])
	// Word copies through unsafe pointers (out's length checked above,
	// each row's below): the copy of a multi-gigabyte file at load.
	for r := range 8 {
		row := 8*g + r
		if row >= rows {
			return
		}
		src := data[row*rb : (row+1)*rb]
		ps := unsafe.Pointer(&src[0])
		for b := range nb {
			blk, o := unsafe.Add(ps, bb*b), unsafe.Add(po, b*pb)
			if wt == MXFP4 {
				*(*uint16)(unsafe.Add(o, 2*r)) = uint16(math.Float32bits(e8m0Half(*(*uint8)(blk))) >> 16)
			} else {
				*(*uint16)(unsafe.Add(o, 2*r)) = *(*uint16)(blk)
			}
			switch wt {
			case Q5_0:
				*(*uint32)(unsafe.Add(o, 16+4*r)) = *(*uint32)(unsafe.Add(blk, 2)) // qh
			case Q4_1:
				*(*uint16)(unsafe.Add(o, 16+2*r)) = *(*uint16)(unsafe.Add(blk, 2)) // m
			case Q5_1:
				*(*uint16)(unsafe.Add(o, 16+2*r)) = *(*uint16)(unsafe.Add(blk, 2))
				*(*uint32)(unsafe.Add(o, 32+4*r)) = *(*uint32)(unsafe.Add(blk, 4))
			}
			qs, oc := unsafe.Add(blk, bb-4*nc), unsafe.Add(o, co+4*r)
			for c := range nc {
				*(*uint32)(unsafe.Add(oc, 32*c)) = *(*uint32)(unsafe.Add(qs, 4*c))
			}
		}
	}
}

// q4Bias returns the block sums of a's values (Q8_0 format) that the
// packed kernel of wt adds: −8·Σq for Q4_0, the correction that makes its
// unsigned-nibble sums Σ nib·q the block sums Σ (nib−8)·q; −12·Σq for
// MXFP4, whose kernel takes its levels plus 12; nil for IQ4_NL. Computed
// on the first call after a's quantization (single-threaded: MatMul calls
// it before the workers run).
func (a *quantizedActs) q4Bias(wt DType) []int32 {
	nb := a.N / 32
	switch wt {
	case Q4_0:
		if len(a.Q4S) != nb {
			a.Q4S = biasSums(a.Q4S, a.Q[:a.N], -8)
		}
		return a.Q4S
	case MXFP4:
		if len(a.FPS) != nb {
			a.FPS = biasSums(a.FPS, a.Q[:a.N], -12)
		}
		return a.FPS
	case Q5_0:
		if len(a.Q5S) != nb {
			a.Q5S = biasSums(a.Q5S, a.Q[:a.N], -16)
		}
		return a.Q5S
	}
	return nil
}

// q4x8Acts fills xs (nb·q4x8ActLen bytes) with the activations of tokens
// toks (n values each, in a, whose q4Bias(wt) is computed) as the
// four-token kernels of wt (q4x8Four) read them: per block, the four
// tokens' 32 values, their four da, their four biases (Q4_1, Q5_1: their
// Q8_1 block sums sa).
func q4x8Acts(xs []byte, wt DType, a *quantizedActs, n int, toks *[4]int) {
	nb := n / 32
	_ = xs[nb*q4x8ActLen-1]
	bias := a.q4Bias(wt)
	for t, tok := range toks {
		q, d := a.Q[tok*n:(tok+1)*n], a.D[tok*nb:(tok+1)*nb]
		for b := range nb {
			o := xs[b*q4x8ActLen:]
			for i := range 32 {
				o[32*t+i] = byte(q[32*b+i])
			}
			binary.LittleEndian.PutUint32(o[128+4*t:], math.Float32bits(d[b]))
			switch {
			case bias != nil:
				binary.LittleEndian.PutUint32(o[144+4*t:], uint32(bias[tok*nb+b]))
			case wt == Q4_1 || wt == Q5_1:
				binary.LittleEndian.PutUint32(o[144+4*t:], math.Float32bits(a.S[tok*nb+b]))
			default:
				binary.LittleEndian.PutUint32(o[144+4*t:], 0) // Q8_0: none
			}
		}
	}
}

// q4x8T4Tokens is how many of n tokens the four-token kernels take: the
// groups of four and a last group of three, its last token repeated (one
// pass over the weights instead of three: three sequences decoding
// together, a speculative verification); one or two last tokens take the
// one-token kernel. 110M-shaped Q8_0, engine BenchmarkConcurrentDecode
// on one thread, interleaved x2: conc=3 177-188 → 214-218 tok/s; a
// padded group of two measured no gain (conc=2 155-162 → 148-156).
func q4x8T4Tokens(n int) int {
	if n%4 == 3 {
		return n
	}
	return n &^ 3
}

// q4x8ActGroups fills xs ((q4x8T4Tokens(n)+3)/4 groups of cols/32 ·
// q4x8ActLen bytes) with the four-token kernels' activations of a's n
// tokens (q4x8Acts), a last group of three repeating its last.
func q4x8ActGroups(xs []byte, wt DType, a *quantizedActs, cols, n int) {
	pl := cols / 32 * q4x8ActLen
	var toks [4]int
	for t0 := 0; t0 < q4x8T4Tokens(n); t0 += 4 {
		qx4Group(&toks, t0, n)
		q4x8Acts(xs[t0/4*pl:(t0/4+1)*pl], wt, a, cols, &toks)
	}
}

// dotQ4x8 sets dst[tok·ldd + r] = dotQ(wt, row r, token tok) for rows
// [lo, hi) of the packed matrix pk (rows rows, n columns; lo a multiple
// of 8) and every token of a from t0 to nt: four at a time where wt has
// four-token kernels (q4x8Four; xs: q4x8ActGroups of the tokens from t0,
// a last group of three with its last token repeated, q4x8T4Tokens),
// then one at a time. a's q4Bias(wt) must have been
// computed (workers only read it).
func dotQ4x8(wt DType, dst []float32, ldd int, pk []byte, rows, lo, hi, n int, a *quantizedActs, xs []byte, t0, nt int) {
	nb := n / 32
	gl := nb * q4x8BlockOf(wt)
	g0, g1 := lo/8, hi/8 // whole groups; a last partial one (hi = rows) after
	var tail [4 * 8]float32
	t, t4 := t0, t0
	if q4x8Four(wt) {
		t4 += q4x8T4Tokens(nt - t0)
	}
	for ; t < t4; t += 4 {
		x := xs[(t-t0)/4*nb*q4x8ActLen:]
		m := min(4, nt-t) // distinct tokens: a repeated last one writes its row again
		var offs [4]uintptr
		for i := range offs {
			offs[i] = uintptr(min(i, m-1) * ldd * 4)
		}
		if g1 > g0 {
			_ = dst[(t+m-1)*ldd+8*g1-1]
			q4x8T4(wt, &dst[t*ldd+8*g0], g1-g0, &pk[g0*gl], &x[0], nb, &offs)
		}
		if hi%8 != 0 {
			for i := range offs {
				offs[i] = uintptr(i * 8 * 4)
			}
			q4x8T4(wt, &tail[0], 1, &pk[g1*gl], &x[0], nb, &offs)
			for i := range m {
				copy(dst[(t+i)*ldd+8*g1:(t+i)*ldd+hi], tail[8*i:])
			}
		}
	}
	var none int32
	var nonef float32
	bias := a.q4Bias(wt)
	for ; t < nt; t++ {
		q, d, s, sa := &a.Q[t*n], &a.D[t*nb], &none, &nonef
		if bias != nil {
			s = &bias[t*nb]
		}
		if wt == Q4_1 || wt == Q5_1 {
			sa = &a.S[t*nb]
		}
		if g1 > g0 {
			_ = dst[t*ldd+8*g1-1]
			q4x8T1(wt, &dst[t*ldd+8*g0], g1-g0, &pk[g0*gl], q, d, s, sa, nb)
		}
		if hi%8 != 0 {
			q4x8T1(wt, &tail[0], 1, &pk[g1*gl], q, d, s, sa, nb)
			copy(dst[t*ldd+8*g1:t*ldd+hi], tail[:])
		}
	}
}

// q4x8T1 and q4x8T4 call wt's kernel directly (a call through a func
// value would make the arguments escape: the kernels are go:noescape).
func q4x8T1(wt DType, dst *float32, groups int, w *byte, q *int8, d *float32, ns *int32, sa *float32, nb int) {
	switch wt {
	case Q4_1:
		qdotQ4_1x8T1(dst, groups, w, q, d, sa, nb)
	case Q5_1:
		qdotQ5_1x8T1(dst, groups, w, q, d, sa, nb)
	case Q4_0:
		qdotQ4_0x8T1(dst, groups, w, q, d, ns, nb)
	case Q5_0:
		qdotQ5_0x8T1(dst, groups, w, q, d, ns, nb)
	case IQ4_NL:
		qdotIQ4_NLx8T1(dst, groups, w, q, d, ns, nb)
	case MXFP4:
		qdotMXFP4x8T1(dst, groups, w, q, d, ns, nb)
	case Q8_0:
		qdotQ8_0x8T1(dst, groups, w, q, d, ns, nb)
	}
}

func q4x8T4(wt DType, dst *float32, groups int, w *byte, xs *byte, nb int, offs *[4]uintptr) {
	switch wt {
	case Q4_0:
		qdotQ4_0x8T4(dst, groups, w, xs, nb, offs)
	case Q5_0:
		qdotQ5_0x8T4(dst, groups, w, xs, nb, offs)
	case Q4_1:
		qdotQ4_1x8T4(dst, groups, w, xs, nb, offs)
	case Q5_1:
		qdotQ5_1x8T4(dst, groups, w, xs, nb, offs)
	case MXFP4:
		qdotMXFP4x8T4(dst, groups, w, xs, nb, offs)
	case Q8_0:
		qdotQ8_0x8T4(dst, groups, w, xs, nb, offs)
	case IQ4_NL:
		qdotIQ4_NLx8T4(dst, groups, w, xs, nb, offs)
	}
}

// q4x8Rows writes rows [lo, hi) of the packed matrix pk (type wt, n
// columns) back in their file encoding into out, one row after another:
// the 16-token IQ4_NL/MXFP4 tiles read rows so, and once a matrix is
// packed its original is no longer kept in fast memory (Repacked).
func q4x8Rows(out []byte, wt DType, pk []byte, lo, hi, n int) {
	nb := n / 32
	bb := wt.blockBytes()
	rb := nb * bb
	_ = out[(hi-lo)*rb-1]
	_ = pk[(hi+7)/8*nb*q4x8Block-1]
	g0 := lo / 8
	if q4x8Arch && hasSIMD && lo%8 == 0 && hi/8 > g0 {
		// Whole groups transposed in registers; MXFP4's scales below.
		q4x8DepackY(&out[0], uintptr(rb), &pk[g0*nb*q4x8Block], hi/8-g0, nb, uintptr(bb))
		if wt == MXFP4 {
			for r := lo; r < hi&^7; r++ {
				g, i := r/8, r%8
				for b := range nb {
					out[(r-lo)*rb+b*bb] = e8m0FromHalf(binary.LittleEndian.Uint16(pk[(g*nb+b)*q4x8Block+2*i:]))
				}
			}
		}
		g0 = hi / 8
	}
	// Group by group and block, so the packed copy is read once, in order;
	// word copies through unsafe pointers (bounds checked above).
	po, pp := unsafe.Pointer(&out[0]), unsafe.Pointer(&pk[0])
	for g := g0; g < (hi+7)/8; g++ {
		i0, i1 := max(lo-8*g, 0), min(hi-8*g, 8)
		for b := range nb {
			src := unsafe.Add(pp, (g*nb+b)*q4x8Block)
			for i := i0; i < i1; i++ {
				blk := unsafe.Add(po, (8*g+i-lo)*rb+b*bb)
				sc := *(*uint16)(unsafe.Add(src, 2*i))
				if wt == MXFP4 {
					*(*uint8)(blk) = e8m0FromHalf(sc)
				} else {
					*(*uint16)(blk) = sc
				}
				qs := unsafe.Add(blk, bb-16)
				for c := range 4 {
					*(*uint32)(unsafe.Add(qs, 4*c)) = *(*uint32)(unsafe.Add(src, 16+32*c+4*i))
				}
			}
		}
	}
}

// e8m0FromHalf inverts the packing of an MXFP4 scale: the E8M0 byte e
// whose e8m0Half has bf16 bits v.
func e8m0FromHalf(v uint16) uint8 {
	switch {
	case v >= 0x0080: // normal: exponent field e−1
		return uint8(v>>7) + 1
	case v == 0x0040:
		return 1
	}
	return 0
}
