// Package gguf reads and writes GGUF files, the single-file model format of
// llama.cpp: typed metadata (architecture, hyperparameters, the tokenizer)
// followed by named tensors in float or block-quantized encodings.
//
// # Layout (v2 and v3; all integers little-endian)
//
//	magic "GGUF" | version u32 | n_tensors u64 | n_kv u64
//	n_kv × { key string | type u32 | value }
//	n_tensors × { name string | n_dims u32 | dims u64 × n_dims | type u32 | offset u64 }
//	zero padding to a multiple of the alignment            ← DataOffset
//	tensor data: each tensor at DataOffset+offset, offsets multiples of the alignment
//
// A string is a u64 byte length and the bytes (UTF-8, no terminator). A
// value is a scalar (u8 i8 u16 i16 u32 i32 f32 bool u64 i64 f64), a string,
// or an array: element type u32, count u64, then count values of that type
// (arrays may hold arrays). The alignment is the uint32 metadata value
// "general.alignment", 32 if absent; it must be a power of two.
//
// Tensor dims are in ggml order: Dims[0] is the innermost (fastest-varying)
// dimension, so a weight matrix with Dims = [cols, rows] is stored row-major
// as rows × Type.RowBytes(cols) bytes. A tensor's byte size is therefore
// Type.RowBytes(Dims[0]) × Dims[1] × Dims[2] × …; Dims[0] must be a whole
// number of the type's blocks (32 or 256 elements for quantized types).
// Version 1 (32-bit counts) is rejected with ErrUnsupportedVersion.
//
// # Reading
//
// Open memory-maps the file (package internal/mmap): TensorInfo.Data slices
// point into the read-only mapping, so weights are never copied into the Go
// heap, and stay valid until Close. Metadata is copied out (strings of a
// string array share one allocation). Parse reads a file already in memory.
//
// Parsing never panics and never trusts a count: before allocating room for
// n tensors, n key/value pairs, an n-byte string or an n-element array, it
// checks that the bytes left in the file could hold n of the smallest
// possible encoding, so a header claiming 2^60 tensors fails at once with
// ErrTruncated instead of exhausting memory. It rejects wrong magic,
// duplicate keys or tensor names, unknown value or tensor types, a
// malformed general.alignment, tensor offsets that are misaligned, overlap
// or point outside the file, and dims whose size overflows or is not a
// whole number of blocks. Errors name the key or tensor at fault.
//
// # Writing
//
// Writer builds a v3 file: metadata in the order added, tensor infos in the
// order added, each tensor's data at the next aligned offset and followed
// by zero padding to the alignment — the layout llama.cpp writes, so
// re-writing a file it produced reproduces it byte for byte. Tensor data
// can be given as bytes or streamed from a function at write time.
package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"slices"
	"sort"

	"nanoserve/internal/mmap"
	"nanoserve/tensor"
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// IsFile reports whether the file at path starts with the GGUF magic
// (false for anything unreadable).
func IsFile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [len(Magic)]byte
	_, err = io.ReadFull(f, b[:])
	return err == nil && string(b[:]) == Magic
}

// DefaultAlignment is the tensor data alignment when general.alignment is absent.
const DefaultAlignment = 32

// KeyAlignment is the metadata key that sets the alignment.
const KeyAlignment = "general.alignment"

// maxDims is ggml's GGML_MAX_DIMS.
const maxDims = 4

// maxDepth bounds array nesting.
const maxDepth = 16

// Sentinel errors; returned errors wrap them with details (use errors.Is).
var (
	ErrMagic              = errors.New("gguf: not a GGUF file (bad magic)")
	ErrUnsupportedVersion = errors.New("gguf: unsupported version")
	ErrTruncated          = errors.New("gguf: truncated file")
	ErrMissingKey         = errors.New("gguf: missing key")
	ErrType               = errors.New("gguf: wrong value type")
	ErrInvalid            = errors.New("gguf: invalid file")
	// ErrUnsupportedType: a tensor of a valid ggml type that nanoserve
	// does not implement (the message names it and the supported ones).
	ErrUnsupportedType = errors.New("gguf: unsupported tensor type")
)

// unknownType is the error for a tensor type id the tensor package cannot
// size: unsupported if ggml defines it, else an invalid file.
func unknownType(name string, typ tensor.DType) error {
	if typ.IsGGML() {
		return fmt.Errorf("%w: tensor %q has type %s (ggml type %d), which nanoserve does not implement; supported: %s",
			ErrUnsupportedType, name, typ, uint32(typ), tensor.SupportedTypes())
	}
	return fmt.Errorf("%w: tensor %q has unknown type %d", ErrInvalid, name, uint32(typ))
}

// KV is one metadata entry.
type KV struct {
	Key   string
	Value Value
}

// TensorInfo describes one tensor and holds its data.
type TensorInfo struct {
	Name   string
	Dims   []uint64     // ggml order: Dims[0] = row length (columns), then rows, …
	Type   tensor.DType // element encoding
	Offset uint64       // from the data section of the file holding it; a multiple of its alignment
	Data   []byte       // Size() bytes; points into the file's mapping (read-only)
	Split  int          // index of the file of a split model holding the data (OpenSplit); 0 otherwise
}

// Elements is the number of elements (product of Dims; 1 for no dims).
func (t *TensorInfo) Elements() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// Cols is Dims[0], the row length (1 for a 0-dim tensor).
func (t *TensorInfo) Cols() int {
	if len(t.Dims) == 0 {
		return 1
	}
	return int(t.Dims[0])
}

// Rows is the product of Dims[1:], the number of rows of Cols elements.
func (t *TensorInfo) Rows() int {
	n := 1
	for _, d := range t.Dims[min(1, len(t.Dims)):] {
		n *= int(d)
	}
	return n
}

// File is a parsed GGUF file.
type File struct {
	Version    uint32
	KV         []KV         // in file order
	Tensors    []TensorInfo // in file order
	Alignment  int          // general.alignment or DefaultAlignment
	DataOffset int64        // start of the tensor data section (of the first file of a split)
	Paths      []string     // the files of a split model, in order (OpenSplit); nil otherwise

	kvIndex     map[string]int
	tensorIndex map[string]int
	m           *mmap.Mapping // nil for Parse
	parts       []*File       // files 2..N of a split model (OpenSplit)
}

// Open memory-maps and parses the GGUF file at path. Close unmaps it.
func Open(path string) (*File, error) {
	m, err := mmap.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	f, err := Parse(m.Bytes())
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	f.m = m
	return f, nil
}

// Mappings are the file mappings holding the tensor data (the first file's,
// then a split model's others); none for a parsed File. Owned by f: not
// to be closed by the caller.
func (f *File) Mappings() []*mmap.Mapping {
	var ms []*mmap.Mapping
	if f.m != nil {
		ms = append(ms, f.m)
	}
	for _, p := range f.parts {
		ms = append(ms, p.Mappings()...)
	}
	return ms
}

// Close releases the mapping of a File from Open; tensor data must not be
// used afterwards. Metadata stays valid. Closing a parsed File is a no-op.
func (f *File) Close() error {
	err := f.closeParts()
	if f.m == nil {
		return err
	}
	if e := f.m.Close(); err == nil {
		err = e
	}
	f.m = nil
	for i := range f.Tensors {
		f.Tensors[i].Data = nil
	}
	return err
}

// Get returns the value of a metadata key.
func (f *File) Get(key string) (Value, bool) {
	i, ok := f.kvIndex[key]
	if !ok {
		return Value{}, false
	}
	return f.KV[i].Value, true
}

// Tensor returns the tensor with the given name.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i, ok := f.tensorIndex[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// lookup returns the value or an ErrMissingKey error.
func (f *File) lookup(key string) (Value, error) {
	v, ok := f.Get(key)
	if !ok {
		return Value{}, fmt.Errorf("%w %q", ErrMissingKey, key)
	}
	return v, nil
}

func typeErr(key string, v Value, want string) error {
	got := v.Type.String()
	if a, ok := v.Array(); ok {
		got = "array of " + a.Elem.String()
	}
	return fmt.Errorf("%w: key %q is %s, want %s", ErrType, key, got, want)
}

// String returns a string value.
func (f *File) String(key string) (string, error) {
	v, err := f.lookup(key)
	if err != nil {
		return "", err
	}
	s, ok := v.Str()
	if !ok {
		return "", typeErr(key, v, "string")
	}
	return s, nil
}

// Uint returns a non-negative integer value (any integer type).
func (f *File) Uint(key string) (uint64, error) {
	v, err := f.lookup(key)
	if err != nil {
		return 0, err
	}
	x, ok := v.Uint()
	if !ok {
		return 0, typeErr(key, v, "a non-negative integer")
	}
	return x, nil
}

// Int returns an integer value (any integer type that fits in int64).
func (f *File) Int(key string) (int64, error) {
	v, err := f.lookup(key)
	if err != nil {
		return 0, err
	}
	x, ok := v.Int()
	if !ok {
		return 0, typeErr(key, v, "an integer")
	}
	return x, nil
}

// Float returns a floating-point (or integer) value as float64.
func (f *File) Float(key string) (float64, error) {
	v, err := f.lookup(key)
	if err != nil {
		return 0, err
	}
	x, ok := v.Float()
	if !ok {
		return 0, typeErr(key, v, "a number")
	}
	return x, nil
}

// Bool returns a bool value.
func (f *File) Bool(key string) (bool, error) {
	v, err := f.lookup(key)
	if err != nil {
		return false, err
	}
	x, ok := v.Bool()
	if !ok {
		return false, typeErr(key, v, "bool")
	}
	return x, nil
}

// Array returns an array value.
func (f *File) Array(key string) (*Array, error) {
	v, err := f.lookup(key)
	if err != nil {
		return nil, err
	}
	a, ok := v.Array()
	if !ok {
		return nil, typeErr(key, v, "array")
	}
	return a, nil
}

// Strings returns an array of strings (shared: do not modify).
func (f *File) Strings(key string) ([]string, error) {
	v, err := f.lookup(key)
	if err != nil {
		return nil, err
	}
	x, ok := v.Strings()
	if !ok {
		return nil, typeErr(key, v, "array of string")
	}
	return x, nil
}

// Int32s returns an array of integers that fit in int32.
func (f *File) Int32s(key string) ([]int32, error) {
	v, err := f.lookup(key)
	if err != nil {
		return nil, err
	}
	x, ok := v.Int32s()
	if !ok {
		return nil, typeErr(key, v, "array of int32")
	}
	return x, nil
}

// Float32s returns an array of numbers as float32.
func (f *File) Float32s(key string) ([]float32, error) {
	v, err := f.lookup(key)
	if err != nil {
		return nil, err
	}
	x, ok := v.Float32s()
	if !ok {
		return nil, typeErr(key, v, "array of float32")
	}
	return x, nil
}

// Arch returns general.architecture ("llama", "qwen2", "gpt2", …) or "".
func (f *File) Arch() string {
	s, _ := f.String("general.architecture")
	return s
}

// ArchUint returns Uint(Arch()+"."+suffix), e.g. ArchUint("context_length").
func (f *File) ArchUint(suffix string) (uint64, error) {
	return f.Uint(f.Arch() + "." + suffix)
}

// ArchFloat returns Float(Arch()+"."+suffix), e.g. ArchFloat("rope.freq_base").
func (f *File) ArchFloat(suffix string) (float64, error) {
	return f.Float(f.Arch() + "." + suffix)
}

// Parse parses a GGUF file held in data. Tensor Data slices alias data.
func Parse(data []byte) (*File, error) {
	r := &reader{data: data}
	magic, err := r.bytes(4, lit("magic"))
	if err != nil {
		return nil, err
	}
	if string(magic) != Magic {
		return nil, fmt.Errorf("%w: got %q, want %q", ErrMagic, magic, Magic)
	}
	version, err := r.u32(lit("version"))
	if err != nil {
		return nil, err
	}
	switch {
	case version == 2 || version == 3:
	case version == 1:
		return nil, fmt.Errorf("%w 1 (GGUF v1 has 32-bit counts; only v2 and v3 are read — re-convert the model)", ErrUnsupportedVersion)
	case bits.ReverseBytes32(version) == 2 || bits.ReverseBytes32(version) == 3:
		return nil, fmt.Errorf("%w: big-endian GGUF (version %d byte-swapped) is not supported", ErrUnsupportedVersion, bits.ReverseBytes32(version))
	default:
		return nil, fmt.Errorf("%w %d (only 2 and 3 are read)", ErrUnsupportedVersion, version)
	}
	nTensors, err := r.u64(lit("tensor count"))
	if err != nil {
		return nil, err
	}
	nKV, err := r.u64(lit("metadata count"))
	if err != nil {
		return nil, err
	}
	// Each KV takes at least 8 (key length) + 4 (type) + 1 (smallest value)
	// bytes, each tensor info at least 8 (name length) + 4 + 4 + 8.
	if err := r.fits(nKV, 13, lit("metadata count")); err != nil {
		return nil, err
	}
	if err := r.fits(nTensors, 24, lit("tensor count")); err != nil {
		return nil, err
	}
	if err := r.fits(nKV*13+nTensors*24, 1, lit("metadata and tensor counts")); err != nil {
		return nil, err
	}

	f := &File{
		Version:     version,
		KV:          make([]KV, 0, nKV),
		Tensors:     make([]TensorInfo, 0, nTensors),
		Alignment:   DefaultAlignment,
		kvIndex:     make(map[string]int, nKV),
		tensorIndex: make(map[string]int, nTensors),
	}
	for i := uint64(0); i < nKV; i++ {
		key, err := r.str(func() string { return fmt.Sprintf("key of metadata entry %d", i) })
		if err != nil {
			return nil, err
		}
		if _, dup := f.kvIndex[key]; dup {
			return nil, fmt.Errorf("%w: duplicate metadata key %q", ErrInvalid, key)
		}
		t, err := r.u32(func() string { return fmt.Sprintf("type of key %q", key) })
		if err != nil {
			return nil, err
		}
		v, err := r.value(ValueType(t), key, 0)
		if err != nil {
			return nil, err
		}
		f.kvIndex[key] = len(f.KV)
		f.KV = append(f.KV, KV{key, v})
	}
	if v, ok := f.Get(KeyAlignment); ok {
		if v.Type != TypeUint32 {
			return nil, fmt.Errorf("%w: %s is %s, want uint32", ErrInvalid, KeyAlignment, v.Type)
		}
		a := v.bits
		if a == 0 || a&(a-1) != 0 {
			return nil, fmt.Errorf("%w: %s = %d is not a power of two", ErrInvalid, KeyAlignment, a)
		}
		f.Alignment = int(a)
	}

	for i := uint64(0); i < nTensors; i++ {
		ti, err := r.tensorInfo(i)
		if err != nil {
			return nil, err
		}
		if _, dup := f.tensorIndex[ti.Name]; dup {
			return nil, fmt.Errorf("%w: duplicate tensor name %q", ErrInvalid, ti.Name)
		}
		if ti.Offset%uint64(f.Alignment) != 0 {
			return nil, fmt.Errorf("%w: tensor %q offset %d is not a multiple of the alignment %d", ErrInvalid, ti.Name, ti.Offset, f.Alignment)
		}
		f.tensorIndex[ti.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, ti)
	}

	align := uint64(f.Alignment)
	dataOff := (uint64(r.off) + align - 1) / align * align // r.off ≤ len(data), no overflow
	f.DataOffset = int64(dataOff)
	if err := f.sliceData(data); err != nil {
		return nil, err
	}
	return f, nil
}

// sliceData checks every tensor's byte range and points Data at it.
func (f *File) sliceData(data []byte) error {
	type span struct {
		start, end uint64 // relative to DataOffset
		i          int
	}
	spans := make([]span, 0, len(f.Tensors))
	avail := uint64(0)
	if uint64(f.DataOffset) <= uint64(len(data)) {
		avail = uint64(len(data)) - uint64(f.DataOffset)
	}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		size, err := tensorSize(t)
		if err != nil {
			return err
		}
		if t.Offset > avail || size > avail-t.Offset {
			return fmt.Errorf("%w: tensor %q data [%d, %d) lies outside the file's %d data bytes", ErrTruncated,
				t.Name, t.Offset, t.Offset+size, avail)
		}
		start := uint64(f.DataOffset) + t.Offset
		t.Data = data[start : start+size : start+size]
		if size > 0 {
			spans = append(spans, span{t.Offset, t.Offset + size, i})
		}
	}
	sort.Slice(spans, func(a, b int) bool { return spans[a].start < spans[b].start })
	for k := 1; k < len(spans); k++ {
		if spans[k].start < spans[k-1].end {
			return fmt.Errorf("%w: tensors %q and %q overlap", ErrInvalid,
				f.Tensors[spans[k-1].i].Name, f.Tensors[spans[k].i].Name)
		}
	}
	return nil
}

// tensorSize is RowBytes(Dims[0]) × Dims[1] × …, with every overflow and an
// unknown type reported as an error naming the tensor.
func tensorSize(t *TensorInfo) (uint64, error) {
	if !t.Type.Known() {
		return 0, unknownType(t.Name, t.Type)
	}
	cols := uint64(1)
	if len(t.Dims) > 0 {
		cols = t.Dims[0]
	}
	if cols > math.MaxInt32*uint64(t.Type.BlockSize()) { // keeps RowBytes in int on 32-bit too
		return 0, fmt.Errorf("%w: tensor %q row length %d is too large", ErrInvalid, t.Name, cols)
	}
	rb, err := t.Type.RowBytes(int(cols))
	if err != nil {
		return 0, fmt.Errorf("%w: tensor %q %v: %v", ErrInvalid, t.Name, t.Dims, err)
	}
	elems := uint64(1)
	for _, d := range t.Dims {
		hi, lo := bits.Mul64(elems, d)
		if hi != 0 || lo > math.MaxInt64 {
			return 0, fmt.Errorf("%w: tensor %q dims %v overflow", ErrInvalid, t.Name, t.Dims)
		}
		elems = lo
	}
	size := uint64(rb)
	for _, d := range t.Dims[min(1, len(t.Dims)):] {
		hi, lo := bits.Mul64(size, d)
		if hi != 0 || lo > math.MaxInt64 {
			return 0, fmt.Errorf("%w: tensor %q dims %v overflow", ErrInvalid, t.Name, t.Dims)
		}
		size = lo
	}
	return size, nil
}

// reader is a bounds-checked cursor over the file bytes. Its methods take
// a describe func that names what is being read; it is only called to
// build an error, so the hot path (hundreds of thousands of vocabulary
// strings) formats nothing.
type reader struct {
	data []byte
	off  int
}

type describe func() string

func lit(s string) describe { return func() string { return s } }

func (r *reader) remaining() uint64 { return uint64(len(r.data) - r.off) }

func (r *reader) truncated(n uint64, what describe) error {
	return fmt.Errorf("%w: %s needs %d bytes at offset %d, only %d remain", ErrTruncated, what(), n, r.off, r.remaining())
}

// fits checks that n items of at least min bytes each can fit in the rest
// of the file (n·min ≤ remaining), without overflowing.
func (r *reader) fits(n uint64, min int, what describe) error {
	if n > r.remaining()/uint64(min) {
		return fmt.Errorf("%w: %s is %d, but %d items of at least %d bytes cannot fit in the %d bytes left at offset %d",
			ErrTruncated, what(), n, n, min, r.remaining(), r.off)
	}
	return nil
}

func (r *reader) bytes(n uint64, what describe) ([]byte, error) {
	if n > r.remaining() {
		return nil, r.truncated(n, what)
	}
	b := r.data[r.off : r.off+int(n)]
	r.off += int(n)
	return b, nil
}

func (r *reader) u32(what describe) (uint32, error) {
	if r.remaining() < 4 {
		return 0, r.truncated(4, what)
	}
	v := binary.LittleEndian.Uint32(r.data[r.off:])
	r.off += 4
	return v, nil
}

func (r *reader) u64(what describe) (uint64, error) {
	if r.remaining() < 8 {
		return 0, r.truncated(8, what)
	}
	v := binary.LittleEndian.Uint64(r.data[r.off:])
	r.off += 8
	return v, nil
}

// strBytes reads a length-prefixed string without copying.
func (r *reader) strBytes(what describe) ([]byte, error) {
	n, err := r.u64(func() string { return what() + " length" })
	if err != nil {
		return nil, err
	}
	return r.bytes(n, what)
}

func (r *reader) str(what describe) (string, error) {
	b, err := r.strBytes(what)
	return string(b), err
}

// value reads a value of type t for the given key.
func (r *reader) value(t ValueType, key string, depth int) (Value, error) {
	what := func() string { return fmt.Sprintf("value of key %q", key) }
	if !t.valid() {
		return Value{}, fmt.Errorf("%w: key %q has unknown value type %d", ErrInvalid, key, uint32(t))
	}
	switch t {
	case TypeString:
		s, err := r.str(what)
		return String(s), err
	case TypeArray:
		return r.array(key, depth)
	}
	b, err := r.bytes(uint64(t.size()), what)
	if err != nil {
		return Value{}, err
	}
	return scalarFromBytes(t, b), nil
}

// array reads an array (element type, count, elements) for the given key.
func (r *reader) array(key string, depth int) (Value, error) {
	if depth >= maxDepth {
		return Value{}, fmt.Errorf("%w: key %q nests arrays deeper than %d", ErrInvalid, key, maxDepth)
	}
	et, err := r.u32(func() string { return fmt.Sprintf("array element type of key %q", key) })
	if err != nil {
		return Value{}, err
	}
	elem := ValueType(et)
	if !elem.valid() {
		return Value{}, fmt.Errorf("%w: key %q has an array of unknown type %d", ErrInvalid, key, et)
	}
	lenWhat := func() string { return fmt.Sprintf("array length of key %q", key) }
	n, err := r.u64(lenWhat)
	if err != nil {
		return Value{}, err
	}
	if err := r.fits(n, elem.minSize(), lenWhat); err != nil {
		return Value{}, err
	}
	a := &Array{Elem: elem, n: int(n)}
	var i int
	elemWhat := func() string { return fmt.Sprintf("element %d of key %q", i, key) }
	switch elem {
	case TypeString:
		// Pass 1 checks every length against the file and finds the end
		// of the region; pass 2 slices the strings out of one copy of it.
		start := r.off
		for i = 0; i < int(n); i++ {
			if _, err := r.strBytes(elemWhat); err != nil {
				return Value{}, err
			}
		}
		all := string(r.data[start:r.off])
		a.strs = make([]string, n)
		p := 0
		for i := range a.strs {
			l := int(binary.LittleEndian.Uint64(r.data[start+p:])) // checked in pass 1
			a.strs[i] = all[p+8 : p+8+l]
			p += 8 + l
		}
	case TypeArray:
		a.vals = make([]Value, n)
		for i = range a.vals {
			if a.vals[i], err = r.array(key, depth+1); err != nil {
				return Value{}, err
			}
		}
	default:
		b, err := r.bytes(n*uint64(elem.size()), lenWhat)
		if err != nil {
			return Value{}, err
		}
		a.raw = slices.Clone(b)
	}
	return Value{Type: TypeArray, arr: a}, nil
}

func (r *reader) tensorInfo(i uint64) (TensorInfo, error) {
	name, err := r.str(func() string { return fmt.Sprintf("name of tensor %d", i) })
	if err != nil {
		return TensorInfo{}, err
	}
	q := func(s string) describe { return func() string { return fmt.Sprintf("%s of tensor %q", s, name) } }
	nd, err := r.u32(q("dims count"))
	if err != nil {
		return TensorInfo{}, err
	}
	if nd > maxDims {
		return TensorInfo{}, fmt.Errorf("%w: tensor %q has %d dims, at most %d are allowed", ErrInvalid, name, nd, maxDims)
	}
	ti := TensorInfo{Name: name, Dims: make([]uint64, nd)}
	for d := range ti.Dims {
		if ti.Dims[d], err = r.u64(q("dims")); err != nil {
			return TensorInfo{}, err
		}
	}
	typ, err := r.u32(q("type"))
	if err != nil {
		return TensorInfo{}, err
	}
	ti.Type = tensor.DType(typ)
	if !ti.Type.Known() {
		return TensorInfo{}, unknownType(name, ti.Type)
	}
	if ti.Offset, err = r.u64(q("offset")); err != nil {
		return TensorInfo{}, err
	}
	return ti, nil
}
