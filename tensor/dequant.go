package tensor

// Block-quantized weight formats (GGUF / ggml).
//
// A quantized row is a sequence of fixed-size blocks; each block stores a few
// float16 scales and small integers, and decodes to BlockSize floats. All
// multi-byte fields are little-endian; "fp16" is IEEE half precision.
//
// Simple formats, 32 elements per block (element j of the block is x[j]):
//
//	Q4_0 {d fp16; qs [16]u8}            x[j] = d·(nib(j) − 8)
//	Q4_1 {d, m fp16; qs [16]u8}         x[j] = d·nib(j) + m
//	Q5_0 {d fp16; qh u32; qs [16]u8}    x[j] = d·(nib(j) | hbit(j)<<4 − 16)
//	Q5_1 {d, m fp16; qh u32; qs [16]u8} x[j] = d·(nib(j) | hbit(j)<<4) + m
//	Q8_0 {d fp16; qs [32]i8}            x[j] = d·qs[j]
//	Q8_1 {d, s fp16; qs [32]i8}         x[j] = d·qs[j]   (s = d·Σqs, for dots)
//
// Q8_1 is only an activation format (see quantizedActs); it is not a weight
// type here. (ggml's block is 36 bytes; older ggml used float32 d and s, 40.)
//
// where nib(j) is the low nibble of qs[j] for j < 16 and the high nibble of
// qs[j−16] for j ≥ 16 (the two halves of the block share bytes), and hbit(j)
// is bit j of qh.
//
// K-quants ("super-blocks" of 256 elements split into sub-blocks of 16 or 32,
// each with its own small integer scale, the scales themselves scaled by a
// fp16 super-scale):
//
//	Q2_K {scales [16]u8; qs [64]u8; d, dmin fp16}
//	     16 sub-blocks of 16: x = d·(sc&15)·q − dmin·(sc>>4), q 2 bits
//	Q3_K {hmask [32]u8; qs [64]u8; scales [12]u8; d fp16}
//	     16 sub-blocks of 16: x = d·(sc−32)·(q − 4·!hbit), q 2 bits + 1 high
//	     bit, sc 6 bits packed (low nibbles in bytes 0–7, top 2 bits in 8–11)
//	Q4_K {d, dmin fp16; scales [12]u8; qs [128]u8}
//	     8 sub-blocks of 32: x = d·sc·q − dmin·m, sc and m 6 bits packed
//	     (see scaleMinK4), q 4 bits: the 32 bytes of a 64-element chunk hold
//	     sub-block 2i in their low nibbles and 2i+1 in their high nibbles
//	Q5_K {d, dmin fp16; scales [12]u8; qh [32]u8; qs [128]u8}
//	     as Q4_K plus a fifth bit: bit 2i of qh[l] for sub-block 2i, bit 2i+1
//	     for sub-block 2i+1
//	Q6_K {ql [128]u8; qh [64]u8; scales [16]i8; d fp16}
//	     16 sub-blocks of 16: x = d·sc·(q − 32), q = 4 low bits from ql and 2
//	     high bits from qh, interleaved in 128-element halves
//	Q8_K {d f32; qs [256]i8; bsums [16]i16}
//	     x = d·qs; bsums are sums of 16 consecutive qs (activations only)
//
// The decoders below follow ggml's reference dequantize_row_* operation by
// operation in float32 (explicit float32 conversions stop the compiler from
// fusing multiply-adds), so they reproduce ggml's values bit for bit.

import "math"

func init() {
	dequantizers[Q4_0] = dequantQ4_0
	dequantizers[Q4_1] = dequantQ4_1
	dequantizers[Q5_0] = dequantQ5_0
	dequantizers[Q5_1] = dequantQ5_1
	dequantizers[Q8_0] = dequantQ8_0
	dequantizers[Q2_K] = dequantQ2_K
	dequantizers[Q3_K] = dequantQ3_K
	dequantizers[Q4_K] = dequantQ4_K
	dequantizers[Q5_K] = dequantQ5_K
	dequantizers[Q6_K] = dequantQ6_K
	dequantizers[Q8_K] = dequantQ8_K
}

const qkK = 256 // elements in a K-quant super-block (ggml's QK_K)

// f16At reads the little-endian fp16 at b[0:2] as float32.
func f16At(b []byte) float32 { return F16ToF32(uint16(b[0]) | uint16(b[1])<<8) }

// putF16 stores f rounded to fp16 at b[0:2] and returns the stored value.
func putF16(b []byte, f float32) float32 {
	h := F32ToF16(f)
	b[0], b[1] = byte(h), byte(h>>8)
	return F16ToF32(h)
}

func u32At(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func f32At(b []byte) float32 { return math.Float32frombits(u32At(b)) }

// scaleMinK4 unpacks the j-th (0..7) 6-bit scale and min of a Q4_K/Q5_K
// block from its 12 packed bytes q: sub-blocks 0–3 keep their scale and min
// in the low 6 bits of q[j] and q[j+4]; sub-blocks 4–7 keep the low 4 bits in
// the nibbles of q[j+4] and the top 2 bits in the spare high bits of q[j−4]
// (scale) and q[j] (min).
func scaleMinK4(j int, q []byte) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xF | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// q3Scales unpacks the sixteen 6-bit Q3_K scales (still offset by 32) from
// their 12 packed bytes: low nibbles of bytes 0–7 are scales 0–7, high
// nibbles scales 8–15, and byte 8+(j%4) holds the top 2 bits of scale j at
// bit 2·(j/4).
func q3Scales(dst *[16]int8, p []byte) {
	for j := range 16 {
		var lo uint8
		if j < 8 {
			lo = p[j] & 0xF
		} else {
			lo = p[j-8] >> 4
		}
		hi := (p[8+j%4] >> (2 * (j / 4))) & 3
		dst[j] = int8(lo|hi<<4) - 32
	}
}

func dequantQ4_0(dst []float32, src []byte) {
	const bb = 18
	for i := 0; i < len(dst)/32; i++ {
		b := src[i*bb : (i+1)*bb]
		d := f16At(b)
		y := dst[i*32 : (i+1)*32]
		for j := range 16 {
			y[j] = float32(int32(b[2+j]&0xF)-8) * d
			y[j+16] = float32(int32(b[2+j]>>4)-8) * d
		}
	}
}

func dequantQ4_1(dst []float32, src []byte) {
	const bb = 20
	for i := 0; i < len(dst)/32; i++ {
		b := src[i*bb : (i+1)*bb]
		d, m := f16At(b), f16At(b[2:])
		y := dst[i*32 : (i+1)*32]
		for j := range 16 {
			y[j] = float32(float32(b[4+j]&0xF)*d) + m
			y[j+16] = float32(float32(b[4+j]>>4)*d) + m
		}
	}
}

func dequantQ5_0(dst []float32, src []byte) {
	const bb = 22
	for i := 0; i < len(dst)/32; i++ {
		b := src[i*bb : (i+1)*bb]
		d := f16At(b)
		qh := u32At(b[2:])
		qs := b[6:22]
		y := dst[i*32 : (i+1)*32]
		for j := range 16 {
			h0 := uint8(qh>>j<<4) & 0x10
			h1 := uint8(qh>>(j+12)) & 0x10
			y[j] = float32(int32(qs[j]&0xF|h0)-16) * d
			y[j+16] = float32(int32(qs[j]>>4|h1)-16) * d
		}
	}
}

func dequantQ5_1(dst []float32, src []byte) {
	const bb = 24
	for i := 0; i < len(dst)/32; i++ {
		b := src[i*bb : (i+1)*bb]
		d, m := f16At(b), f16At(b[2:])
		qh := u32At(b[4:])
		qs := b[8:24]
		y := dst[i*32 : (i+1)*32]
		for j := range 16 {
			h0 := uint8(qh>>j<<4) & 0x10
			h1 := uint8(qh>>(j+12)) & 0x10
			y[j] = float32(float32(qs[j]&0xF|h0)*d) + m
			y[j+16] = float32(float32(qs[j]>>4|h1)*d) + m
		}
	}
}

func dequantQ8_0(dst []float32, src []byte) {
	const bb = 34
	for i := 0; i < len(dst)/32; i++ {
		b := src[i*bb : (i+1)*bb]
		d := f16At(b)
		y := dst[i*32 : (i+1)*32]
		for j := range 32 {
			y[j] = float32(int8(b[2+j])) * d
		}
	}
}

func dequantQ2_K(dst []float32, src []byte) {
	const bb = 84
	for i := 0; i < len(dst)/qkK; i++ {
		b := src[i*bb : (i+1)*bb]
		scales, q := b[0:16], b[16:80]
		d, dmin := f16At(b[80:]), f16At(b[82:])
		y := dst[i*qkK : (i+1)*qkK]
		is, k := 0, 0
		for n := 0; n < qkK; n += 128 {
			for shift := uint(0); shift < 8; shift += 2 {
				for half := 0; half < 2; half++ {
					sc := scales[is]
					is++
					dl := d * float32(sc&0xF)
					ml := dmin * float32(sc>>4)
					qq := q[half*16 : half*16+16]
					for l := range 16 {
						y[k] = float32(dl*float32((qq[l]>>shift)&3)) - ml
						k++
					}
				}
			}
			q = q[32:]
		}
	}
}

func dequantQ3_K(dst []float32, src []byte) {
	const bb = 110
	var sc [16]int8
	for i := 0; i < len(dst)/qkK; i++ {
		b := src[i*bb : (i+1)*bb]
		hm, q := b[0:32], b[32:96]
		q3Scales(&sc, b[96:108])
		dAll := f16At(b[108:])
		y := dst[i*qkK : (i+1)*qkK]
		is, k := 0, 0
		m := uint8(1)
		for n := 0; n < qkK; n += 128 {
			for shift := uint(0); shift < 8; shift += 2 {
				for half := 0; half < 2; half++ {
					dl := dAll * float32(sc[is])
					is++
					for l := half * 16; l < half*16+16; l++ {
						v := int32((q[l] >> shift) & 3)
						if hm[l]&m == 0 {
							v -= 4
						}
						y[k] = dl * float32(v)
						k++
					}
				}
				m <<= 1
			}
			q = q[32:]
		}
	}
}

func dequantQ4_K(dst []float32, src []byte) {
	const bb = 144
	for i := 0; i < len(dst)/qkK; i++ {
		b := src[i*bb : (i+1)*bb]
		d, dmin := f16At(b), f16At(b[2:])
		scales, q := b[4:16], b[16:144]
		y := dst[i*qkK : (i+1)*qkK]
		for j := 0; j < 4; j++ { // 64-element chunks
			sc1, m1 := scaleMinK4(2*j, scales)
			sc2, m2 := scaleMinK4(2*j+1, scales)
			d1, mm1 := d*float32(sc1), dmin*float32(m1)
			d2, mm2 := d*float32(sc2), dmin*float32(m2)
			qq := q[32*j : 32*j+32]
			yy := y[64*j : 64*j+64]
			for l := range 32 {
				yy[l] = float32(d1*float32(qq[l]&0xF)) - mm1
				yy[l+32] = float32(d2*float32(qq[l]>>4)) - mm2
			}
		}
	}
}

func dequantQ5_K(dst []float32, src []byte) {
	const bb = 176
	for i := 0; i < len(dst)/qkK; i++ {
		b := src[i*bb : (i+1)*bb]
		d, dmin := f16At(b), f16At(b[2:])
		scales, qh, ql := b[4:16], b[16:48], b[48:176]
		y := dst[i*qkK : (i+1)*qkK]
		u1, u2 := uint8(1), uint8(2)
		for j := 0; j < 4; j++ {
			sc1, m1 := scaleMinK4(2*j, scales)
			sc2, m2 := scaleMinK4(2*j+1, scales)
			d1, mm1 := d*float32(sc1), dmin*float32(m1)
			d2, mm2 := d*float32(sc2), dmin*float32(m2)
			qq := ql[32*j : 32*j+32]
			yy := y[64*j : 64*j+64]
			for l := range 32 {
				v1 := qq[l] & 0xF
				if qh[l]&u1 != 0 {
					v1 += 16
				}
				v2 := qq[l] >> 4
				if qh[l]&u2 != 0 {
					v2 += 16
				}
				yy[l] = float32(d1*float32(v1)) - mm1
				yy[l+32] = float32(d2*float32(v2)) - mm2
			}
			u1 <<= 2
			u2 <<= 2
		}
	}
}

func dequantQ6_K(dst []float32, src []byte) {
	const bb = 210
	for i := 0; i < len(dst)/qkK; i++ {
		b := src[i*bb : (i+1)*bb]
		d := f16At(b[208:])
		for n := 0; n < 2; n++ { // 128-element halves
			ql := b[64*n : 64*n+64]
			qh := b[128+32*n : 128+32*n+32]
			sc := b[192+8*n : 192+8*n+8]
			y := dst[i*qkK+128*n : i*qkK+128*n+128]
			for l := range 32 {
				is := l / 16
				q1 := int32(ql[l]&0xF|(qh[l]>>0&3)<<4) - 32
				q2 := int32(ql[l+32]&0xF|(qh[l]>>2&3)<<4) - 32
				q3 := int32(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
				q4 := int32(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
				y[l] = float32(d*float32(int8(sc[is]))) * float32(q1)
				y[l+32] = float32(d*float32(int8(sc[is+2]))) * float32(q2)
				y[l+64] = float32(d*float32(int8(sc[is+4]))) * float32(q3)
				y[l+96] = float32(d*float32(int8(sc[is+6]))) * float32(q4)
			}
		}
	}
}

func dequantQ8_K(dst []float32, src []byte) {
	const bb = 292
	for i := 0; i < len(dst)/qkK; i++ {
		b := src[i*bb : (i+1)*bb]
		d := f32At(b)
		y := dst[i*qkK : (i+1)*qkK]
		for j := range qkK {
			y[j] = d * float32(int8(b[4+j]))
		}
	}
}

// dequantRow is DequantizeRow without the map lookup: a direct switch the
// compiler can see through, so a caller's stack buffer stays on the stack.
// It reports false for types it cannot decode.
func dequantRow(dst []float32, t DType, src []byte) bool {
	switch t {
	case F32:
		for i := range dst {
			dst[i] = f32At(src[4*i:])
		}
	case F16:
		for i := range dst {
			dst[i] = f16At(src[2*i:])
		}
	case BF16:
		for i := range dst {
			dst[i] = bf16ToF32(uint16(src[2*i]) | uint16(src[2*i+1])<<8)
		}
	case Q4_0:
		dequantQ4_0(dst, src)
	case Q4_1:
		dequantQ4_1(dst, src)
	case Q5_0:
		dequantQ5_0(dst, src)
	case Q5_1:
		dequantQ5_1(dst, src)
	case Q8_0:
		dequantQ8_0(dst, src)
	case Q2_K:
		dequantQ2_K(dst, src)
	case Q3_K:
		dequantQ3_K(dst, src)
	case Q4_K:
		dequantQ4_K(dst, src)
	case Q5_K:
		dequantQ5_K(dst, src)
	case Q6_K:
		dequantQ6_K(dst, src)
	case Q8_K:
		dequantQ8_K(dst, src)
	case IQ4_NL:
		dequantIQ4_NL(dst, src)
	case IQ4_XS:
		dequantIQ4_XS(dst, src)
	case IQ3_S:
		dequantIQ3_S(dst, src)
	case MXFP4:
		dequantMXFP4(dst, src)
	default:
		return false
	}
	return true
}

// DequantizeRow decodes len(dst) elements of type t from src into dst.
func DequantizeRow(dst []float32, t DType, src []byte) {
	switch t {
	case F32:
		copy(dst, BytesF32(src[:len(dst)*4]))
	case F16:
		for i := range dst {
			dst[i] = F16ToF32(uint16(src[2*i]) | uint16(src[2*i+1])<<8)
		}
	case BF16:
		for i := range dst {
			dst[i] = bf16ToF32(uint16(src[2*i]) | uint16(src[2*i+1])<<8)
		}
	default:
		if dq, ok := dequantizers[t]; ok {
			dq(dst, src)
			return
		}
		for i := range dst {
			dst[i] = float32(math.NaN())
		}
	}
}

// dequantizers maps block-quantized types to their reference decoders
// (filled by init).
var dequantizers = map[DType]func(dst []float32, src []byte){}

// Computable reports whether MatMul and DequantizeRow support type t.
func Computable(t DType) bool {
	switch t {
	case F32, F16, BF16:
		return true
	}
	_, ok := dequantizers[t]
	return ok
}
