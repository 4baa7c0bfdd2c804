// Package safetensors reads and writes the safetensors format of Hugging
// Face checkpoints: a little-endian u64 header length N, N bytes of JSON,
// then one flat byte buffer holding every tensor.
//
//	{"__metadata__": {"format": "pt"},
//	 "model.embed_tokens.weight": {"dtype": "F32", "shape": [32000, 128], "data_offsets": [0, 16384000]},
//	 …}
//
// data_offsets [begin, end) are relative to the start of the byte buffer
// (file offset 8+N). Shapes are row-major with the outermost dimension
// first (PyTorch order: a Linear weight is [out_features, in_features]),
// the reverse of GGUF's dims. Elements are little-endian.
//
// Open memory-maps the file (internal/mmap), so Tensor.Data points into the
// read-only mapping and nothing is copied into the Go heap; it is valid
// until Close. OpenDir opens a Hugging Face model folder: the shards named
// by model.safetensors.index.json ("weight_map": tensor → file), or a
// single model.safetensors, presented as one set of tensors.
//
// Parsing never panics and checks, with errors naming the tensor: the
// header length lies within the file; the header is one JSON object
// without duplicate names; every entry has a dtype, non-negative dims and
// two offsets with begin ≤ end ≤ buffer size; the byte size equals
// product(shape) × element size (for the dtypes whose size is known); and
// no two tensors overlap. A dtype nanoserve cannot compute with (U8, BOOL,
// F8_E4M3, …) is accepted when reading; Tensor.Type reports it as an error
// when the tensor is used.
package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"sort"
	"strings"

	"nanoserve/internal/mmap"
	"nanoserve/tensor"
)

// Sentinel errors; returned errors wrap them with details (use errors.Is).
var (
	ErrTruncated = errors.New("safetensors: truncated file")
	ErrInvalid   = errors.New("safetensors: invalid file")
	ErrDType     = errors.New("safetensors: unsupported dtype")
)

// maxHeader bounds the JSON header, as the reference implementation does.
const maxHeader = 100 << 20

// elemSize is the byte size of one element of each dtype whose size is fixed.
var elemSize = map[string]int{
	"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1,
	"I16": 2, "U16": 2, "F16": 2, "BF16": 2,
	"I32": 4, "U32": 4, "F32": 4,
	"I64": 8, "U64": 8, "F64": 8, "C64": 8,
}

// dtypes maps the safetensors dtypes nanoserve computes with to tensor.DType.
var dtypes = map[string]tensor.DType{
	"F32": tensor.F32, "F16": tensor.F16, "BF16": tensor.BF16, "F64": tensor.F64,
	"I8": tensor.I8, "I16": tensor.I16, "I32": tensor.I32, "I64": tensor.I64,
}

// Tensor is one named tensor.
type Tensor struct {
	Name  string
	DType string // safetensors dtype: "F32", "F16", "BF16", "I64", "U8", …
	Shape []int  // row-major, outermost first
	Data  []byte // read-only; points into the file's mapping
}

// Type maps DType to a tensor.DType, or returns an ErrDType error naming
// the tensor if nanoserve has no such element type.
func (t *Tensor) Type() (tensor.DType, error) {
	if d, ok := dtypes[t.DType]; ok {
		return d, nil
	}
	return 0, fmt.Errorf("%w %q of tensor %q (usable: F32, F16, BF16, F64, I8, I16, I32, I64)", ErrDType, t.DType, t.Name)
}

// Elements is the product of Shape (1 for a scalar).
func (t *Tensor) Elements() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// File is one safetensors file, or the union of a sharded checkpoint's files.
type File struct {
	Metadata map[string]string // "__metadata__" (non-string values kept as their JSON text)
	Tensors  []*Tensor         // in data order (shard by shard for OpenDir)

	index map[string]*Tensor
	maps  []*mmap.Mapping
}

// Tensor returns the tensor with the given name.
func (f *File) Tensor(name string) (*Tensor, bool) {
	t, ok := f.index[name]
	return t, ok
}

// Mappings are the file mappings holding the tensor data (owned by f).
func (f *File) Mappings() []*mmap.Mapping { return f.maps }

// Close releases the mappings; tensor data must not be used afterwards.
func (f *File) Close() error {
	var err error
	for _, m := range f.maps {
		if e := m.Close(); err == nil {
			err = e
		}
	}
	f.maps = nil
	for _, t := range f.Tensors {
		t.Data = nil
	}
	return err
}

// Open memory-maps and parses one .safetensors file.
func Open(path string) (*File, error) {
	m, err := mmap.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	f, err := Parse(m.Bytes())
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	f.maps = []*mmap.Mapping{m}
	return f, nil
}

// entry is one tensor's header record.
type entry struct {
	DType       string    `json:"dtype"`
	Shape       []int64   `json:"shape"`
	DataOffsets []float64 `json:"data_offsets"` // float64 so that 1.5 or -1 are caught, not silently truncated
}

// Parse parses a safetensors file held in data. Tensor Data slices alias data.
func Parse(data []byte) (*File, error) {
	if len(data) < 8 {
		return nil, fmt.Errorf("%w: %d bytes, the header length alone takes 8", ErrTruncated, len(data))
	}
	n := binary.LittleEndian.Uint64(data)
	if n > uint64(len(data)-8) {
		return nil, fmt.Errorf("%w: header length %d exceeds the %d bytes after it", ErrTruncated, n, len(data)-8)
	}
	if n > maxHeader {
		return nil, fmt.Errorf("%w: header length %d exceeds %d", ErrInvalid, n, maxHeader)
	}
	hdr := data[8 : 8+n]
	buf := data[8+n:]

	f := &File{Metadata: map[string]string{}, index: map[string]*Tensor{}}
	dec := json.NewDecoder(bytes.NewReader(hdr))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("%w: header is not a JSON object", ErrInvalid)
	}
	seenMeta := false
	var spans []span
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: header JSON: %v", ErrInvalid, err)
		}
		name, _ := tok.(string) // object keys are always strings
		if name == "__metadata__" {
			if seenMeta {
				return nil, fmt.Errorf("%w: duplicate __metadata__", ErrInvalid)
			}
			seenMeta = true
			var meta map[string]json.RawMessage
			if err := dec.Decode(&meta); err != nil {
				return nil, fmt.Errorf("%w: __metadata__: %v", ErrInvalid, err)
			}
			for k, v := range meta {
				var s string
				if json.Unmarshal(v, &s) != nil {
					s = string(v)
				}
				f.Metadata[k] = s
			}
			continue
		}
		if _, dup := f.index[name]; dup {
			return nil, fmt.Errorf("%w: duplicate tensor %q", ErrInvalid, name)
		}
		var e entry
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("%w: tensor %q: %v", ErrInvalid, name, err)
		}
		sp, err := e.tensor(name, buf)
		if err != nil {
			return nil, err
		}
		f.index[name] = sp.t
		spans = append(spans, sp)
	}
	if _, err := dec.Token(); err != nil { // closing '}'
		return nil, fmt.Errorf("%w: header JSON: %v", ErrInvalid, err)
	}
	if rest := bytes.TrimRight(hdr[dec.InputOffset():], " \t\r\n\x00"); len(rest) != 0 {
		return nil, fmt.Errorf("%w: %d bytes of trailing garbage after the header JSON", ErrInvalid, len(rest))
	}
	if err := sortSpans(spans); err != nil {
		return nil, err
	}
	f.Tensors = make([]*Tensor, len(spans))
	for i, sp := range spans {
		f.Tensors[i] = sp.t
	}
	return f, nil
}

// tensor validates e and slices its data out of buf.
func (e *entry) tensor(name string, buf []byte) (span, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: tensor %q: %s", ErrInvalid, name, fmt.Sprintf(format, args...))
	}
	if e.DType == "" {
		return span{}, bad("no dtype")
	}
	if len(e.DataOffsets) != 2 {
		return span{}, bad("data_offsets has %d numbers, want 2", len(e.DataOffsets))
	}
	var off [2]uint64
	for i, x := range e.DataOffsets {
		if x < 0 || x != math.Trunc(x) || x > 1<<53 {
			return span{}, bad("data offset %v is not a non-negative integer", x)
		}
		off[i] = uint64(x)
	}
	if off[0] > off[1] {
		return span{}, bad("data_offsets [%d, %d] run backwards", off[0], off[1])
	}
	if off[1] > uint64(len(buf)) {
		return span{}, fmt.Errorf("%w: tensor %q data [%d, %d) lies outside the %d data bytes", ErrTruncated, name, off[0], off[1], len(buf))
	}
	t := &Tensor{Name: name, DType: e.DType, Shape: make([]int, len(e.Shape)), Data: buf[off[0]:off[1]:off[1]]}
	elems := uint64(1)
	for i, d := range e.Shape {
		if d < 0 {
			return span{}, bad("negative dimension %d in shape %v", d, e.Shape)
		}
		hi, lo := bits.Mul64(elems, uint64(d))
		if hi != 0 || lo > 1<<53 {
			return span{}, bad("shape %v is too large", e.Shape)
		}
		elems = lo
		t.Shape[i] = int(d)
	}
	if sz, ok := elemSize[e.DType]; ok {
		if want := elems * uint64(sz); want != off[1]-off[0] {
			return span{}, bad("%s %v needs %d bytes, data_offsets give %d", e.DType, e.Shape, want, off[1]-off[0])
		}
	}
	return span{off[0], off[1], t}, nil
}

// span is a tensor's [b, e) byte range in the data buffer.
type span struct {
	b, e uint64
	t    *Tensor
}

// sortSpans orders the tensors by data position and rejects overlapping
// non-empty ranges.
func sortSpans(spans []span) error {
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].b < spans[j].b })
	var prev *span
	for i := range spans {
		s := &spans[i]
		if s.e == s.b {
			continue
		}
		if prev != nil && s.b < prev.e {
			return fmt.Errorf("%w: tensors %q and %q overlap", ErrInvalid, prev.t.Name, s.t.Name)
		}
		prev = s
	}
	return nil
}

// WriteTo encodes tensors (in the given order, data packed back to back)
// and string metadata as a safetensors file to w. Names must be unique,
// dtypes non-empty, and for dtypes of known size len(Data) must equal
// product(Shape) × element size.
func WriteTo(w io.Writer, tensors []Tensor, metadata map[string]string) (int64, error) {
	var hdr bytes.Buffer
	hdr.WriteByte('{')
	first := true
	sep := func() {
		if !first {
			hdr.WriteByte(',')
		}
		first = false
	}
	if len(metadata) > 0 {
		sep()
		hdr.WriteString(`"__metadata__":{`)
		keys := make([]string, 0, len(metadata))
		for k := range metadata {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			if i > 0 {
				hdr.WriteByte(',')
			}
			hdr.Write(jsonString(k))
			hdr.WriteByte(':')
			hdr.Write(jsonString(metadata[k]))
		}
		hdr.WriteByte('}')
	}
	seen := map[string]bool{"__metadata__": true}
	var off uint64
	for i := range tensors {
		t := &tensors[i]
		if seen[t.Name] {
			return 0, fmt.Errorf("safetensors: duplicate or reserved tensor name %q", t.Name)
		}
		seen[t.Name] = true
		if t.DType == "" {
			return 0, fmt.Errorf("safetensors: tensor %q has no dtype", t.Name)
		}
		elems := uint64(1)
		for _, d := range t.Shape {
			if d < 0 {
				return 0, fmt.Errorf("safetensors: tensor %q has negative dimension in shape %v", t.Name, t.Shape)
			}
			elems *= uint64(d)
		}
		if sz, ok := elemSize[t.DType]; ok && elems*uint64(sz) != uint64(len(t.Data)) {
			return 0, fmt.Errorf("safetensors: tensor %q: %s %v needs %d bytes, got %d", t.Name, t.DType, t.Shape, elems*uint64(sz), len(t.Data))
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		sb, _ := json.Marshal(shape)
		sep()
		hdr.Write(jsonString(t.Name))
		fmt.Fprintf(&hdr, `:{"dtype":%s,"shape":%s,"data_offsets":[%d,%d]}`, jsonString(t.DType), sb, off, off+uint64(len(t.Data)))
		off += uint64(len(t.Data))
	}
	hdr.WriteByte('}')
	for hdr.Len()%8 != 0 { // keep the buffer 8-byte aligned, as the reference writer does
		hdr.WriteByte(' ')
	}
	cw := &countWriter{w: w}
	binary.Write(cw, binary.LittleEndian, uint64(hdr.Len()))
	cw.Write(hdr.Bytes())
	for i := range tensors {
		cw.Write(tensors[i].Data)
	}
	if cw.err != nil {
		return cw.n, fmt.Errorf("safetensors: write: %w", cw.err)
	}
	return cw.n, nil
}

func jsonString(s string) []byte {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return []byte(strings.TrimSuffix(b.String(), "\n"))
}

type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}
