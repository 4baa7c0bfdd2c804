package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"nanoserve/tensor"
)

// allTypes lists every tensor type the tensor package can size.
var allTypes = []tensor.DType{
	tensor.F32, tensor.F16, tensor.BF16, tensor.F64, tensor.I8, tensor.I16, tensor.I32, tensor.I64,
	tensor.Q4_0, tensor.Q4_1, tensor.Q5_0, tensor.Q5_1, tensor.Q8_0, tensor.Q8_1,
	tensor.Q2_K, tensor.Q3_K, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K, tensor.Q8_K,
}

// sampleKV has one entry of every value type, including nested arrays.
func sampleKV(t testing.TB) []KV {
	nested, err := NewArrayOf(TypeArray, []Value{NewArray([]int32{1, -2}), NewArray([]int32{}), NewArray([]int32{3})})
	if err != nil {
		t.Fatal(err)
	}
	deep, err := NewArrayOf(TypeArray, []Value{nested, nested})
	if err != nil {
		t.Fatal(err)
	}
	strArrs, err := NewArrayOf(TypeArray, []Value{NewArray([]string{"a", "bc"}), NewArray([]float32{1.5})})
	if err != nil {
		t.Fatal(err)
	}
	return []KV{
		{"general.architecture", String("llama")},
		{"u8", Uint8(200)}, {"i8", Int8(-100)}, {"u16", Uint16(60000)}, {"i16", Int16(-30000)},
		{"u32", Uint32(4_000_000_000)}, {"i32", Int32(-2_000_000_000)}, {"f32", Float32(0.1)},
		{"bool", Bool(true)}, {"str", String("héllo\x00world")}, {"empty", String("")},
		{"u64", Uint64(math.MaxUint64)}, {"i64", Int64(math.MinInt64)}, {"f64", Float64(math.Pi)},
		{"llama.context_length", Uint32(4096)},
		{"a.u8", NewArray([]uint8{1, 2, 255})}, {"a.i8", NewArray([]int8{-1, 2})},
		{"a.u16", NewArray([]uint16{1, 65535})}, {"a.i16", NewArray([]int16{-5})},
		{"a.u32", NewArray([]uint32{7})}, {"a.i32", NewArray([]int32{-7, 8})},
		{"a.f32", NewArray([]float32{0.5, float32(math.Inf(-1))})}, {"a.bool", NewArray([]bool{true, false})},
		{"a.str", NewArray([]string{"x", "", "yz"})}, {"a.u64", NewArray([]uint64{1 << 63})},
		{"a.i64", NewArray([]int64{-1})}, {"a.f64", NewArray([]float64{math.NaN()})},
		{"a.empty", NewArray([]string{})}, {"a.nested", nested}, {"a.deep", deep}, {"a.mixed", strArrs},
	}
}

// buildFile writes a file with sampleKV and one small tensor of each type
// in types (or of every type if nil), data filled with a byte pattern.
func buildFile(t testing.TB, kvs []KV, types []tensor.DType) ([]byte, map[string][]byte) {
	t.Helper()
	w := NewWriter()
	for _, kv := range kvs {
		if err := w.AddKV(kv.Key, kv.Value); err != nil {
			t.Fatal(err)
		}
	}
	datas := map[string][]byte{}
	for i, typ := range types {
		cols := uint64(typ.BlockSize()) * 2
		dims := []uint64{cols, 3}
		rb, _ := typ.RowBytes(int(cols))
		data := make([]byte, rb*3)
		for j := range data {
			data[j] = byte(i*31 + j)
		}
		name := "t." + typ.String()
		datas[name] = data
		if i%2 == 0 {
			err := w.AddTensor(name, typ, dims, data)
			if err != nil {
				t.Fatal(err)
			}
		} else {
			err := w.AddTensorFunc(name, typ, dims, func(out io.Writer) error {
				_, err := io.Copy(out, bytes.NewReader(data)) // streamed
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), datas
}

func TestRoundTrip(t *testing.T) {
	kvs := sampleKV(t)
	file, datas := buildFile(t, kvs, allTypes)
	f, err := Parse(file)
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 3 || len(f.KV) != len(kvs) || len(f.Tensors) != len(allTypes) {
		t.Fatalf("version %d, %d kv, %d tensors", f.Version, len(f.KV), len(f.Tensors))
	}
	for i, kv := range kvs {
		if f.KV[i].Key != kv.Key || !f.KV[i].Value.Equal(kv.Value) {
			t.Errorf("kv %d: got %s=%s, want %s=%s", i, f.KV[i].Key, f.KV[i].Value, kv.Key, kv.Value)
		}
	}
	for i, typ := range allTypes {
		ti := &f.Tensors[i]
		if ti.Type != typ || ti.Offset%32 != 0 || !bytes.Equal(ti.Data, datas[ti.Name]) {
			t.Errorf("tensor %s: type %s offset %d, data equal %v", ti.Name, ti.Type, ti.Offset, bytes.Equal(ti.Data, datas[ti.Name]))
		}
	}
	// Writing the parsed file again gives the same bytes.
	var again bytes.Buffer
	if _, err := rewrite(t, f).WriteTo(&again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), file) {
		t.Error("second write differs from the first")
	}

	// Accessors.
	if f.Arch() != "llama" {
		t.Errorf("Arch %q", f.Arch())
	}
	if n, err := f.ArchUint("context_length"); n != 4096 || err != nil {
		t.Errorf("ArchUint = %d, %v", n, err)
	}
	if n, err := f.Int("i64"); n != math.MinInt64 || err != nil {
		t.Errorf("Int(i64) = %d, %v", n, err)
	}
	if n, err := f.Int("i8"); n != -100 || err != nil {
		t.Errorf("Int(i8) = %d, %v", n, err)
	}
	if n, err := f.Uint("u64"); n != math.MaxUint64 || err != nil {
		t.Errorf("Uint(u64) = %d, %v", n, err)
	}
	if x, err := f.Float("f32"); float32(x) != 0.1 || err != nil {
		t.Errorf("Float(f32) = %v, %v", x, err)
	}
	if s, err := f.String("str"); s != "héllo\x00world" || err != nil {
		t.Errorf("String = %q, %v", s, err)
	}
	if s, err := f.Strings("a.str"); strings.Join(s, ",") != "x,,yz" || err != nil {
		t.Errorf("Strings = %q, %v", s, err)
	}
	if a, err := f.Array("a.deep"); err != nil || a.Len() != 2 || a.Elem != TypeArray {
		t.Errorf("Array(a.deep) = %v, %v", a, err)
	} else if in, ok := a.Index(1).Array(); !ok || in.Len() != 3 {
		t.Errorf("a.deep[1] = %s", a.Index(1))
	} else if x, ok := in.Index(0).Int32s(); !ok || len(x) != 2 || x[1] != -2 {
		t.Errorf("a.deep[1][0] = %v", x)
	}
	if x, err := f.Float32s("a.i32"); err != nil || x[0] != -7 {
		t.Errorf("Float32s(a.i32) = %v, %v", x, err)
	}
	// Errors name the key and say what is wrong.
	_, err = f.Uint("i8")
	if !errors.Is(err, ErrType) || !strings.Contains(err.Error(), `"i8"`) {
		t.Errorf("Uint of a negative: %v", err)
	}
	_, err = f.String("u8")
	if !errors.Is(err, ErrType) || !strings.Contains(err.Error(), "uint8") {
		t.Errorf("String of uint8: %v", err)
	}
	_, err = f.Strings("a.i32")
	if !errors.Is(err, ErrType) || !strings.Contains(err.Error(), "array of int32") {
		t.Errorf("Strings of int32 array: %v", err)
	}
	_, err = f.Float("nope")
	if !errors.Is(err, ErrMissingKey) || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("missing key: %v", err)
	}
	if _, ok := f.Tensor("nope"); ok {
		t.Error("found missing tensor")
	}
}

func TestWriteFileAndAlignment(t *testing.T) {
	w := NewWriter()
	if err := w.AddKV(KeyAlignment, Uint32(64)); err != nil {
		t.Fatal(err)
	}
	if err := w.AddKV(KeyAlignment, Uint32(64)); err == nil {
		t.Error("duplicate key accepted")
	}
	if err := w.AddKV("x", Value{Type: 42}); err == nil {
		t.Error("invalid Value accepted")
	}
	if err := w.AddTensor("a", tensor.F32, []uint64{3}, make([]byte, 12)); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTensor("a", tensor.F32, []uint64{3}, make([]byte, 12)); err == nil {
		t.Error("duplicate tensor accepted")
	}
	if err := w.AddTensor("b", tensor.F32, []uint64{3}, make([]byte, 11)); err == nil {
		t.Error("wrong data size accepted")
	}
	if err := w.AddTensor("q", tensor.Q8_0, []uint64{33}, make([]byte, 34)); err == nil {
		t.Error("partial block accepted")
	}
	if err := w.AddTensor("u", tensor.DType(99), []uint64{1}, nil); err == nil || !strings.Contains(err.Error(), "unknown type 99") {
		t.Errorf("unknown type: %v", err)
	}
	if err := w.AddTensor("b", tensor.F16, []uint64{5, 1, 1, 1}, make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "x.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Alignment != 64 || f.DataOffset%64 != 0 || f.Tensors[1].Offset != 64 {
		t.Errorf("alignment %d data offset %d second offset %d", f.Alignment, f.DataOffset, f.Tensors[1].Offset)
	}
	if fi, _ := os.Stat(path); fi.Size() != f.DataOffset+128 {
		t.Errorf("file size %d, want data offset + 128", fi.Size())
	}

	bad := NewWriter()
	if err := bad.AddKV(KeyAlignment, Uint64(64)); err == nil {
		t.Error("uint64 alignment accepted")
	}
	if err := bad.AddKV(KeyAlignment, Uint32(48)); err == nil {
		t.Error("alignment 48 accepted")
	}
	// A streaming tensor that writes the wrong number of bytes fails the write.
	bad.AddTensorFunc("s", tensor.F32, []uint64{4}, func(w io.Writer) error { _, err := w.Write(make([]byte, 15)); return err })
	if _, err := bad.WriteTo(io.Discard); err == nil || !strings.Contains(err.Error(), `"s"`) {
		t.Errorf("short stream: %v", err)
	}
}

// small is a small valid file: a few KVs of several types and two tensors.
func small(t testing.TB) []byte {
	a, _ := NewArrayOf(TypeArray, []Value{NewArray([]string{"p", "q"})})
	b, _ := buildFile(t, []KV{
		{"general.architecture", String("llama")},
		{"llama.context_length", Uint32(128)},
		{"f", Float32(1)},
		{"toks", NewArray([]string{"<s>", "a"})},
		{"ids", NewArray([]int32{5})},
		{"nest", a},
	}, []tensor.DType{tensor.F32, tensor.Q8_0})
	return b
}

func TestTruncated(t *testing.T) {
	file := small(t)
	f, err := Parse(file)
	if err != nil {
		t.Fatal(err)
	}
	// Padding after the last tensor is optional; anything shorter fails.
	last := f.Tensors[len(f.Tensors)-1]
	end := int(f.DataOffset) + int(last.Offset) + len(last.Data)
	for n := 0; n < end; n++ {
		_, err := Parse(file[:n])
		if err == nil {
			t.Fatalf("prefix of %d/%d bytes parsed without error", n, len(file))
		}
		if !errors.Is(err, ErrTruncated) {
			t.Fatalf("prefix %d: error %v does not wrap ErrTruncated", n, err)
		}
	}
}

// header builds the start of a file: magic, version, counts.
func header(version uint32, nTensors, nKV uint64) []byte {
	b := []byte(Magic)
	b = binary.LittleEndian.AppendUint32(b, version)
	b = binary.LittleEndian.AppendUint64(b, nTensors)
	return binary.LittleEndian.AppendUint64(b, nKV)
}

func kvBytes(key string, typ ValueType, payload ...[]byte) []byte {
	b := appendString(nil, key)
	b = binary.LittleEndian.AppendUint32(b, uint32(typ))
	for _, p := range payload {
		b = append(b, p...)
	}
	return b
}

func u32b(x uint32) []byte { return binary.LittleEndian.AppendUint32(nil, x) }
func u64b(x uint64) []byte { return binary.LittleEndian.AppendUint64(nil, x) }

func tensorInfoBytes(name string, dims []uint64, typ uint32, off uint64) []byte {
	b := appendString(nil, name)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(dims)))
	for _, d := range dims {
		b = binary.LittleEndian.AppendUint64(b, d)
	}
	b = binary.LittleEndian.AppendUint32(b, typ)
	return binary.LittleEndian.AppendUint64(b, off)
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// withData pads the header to 32 bytes and appends n data bytes.
func withData(hdr []byte, n int) []byte {
	hdr = append(hdr, make([]byte, pad(uint64(len(hdr)), 32))...)
	return append(hdr, make([]byte, n)...)
}

func TestBadInput(t *testing.T) {
	huge := uint64(1) << 60
	cases := []struct {
		name string
		data []byte
		want error
		msg  string
	}{
		{"empty", nil, ErrTruncated, "magic"},
		{"magic", append([]byte("GGML"), make([]byte, 40)...), ErrMagic, `"GGML"`},
		{"v1", withData(header(1, 0, 0), 0), ErrUnsupportedVersion, "version 1"},
		{"v4", withData(header(4, 0, 0), 0), ErrUnsupportedVersion, "version 4"},
		{"big-endian", withData(header(3<<24, 0, 0), 0), ErrUnsupportedVersion, "big-endian"},
		{"2^60 tensors", header(3, huge, 0), ErrTruncated, "tensor count"},
		{"2^60 kv", header(3, 0, huge), ErrTruncated, "metadata count"},
		{"max counts", header(3, math.MaxUint64, math.MaxUint64), ErrTruncated, "count"},
		{"2^60 key", cat(header(3, 0, 1), u64b(huge), make([]byte, 64)), ErrTruncated, "key of metadata entry 0"},
		{"2^60 string", cat(header(3, 0, 1), kvBytes("k", TypeString, u64b(huge))), ErrTruncated, `key "k"`},
		{"2^60 array", cat(header(3, 0, 1), kvBytes("k", TypeArray, u32b(uint32(TypeUint8)), u64b(huge))), ErrTruncated, `array length of key "k"`},
		{"2^60 string array", cat(header(3, 0, 1), kvBytes("k", TypeArray, u32b(uint32(TypeString)), u64b(huge), make([]byte, 64))), ErrTruncated, `array length of key "k"`},
		{"2^60 nested array", cat(header(3, 0, 1), kvBytes("k", TypeArray, u32b(uint32(TypeArray)), u64b(huge), make([]byte, 64))), ErrTruncated, `array length of key "k"`},
		{"bad value type", cat(header(3, 0, 1), kvBytes("k", 13, make([]byte, 8))), ErrInvalid, `key "k" has unknown value type 13`},
		{"bad elem type", cat(header(3, 0, 1), kvBytes("k", TypeArray, u32b(99), u64b(0))), ErrInvalid, "unknown type 99"},
		{"dup key", cat(header(3, 0, 2), kvBytes("k", TypeUint8, []byte{1}), kvBytes("k", TypeUint8, []byte{1})), ErrInvalid, `duplicate metadata key "k"`},
		{"alignment type", withData(cat(header(3, 0, 1), kvBytes(KeyAlignment, TypeUint64, u64b(32))), 0), ErrInvalid, "want uint32"},
		{"alignment 0", withData(cat(header(3, 0, 1), kvBytes(KeyAlignment, TypeUint32, u32b(0))), 0), ErrInvalid, "power of two"},
		{"alignment 24", withData(cat(header(3, 0, 1), kvBytes(KeyAlignment, TypeUint32, u32b(24))), 0), ErrInvalid, "power of two"},
		{"5 dims", withData(cat(header(3, 1, 0), tensorInfoBytes("w", []uint64{1, 1, 1, 1, 1}, 0, 0)), 4), ErrInvalid, `tensor "w" has 5 dims`},
		{"unknown tensor type", withData(cat(header(3, 1, 0), tensorInfoBytes("w", []uint64{4}, 77, 0)), 16), ErrInvalid, `tensor "w" has unknown type 77`},
		// A ggml type nanoserve does not implement is named, with the list
		// of the ones it does; the file is not called invalid.
		{"unsupported tensor type", withData(cat(header(3, 1, 0), tensorInfoBytes("w", []uint64{256}, 16, 0)), 128), ErrUnsupportedType, `tensor "w" has type IQ2_XXS (ggml type 16), which nanoserve does not implement; supported: F32, F16, Q4_0`},
		{"partial block", withData(cat(header(3, 1, 0), tensorInfoBytes("w", []uint64{16, 2}, uint32(tensor.Q8_0), 0)), 64), ErrInvalid, `tensor "w"`},
		{"dup tensor", withData(cat(header(3, 2, 0), tensorInfoBytes("w", []uint64{8}, 0, 0), tensorInfoBytes("w", []uint64{8}, 0, 32)), 64), ErrInvalid, `duplicate tensor name "w"`},
		{"misaligned", withData(cat(header(3, 1, 0), tensorInfoBytes("w", []uint64{8}, 0, 4)), 64), ErrInvalid, "not a multiple of the alignment"},
		{"overlap", withData(cat(header(3, 2, 0), tensorInfoBytes("a", []uint64{16}, 0, 0), tensorInfoBytes("b", []uint64{8}, 0, 32)), 96), ErrInvalid, `"a" and "b" overlap`},
		{"outside", withData(cat(header(3, 1, 0), tensorInfoBytes("w", []uint64{8}, 0, 32)), 32), ErrTruncated, `tensor "w" data [32, 64) lies outside`},
		{"far outside", withData(cat(header(3, 1, 0), tensorInfoBytes("w", []uint64{8}, 0, 1<<62)), 32), ErrTruncated, `tensor "w"`},
		{"size overflow", withData(cat(header(3, 1, 0), tensorInfoBytes("w", []uint64{1 << 20, 1 << 40, 1 << 10}, 0, 0)), 32), ErrInvalid, "overflow"},
		{"huge row", withData(cat(header(3, 1, 0), tensorInfoBytes("w", []uint64{1 << 62}, 0, 0)), 32), ErrInvalid, `tensor "w" row length`},
		{"truncated data", withData(cat(header(3, 1, 0), tensorInfoBytes("w", []uint64{8, 2}, 0, 0)), 63), ErrTruncated, `tensor "w" data [0, 64)`},
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
	// Deep nesting is refused, not recursed into without bound.
	deep := cat(header(3, 0, 1), kvBytes("k", TypeArray))
	for range 1000 {
		deep = cat(deep, u32b(uint32(TypeArray)), u64b(1))
	}
	if _, err := Parse(deep); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "deeper") {
		t.Errorf("deep nesting: %v", err)
	}
	// A file with no tensors needs no data section or padding.
	if f, err := Parse(cat(header(2, 0, 1), kvBytes("k", TypeBool, []byte{1}))); err != nil || f.Version != 2 {
		t.Errorf("v2 without tensors: %v", err)
	}
	// Zero-size tensors may share an offset.
	if _, err := Parse(withData(cat(header(3, 2, 0), tensorInfoBytes("a", []uint64{0}, 0, 0), tensorInfoBytes("b", []uint64{0, 4}, 0, 0)), 0)); err != nil {
		t.Errorf("empty tensors: %v", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing.gguf")); err == nil || !strings.HasPrefix(err.Error(), "gguf: ") {
		t.Errorf("missing file: %v", err)
	}
}
