package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ValueType is the type tag of a metadata value, as stored in the file.
type ValueType uint32

// The metadata value types of GGUF v2/v3.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var typeNames = [...]string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string", "array", "uint64", "int64", "float64"}

func (t ValueType) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// valid reports whether t is one of the thirteen known tags.
func (t ValueType) valid() bool { return t <= TypeFloat64 }

// size is the encoded size of a fixed-size scalar of type t, 0 for string
// and array (variable size).
func (t ValueType) size() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

// minSize is the fewest bytes one encoded value of type t can take: a string
// is at least its 8-byte length, an array at least its 4-byte element type
// and 8-byte count. Parsing bounds every count by remaining/minSize before
// allocating anything.
func (t ValueType) minSize() int {
	switch t {
	case TypeString:
		return 8
	case TypeArray:
		return 12
	}
	return t.size()
}

func (t ValueType) isSigned() bool {
	return t == TypeInt8 || t == TypeInt16 || t == TypeInt32 || t == TypeInt64
}

func (t ValueType) isUnsigned() bool {
	return t == TypeUint8 || t == TypeUint16 || t == TypeUint32 || t == TypeUint64
}

func (t ValueType) isFloat() bool { return t == TypeFloat32 || t == TypeFloat64 }

// Value is one metadata value: a scalar, a string, or an array whose
// elements all share one type (arrays may nest). The zero Value is uint8 0.
//
// Scalars are kept exactly as stored (Type remembers the width), so a File's
// metadata written back with a Writer is byte-identical.
type Value struct {
	Type ValueType
	bits uint64 // scalars: unsigned zero-extended, signed as int64 bits, floats as float64 bits, bool 0/1
	str  string
	arr  *Array
}

// Array is the payload of an array Value. Fixed-size numeric elements are
// kept as their little-endian encoding (one copy, decoded on access),
// strings as Go strings, nested arrays as Values.
type Array struct {
	Elem ValueType // type of every element
	n    int
	raw  []byte   // (n * Elem.size()) bytes when Elem is a fixed-size scalar
	strs []string // (n) when Elem == TypeString
	vals []Value  // (n) when Elem == TypeArray
}

// Len is the number of elements.
func (a *Array) Len() int { return a.n }

// Index returns element i as a Value. It panics if i is out of range, like
// a slice index.
func (a *Array) Index(i int) Value {
	if i < 0 || i >= a.n {
		panic(fmt.Sprintf("gguf: array index %d out of range [0,%d)", i, a.n))
	}
	switch a.Elem {
	case TypeString:
		return String(a.strs[i])
	case TypeArray:
		return a.vals[i]
	}
	sz := a.Elem.size()
	return scalarFromBytes(a.Elem, a.raw[i*sz:(i+1)*sz])
}

// scalarFromBytes decodes a fixed-size scalar of type t from b (len == t.size()).
func scalarFromBytes(t ValueType, b []byte) Value {
	v := Value{Type: t}
	switch t {
	case TypeUint8, TypeBool:
		v.bits = uint64(b[0])
	case TypeInt8:
		v.bits = uint64(int64(int8(b[0])))
	case TypeUint16:
		v.bits = uint64(binary.LittleEndian.Uint16(b))
	case TypeInt16:
		v.bits = uint64(int64(int16(binary.LittleEndian.Uint16(b))))
	case TypeUint32:
		v.bits = uint64(binary.LittleEndian.Uint32(b))
	case TypeInt32:
		v.bits = uint64(int64(int32(binary.LittleEndian.Uint32(b))))
	case TypeFloat32:
		v.bits = math.Float64bits(float64(math.Float32frombits(binary.LittleEndian.Uint32(b))))
	case TypeUint64, TypeInt64:
		v.bits = binary.LittleEndian.Uint64(b)
	case TypeFloat64:
		v.bits = binary.LittleEndian.Uint64(b)
	}
	return v
}

// appendScalar appends the encoding of scalar v (v.Type.size() bytes).
func appendScalar(b []byte, v Value) []byte {
	switch v.Type {
	case TypeUint8, TypeInt8, TypeBool:
		return append(b, byte(v.bits))
	case TypeUint16, TypeInt16:
		return binary.LittleEndian.AppendUint16(b, uint16(v.bits))
	case TypeUint32, TypeInt32:
		return binary.LittleEndian.AppendUint32(b, uint32(v.bits))
	case TypeFloat32:
		return binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(math.Float64frombits(v.bits))))
	}
	return binary.LittleEndian.AppendUint64(b, v.bits)
}

// Scalar constructors.

func Uint8(x uint8) Value     { return Value{Type: TypeUint8, bits: uint64(x)} }
func Int8(x int8) Value       { return Value{Type: TypeInt8, bits: uint64(int64(x))} }
func Uint16(x uint16) Value   { return Value{Type: TypeUint16, bits: uint64(x)} }
func Int16(x int16) Value     { return Value{Type: TypeInt16, bits: uint64(int64(x))} }
func Uint32(x uint32) Value   { return Value{Type: TypeUint32, bits: uint64(x)} }
func Int32(x int32) Value     { return Value{Type: TypeInt32, bits: uint64(int64(x))} }
func Uint64(x uint64) Value   { return Value{Type: TypeUint64, bits: x} }
func Int64(x int64) Value     { return Value{Type: TypeInt64, bits: uint64(x)} }
func Float64(x float64) Value { return Value{Type: TypeFloat64, bits: math.Float64bits(x)} }
func String(s string) Value   { return Value{Type: TypeString, str: s} }

// Float32 is exact: a float32 widened to float64 narrows back to itself.
func Float32(x float32) Value { return Value{Type: TypeFloat32, bits: math.Float64bits(float64(x))} }

func Bool(x bool) Value {
	v := Value{Type: TypeBool}
	if x {
		v.bits = 1
	}
	return v
}

// ArrayElem is the set of Go types NewArray accepts.
type ArrayElem interface {
	uint8 | int8 | uint16 | int16 | uint32 | int32 | float32 | bool | string | uint64 | int64 | float64
}

// NewArray makes an array Value; the GGUF element type follows from T
// (e.g. []int32 → array of int32, []string → array of string).
func NewArray[T ArrayElem](xs []T) Value {
	a := &Array{n: len(xs)}
	switch xs := any(xs).(type) {
	case []string:
		a.Elem = TypeString
		a.strs = append([]string(nil), xs...)
		return Value{Type: TypeArray, arr: a}
	case []uint8:
		a.Elem = TypeUint8
		a.raw = append([]byte(nil), xs...)
		return Value{Type: TypeArray, arr: a}
	}
	var elem ValueType
	var conv func(T) Value
	switch any(xs).(type) {
	case []int8:
		elem, conv = TypeInt8, func(x T) Value { return Int8(any(x).(int8)) }
	case []uint16:
		elem, conv = TypeUint16, func(x T) Value { return Uint16(any(x).(uint16)) }
	case []int16:
		elem, conv = TypeInt16, func(x T) Value { return Int16(any(x).(int16)) }
	case []uint32:
		elem, conv = TypeUint32, func(x T) Value { return Uint32(any(x).(uint32)) }
	case []int32:
		elem, conv = TypeInt32, func(x T) Value { return Int32(any(x).(int32)) }
	case []float32:
		elem, conv = TypeFloat32, func(x T) Value { return Float32(any(x).(float32)) }
	case []bool:
		elem, conv = TypeBool, func(x T) Value { return Bool(any(x).(bool)) }
	case []uint64:
		elem, conv = TypeUint64, func(x T) Value { return Uint64(any(x).(uint64)) }
	case []int64:
		elem, conv = TypeInt64, func(x T) Value { return Int64(any(x).(int64)) }
	case []float64:
		elem, conv = TypeFloat64, func(x T) Value { return Float64(any(x).(float64)) }
	}
	a.Elem = elem
	a.raw = make([]byte, 0, len(xs)*elem.size())
	for _, x := range xs {
		a.raw = appendScalar(a.raw, conv(x))
	}
	return Value{Type: TypeArray, arr: a}
}

// NewArrayOf makes an array of the given Values, which must all have type
// elem (use it for arrays of arrays; elem may be any type).
func NewArrayOf(elem ValueType, vs []Value) (Value, error) {
	if !elem.valid() {
		return Value{}, fmt.Errorf("gguf: invalid array element type %d", uint32(elem))
	}
	a := &Array{Elem: elem, n: len(vs)}
	for i, v := range vs {
		if v.Type != elem {
			return Value{}, fmt.Errorf("gguf: array element %d is %s, want %s", i, v.Type, elem)
		}
		if v.Type == TypeArray && v.arr == nil {
			return Value{}, fmt.Errorf("gguf: array element %d is an invalid array", i)
		}
		switch elem {
		case TypeString:
			a.strs = append(a.strs, v.str)
		case TypeArray:
			a.vals = append(a.vals, v)
		default:
			a.raw = appendScalar(a.raw, v)
		}
	}
	return Value{Type: TypeArray, arr: a}, nil
}

// Uint returns an integer value as uint64. Any integer type is accepted if
// the value is non-negative.
func (v Value) Uint() (uint64, bool) {
	switch {
	case v.Type.isUnsigned():
		return v.bits, true
	case v.Type.isSigned() && int64(v.bits) >= 0:
		return v.bits, true
	}
	return 0, false
}

// Int returns an integer value as int64. Any integer type is accepted if
// the value fits.
func (v Value) Int() (int64, bool) {
	switch {
	case v.Type.isSigned():
		return int64(v.bits), true
	case v.Type.isUnsigned() && v.bits <= math.MaxInt64:
		return int64(v.bits), true
	}
	return 0, false
}

// Float returns a float32/float64 value, or an integer converted to float64.
func (v Value) Float() (float64, bool) {
	switch {
	case v.Type.isFloat():
		return math.Float64frombits(v.bits), true
	case v.Type.isSigned():
		return float64(int64(v.bits)), true
	case v.Type.isUnsigned():
		return float64(v.bits), true
	}
	return 0, false
}

// Bool returns a bool value.
func (v Value) Bool() (bool, bool) {
	if v.Type != TypeBool {
		return false, false
	}
	return v.bits != 0, true
}

// Str returns a string value.
func (v Value) Str() (string, bool) {
	if v.Type != TypeString {
		return "", false
	}
	return v.str, true
}

// Array returns the payload of an array value.
func (v Value) Array() (*Array, bool) {
	if v.Type != TypeArray || v.arr == nil {
		return nil, false
	}
	return v.arr, true
}

// Strings returns an array of strings (the slice is shared: do not modify).
func (v Value) Strings() ([]string, bool) {
	a, ok := v.Array()
	if !ok || a.Elem != TypeString {
		return nil, false
	}
	return a.strs, true
}

// Int32s returns an array of any integer type whose elements fit in int32.
func (v Value) Int32s() ([]int32, bool) {
	a, ok := v.Array()
	if !ok || !(a.Elem.isSigned() || a.Elem.isUnsigned()) {
		return nil, false
	}
	out := make([]int32, a.n)
	for i := range out {
		x, ok := a.Index(i).Int()
		if !ok || x < math.MinInt32 || x > math.MaxInt32 {
			return nil, false
		}
		out[i] = int32(x)
	}
	return out, true
}

// Float32s returns an array of float32 (or any float/integer type, converted).
func (v Value) Float32s() ([]float32, bool) {
	a, ok := v.Array()
	if !ok {
		return nil, false
	}
	if a.Elem == TypeFloat32 { // fast path: tokenizer scores
		out := make([]float32, a.n)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(a.raw[4*i:]))
		}
		return out, true
	}
	if !(a.Elem.isFloat() || a.Elem.isSigned() || a.Elem.isUnsigned()) {
		return nil, false
	}
	out := make([]float32, a.n)
	for i := range out {
		x, _ := a.Index(i).Float()
		out[i] = float32(x)
	}
	return out, true
}

// Equal reports whether v and w have the same type and contents (floats
// compared bit for bit, so NaN equals itself).
func (v Value) Equal(w Value) bool {
	if v.Type != w.Type {
		return false
	}
	switch v.Type {
	case TypeString:
		return v.str == w.str
	case TypeArray:
		a, b := v.arr, w.arr
		if a == nil || b == nil {
			return a == b
		}
		if a.Elem != b.Elem || a.n != b.n {
			return false
		}
		switch a.Elem {
		case TypeString:
			for i := range a.strs {
				if a.strs[i] != b.strs[i] {
					return false
				}
			}
			return true
		case TypeArray:
			for i := range a.vals {
				if !a.vals[i].Equal(b.vals[i]) {
					return false
				}
			}
			return true
		}
		return string(a.raw) == string(b.raw)
	}
	return v.bits == w.bits
}

// String formats the value for people (long arrays are abbreviated).
func (v Value) String() string {
	switch {
	case v.Type == TypeString:
		return strconv.Quote(v.str)
	case v.Type == TypeBool:
		return strconv.FormatBool(v.bits != 0)
	case v.Type.isUnsigned():
		return strconv.FormatUint(v.bits, 10)
	case v.Type.isSigned():
		return strconv.FormatInt(int64(v.bits), 10)
	case v.Type == TypeFloat32:
		return strconv.FormatFloat(math.Float64frombits(v.bits), 'g', -1, 32)
	case v.Type == TypeFloat64:
		return strconv.FormatFloat(math.Float64frombits(v.bits), 'g', -1, 64)
	case v.Type == TypeArray && v.arr != nil:
		var sb strings.Builder
		fmt.Fprintf(&sb, "[%s × %d: ", v.arr.Elem, v.arr.n)
		for i := 0; i < v.arr.n && i < 8; i++ {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(v.arr.Index(i).String())
		}
		if v.arr.n > 8 {
			sb.WriteString(", …")
		}
		sb.WriteString("]")
		return sb.String()
	}
	return "<invalid>"
}
