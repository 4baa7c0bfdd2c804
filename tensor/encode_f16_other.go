//go:build !amd64

package tensor

// No F16 encoding kernel off amd64 yet: encodeF16Row runs F32ToF16 in Go.
var hasEncF16 = false

func encF16SIMD(dst *byte, src *float32, n int) { panic("unreachable") }
