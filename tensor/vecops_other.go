//go:build !amd64

package tensor

func vecMax(x []float32) (float32, int)                        { return 0, 0 }
func vecExpShift(x []float32, mx float32) (float32, int)       { return 0, 0 }
func vecSwiGLU(g, u []float32) int                             { return 0 }
func vecMulSigmoid(x, g []float32) int                         { return 0 }
func causalConv4SIMD(out, x, s0, s1, s2, kernel []float32) int { return 0 }

func ssmScanRowSIMD(s, B, C []float32, a, xdt float32, lanes *[8]float32) int { return 0 }

func ssmScanHeadSIMD(S, B, C, x, y []float32, a, dt float32) bool { return false }
