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

// TestTransposeStrided: a block inside a wider source lands in a wider
// destination, and nothing outside the block is touched.
func TestTransposeStrided(t *testing.T) {
	for _, sh := range [][2]int{{5, 11}, {8, 8}, {17, 9}, {1, 3}} {
		rows, cols := sh[0], sh[1]
		lds, ldd := cols+9, rows+3
		src := make([]float32, rows*lds)
		for i := range src {
			src[i] = float32(i)
		}
		dst := make([]float32, cols*ldd)
		for i := range dst {
			dst[i] = -1
		}
		transposeStrided(dst, ldd, src, lds, rows, cols)
		for c := range cols {
			for r := range ldd {
				want := float32(-1)
				if r < rows {
					want = src[r*lds+c]
				}
				if got := dst[c*ldd+r]; got != want {
					t.Fatalf("%d×%d: dst[%d][%d] = %g, want %g", rows, cols, c, r, got, want)
				}
			}
		}
	}
}
