package tensor

import (
	"encoding/binary"
	"math"
)

// Integer GEMM for quantized weights at prefill sizes (the K-quants from
// rowwiseKMax = 64 tokens on, the Q8_0 family from qg8MinN).
//
// The float GEMM ((matmul.go)) dequantizes a block of weights to float32 and
// runs 6×16 FMA tiles: at most 16 multiply-adds per cycle (two FMA pipes),
// plus the decoding. With x quantized to 8 bits per block — Q8_K
// super-blocks of 256 for the K-quants, exactly as the matrix-vector path
// and llama.cpp do — one VPMADDUBSW multiplies 32 weight bytes by 32
// activation bytes and adds pairs into int16, and a VPMADDWD by the
// weights' sub-block scales widens to int32, so a super-block is
//
//	I = Σ_sub sc_sub · Σ q·qa   (exact, int32)
//	y += dW·da·I + mW·da·Σ_j mins_j·bsum_j
//
// with one float step per 256 products. VPMADDUBSW and VPMADDWD run at the
// FMA pipes' rate (two per cycle here), so the win comes from doing fewer
// of them per product: two VPMADDUBSW whose lanes cover the same
// sub-blocks are added in int16 before a single VPMADDWD (1.5 multiplies
// per 32 products against 4 FMAs), and nothing is decoded to float.
//
// Each weight row block is first unpacked (qgUnpack*) into a layout the
// micro-kernel reads with plain loads, per row and super-block of 256:
//
//	off   0: q    [256]u8     quant values, unsigned, permuted per 64
//	                          elements (qgPermute): bytes 0-31 hold
//	                          elements 16k+0..7, bytes 32-63 16k+8..15
//	off 256: sc   [4][16]i16  per 64 elements, the scale of each int16
//	                          lane (lanes 4k..4k+3: sub-block of 16 no. k)
//	off 384: mins [16]i16     per 16-element bsum, its coefficient
//	off 416: d    f32         super-block scale of I
//	off 420: dmin f32         super-block scale of Σ mins·bsums
//
// (Q4_K/Q5_K: q = the 4/5-bit value, sc = 6-bit scale, mins = 6-bit min,
// both repeated over the two 16-element halves of their sub-block of 32,
// dmin = −dmin. Q6_K: q = the 6-bit value before −32, sc = int8 scale per
// 16, mins = scale, dmin = −32·d.) The activations are permuted the same
// way once per call. Unpacking costs about one pass over the block and is
// amortized over every token.
//
// The micro-kernel (qgemmK2x4SIMD) computes 2 rows × 4 tokens: eight int32
// accumulators; per 64-element group three loads per row (two halves,
// scales) and per row×token two VPMADDUBSW (activations straight from
// memory), VPADDW, VPMADDWD, VPADDD — about as many loads as multiplies,
// which is what bounds it (~145 GFLOP/s per core on L1-resident data
// against ~85 for the float 6×16 tile). At the end of each super-block blends and shuffles (H2, H4; the
// horizontal VPHADDD is 4× slower than an FMA here) fold a row's four
// token accumulators into one vector (lane t of each 128-bit half is token
// t), which is scaled by dW·[da_t] and added to a float accumulator; the
// halves are added at the end. Tokens are padded to multiples of 4 with
// zero activations, rows to multiples of 2 with zero weights.
//
// The Q8_0 family (Q8_0, and Q4_0/Q5_0 unpacked to Q8_0 blocks) has a
// kernel too (qgemmQ8x8SIMD, 8 rows × 4 tokens, activations interleaved
// so that one broadcast weight quarter meets all four tokens), but every
// 32 products need their own float scale step, and it only overtakes the
// float GEMM at a few hundred tokens (BenchmarkQGEMM): it is used from
// qg8MinN tokens on.
//
// Results equal the per-token dotQRows to float rounding: the integer
// parts are identical and only the float sums are reordered.
const (
	qgSB  = 448 // bytes per unpacked row super-block
	qgMR  = 2   // rows per micro-tile
	qgNR  = 4   // tokens per micro-tile
	qgMC  = 24  // rows per claimed block (multiple of qgMR)
	qgKSB = 8   // super-blocks per column slice (2048 columns)

	qg8MR = 8  // Q8_0 family: rows per micro-tile
	qg8MC = 32 // rows per claimed block (multiple of qg8MR)
	qg8KB = 64 // blocks of 32 per column slice (2048 columns)

	qgScratch = max(qg8MC*qg8KB*34, qgMC*qgKSB*qgSB) // unpacked block bytes
)

// qgemmOn lets benchmarks compare with the float GEMM in one run.
var qgemmOn = true

// qgemmType reports whether MatMul takes the integer GEMM for n tokens
// through weights of type t on this machine, when the row dots do not
// (rowwiseQuant): the K-quants (every n then sees 8-bit activations), the
// Q8_0 family from qg8MinN on.
func qgemmType(t DType, n int) bool {
	if !qgemmOn || !hasQgemm() {
		return false
	}
	switch qgemmKind(t) {
	case qgK:
		return true
	case qg8:
		return n >= qg8MinN
	}
	return false
}

// qgemmKind is the integer GEMM family of weight type t: qgK (Q8_K
// activations, unpacked super-blocks, qgemmK2x4SIMD), qg8 (Q8_0
// activations, Q8_0 blocks, qgemmQ8x8SIMD) or 0 (none).
func qgemmKind(t DType) int {
	switch t {
	case Q4_K, Q5_K, Q6_K:
		return qgK
	case Q8_0, Q4_0, Q5_0:
		return qg8
	}
	return 0
}

// qg8MinN is the fewest tokens for which the Q8_0 family takes the
// integer GEMM. Its kernel needs a float step per 32 products and only
// pays once the per-call work (quantizing x, gathering scales, unpacking
// Q4_0/Q5_0) is spread over many tokens: BenchmarkQGEMM, 2 threads, TinyLlama
// shapes, per CPU-second, int against float: n = 512 +15-25%, n = 256
// +0-10%, n = 128 −5..+7%, n = 16 −35%. Below it the float GEMM keeps x
// exact. Tests lower it.
var qg8MinN = 256

const (
	qgK = 1 + iota
	qg8
)

func putU64(b []byte, v uint64) { binary.LittleEndian.PutUint64(b, v) }
func getU64(b []byte) uint64    { return binary.LittleEndian.Uint64(b) }

const (
	lo4x8 = 0x0F0F0F0F0F0F0F0F
	lo2x8 = 0x0303030303030303
	lo1x8 = 0x0101010101010101
	i16x4 = 0x0001000100010001
)

func putF32(b []byte, f float32) { binary.LittleEndian.PutUint32(b, math.Float32bits(f)) }

// qgPos is the byte offset, in the kernel's permuted order, of element e
// (a multiple of 8) of a super-block: within each 64-element group the
// first 32 bytes hold elements 16k+0..7 and the next 32 elements 16k+8..15
// (k = 0..3), so the two vectors' VPMADDUBSW lanes cover the same
// 16-element sub-blocks and can be added in int16 before one VPMADDWD by
// the scales.
func qgPos(e int) int { return e&^63 | (e>>3&1)<<5 | (e>>4&3)<<3 }

// qgPermute copies 256 values from src (element order) to dst (qgPos
// order).
func qgPermute[T byte | int8](dst, src []T) {
	_, _ = dst[255], src[255]
	for e := 0; e < 256; e += 8 {
		p := qgPos(e)
		copy(dst[p:p+8], src[e:e+8])
	}
}

// qgScales writes the scale, mins, d and dmin sections of an unpacked
// super-block: s16 is the scale of each 16-element sub-block, mins the
// coefficient of each bsum.
func qgScales(dst []byte, s16, mins *[16]int16, d, dmin float32) {
	_ = dst[qgSB-1]
	for g := range 4 {
		o := dst[256+32*g : 256+32*g+32]
		putU64(o[0:], uint64(uint16(s16[4*g]))*i16x4)
		putU64(o[8:], uint64(uint16(s16[4*g+1]))*i16x4)
		putU64(o[16:], uint64(uint16(s16[4*g+2]))*i16x4)
		putU64(o[24:], uint64(uint16(s16[4*g+3]))*i16x4)
	}
	for j := 0; j < 16; j += 4 {
		putU64(dst[384+2*j:], uint64(uint16(mins[j]))|uint64(uint16(mins[j+1]))<<16|
			uint64(uint16(mins[j+2]))<<32|uint64(uint16(mins[j+3]))<<48)
	}
	putF32(dst[416:], d)
	putF32(dst[420:], dmin)
}

// qgUnpackQ4K unpacks one Q4_K block (144 bytes) into dst (qgSB bytes).
func qgUnpackQ4K(dst, blk []byte) {
	_, _ = dst[qgSB-1], blk[143]
	scales, qs := blk[4:16], blk[16:144]
	for j := range 4 {
		for l := 0; l < 32; l += 8 {
			v := getU64(qs[32*j+l:])
			putU64(dst[qgPos(64*j+l):], v&lo4x8)
			putU64(dst[qgPos(64*j+32+l):], v>>4&lo4x8)
		}
	}
	var s16, mins [16]int16
	scalesK4(&s16, &mins, scales)
	qgScales(dst, &s16, &mins, f16At(blk), -f16At(blk[2:]))
}

// scalesK4 expands Q4_K/Q5_K packed scales and mins to 16-element
// sub-blocks.
func scalesK4(s16, mins *[16]int16, scales []byte) {
	for c := range 8 {
		sc, m := scaleMinK4(c, scales)
		s16[2*c], s16[2*c+1] = int16(sc), int16(sc)
		mins[2*c], mins[2*c+1] = int16(m), int16(m)
	}
}

// qgUnpackQ5K unpacks one Q5_K block (176 bytes).
func qgUnpackQ5K(dst, blk []byte) {
	_, _ = dst[qgSB-1], blk[175]
	scales, qh, ql := blk[4:16], blk[16:48], blk[48:176]
	for j := range 4 {
		sh := uint(2 * j)
		for l := 0; l < 32; l += 8 {
			v := getU64(ql[32*j+l:])
			h := getU64(qh[l:])
			putU64(dst[qgPos(64*j+l):], v&lo4x8|(h>>sh&lo1x8)<<4)
			putU64(dst[qgPos(64*j+32+l):], v>>4&lo4x8|(h>>(sh+1)&lo1x8)<<4)
		}
	}
	var s16, mins [16]int16
	scalesK4(&s16, &mins, scales)
	qgScales(dst, &s16, &mins, f16At(blk), -f16At(blk[2:]))
}

// qgUnpackQ6K unpacks one Q6_K block (210 bytes).
func qgUnpackQ6K(dst, blk []byte) {
	_, _ = dst[qgSB-1], blk[209]
	for n := range 2 {
		ql, qh := blk[64*n:64*n+64], blk[128+32*n:128+32*n+32]
		e := 128 * n
		for l := 0; l < 32; l += 8 {
			a, b, h := getU64(ql[l:]), getU64(ql[32+l:]), getU64(qh[l:])
			putU64(dst[qgPos(e+l):], a&lo4x8|(h&lo2x8)<<4)
			putU64(dst[qgPos(e+32+l):], b&lo4x8|(h>>2&lo2x8)<<4)
			putU64(dst[qgPos(e+64+l):], a>>4&lo4x8|(h>>4&lo2x8)<<4)
			putU64(dst[qgPos(e+96+l):], b>>4&lo4x8|(h>>6&lo2x8)<<4)
		}
	}
	var s16 [16]int16
	for j, v := range blk[192:208] {
		s16[j] = int16(int8(v))
	}
	d := f16At(blk[208:])
	qgScales(dst, &s16, &s16, d, -32*d)
}

// qgUnpack unpacks nsb super-blocks of a type-t row (src starting at the
// first of them) into dst.
func qgUnpack(dst []byte, t DType, src []byte, nsb int) {
	switch t {
	case Q4_K:
		for b := range nsb {
			qgUnpackQ4K(dst[b*qgSB:], src[b*144:])
		}
	case Q5_K:
		for b := range nsb {
			qgUnpackQ5K(dst[b*qgSB:], src[b*176:])
		}
	case Q6_K:
		for b := range nsb {
			qgUnpackQ6K(dst[b*qgSB:], src[b*210:])
		}
	default:
		panic("tensor: qgUnpack: " + t.String())
	}
}

// qgemmTile adds to c[r·ldc + t] (r < 2, t < 4) the products of the two
// unpacked rows at a (row stride lda bytes, nsb super-blocks) with the four
// tokens whose int8 activations start at x[t·xs], bsums at bs[t·bss] and
// whose scales are dxv[sb·8 + t] (and, duplicated, dxv[sb·8 + 4 + t]).
func qgemmTile(a []byte, lda int, x []int8, xs int, bs []int16, bss int, dxv []float32, nsb int, c []float32, ldc int) {
	_ = a[(qgMR-1)*lda+nsb*qgSB-1]
	_ = x[3*xs+nsb*256-1]
	_ = bs[3*bss+nsb*16-1]
	_ = dxv[nsb*8-1]
	_ = c[(qgMR-1)*ldc+3]
	if hasQgemm() {
		qgemmK2x4SIMD(&a[0], uintptr(lda), &x[0], uintptr(xs), &bs[0], uintptr(2*bss), &dxv[0], nsb, &c[0], uintptr(4*ldc))
		return
	}
	qgemmTileRef(a, lda, x, xs, bs, bss, dxv, nsb, c, ldc)
}

// qgemmTileRef is the Go version of qgemmK2x4SIMD.
func qgemmTileRef(a []byte, lda int, x []int8, xs int, bs []int16, bss int, dxv []float32, nsb int, c []float32, ldc int) {
	for r := range qgMR {
		for t := range qgNR {
			var f float32
			for sb := range nsb {
				blk := a[r*lda+sb*qgSB : r*lda+(sb+1)*qgSB]
				xq := x[t*xs+sb*256 : t*xs+sb*256+256]
				var isum, msum int32
				for i := range 256 {
					s := int32(int16(binary.LittleEndian.Uint16(blk[256+32*(i/64)+2*(i%32/2):])))
					isum += s * int32(blk[i]) * int32(xq[i])
				}
				for j := range 16 {
					m := int32(int16(binary.LittleEndian.Uint16(blk[384+2*j:])))
					msum += m * int32(bs[t*bss+sb*16+j])
				}
				dx := dxv[sb*8+t]
				f += f32At(blk[416:])*dx*float32(isum) + f32At(blk[420:])*dx*float32(msum)
			}
			c[r*ldc+t] += f
		}
	}
}

// qgemm is MatMul's integer GEMM: x is quantized (Q8_K for the K-quants,
// Q8_0 for the Q8_0 family; padded with zero tokens to a multiple of qgNR)
// in one parallel phase, then workers claim blocks of rows.
func (j *matJob) qgemm() {
	s, w, K := j.s, j.w, j.w.Cols
	j.npad = (j.n + qgNR - 1) / qgNR * qgNR
	if err := s.acts.resize(w.Type, j.npad*K); err != nil {
		panic(err) // unreachable: the type and K were checked
	}
	s.shared.dxv = growBuf(s.shared.dxv, j.npad/qgNR*(K/s.acts.Format.BlockSize())*8)
	s.shared.xm = growI8(s.shared.xm, j.npad*K)
	for i := range s.scratch {
		sc := &s.scratch[i]
		if cap(sc.qa) < qgScratch {
			sc.qa = make([]byte, qgScratch)
		}
		sc.c = growBuf(sc.c, max(qgMC, qg8MC)*(j.npad+gemmNR))
		sc.dwf = growBuf(sc.dwf, qg8MC*qg8KB)
	}
	j.phase = phaseQQuant
	s.run(j)
	j.phase = phaseQGEMM
	j.next.Store(0)
	s.run(j)
	j.dst, j.x, j.w = nil, nil, nil
}

// qgBlockRows is the number of rows a worker claims in the integer GEMM.
func (j *matJob) qgBlockRows() int {
	if qgemmKind(j.w.Type) == qg8 {
		return qg8MC
	}
	return qgMC
}

// qgQuant quantizes token group g (zeros past n) and fills its dxv.
func (j *matJob) qgQuant(g int) {
	a, K := &j.s.acts, j.w.Cols
	nb := K / a.Format.BlockSize() // blocks per token
	t0, t1 := g*qgNR, min(g*qgNR+qgNR, j.n)
	if t1 > t0 {
		a.quantizeBlocks(j.x, t0*nb, t1*nb)
	}
	if t1 < t0+qgNR {
		p0, p1 := max(t0, t1), t0+qgNR
		clear(a.Q[p0*K : p1*K])
		clear(a.D[p0*nb : p1*nb])
		if a.Format == Q8_K {
			clear(a.BSums[p0*K/16 : p1*K/16])
		}
	}
	dxv := j.s.shared.dxv[g*nb*8 : (g+1)*nb*8]
	if a.Format == Q8_0 {
		// Mixed layout for qgemmQ8x8SIMD: per block and quarter of 8,
		// the four tokens' 8 values side by side; scales in lane pairs.
		xm := j.s.shared.xm[g*qgNR*K : (g+1)*qgNR*K]
		for t := range qgNR {
			q := a.Q[(t0+t)*K : (t0+t+1)*K]
			for b := range nb {
				for qq := range 4 {
					copy(xm[b*128+qq*32+t*8:b*128+qq*32+t*8+8], q[b*32+qq*8:b*32+qq*8+8])
				}
				d := a.D[(t0+t)*nb+b]
				dxv[b*8+2*t], dxv[b*8+2*t+1] = d, d
			}
		}
		return
	}
	// Q8_K: the values permuted like the weights (qgPermute).
	xp := j.s.shared.xm[g*qgNR*K : (g+1)*qgNR*K]
	for i := 0; i < len(xp); i += qkK {
		qgPermute(xp[i:i+qkK], a.Q[t0*K+i:t0*K+i+qkK])
	}
	for b := range nb {
		for t := range qgNR {
			d := a.D[(t0+t)*nb+b]
			dxv[b*8+t], dxv[b*8+4+t] = d, d
		}
	}
}

// qgemmBlock computes dst[t][r] for rows [r0, r1) (at most qgMC) and all
// tokens: per slice of qgKSB super-blocks, the rows are unpacked (padded
// with zero rows to a multiple of qgMR) and met by every token group.
func (j *matJob) qgemmBlock(sc *workerScratch, r0, r1 int) {
	if qgemmKind(j.w.Type) == qg8 {
		j.qg8Block(sc, r0, r1)
		return
	}
	w, a := j.w, &j.s.acts
	K, rb, npad := w.Cols, w.RowBytes(), j.npad
	nsb := K / qkK
	_, bb := qBlock(w.Type)
	m := r1 - r0
	mp := (m + qgMR - 1) / qgMR * qgMR
	ldc := npad + gemmNR // padded: rows of c 2ᵏ floats apart would share L1 sets
	c := sc.c[:mp*ldc]   // (mp, ldc) dstᵀ
	clear(c)
	for kb := 0; kb < nsb; kb += qgKSB {
		kn := min(qgKSB, nsb-kb)
		lda := kn * qgSB
		qa := sc.qa[:mp*lda]
		for i := range mp {
			if i >= m {
				clear(qa[i*lda : (i+1)*lda])
				continue
			}
			qgUnpack(qa[i*lda:], w.Type, w.Data[(r0+i)*rb+kb*bb:], kn)
		}
		for g := 0; g < npad/qgNR; g++ {
			x := j.s.shared.xm[g*qgNR*K+kb*qkK:]
			bs := a.BSums[g*qgNR*K/16+kb*16:]
			dxv := j.s.shared.dxv[(g*nsb+kb)*8:]
			for i := 0; i < mp; i += qgMR {
				qgemmTile(qa[i*lda:], lda, x, K, bs, K/16, dxv, kn, c[i*ldc+g*qgNR:], ldc)
			}
		}
	}
	j.qgStore(c, r0, m)
}

// qgStore writes the (m, npad+gemmNR) dstᵀ block c of rows from r0 into
// dst.
func (j *matJob) qgStore(c []float32, r0, m int) {
	transposeStore(j.dst, c, j.w.Rows, r0, m, j.n, j.npad+gemmNR)
}

// qg8Block is qgemmBlock for the Q8_0 family: Q8_0 rows are read in place,
// Q4_0/Q5_0 rows are first unpacked to Q8_0 blocks (qg8Unpack); the block
// scales are gathered as float32 (dwf) per column slice. Whole 8-row tiles
// take qgemmQ8x8SIMD, the last m%8 rows — and any block whose Q8_0
// weights hold a −128, which the kernel's sign trick cannot take — the
// row dots.
func (j *matJob) qg8Block(sc *workerScratch, r0, r1 int) {
	w, a := j.w, &j.s.acts
	K, rb, npad := w.Cols, w.RowBytes(), j.npad
	nb := K / 32
	_, bb := qBlock(w.Type)
	m := r1 - r0
	mt := m &^ (qg8MR - 1)
	ldc := npad + gemmNR
	c := sc.c[:mt*ldc] // (mt, ldc) dstᵀ
	clear(c)
	for kb := 0; kb < nb && mt > 0; kb += qg8KB {
		kn := min(qg8KB, nb-kb)
		var wa []byte
		var lda int
		dwf := sc.dwf[:mt*kn] // (mt/8, kn, 8)
		if w.Type == Q8_0 {
			wa, lda = w.Data[r0*rb+kb*34:], rb
			if !qg8Scales(dwf, wa, lda, mt, kn) {
				mt = 0 // a −128 weight: all rows by the row dots
				break
			}
		} else {
			lda = kn * 34
			wa = sc.qa[:mt*lda]
			for i := range mt {
				qg8Unpack(wa[i*lda:], w.Type, w.Data[(r0+i)*rb+kb*bb:], kn)
			}
			qg8Scales(dwf, wa, lda, mt, kn)
		}
		for g := 0; g < npad/qgNR; g++ {
			xm := j.s.shared.xm[g*qgNR*K+kb*128:]
			dxv := j.s.shared.dxv[(g*nb+kb)*8:]
			for i := 0; i < mt; i += qg8MR {
				qg8Tile(wa[i*lda:], lda, dwf[i*kn:], xm, dxv, kn, c[i*ldc+g*qgNR:], ldc)
			}
		}
	}
	j.qgStore(c, r0, mt)
	if mt < m {
		for tok := range j.n {
			dotQRows(w.Type, j.dst[tok*w.Rows+r0+mt:tok*w.Rows+r1], w.Data[(r0+mt)*rb:], rb, K, a, tok*K)
		}
	}
}

// qg8Scales gathers the fp16 scales of kn Q8_0 blocks of mt rows (at w,
// stride lda) as float32 into dwf, (mt/8, kn, 8), and reports whether no
// weight is −128.
func qg8Scales(dwf []float32, w []byte, lda, mt, kn int) bool {
	const hi = 0x8080808080808080
	var bad uint64
	for i := range mt {
		row := w[i*lda : i*lda+kn*34]
		d := dwf[(i/qg8MR)*kn*qg8MR+i%qg8MR:]
		for b := range kn {
			blk := row[34*b : 34*b+34]
			d[b*qg8MR] = f16At(blk)
			for o := 2; o < 34; o += 8 {
				v := getU64(blk[o:]) ^ hi // a −128 byte becomes 0
				bad |= (v - lo1x8) &^ v & hi
			}
		}
	}
	return bad == 0
}

// qg8Unpack rewrites nb Q4_0 or Q5_0 blocks as Q8_0 blocks (same fp16
// scale, the quant value minus its offset as int8).
func qg8Unpack(dst []byte, t DType, src []byte, nb int) {
	switch t {
	case Q4_0:
		for b := range nb {
			blk, o := src[18*b:18*b+18], dst[34*b:34*b+34]
			o[0], o[1] = blk[0], blk[1]
			for l := 0; l < 16; l += 8 {
				v := getU64(blk[2+l:])
				putU64(o[2+l:], qgSub8(v&lo4x8, 8))
				putU64(o[18+l:], qgSub8(v>>4&lo4x8, 8))
			}
		}
	case Q5_0:
		for b := range nb {
			blk, o := src[22*b:22*b+22], dst[34*b:34*b+34]
			o[0], o[1] = blk[0], blk[1]
			qh := u32At(blk[2:])
			for l := 0; l < 16; l += 8 {
				v := getU64(blk[6+l:])
				putU64(o[2+l:], qgSub8(v&lo4x8|qgBit4[qh>>l&0xFF], 16))
				putU64(o[18+l:], qgSub8(v>>4&lo4x8|qgBit4[qh>>(l+16)&0xFF], 16))
			}
		}
	default:
		panic("tensor: qg8Unpack: " + t.String())
	}
}

// qgBit4[b] has byte i = 0x10 where bit i of b is set: Q5_0's fifth bits.
var qgBit4 = func() (t [256]uint64) {
	for b := range t {
		for i := range 8 {
			if b>>i&1 != 0 {
				t[b] |= 0x10 << (8 * i)
			}
		}
	}
	return t
}()

// qgSub8 subtracts k (< 128) from each byte of v (bytes < 128) modulo 256.
func qgSub8(v uint64, k uint64) uint64 {
	// (v | 0x80) − k never borrows out of a byte; then flip the 0x80 back.
	return ((v | 0x8080808080808080) - k*lo1x8) ^ 0x8080808080808080
}

// qg8Tile adds to c[r·ldc + t] (r < 8, t < 4) the products of the eight
// Q8_0 rows at w (stride lda bytes, nb blocks; scales dw[b·8 + r]) with a
// group of four tokens in the mixed layout xm (scales dxv[b·8 + 2t]).
func qg8Tile(w []byte, lda int, dw []float32, xm []int8, dxv []float32, nb int, c []float32, ldc int) {
	_ = w[7*lda+nb*34-1]
	_ = dw[nb*8-1]
	_ = xm[nb*128-1]
	_ = dxv[nb*8-1]
	_ = c[7*ldc+3]
	if hasQgemm() {
		qgemmQ8x8SIMD(&w[0], uintptr(lda), &dw[0], &xm[0], &dxv[0], nb, &c[0], uintptr(4*ldc))
		return
	}
	for r := range qg8MR {
		for t := range qgNR {
			var f float32
			for b := range nb {
				blk := w[r*lda+34*b : r*lda+34*b+34]
				var s int32
				for i := range 32 {
					s += int32(int8(blk[2+i])) * int32(xm[b*128+i/8*32+t*8+i%8])
				}
				f += dw[b*8+r] * dxv[b*8+2*t] * float32(s)
			}
			c[r*ldc+t] += f
		}
	}
}
