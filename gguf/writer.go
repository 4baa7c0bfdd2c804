package gguf

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"

	"nanoserve/tensor"
)

// Writer builds a GGUF v3 file. Add metadata and tensors, then call WriteTo
// or WriteFile. The alignment is taken from a uint32 general.alignment
// entry if one was added, else DefaultAlignment.
//
// Tensor data is not held by the Writer unless given as bytes: with
// AddTensorFunc it is produced while the file is written.
type Writer struct {
	kv      []KV
	keys    map[string]bool
	tensors []wtensor
	names   map[string]bool
}

type wtensor struct {
	info  TensorInfo
	size  uint64
	data  []byte
	write func(io.Writer) error
}

// NewWriter returns an empty Writer.
func NewWriter() *Writer {
	return &Writer{keys: map[string]bool{}, names: map[string]bool{}}
}

// AddFile appends every metadata entry and tensor of f, in f's order (the
// tensor data still points into f's mapping, so keep f open until the
// Writer has written): a parsed file re-written, split or extended with
// more keys. Keys named in skip are left out (to be replaced).
func (w *Writer) AddFile(f *File, skip ...string) error {
	for _, kv := range f.KV {
		if slices.Contains(skip, kv.Key) {
			continue
		}
		if err := w.AddKV(kv.Key, kv.Value); err != nil {
			return err
		}
	}
	for _, ti := range f.Tensors {
		if err := w.AddTensor(ti.Name, ti.Type, ti.Dims, ti.Data); err != nil {
			return err
		}
	}
	return nil
}

// AddKV appends a metadata entry. Keys must be unique; general.alignment
// must be a uint32 power of two.
func (w *Writer) AddKV(key string, v Value) error {
	if w.keys[key] {
		return fmt.Errorf("gguf: duplicate metadata key %q", key)
	}
	if err := checkValue(v, 0); err != nil {
		return fmt.Errorf("gguf: key %q: %w", key, err)
	}
	if key == KeyAlignment {
		if v.Type != TypeUint32 || v.bits == 0 || v.bits&(v.bits-1) != 0 {
			return fmt.Errorf("gguf: %s must be a uint32 power of two, got %s %s", KeyAlignment, v.Type, v)
		}
	}
	w.keys[key] = true
	w.kv = append(w.kv, KV{key, v})
	return nil
}

func checkValue(v Value, depth int) error {
	if !v.Type.valid() {
		return fmt.Errorf("invalid value type %d", uint32(v.Type))
	}
	if v.Type != TypeArray {
		return nil
	}
	if v.arr == nil {
		return fmt.Errorf("invalid (zero) array value")
	}
	if depth >= maxDepth {
		return fmt.Errorf("arrays nested deeper than %d", maxDepth)
	}
	for _, e := range v.arr.vals {
		if err := checkValue(e, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// AddTensor appends a tensor whose data is given in full; len(data) must
// equal the size implied by t and dims (ggml order, dims[0] = row length).
// The Writer keeps a reference to data until written.
func (w *Writer) AddTensor(name string, t tensor.DType, dims []uint64, data []byte) error {
	size, err := w.addInfo(name, t, dims)
	if err != nil {
		return err
	}
	if uint64(len(data)) != size {
		w.tensors = w.tensors[:len(w.tensors)-1]
		delete(w.names, name)
		return fmt.Errorf("gguf: tensor %q: %d data bytes, but %s %v needs %d", name, len(data), t, dims, size)
	}
	w.tensors[len(w.tensors)-1].data = data
	return nil
}

// AddTensorFunc appends a tensor whose data is written by write when the
// file is written; write must produce exactly the size implied by t and
// dims, or writing fails. Use it to stream weights (e.g. quantize row by
// row) without holding them all in memory.
func (w *Writer) AddTensorFunc(name string, t tensor.DType, dims []uint64, write func(io.Writer) error) error {
	if write == nil {
		return fmt.Errorf("gguf: tensor %q: nil write func", name)
	}
	if _, err := w.addInfo(name, t, dims); err != nil {
		return err
	}
	w.tensors[len(w.tensors)-1].write = write
	return nil
}

func (w *Writer) addInfo(name string, t tensor.DType, dims []uint64) (uint64, error) {
	if w.names[name] {
		return 0, fmt.Errorf("gguf: duplicate tensor name %q", name)
	}
	if len(dims) > maxDims {
		return 0, fmt.Errorf("gguf: tensor %q has %d dims, at most %d are allowed", name, len(dims), maxDims)
	}
	info := TensorInfo{Name: name, Dims: append([]uint64(nil), dims...), Type: t}
	size, err := tensorSize(&info)
	if err != nil {
		return 0, err
	}
	w.names[name] = true
	w.tensors = append(w.tensors, wtensor{info: info, size: size})
	return size, nil
}

// alignment is the data alignment the file will declare.
func (w *Writer) alignment() uint64 {
	for _, kv := range w.kv {
		if kv.Key == KeyAlignment {
			return kv.Value.bits
		}
	}
	return DefaultAlignment
}

func pad(n, align uint64) uint64 { return (align - n%align) % align }

// WriteTo writes the file to out.
func (w *Writer) WriteTo(out io.Writer) (int64, error) {
	align := w.alignment()
	bw := bufio.NewWriterSize(out, 1<<20)
	cw := &countWriter{w: bw}

	var b []byte
	b = append(b, Magic...)
	b = binary.LittleEndian.AppendUint32(b, 3)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(w.tensors)))
	b = binary.LittleEndian.AppendUint64(b, uint64(len(w.kv)))
	for _, kv := range w.kv {
		b = appendString(b, kv.Key)
		b = binary.LittleEndian.AppendUint32(b, uint32(kv.Value.Type))
		b = appendValue(b, kv.Value)
		if len(b) > 1<<16 {
			cw.Write(b)
			b = b[:0]
		}
	}
	off := uint64(0)
	for i := range w.tensors {
		t := &w.tensors[i]
		t.info.Offset = off
		b = appendString(b, t.info.Name)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(t.info.Dims)))
		for _, d := range t.info.Dims {
			b = binary.LittleEndian.AppendUint64(b, d)
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(t.info.Type))
		b = binary.LittleEndian.AppendUint64(b, off)
		off += t.size + pad(t.size, align)
	}
	cw.Write(b)
	zeros := make([]byte, align)
	cw.Write(zeros[:pad(uint64(cw.n), align)])
	if cw.err != nil {
		return cw.n, fmt.Errorf("gguf: write: %w", cw.err)
	}
	for i := range w.tensors {
		t := &w.tensors[i]
		start := cw.n
		if t.write != nil {
			if err := t.write(cw); err != nil {
				return cw.n, fmt.Errorf("gguf: tensor %q: %w", t.info.Name, err)
			}
		} else {
			cw.Write(t.data)
		}
		if cw.err != nil {
			return cw.n, fmt.Errorf("gguf: write tensor %q: %w", t.info.Name, cw.err)
		}
		if got := uint64(cw.n - start); got != t.size {
			return cw.n, fmt.Errorf("gguf: tensor %q: wrote %d data bytes, want %d", t.info.Name, got, t.size)
		}
		cw.Write(zeros[:pad(t.size, align)])
	}
	if err := bw.Flush(); err != nil {
		return cw.n, fmt.Errorf("gguf: write: %w", err)
	}
	return cw.n, cw.err
}

// WriteFile writes the file to path (via a temporary file in the same
// directory, renamed into place on success).
func (w *Writer) WriteFile(path string) error {
	tmp, err := createTemp(path)
	if err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	_, err = w.WriteTo(tmp)
	if cerr := tmp.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("gguf: %w", cerr)
	}
	if err == nil {
		if err = os.Rename(tmp.Name(), path); err != nil {
			err = fmt.Errorf("gguf: %w", err)
		}
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
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

func appendString(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

// appendValue appends the encoding of v (without its type tag).
func appendValue(b []byte, v Value) []byte {
	switch v.Type {
	case TypeString:
		return appendString(b, v.str)
	case TypeArray:
		a := v.arr
		b = binary.LittleEndian.AppendUint32(b, uint32(a.Elem))
		b = binary.LittleEndian.AppendUint64(b, uint64(a.n))
		switch a.Elem {
		case TypeString:
			for _, s := range a.strs {
				b = appendString(b, s)
			}
		case TypeArray:
			for _, e := range a.vals {
				b = appendValue(b, e)
			}
		default:
			b = append(b, a.raw...)
		}
		return b
	}
	return appendScalar(b, v)
}

// createTemp creates a new file beside path to write it under another
// name, with the mode a plain create gives (0666 less the umask), so the
// file renamed into place is as readable as any other the user writes:
// os.CreateTemp makes 0600 files, which another user (a container's
// non-root one) cannot read.
func createTemp(path string) (*os.File, error) {
	for {
		var b [8]byte
		rand.Read(b[:])
		f, err := os.OpenFile(path+".tmp"+hex.EncodeToString(b[:]), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
}
