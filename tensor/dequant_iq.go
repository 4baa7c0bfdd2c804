package tensor

// The non-linear formats: llama.cpp's "i-quants" IQ4_NL, IQ4_XS and IQ3_S,
// and MXFP4 (the OCP microscaling format gpt-oss ships its experts in).
// Their 4- or 3-bit codes index a fixed table of levels instead of being
// the level itself, so the levels can crowd where weights are dense.
//
//	IQ4_NL {d fp16; qs [16]u8}                      32 elements
//	       x[j] = d·kIQ4NL[nib(j)]
//	MXFP4  {e u8; qs [16]u8}                         32 elements
//	       x[j] = 2^(e−128)·kFP4[nib(j)]
//	IQ4_XS {d fp16; scales_h u16; scales_l [4]u8; qs [128]u8}   256 elements
//	       8 sub-blocks of 32, each a 6-bit scale ls (low 4 bits: nibble
//	       ib%2 of scales_l[ib/2]; high 2 bits: bits 2ib, 2ib+1 of
//	       scales_h) and 16 bytes laid out as an IQ4_NL block's:
//	       x = d·(ls−32)·kIQ4NL[nib]
//	IQ3_S  {d fp16; qs [64]u8; qh [8]u8; signs [32]u8; scales [4]u8}   256
//	       8 sub-blocks of 32 (scale 1+2·s, s the nibble ib%2 of
//	       scales[ib/2]), each 8 groups of 4 elements: group g of
//	       sub-block ib takes the 9-bit index qs[8ib+g] | bit g of qh[ib]<<8
//	       into iq3sGrid (four magnitudes 1, 3, …, 15) and its signs from
//	       bits 4(g%2)… of signs[4ib+g/2]: x = d·(1+2s)·grid·(±1)
//
// nib(j) as for Q4_0: the low nibble of qs[j] for j < 16, the high nibble of
// qs[j−16] for j ≥ 16. The level tables:
//
//	kIQ4NL = −127 −104 −83 −65 −49 −35 −22 −10 1 13 25 38 53 69 89 113
//	kFP4   = 0 1 2 3 4 6 8 12 and their negatives: E2M1 (sign, 2-bit
//	         exponent, 1-bit mantissa: 0, 0.5, 1, 1.5, 2, 3, 4, 6) doubled,
//	         so MXFP4's E8M0 scale 2^(e−127) is halved to 2^(e−128)
//
// The decoders follow ggml's dequantize_row_* in float32 (the scale times the
// integer level; MXFP4's products are exact), so they match it bit for bit.

import "math"

func init() {
	dequantizers[IQ4_NL] = dequantIQ4_NL
	dequantizers[IQ4_XS] = dequantIQ4_XS
	dequantizers[IQ3_S] = dequantIQ3_S
	dequantizers[MXFP4] = dequantMXFP4
}

// kIQ4NL are IQ4_NL's and IQ4_XS's sixteen levels (ggml's kvalues_iq4nl).
var kIQ4NL = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// kFP4 are the E2M1 values doubled, indexed by the 4-bit code
// (sign<<3 | exponent<<1 | mantissa).
var kFP4 = [16]int8{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}

// e8m0Half is the MXFP4 block scale 2^(e−127) halved (the levels are
// doubled): 2^(e−128), a float32 power of two, subnormal for e < 2.
func e8m0Half(e uint8) float32 {
	if e < 2 {
		return math.Float32frombits(0x00200000 << e)
	}
	return math.Float32frombits(uint32(e-1) << 23)
}

// e8m0HalfTab is e8m0Half by exponent byte, for the MXFP4 kernel.
var e8m0HalfTab = func() (t [256]float32) {
	for e := range t {
		t[e] = e8m0Half(uint8(e))
	}
	return
}()

// iq4xsScale is the 6-bit scale of sub-block ib (0..7) of an IQ4_XS block
// (its bytes 2..7 hold scales_h and scales_l), minus 32.
func iq4xsScale(blk []byte, ib int) int32 {
	h := uint16(blk[2]) | uint16(blk[3])<<8
	ls := blk[4+ib/2]>>(4*(ib%2))&0xF | uint8(h>>(2*ib)&3)<<4
	return int32(ls) - 32
}

func dequantIQ4_NL(dst []float32, src []byte) {
	const bb = 18
	for i := 0; i < len(dst)/32; i++ {
		b := src[i*bb : i*bb+bb]
		d := f16At(b)
		y := dst[32*i : 32*i+32]
		for j := range 16 {
			y[j] = d * float32(kIQ4NL[b[2+j]&0xF])
			y[j+16] = d * float32(kIQ4NL[b[2+j]>>4])
		}
	}
}

func dequantMXFP4(dst []float32, src []byte) {
	const bb = 17
	for i := 0; i < len(dst)/32; i++ {
		b := src[i*bb : i*bb+bb]
		d := e8m0Half(b[0])
		y := dst[32*i : 32*i+32]
		for j := range 16 {
			y[j] = float32(kFP4[b[1+j]&0xF]) * d
			y[j+16] = float32(kFP4[b[1+j]>>4]) * d
		}
	}
}

func dequantIQ4_XS(dst []float32, src []byte) {
	const bb = 136
	for i := 0; i < len(dst)/qkK; i++ {
		b := src[i*bb : i*bb+bb]
		d := f16At(b)
		for ib := range 8 {
			dl := d * float32(iq4xsScale(b, ib))
			qs := b[8+16*ib : 8+16*ib+16]
			y := dst[qkK*i+32*ib : qkK*i+32*ib+32]
			for j := range 16 {
				y[j] = dl * float32(kIQ4NL[qs[j]&0xF])
				y[j+16] = dl * float32(kIQ4NL[qs[j]>>4])
			}
		}
	}
}

// iq3sGroup returns the four magnitudes (odd, 1..15) and the sign byte of
// group g (0..7) of sub-block ib (0..7) of an IQ3_S block: the grid entry
// qs[8ib+g] | (bit g of qh[ib])<<8, signs in bits 4(g%2)..4(g%2)+3 of
// signs[4ib+g/2] (bit set: negative).
func iq3sGroup(blk []byte, ib, g int) (grid uint32, signs uint8) {
	idx := int(blk[2+8*ib+g]) | int(blk[66+ib]>>g&1)<<8
	return iq3sGrid[idx], blk[74+4*ib+g/2] >> (4 * (g % 2)) & 0xF
}

// iq3sScale is the odd scale 1+2s of sub-block ib of an IQ3_S block.
func iq3sScale(blk []byte, ib int) int32 { return 1 + 2*int32(blk[106+ib/2]>>(4*(ib%2))&0xF) }

func dequantIQ3_S(dst []float32, src []byte) {
	const bb = 110
	for i := 0; i < len(dst)/qkK; i++ {
		b := src[i*bb : i*bb+bb]
		d := f16At(b)
		for ib := range 8 {
			db := d * float32(iq3sScale(b, ib))
			y := dst[qkK*i+32*ib : qkK*i+32*ib+32]
			for g := range 8 {
				grid, signs := iq3sGroup(b, ib, g)
				for j := range 4 {
					v := db * float32(grid>>(8*j)&0xFF)
					if signs>>j&1 != 0 {
						v = -v
					}
					y[4*g+j] = v
				}
			}
		}
	}
}
