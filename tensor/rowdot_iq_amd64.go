package tensor

import "unsafe"

// The table formats' row dots of rowdot_iq_amd64.s; see dotQRows and
// rowdot_iq_ref.go for the arithmetic they share with the reference.

//go:noescape
func qdotIQ4_NLSIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

//go:noescape
func qdotMXFP4SIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

//go:noescape
func qdotIQ4_XSSIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

//go:noescape
func qdotIQ3_SSIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

// hasIQKernel reports whether weight type wt has an assembly kernel of
// rowdot_iq_amd64.s on this machine.
func hasIQKernel(wt DType) bool {
	switch wt {
	case IQ4_NL, MXFP4, IQ4_XS, IQ3_S:
		return hasSIMD
	}
	return false
}

// qdotIQ runs wt's kernel (hasIQKernel(wt) must hold).
func qdotIQ(wt DType, dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int) {
	switch wt {
	case IQ4_NL:
		qdotIQ4_NLSIMD(dst, rows, w, stride, q, d, aux, nb)
	case MXFP4:
		qdotMXFP4SIMD(dst, rows, w, stride, q, d, unsafe.Pointer(&e8m0HalfTab[0]), nb)
	case IQ4_XS:
		qdotIQ4_XSSIMD(dst, rows, w, stride, q, d, aux, nb)
	case IQ3_S:
		qdotIQ3_SSIMD(dst, rows, w, stride, q, d, unsafe.Pointer(&iq3sGrid[0]), nb)
	default:
		panic("tensor: no table-format kernel for " + wt.String())
	}
}
