package tensor

// The packed Q4_0 kernels of rowdot_q4x8_amd64.s; see rowdot_q4x8.go.

// q4x8Arch: the packed Q4_0 kernels exist on this architecture (they need
// AVX2: hasSIMD).
const q4x8Arch = true

//go:noescape
func qdotQ4_0x8T1(dst *float32, groups int, w *byte, q *int8, d *float32, aux *int32, nb int)

//go:noescape
func qdotQ4_0x8T4(dst *float32, groups int, w *byte, xs *byte, nb int, offs *[4]uintptr)

//go:noescape
func qdotIQ4_NLx8T1(dst *float32, groups int, w *byte, q *int8, d *float32, aux *int32, nb int)

//go:noescape
func qdotMXFP4x8T1(dst *float32, groups int, w *byte, q *int8, d *float32, aux *int32, nb int)

//go:noescape
func q4x8DepackY(out *byte, rb uintptr, pk *byte, groups int, nb int, bb uintptr)

//go:noescape
func qdotQ5_0x8T1(dst *float32, groups int, w *byte, q *int8, d *float32, aux *int32, nb int)

//go:noescape
func qdotQ5_0x8T4(dst *float32, groups int, w *byte, xs *byte, nb int, offs *[4]uintptr)

//go:noescape
func qdotQ4_1x8T1(dst *float32, groups int, w *byte, q *int8, d *float32, aux *float32, nb int)

//go:noescape
func qdotQ5_1x8T1(dst *float32, groups int, w *byte, q *int8, d *float32, aux *float32, nb int)

//go:noescape
func qdotQ4_1x8T4(dst *float32, groups int, w *byte, xs *byte, nb int, offs *[4]uintptr)

//go:noescape
func qdotQ5_1x8T4(dst *float32, groups int, w *byte, xs *byte, nb int, offs *[4]uintptr)

//go:noescape
func qdotMXFP4x8T4(dst *float32, groups int, w *byte, xs *byte, nb int, offs *[4]uintptr)

//go:noescape
func qdotQ8_0x8T1(dst *float32, groups int, w *byte, q *int8, d *float32, aux *int32, nb int)

//go:noescape
func qdotQ8_0x8T4(dst *float32, groups int, w *byte, xs *byte, nb int, offs *[4]uintptr)

//go:noescape
func qdotIQ4_NLx8T4(dst *float32, groups int, w *byte, xs *byte, nb int, offs *[4]uintptr)
