package tensor

import "unsafe"

// Quantized kernels on arm64, behind the wrappers of rowdot_quant.go,
// dequant_simd.go and quantize_acts.go (see kernels_float_arm64.go for the naming).
// Q8_0 and Q4_K weight rows have NEON integer dots (rowdot_quant_arm64.s), in
// two forms each: SDOT (ARMv8.2 dot product, hasDotProd) and plain ASIMD
// widening multiplies (SMULL/SMLAL2 then SADALP) for cores without it. The
// other types, the dequantizers and the activation quantizers run the
// pure-Go loops below over the same buffers, bit for bit the reference.

// Arguments as the …AVX2 kernels: dst (rows) results, row r at
// w + r·stride, q (nb·blockSize) activations with block scales d (nb).

//go:noescape
func qdotQ8_0SDOT(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

//go:noescape
func qdotQ8_0NEON(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

func qdotQ8_0SIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int) {
	if hasDotProd {
		qdotQ8_0SDOT(dst, rows, w, stride, q, d, aux, nb)
		return
	}
	qdotQ8_0NEON(dst, rows, w, stride, q, d, aux, nb)
}

//go:noescape
func qdotQ4_KSDOT(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

//go:noescape
func qdotQ4_KNEON(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

func qdotQ4_KSIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int) {
	if hasDotProd {
		qdotQ4_KSDOT(dst, rows, w, stride, q, d, aux, nb)
		return
	}
	qdotQ4_KNEON(dst, rows, w, stride, q, d, aux, nb)
}

func qdotQ5_KSIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int) {
	qdotRowsGo(Q5_K, dst, rows, w, stride, q, d, aux, nb)
}

func qdotQ6_KSIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int) {
	qdotRowsGo(Q6_K, dst, rows, w, stride, q, d, aux, nb)
}

// qdotRowsGo runs the reference row dot of wt over rows weight rows, with
// the kernels' raw arguments (aux: the Q8_K bsums (16·nb)).
func qdotRowsGo(wt DType, dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int) {
	bs, bb := qBlock(wt)
	out := unsafe.Slice(dst, rows)
	qs := unsafe.Slice(q, nb*bs)
	ds := unsafe.Slice(d, nb)
	var bsums []int16
	if wt == Q4_K || wt == Q5_K {
		bsums = unsafe.Slice((*int16)(aux), 16*nb)
	}
	for r := range out {
		row := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(w), uintptr(r)*stride)), nb*bb)
		switch wt {
		case Q8_0:
			out[r] = dotQ8_0(row, qs, ds)
		case Q4_K:
			out[r] = dotQ4_K(row, qs, ds, bsums)
		case Q5_K:
			out[r] = dotQ5_K(row, qs, ds, bsums)
		case Q6_K:
			out[r] = dotQ6_K(row, qs, ds)
		}
	}
}

// The dequantizers: the reference decoders on nb whole blocks.

func dqGo(t DType, dst *float32, src *byte, nb int) {
	bs, bb := qBlock(t)
	DequantizeRow(unsafe.Slice(dst, nb*bs), t, unsafe.Slice(src, nb*bb))
}

func dqQ8_0SIMD(dst *float32, src *byte, nb int) { dqGo(Q8_0, dst, src, nb) }
func dqQ4_0SIMD(dst *float32, src *byte, nb int) { dqGo(Q4_0, dst, src, nb) }
func dqQ4_1SIMD(dst *float32, src *byte, nb int) { dqGo(Q4_1, dst, src, nb) }
func dqQ5_0SIMD(dst *float32, src *byte, nb int) { dqGo(Q5_0, dst, src, nb) }
func dqQ5_1SIMD(dst *float32, src *byte, nb int) { dqGo(Q5_1, dst, src, nb) }
func dqQ4_KSIMD(dst *float32, src *byte, nb int) { dqGo(Q4_K, dst, src, nb) }
func dqQ5_KSIMD(dst *float32, src *byte, nb int) { dqGo(Q5_K, dst, src, nb) }
func dqQ6_KSIMD(dst *float32, src *byte, nb int) { dqGo(Q6_K, dst, src, nb) }

// The two passes of the activation quantizers (see quantizeBlocksSIMD), in
// Go with the reference's expressions.

// qAbsMax32SIMD: out[b] = max |x| over block b of 32; nan reports a NaN
// anywhere.
func qAbsMax32SIMD(x *float32, nb int, out *float32) (nan bool) {
	xs := unsafe.Slice(x, 32*nb)
	os := unsafe.Slice(out, nb)
	for b := range os {
		var m float32
		for _, v := range xs[32*b : 32*b+32] {
			m = max(m, qabs(v))
			nan = nan || v != v
		}
		os[b] = m
	}
	return nan
}

// qVMax256SIMD: out[b] = the element of block b (256) of largest
// magnitude, the first on ties; nan reports a NaN anywhere.
func qVMax256SIMD(x *float32, nb int, out *float32) (nan bool) {
	xs := unsafe.Slice(x, qkK*nb)
	os := unsafe.Slice(out, nb)
	for b := range os {
		blk := xs[qkK*b : qkK*b+qkK]
		for _, v := range blk {
			nan = nan || v != v
		}
		os[b], _ = signedMax(blk)
	}
	return nan
}

// qRound32SIMD: q[32b+j] = roundf(x[32b+j]·id[b]).
func qRound32SIMD(x *float32, id *float32, nb int, q *int8) {
	xs := unsafe.Slice(x, 32*nb)
	ids := unsafe.Slice(id, nb)
	qs := unsafe.Slice(q, 32*nb)
	for i, v := range xs {
		qs[i] = int8(roundAway(v * ids[i/32]))
	}
}

// qRound256SIMD: q = min(127, nearestInt(x·is[b])) and the sums of each
// 16 into bsums.
func qRound256SIMD(x *float32, is *float32, nb int, q *int8, bsums *int16) {
	xs := unsafe.Slice(x, qkK*nb)
	iss := unsafe.Slice(is, nb)
	qs := unsafe.Slice(q, qkK*nb)
	sums := unsafe.Slice(bsums, 16*nb)
	for i, v := range xs {
		qs[i] = int8(min(127, nearestInt(iss[i/qkK]*v)))
	}
	for j := range sums {
		var s int16
		for _, v := range qs[16*j : 16*j+16] {
			s += int16(v)
		}
		sums[j] = s
	}
}
