package train

import "testing"

// TestTranspose checks the tiled transpose (and its split over workers)
// against the definition on ragged shapes.
func TestTranspose(t *testing.T) {
	m := newMathOps[float32](3)
	defer m.close()
	for _, sh := range [][2]int{{1, 1}, {8, 8}, {7, 9}, {16, 24}, {17, 33}, {64, 5}, {3, 130}} {
		r, c := sh[0], sh[1]
		src := make([]float32, r*c)
		for i := range src {
			src[i] = float32(i)
		}
		dst := make([]float32, r*c)
		m.transpose(dst, src, r, c)
		for i := range r {
			for j := range c {
				if dst[j*r+i] != src[i*c+j] {
					t.Fatalf("%d×%d: dst[%d][%d] = %g, want %g", r, c, j, i, dst[j*r+i], src[i*c+j])
				}
			}
		}
	}
}
