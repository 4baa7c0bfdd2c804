//go:build !amd64

package tensor

func deltaStepSIMD(out, S, q, k, v []float32, decay, beta float32) bool { return false }
