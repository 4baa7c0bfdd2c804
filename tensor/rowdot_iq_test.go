package tensor

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"testing"
)

// iqTypes are the table formats of dequant_iq.go.
var iqTypes = []DType{IQ4_NL, IQ4_XS, IQ3_S, MXFP4}

// laneTypes share the lane arithmetic of rowdot_iq_ref.go: the table
// formats and Q2_K, Q3_K.
var laneTypes = append([]DType{Q2_K, Q3_K}, iqTypes...)

// iqRandRow returns a row of cols elements of type ty: quantized Gaussian
// values (scale std) when ty has a quantizer and !raw, else random bytes
// with sane scales (fp16 d in [2^-10, 2^-6), MXFP4 e in 110..130), which
// reach every code, grid entry and sign pattern.
func iqRandRow(t testing.TB, rng *rand.Rand, ty DType, cols int, std float64, raw bool) []byte {
	rb, err := ty.RowBytes(cols)
	if err != nil {
		t.Fatal(err)
	}
	w := make([]byte, rb)
	if !raw && CanQuantize(ty) {
		v := make([]float32, cols)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * std)
		}
		if err := QuantizeRow(w, ty, v); err != nil {
			t.Fatal(err)
		}
		return w
	}
	for i := range w {
		w[i] = byte(rng.Uint32())
	}
	bb := ty.blockBytes()
	for b := 0; b < len(w); b += bb {
		if ty == MXFP4 {
			w[b] = byte(110 + rng.IntN(21))
			continue
		}
		h := F32ToF16(float32(math.Ldexp(1+rng.Float64(), -10+rng.IntN(4))))
		off := map[DType]int{Q2_K: 80, Q3_K: 108}[ty] // the fp16 d, where not first
		w[b+off], w[b+off+1] = byte(h), byte(h>>8)
		if ty == Q2_K {
			w[b+82], w[b+83] = byte(h), byte(h>>8)
		}
	}
	return w
}

// TestIQRowDotsBitwise: the assembly row dots of the table formats equal
// the reference dots bit for bit (one arithmetic, rowdot_iq_ref.go), for
// 1 to 9, 16 and 21 blocks (the kernels' unrolled loops and tails;
// IQ4_NL's and MXFP4's ymm steps of eight, four and one), several rows per
// call back to back or at a stride with random padding, and activations
// at an offset — on the zmm kernels
// where the CPU has them (hasKZ; IQ4_NL's and MXFP4's with and without
// VBMI, hasNLZV) and on the ymm ones (hasKZ off, what NANOSERVE_NOAVX512=1
// selects).
func TestIQRowDotsBitwise(t *testing.T) {
	defer func(kz, v bool) { hasKZ, hasNLZV = kz, v }(hasKZ, hasNLZV)
	type path struct {
		name  string
		kz, v bool
	}
	paths := []path{{"asm", false, false}}
	if hasKZ {
		paths = append(paths, path{"zmm", true, false})
	}
	if hasNLZV {
		paths = append(paths, path{"zmm+vbmi", true, true})
	}
	for _, p := range paths {
		hasKZ, hasNLZV = p.kz, p.v
		testIQRowDotsBitwise(t, p.name)
	}
}

func testIQRowDotsBitwise(t *testing.T, path string) {
	rng := rand.New(rand.NewPCG(31, 4))
	for _, ty := range laneTypes {
		if !hasIQKernel(ty) {
			t.Logf("%s: no assembly kernel here, the reference runs", ty)
			continue
		}
		bs := ty.BlockSize()
		for _, nb := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 21} {
			cols := nb * bs
			for trial := range 4 {
				raw := trial >= 2
				const rows = 13 // eight (the ymm IQ4_NL/MXFP4 kernels' rows at a time) and five more
				rb, _ := ty.RowBytes(cols)
				stride := rb + 3*(trial%2) // rows back to back, or padded
				wm := make([]byte, rows*stride+rb)
				for i := range wm { // padding and the bytes past the last row: noise a kernel must not read
					wm[i] = byte(rng.Uint32())
				}
				for r := range rows {
					copy(wm[r*stride:], iqRandRow(t, rng, ty, cols, []float64{0.02, 3}[trial%2], raw))
				}
				x := make([]float32, 2*cols)
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				var a quantizedActs
				if err := quantizeActs(&a, ty, x); err != nil {
					t.Fatal(err)
				}
				for _, off := range []int{0, cols} {
					got := make([]float32, rows)
					dotQRows(ty, got, wm, stride, cols, &a, off)
					for r := range rows {
						want := dotQ(ty, wm[r*stride:r*stride+rb], &a, off)
						if math.Float32bits(got[r]) != math.Float32bits(want) {
							t.Fatalf("%s %s nb=%d trial %d off=%d row %d: kernel %v, reference %v", path, ty, nb, trial, off, r, got[r], want)
						}
					}
				}
			}
		}
	}
}

// e2m1 decodes a 4-bit E2M1 code by its definition: sign bit 3, exponent
// bits 1-2 (bias 1), mantissa bit 0; exponent 0 is subnormal (0 or 0.5).
func e2m1(c int) float64 {
	e, m := c>>1&3, float64(c&1)
	v := m / 2
	if e > 0 {
		v = (1 + m/2) * math.Ldexp(1, e-1)
	}
	if c&8 != 0 {
		v = -v
	}
	return v
}

// TestDequantIQKnownBlocks pins each table format's layout with blocks
// built from the format's definition, written independently of the
// decoders: MXFP4 from E2M1 and the E8M0 scale 2^(e−127); IQ4_XS's packed
// 6-bit scales; IQ3_S's grid index, high bit, signs and odd scales.
func TestDequantIQKnownBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	codes := func(n int) []int {
		c := make([]int, n)
		for i := range c {
			c[i] = rng.IntN(16)
		}
		return c
	}
	pack := func(dst []byte, c []int) { // element j low nibble of byte j, 16+j high
		for j := range 16 {
			dst[j] = byte(c[j] | c[16+j]<<4)
		}
	}
	check := func(ty DType, blk []byte, want func(i int) float64) {
		t.Helper()
		got := make([]float32, ty.BlockSize())
		DequantizeRow(got, ty, blk)
		for i, g := range got {
			if w := float32(want(i)); g != w {
				t.Fatalf("%s element %d: %g, want %g", ty, i, g, w)
			}
		}
	}
	for _, e := range []int{0, 1, 2, 100, 127, 130, 254} {
		c := codes(32)
		blk := make([]byte, 17)
		blk[0] = byte(e)
		pack(blk[1:], c)
		check(MXFP4, blk, func(i int) float64 { return e2m1(c[i]) * math.Ldexp(1, e-127) })
	}
	nl := []float64{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}
	{
		c := codes(32)
		blk := make([]byte, 18)
		blk[0], blk[1] = 0x00, 0x2c // fp16 0.0625
		pack(blk[2:], c)
		check(IQ4_NL, blk, func(i int) float64 { return 0.0625 * nl[c[i]] })
	}
	{
		c := codes(256)
		var ls [8]int
		blk := make([]byte, 136)
		blk[0], blk[1] = 0x00, 0x20 // fp16 2^-7
		var sh int
		for ib := range 8 {
			ls[ib] = rng.IntN(64)
			blk[4+ib/2] |= byte(ls[ib]&15) << (4 * (ib % 2))
			sh |= ls[ib] >> 4 << (2 * ib)
			pack(blk[8+16*ib:], c[32*ib:])
		}
		blk[2], blk[3] = byte(sh), byte(sh>>8)
		check(IQ4_XS, blk, func(i int) float64 { return math.Ldexp(1, -7) * float64(ls[i/32]-32) * nl[c[i]] })
	}
	{
		blk := make([]byte, 110)
		blk[0], blk[1] = 0x00, 0x24 // fp16 2^-6
		var idx [64]int
		var neg [256]bool
		var sc [8]int
		for ib := range 8 {
			sc[ib] = rng.IntN(16)
			blk[106+ib/2] |= byte(sc[ib]) << (4 * (ib % 2))
			for g := range 8 {
				k := 8*ib + g
				idx[k] = rng.IntN(512)
				blk[2+k] = byte(idx[k])
				blk[66+ib] |= byte(idx[k]>>8) << g
			}
		}
		for i := range 256 { // sign of element i: bit i%8 of signs[i/8]
			neg[i] = rng.IntN(2) == 1
			if neg[i] {
				blk[74+i/8] |= 1 << (i % 8)
			}
		}
		check(IQ3_S, blk, func(i int) float64 {
			code := iq3sCodes[idx[i/4]]
			v := math.Ldexp(1, -6) * float64(1+2*sc[i/32]) * float64(2*(int(code)>>(3*(i%4))&7)+1)
			if neg[i] {
				v = -v
			}
			return v
		})
	}
}

// TestIQ3SGrid: the IQ3_S codebook is 512 distinct points of four odd
// magnitudes 1..15, in increasing order of their little-endian words, and
// (when llama.cpp's source is at hand, ~/.cache/llamacpp) equal entry by
// entry to ggml's iq3s_grid.
func TestIQ3SGrid(t *testing.T) {
	for i, v := range iq3sGrid {
		for j := range 4 {
			if b := v >> (8 * j) & 0xFF; b%2 != 1 || b > 15 {
				t.Fatalf("entry %d byte %d = %d", i, j, b)
			}
		}
		if i > 0 && v <= iq3sGrid[i-1] {
			t.Fatalf("entry %d (%#x) not above entry %d (%#x)", i, v, i-1, iq3sGrid[i-1])
		}
	}
	home, _ := os.UserHomeDir()
	src, err := os.ReadFile(filepath.Join(home, ".cache/llamacpp/llama.cpp/ggml/src/ggml-common.h"))
	if err != nil {
		t.Log("llama.cpp source not found: grid checked for its properties only")
		return
	}
	m := regexp.MustCompile(`(?s)iq3s_grid, 512\)(.*?)GGML_TABLE_END`).FindSubmatch(src)
	if m == nil {
		t.Fatal("iq3s_grid not found in ggml-common.h")
	}
	words := regexp.MustCompile(`0x[0-9a-f]{8}`).FindAll(m[1], -1)
	if len(words) != 512 {
		t.Fatalf("ggml's iq3s_grid has %d entries", len(words))
	}
	for i, w := range words {
		v, _ := strconv.ParseUint(string(w[2:]), 16, 32)
		if uint32(v) != iq3sGrid[i] {
			t.Fatalf("entry %d: %#x, ggml %#x", i, iq3sGrid[i], v)
		}
	}
}

// TestQuantRealIQ re-quantizes the F16 originals of the llama.cpp-made
// files in shared testdata/gguf-quants (and gpt-oss's MXFP4 experts) and
// compares with llama-quantize's bytes, tensor by tensor; every tensor of a
// table format must also decode close to its original.
func TestQuantRealIQ(t *testing.T) {
	shared := qSharedDir(t)
	dir := filepath.Join(shared, "testdata", "gguf-quants")
	orig := f16Originals(t, filepath.Join(dir, "F16", "llamaq-F16.gguf"))
	files := map[string]map[string][]float32{}
	qs := []string{"IQ4_NL", "IQ4_XS", "IQ3_S", "Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L", "IQ3_M"}
	if testing.Short() { // (the arm64 suite under qemu): one file per quantizer
		qs = qs[:5]
	}
	for _, q := range qs {
		files[filepath.Join(dir, q, "llamaq-"+q+".gguf")] = orig
	}
	oss := filepath.Join(shared, "testdata", "gguf-archs", "gpt-oss")
	if _, err := os.Stat(filepath.Join(oss, "gpt-oss-F16.gguf")); err == nil {
		files[filepath.Join(oss, "gpt-oss-MXFP4_MOE.gguf")] = f16Originals(t, filepath.Join(oss, "gpt-oss-F16.gguf"))
	}
	bound := map[DType]float64{IQ4_NL: 0.09, IQ4_XS: 0.09, IQ3_S: 0.2, MXFP4: 0.14}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, path := range paths {
		ts, err := qReadGGUF(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		names := make([]string, 0, len(ts))
		for n := range ts {
			names = append(names, n)
		}
		sort.Strings(names)
		exact, n := 0, 0
		for _, name := range names {
			tt := ts[name]
			o := files[path][name]
			if tt.Type == F32 || tt.Type == F16 || len(o) != tt.numel() {
				continue
			}
			if b, ok := bound[tt.Type]; ok {
				got := make([]float32, len(o))
				DequantizeRow(got, tt.Type, tt.Data)
				if rel := qRelRMSE(got, o); rel > b {
					t.Errorf("%s %s (%s): relative RMSE %.4f > %.2f", filepath.Base(path), name, tt.Type, rel, b)
				}
			}
			if !CanQuantize(tt.Type) {
				t.Errorf("%s %s: no quantizer for %s", filepath.Base(path), name, tt.Type)
				continue
			}
			mine := make([]byte, len(tt.Data))
			if err := QuantizeRow(mine, tt.Type, o); err != nil {
				t.Fatal(err)
			}
			n++
			if bytes.Equal(mine, tt.Data) {
				exact++
			} else {
				t.Errorf("%s %s (%s): re-quantized original differs from llama-quantize's bytes", filepath.Base(path), name, tt.Type)
			}
		}
		t.Logf("%s: %d/%d quantized tensors byte-identical to llama-quantize's", filepath.Base(path), exact, n)
	}
}

// TestMXFP4Exponents runs every E8M0 exponent byte through the row dots:
// row e has eight blocks (one pass of the zmm kernel's eight-block loop,
// which computes 2^(e−128) instead of looking it up) all with exponent e,
// against activations scaled so the result stays a normal float.
func TestMXFP4Exponents(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 255))
	const nb = 8
	cols := 32 * nb
	row := make([]byte, 17*nb)
	x := make([]float32, cols)
	for e := range 256 {
		for b := range nb {
			row[17*b] = byte(e)
			for k := 1; k < 17; k++ {
				row[17*b+k] = byte(rng.Uint32())
			}
		}
		sc := math.Ldexp(1, min(16, max(-16, 128-e))) // da stays within fp16
		for i := range x {
			x[i] = float32(rng.NormFloat64() * sc)
		}
		var a quantizedActs
		if err := quantizeActs(&a, MXFP4, x); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, 1)
		dotQRows(MXFP4, got, row, len(row), cols, &a, 0)
		want := dotQ(MXFP4, row, &a, 0)
		if math.Float32bits(got[0]) != math.Float32bits(want) {
			t.Fatalf("e=%d: kernel %v, reference %v", e, got[0], want)
		}
		if want == 0 || math.IsInf(float64(want), 0) || math.IsNaN(float64(want)) {
			t.Fatalf("e=%d: reference %v, want a finite nonzero dot", e, want)
		}
	}
}
