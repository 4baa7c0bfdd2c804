package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"nanoserve/tensor"
)

func sampleTensors() []Tensor {
	return []Tensor{
		{Name: "a.weight", DType: "F32", Shape: []int{2, 3}, Data: bytes.Repeat([]byte{1, 2, 3, 4}, 6)},
		{Name: "b", DType: "F16", Shape: []int{3}, Data: []byte{1, 2, 3, 4, 5, 6}},
		{Name: "c", DType: "BF16", Shape: []int{1, 1, 2}, Data: []byte{7, 8, 9, 10}},
		{Name: "scalar", DType: "I64", Shape: []int{}, Data: make([]byte, 8)},
		{Name: "empty", DType: "F32", Shape: []int{0, 4}, Data: nil},
		{Name: "mask", DType: "BOOL", Shape: []int{3}, Data: []byte{1, 0, 1}},
		{Name: "fp8", DType: "F8_E4M3", Shape: []int{2}, Data: []byte{0x38, 0xb8}},
		{Name: "odd", DType: "F4", Shape: []int{4}, Data: []byte{0x12, 0x34}},
		{Name: `quote"<&>`, DType: "U8", Shape: []int{1}, Data: []byte{9}},
	}
}

func encode(t testing.TB, ts []Tensor, meta map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := WriteTo(&buf, ts, meta); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	in := sampleTensors()
	meta := map[string]string{"format": "pt", "note": "ünïcode \"quoted\""}
	path := filepath.Join(t.TempDir(), "x.safetensors")
	if err := Write(path, in, meta); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	if n := binary.LittleEndian.Uint64(raw); n%8 != 0 {
		t.Errorf("header length %d is not a multiple of 8", n)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if fmt.Sprint(f.Metadata) != fmt.Sprint(meta) {
		t.Errorf("metadata %v", f.Metadata)
	}
	if len(f.Tensors) != len(in) {
		t.Fatalf("%d tensors", len(f.Tensors))
	}
	for i, want := range in {
		got, ok := f.Tensor(want.Name)
		if !ok || got.DType != want.DType || fmt.Sprint(got.Shape) != fmt.Sprint(want.Shape) || !bytes.Equal(got.Data, want.Data) {
			t.Errorf("tensor %q: got %+v", want.Name, got)
		}
		if f.Tensors[i].Name != want.Name {
			t.Errorf("order: %d is %q, want %q", i, f.Tensors[i].Name, want.Name)
		}
	}
	// Type mapping: usable dtypes map, the rest fail naming tensor and dtype.
	for name, want := range map[string]tensor.DType{"a.weight": tensor.F32, "b": tensor.F16, "c": tensor.BF16, "scalar": tensor.I64} {
		ts, _ := f.Tensor(name)
		if typ, err := ts.Type(); err != nil || typ != want {
			t.Errorf("%s: Type() = %v, %v", name, typ, err)
		}
	}
	ts, _ := f.Tensor("fp8")
	if _, err := ts.Type(); !errors.Is(err, ErrDType) || !strings.Contains(err.Error(), `"F8_E4M3" of tensor "fp8"`) {
		t.Errorf("fp8 Type(): %v", err)
	}
	// Writing again gives the same bytes (metadata keys are sorted).
	if again := encode(t, in, meta); !bytes.Equal(again, raw) {
		t.Error("second encoding differs")
	}
	// Writer validation.
	for _, c := range []struct {
		ts  []Tensor
		msg string
	}{
		{[]Tensor{{Name: "x", DType: "F32", Shape: []int{2}, Data: make([]byte, 7)}}, "needs 8 bytes, got 7"},
		{[]Tensor{{Name: "x", DType: "F32", Shape: []int{0}}, {Name: "x", DType: "F32", Shape: []int{0}}}, "duplicate"},
		{[]Tensor{{Name: "__metadata__", DType: "F32", Shape: []int{0}}}, "reserved"},
		{[]Tensor{{Name: "x", Shape: []int{1}}}, "no dtype"},
		{[]Tensor{{Name: "x", DType: "U8", Shape: []int{-1}}}, "negative"},
	} {
		if _, err := WriteTo(&bytes.Buffer{}, c.ts, nil); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("WriteTo(%+v): %v, want %q", c.ts, err, c.msg)
		}
	}
	if err := Write(filepath.Join(t.TempDir(), "no", "such", "dir"), in, nil); err == nil {
		t.Error("Write into a missing folder succeeded")
	}
}

func small(t testing.TB) []byte {
	return encode(t, []Tensor{
		{Name: "w", DType: "F32", Shape: []int{2, 2}, Data: make([]byte, 16)},
		{Name: "b", DType: "BF16", Shape: []int{2}, Data: []byte{1, 2, 3, 4}},
	}, map[string]string{"format": "pt"})
}

func TestTruncated(t *testing.T) {
	file := small(t)
	if _, err := Parse(file); err != nil {
		t.Fatal(err)
	}
	for n := 0; n < len(file); n++ {
		_, err := Parse(file[:n])
		if !errors.Is(err, ErrTruncated) {
			t.Fatalf("prefix of %d/%d bytes: %v, want ErrTruncated", n, len(file), err)
		}
	}
}

// raw builds a file from a header string and n data bytes.
func raw(hdr string, n int) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	b = append(b, hdr...)
	return append(b, make([]byte, n)...)
}

func TestBadInput(t *testing.T) {
	huge := binary.LittleEndian.AppendUint64(nil, 1<<60)
	cases := []struct {
		name string
		data []byte
		want error
		msg  string
	}{
		{"empty", nil, ErrTruncated, "header length alone"},
		{"2^60 header", append(huge, "{}"...), ErrTruncated, "header length 1152921504606846976"},
		{"not json", raw("hello", 0), ErrInvalid, "not a JSON object"},
		{"array", raw("[]", 0), ErrInvalid, "not a JSON object"},
		{"unterminated", raw(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}`, 4), ErrInvalid, "header JSON"},
		{"garbage", raw(`{} x`, 0), ErrInvalid, "trailing garbage"},
		{"dup", raw(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, 2), ErrInvalid, `duplicate tensor "a"`},
		{"dup meta", raw(`{"__metadata__":{},"__metadata__":{}}`, 0), ErrInvalid, "duplicate __metadata__"},
		{"bad meta", raw(`{"__metadata__":[1]}`, 0), ErrInvalid, "__metadata__"},
		{"entry not object", raw(`{"a":5}`, 0), ErrInvalid, `tensor "a"`},
		{"no dtype", raw(`{"a":{"shape":[1],"data_offsets":[0,1]}}`, 1), ErrInvalid, `tensor "a": no dtype`},
		{"one offset", raw(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0]}}`, 1), ErrInvalid, "1 numbers, want 2"},
		{"negative offset", raw(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[-1,0]}}`, 1), ErrInvalid, "not a non-negative integer"},
		{"fractional offset", raw(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0.5,1]}}`, 1), ErrInvalid, "not a non-negative integer"},
		{"huge offset", raw(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1e300]}}`, 1), ErrInvalid, "not a non-negative integer"},
		{"backwards", raw(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[2,1]}}`, 2), ErrInvalid, "backwards"},
		{"outside", raw(`{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}`, 3), ErrTruncated, `tensor "a" data [0, 4) lies outside the 3 data bytes`},
		{"negative dim", raw(`{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}}`, 0), ErrInvalid, "negative dimension"},
		{"huge shape", raw(`{"a":{"dtype":"U8","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,0]}}`, 0), ErrInvalid, "too large"},
		{"size mismatch", raw(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, 4), ErrInvalid, "F32 [2] needs 8 bytes, data_offsets give 4"},
		{"overlap", raw(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8), ErrInvalid, `"a" and "b" overlap`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.data)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q; want %v containing %q", err, c.want, c.msg)
			}
		})
	}
	// Lenient on what the format allows: padding spaces after the JSON,
	// non-string metadata values (kept as JSON text), unknown dtypes.
	f, err := Parse(raw(`{"__metadata__":{"n":5},"a":{"dtype":"F6_E2M3","shape":[4],"data_offsets":[0,3]}}    `, 3))
	if err != nil || f.Metadata["n"] != "5" || len(f.Tensors) != 1 {
		t.Errorf("lenient parse: %v %v", f, err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.HasPrefix(err.Error(), "safetensors: ") {
		t.Errorf("missing file: %v", err)
	}
}

// seeds are the inputs committed under testdata/fuzz/FuzzSafetensors
// (regenerate with NANOSERVE_WRITE_CORPUS=1 go test -run TestWriteCorpus ./safetensors).
func seeds(t testing.TB) map[string][]byte {
	s := small(t)
	return map[string][]byte{
		"small":       s,
		"small-cut":   s[:len(s)-3],
		"all-dtypes":  encode(t, sampleTensors(), map[string]string{"format": "pt"}),
		"empty":       encode(t, nil, nil),
		"huge-header": binary.LittleEndian.AppendUint64(nil, 1<<60),
		"overlap":     raw(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8),
		"meta-number": raw(`{"__metadata__":{"n":5},"a":{"dtype":"U8","shape":[3],"data_offsets":[0,3]}}    `, 3),
	}
}

func TestWriteCorpus(t *testing.T) {
	if os.Getenv("NANOSERVE_WRITE_CORPUS") == "" {
		t.Skip("set NANOSERVE_WRITE_CORPUS=1 to regenerate testdata/fuzz/FuzzSafetensors")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzSafetensors")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range seeds(t) {
		if err := os.WriteFile(filepath.Join(dir, name), fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzSafetensors: Parse never panics; whatever it accepts re-encodes and
// re-parses to the same tensors.
func FuzzSafetensors(f *testing.F) {
	for _, b := range seeds(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Parse(data)
		if err != nil {
			if g != nil {
				t.Fatal("non-nil File with an error")
			}
			return
		}
		ts := make([]Tensor, len(g.Tensors))
		for i, x := range g.Tensors {
			x.Type()
			ts[i] = *x
		}
		var buf bytes.Buffer
		if _, err := WriteTo(&buf, ts, g.Metadata); err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		h, err := Parse(buf.Bytes())
		if err != nil {
			t.Fatalf("re-parse: %v", err)
		}
		if len(h.Tensors) != len(g.Tensors) || fmt.Sprint(h.Metadata) != fmt.Sprint(g.Metadata) {
			t.Fatal("round trip changed tensor count or metadata")
		}
		for i, a := range g.Tensors {
			b, ok := h.Tensor(a.Name)
			if !ok || a.DType != b.DType || fmt.Sprint(a.Shape) != fmt.Sprint(b.Shape) || !bytes.Equal(a.Data, b.Data) {
				t.Fatalf("round trip changed tensor %d %q", i, a.Name)
			}
		}
	})
}
