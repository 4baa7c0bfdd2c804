//go:build !amd64

package tensor

func deltaStepSIMD(out, S, q, k, v []float32, decay, beta float32) bool { return false }

const hasDeltaBlocked = false

func deltaBlockedSIMD(out []float32, ldo int, S, q, k []float32, ldqk int, v []float32, ldv int, decay, beta []float32, dk int) bool {
	return false
}
