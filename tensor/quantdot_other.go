//go:build !amd64

package tensor

func dotQ8_0AVX2(w *byte, q *int8, d *float32, nb int) float32 { panic("unreachable") }
func dotQ4_KAVX2(w *byte, q *int8, d *float32, bsums *int16, nb int) float32 {
	panic("unreachable")
}
func dotQ6_KAVX2(w *byte, q *int8, d *float32, bsums *int16, nb int) float32 {
	panic("unreachable")
}
