package tensor

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// Mat is a row-major weight matrix (Rows, Cols) stored in its file encoding:
// row r is the Type.RowBytes(Cols) bytes starting at r*RowBytes. Data usually
// points into a memory-mapped model file.
type Mat struct {
	Type       DType
	Rows, Cols int
	Data       []byte

	packed atomic.Pointer[[]byte] // Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4, Q8_0 (useQ4x8): the rows packed eight at a time for the kernels (q4x8, Prepare)
}

// NewMat checks that data holds exactly rows×cols elements of type t.
func NewMat(t DType, rows, cols int, data []byte) (*Mat, error) {
	rb, err := t.RowBytes(cols)
	if err != nil {
		return nil, err
	}
	if len(data) != rows*rb {
		return nil, fmt.Errorf("tensor: %s matrix (%d, %d) needs %d bytes, have %d", t, rows, cols, rows*rb, len(data))
	}
	return &Mat{Type: t, Rows: rows, Cols: cols, Data: data}, nil
}

// F32Mat wraps float32 values (rows, cols) as a Mat without copying.
func F32Mat(rows, cols int, v []float32) *Mat {
	return &Mat{Type: F32, Rows: rows, Cols: cols, Data: F32Bytes(v)}
}

// RowBytes is the byte length of one row.
func (m *Mat) RowBytes() int { n, _ := m.Type.RowBytes(m.Cols); return n }

// Row returns the encoded bytes of row r.
func (m *Mat) Row(r int) []byte { n := m.RowBytes(); return m.Data[r*n : (r+1)*n] }

// F32Bytes reinterprets float32s as bytes (little-endian hosts; no copy).
func F32Bytes(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*4)
}

// BytesF32 reinterprets bytes as float32s (no copy). len(b) must be a
// multiple of 4 and b 4-byte aligned (mmap'd tensor data is).
func BytesF32(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// bytesU16 reinterprets bytes as uint16s (no copy).
func bytesU16(b []byte) []uint16 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), len(b)/2)
}

// matMulRef is the reference kernel over weight rows [lo, hi): dequantize a
// row to float32, then plain dot products with every input row.
func matMulRef(dst []float32, w *Mat, x []float32, n, lo, hi int) {
	row := make([]float32, w.Cols)
	for r := lo; r < hi; r++ {
		DequantizeRow(row, w.Type, w.Row(r))
		for t := 0; t < n; t++ {
			dst[t*w.Rows+r] = dotF32(row, x[t*w.Cols:(t+1)*w.Cols])
		}
	}
}

// dotF32 is Σ a[i]·b[i], accumulated in float32 in order.
func dotF32(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}
