package tensor

//go:noescape
func dotQ8_0AVX2(w *byte, q *int8, d *float32, nb int) float32

//go:noescape
func dotQ4_KAVX2(w *byte, q *int8, d *float32, bsums *int16, nb int) float32

//go:noescape
func dotQ6_KAVX2(w *byte, q *int8, d *float32, bsums *int16, nb int) float32
