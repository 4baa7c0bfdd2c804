//go:build !amd64 && !arm64

package tensor

import "unsafe"

// The table formats have no assembly kernels here: dotQRows runs the
// reference dots (rowdot_iq_ref.go), the same arithmetic bit for bit.

func hasIQKernel(DType) bool { return false }

// nlPairActs: no paired IQ4_NL/MXFP4 activations here (rowdot_iq_amd64.go).
func nlPairActs() bool { return false }

func qdotIQ(DType, *float32, int, *byte, uintptr, *int8, *float32, unsafe.Pointer, int) {
	panic("unreachable")
}
