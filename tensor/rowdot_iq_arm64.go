package tensor

import "unsafe"

// The table formats' row dots on arm64 (rowdot_iq_arm64.s): IQ4_NL,
// MXFP4, IQ4_XS and IQ3_S with SDOT (hasDotProd), bit for bit the lane arithmetic of
// rowdot_iq_ref.go — SDOT's int32 lanes are exactly its sums of four
// neighbours. The other types, and cores without SDOT, run the reference
// (the same bits).

//go:noescape
func qdotIQ4_NLSDOT(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

//go:noescape
func qdotMXFP4SDOT(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

//go:noescape
func qdotIQ4_XSSDOT(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

//go:noescape
func qdotIQ3_SSDOT(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

// nlPairActs: no paired IQ4_NL/MXFP4 activations here (rowdot_iq_amd64.go).
func nlPairActs() bool { return false }

// hasIQKernel reports whether weight type wt has an assembly kernel of
// rowdot_iq_arm64.s on this machine.
func hasIQKernel(wt DType) bool {
	switch wt {
	case IQ4_NL, MXFP4, IQ4_XS, IQ3_S:
		return hasSIMD && hasDotProd
	}
	return false
}

// qdotIQ runs wt's kernel (hasIQKernel(wt) must hold).
func qdotIQ(wt DType, dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int) {
	switch wt {
	case IQ4_NL:
		qdotIQ4_NLSDOT(dst, rows, w, stride, q, d, unsafe.Pointer(&kIQ4NL[0]), nb)
	case MXFP4:
		qdotMXFP4SDOT(dst, rows, w, stride, q, d, unsafe.Pointer(&e8m0HalfTab[0]), nb)
	case IQ4_XS:
		qdotIQ4_XSSDOT(dst, rows, w, stride, q, d, unsafe.Pointer(&kIQ4NL[0]), nb)
	case IQ3_S:
		qdotIQ3_SSDOT(dst, rows, w, stride, q, d, unsafe.Pointer(&iq3sGrid[0]), nb)
	default:
		panic("tensor: no table-format kernel for " + wt.String())
	}
}
