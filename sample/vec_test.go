package sample

import (
	"math"
	"slices"
	"testing"
	"unsafe"
)

// withKernels runs f with the assembly kernels on (asm) or off, skipping the
// assembly run where the CPU has none.
func withKernels(t *testing.T, asm bool, f func(t *testing.T)) {
	t.Helper()
	name := "go"
	if asm {
		name = "asm"
	}
	t.Run(name, func(t *testing.T) {
		if asm && !hasAVX2 {
			t.Skip("no AVX2 kernels on this machine")
		}
		saved := useAVX2
		useAVX2 = asm
		defer func() { useAVX2 = saved }()
		f(t)
	})
}

// vecLogits returns n logits mixing the shapes the kernels must handle:
// random floats over many magnitudes, exact ties, ±0, -Inf, and values whose
// x lands just around xmin and the -60 cut.
func vecLogits(r *rng, n int, m, invT, xmin float64) []float32 {
	l := make([]float32, n)
	for i := range l {
		u := r.next()
		switch u % 16 {
		case 0:
			l[i] = float32(math.Inf(-1))
		case 1:
			l[i] = 0
		case 2:
			l[i] = float32(math.Copysign(0, -1))
		case 3, 4: // x near xmin
			l[i] = float32(m + xmin/invT*(1+float64(int64(u>>40)-1<<23)*0x1p-40))
		case 5: // l − m near -60
			l[i] = float32(m - 60 + float64(int64(u>>40)-1<<23)*0x1p-30)
		case 6: // tiny magnitudes
			l[i] = float32(math.Ldexp(float64(u>>40)*0x1p-24, -int(u>>8&63)))
		default: // uniform in [m − 80, m]
			l[i] = float32(m - 80*float64(u>>11)*0x1p-53)
		}
		if float64(l[i]) > m {
			l[i] = float32(m)
		}
	}
	return l
}

// The assembly addresses expConsts' fields by fixed offsets (C_* in
// vec_amd64.s): field i must start at 32·i.
func TestExpConstsLayout(t *testing.T) {
	var c expConsts
	if unsafe.Sizeof(c) != 22*32 {
		t.Fatalf("expConsts is %d bytes, want %d", unsafe.Sizeof(c), 22*32)
	}
	base := uintptr(unsafe.Pointer(&c))
	for i, p := range []unsafe.Pointer{
		unsafe.Pointer(&c.m), unsafe.Pointer(&c.invT), unsafe.Pointer(&c.lo), unsafe.Pointer(&c.invLn2),
		unsafe.Pointer(&c.shifter), unsafe.Pointer(&c.nbias), unsafe.Pointer(&c.ln2Hi), unsafe.Pointer(&c.ln2Lo),
		unsafe.Pointer(&c.c5), unsafe.Pointer(&c.c4), unsafe.Pointer(&c.c3), unsafe.Pointer(&c.c2),
		unsafe.Pointer(&c.one), unsafe.Pointer(&c.mask63), unsafe.Pointer(&c.notM63), unsafe.Pointer(&c.k),
		unsafe.Pointer(&c.mant), unsafe.Pointer(&c.implied), unsafe.Pointer(&c.sub31), unsafe.Pointer(&c.keyBase),
		unsafe.Pointer(&c.kmin), unsafe.Pointer(&c.eFloor),
	} {
		if off := uintptr(p) - base; off != uintptr(32*i) {
			t.Fatalf("field %d at offset %d, want %d", i, off, 32*i)
		}
	}
}

// garbage fills w with non-zero junk, so a kernel must write every weight.
func garbage(w []uint64) {
	for i := range w {
		w[i] = 0xdeadbeef + uint64(i)
	}
}

// The AVX2 weights kernel must return exactly weightsGo's weights and sum for
// every vocabulary shift, temperature and input shape, at every length
// (ragged tails included). About 4 million inputs.
func TestWeightsKernelMatchesGo(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2 kernels on this machine")
	}
	r := newRNG(31)
	shifts := []int{0, 1, 13, 30, 45, 46, 47, 51, 52, 53, 54, 60, 61, 62}
	invTs := []float64{1, 1.25, 1 / 0.7, 0.1, 3.3, 1e-3, 1e6, 1 / float64(math.SmallestNonzeroFloat32)}
	total := 0
	for _, shift := range shifts {
		scale := math.Ldexp(1, shift)
		xmin := -float64(shift+1) * math.Ln2
		if w := weight(float32(xmin), 0, 1, scale); w != 0 {
			t.Fatalf("shift %d: weight at xmin is %d, want 0", shift, w)
		}
		for _, invT := range invTs {
			m := float64(float32(r.float64()*40 - 20))
			n := 20000 + int(r.next()%64)
			if testing.Short() {
				n /= 4
			}
			l := vecLogits(&r, n, m, invT, xmin)
			// m is the true maximum (or above it: the kernels allow m >= max).
			if r.next()%2 == 0 {
				m = float64(slices.Max(l))
			}
			got, want := make([]uint64, n), make([]uint64, n)
			garbage(got)
			gs := weights(got, l, m, invT, scale, xmin)
			ws := weightsGo(want, l, m, invT, scale, xmin)
			for i := range got {
				if got[i] != want[i] {
					x := (float64(l[i]) - m) * invT
					t.Fatalf("shift %d invT %v: w[%d] (l %v, x %v) = %d, Go %d", shift, invT, i, l[i], x, got[i], want[i])
				}
			}
			if gs != ws {
				t.Fatalf("shift %d invT %v: sum %d, Go %d", shift, invT, gs, ws)
			}
			// The fused histogram kernel: same weights, and the histogram.
			var wantHist [histBins]uint64
			for _, x := range want {
				wantHist[histKey(x)] += x
			}
			for _, kmin := range []int{0, 64, histKey(1 << 20), histKey(1 << 40)} {
				var hist [histBins]uint64
				garbage(got)
				if hs := weightsHist(got, l, m, invT, scale, xmin, &hist, kmin); hs != ws || !slices.Equal(got, want) {
					t.Fatalf("shift %d invT %v: weightsHist differs from weights", shift, invT)
				}
				if !slices.Equal(hist[kmin:], wantHist[kmin:]) {
					t.Fatalf("shift %d invT %v kmin %d: weightsHist histogram differs", shift, invT, kmin)
				}
			}
			total += n
		}
	}
	// Every length 0..40 for the tails.
	for n := range 41 {
		l := vecLogits(&r, n, 0, 1, -47*math.Ln2)
		got, want := make([]uint64, n), make([]uint64, n)
		if gs, ws := weights(got, l, 0, 1, 0x1p46, -47*math.Ln2), weightsGo(want, l, 0, 1, 0x1p46, -47*math.Ln2); gs != ws || !slices.Equal(got, want) {
			t.Fatalf("length %d: weights differ", n)
		}
		var hist, wantHist [histBins]uint64
		hist[5] = 99 // cleared by weightsHist
		clear(got)
		if hs := weightsHist(got, l, 0, 1, 0x1p46, -47*math.Ln2, &hist, 0); !slices.Equal(got, want) || hs != weightsGo(want, l, 0, 1, 0x1p46, -47*math.Ln2) {
			t.Fatalf("length %d: weightsHist differs", n)
		}
		for _, x := range want {
			wantHist[histKey(x)] += x
		}
		if hist != wantHist {
			t.Fatalf("length %d: histogram differs", n)
		}
	}
	t.Logf("%d inputs", total)
}

// A dense sweep of x over the whole range where weights can be nonzero, for
// the 128k vocabulary's shift: every float32 logit step in [m − 32, m].
func TestWeightsKernelSweep(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2 kernels on this machine")
	}
	const shift = 46
	xmin := -float64(shift+1) * math.Ln2
	var l []float32
	step := 1
	if testing.Short() {
		step = 7
	}
	// l in [-32, 0] with m = 0: every float32 with exponent >= -8, every
	// 16·step-th significand (tiny ones come through vecLogits above).
	for e := -8; e <= 4; e++ {
		for k := 0; k < 1<<23; k += step * 16 {
			v := -float32(math.Ldexp(1+float64(k)*0x1p-23, e))
			if v >= -33 {
				l = append(l, v)
			}
		}
	}
	got, want := make([]uint64, len(l)), make([]uint64, len(l))
	for _, invT := range []float64{1, 1 / 0.8} {
		garbage(got)
		gs := weights(got, l, 0, invT, 0x1p46, xmin)
		ws := weightsGo(want, l, 0, invT, 0x1p46, xmin)
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("invT %v: w[%d] (l %v) = %d, Go %d", invT, i, l[i], got[i], want[i])
			}
		}
		if gs != ws {
			t.Fatalf("sum %d, Go %d", gs, ws)
		}
	}
	t.Logf("%d inputs × 2 temperatures", len(l))
}

// expSum must give the same bits with and without assembly.
func TestExpSumKernelMatchesGo(t *testing.T) {
	r := newRNG(32)
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 100, 1003, 32000, 128259} {
		m := float64(float32(r.float64()*10 - 5))
		l := vecLogits(&r, n, m, 1, -40)
		if n > 0 {
			m = float64(slices.Max(l))
		}
		saved := useAVX2
		useAVX2 = false
		want := expSum(l, m)
		useAVX2 = saved
		if got := expSum(l, m); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("n %d: expSum %v (asm) != %v (Go)", n, got, want)
		}
		// The fused pass gives the same sum and the same weights.
		for _, asm := range []bool{false, true} {
			useAVX2 = asm && hasAVX2
			w, ww := make([]uint64, n), make([]uint64, n)
			ws := weightsGo(ww, l, m, 1, 0x1p50, -51*math.Ln2)
			gs, z := weightsExpSum(w, l, m, 0x1p50, -51*math.Ln2)
			if gs != ws || !slices.Equal(w, ww) || math.Float64bits(z) != math.Float64bits(want) {
				t.Fatalf("n %d asm %v: weightsExpSum (%d, %v), want (%d, %v)", n, asm, gs, z, ws, want)
			}
		}
		useAVX2 = saved
		// And it is the log-softmax normaliser to float64 accuracy.
		ref := 0.0
		for _, v := range l {
			if x := float64(v) - m; x >= expSumCut {
				ref += math.Exp(x)
			}
		}
		if math.Abs(want-ref) > 1e-13*ref {
			t.Fatalf("n %d: expSum %v, math.Exp sum %v", n, want, ref)
		}
	}
}

func TestMaxValidAndSearches(t *testing.T) {
	nan32, inf32 := float32(math.NaN()), float32(math.Inf(1))
	negZero := float32(math.Copysign(0, -1))
	r := newRNG(33)
	for _, asm := range []bool{true, false} {
		withKernels(t, asm, func(t *testing.T) {
			for n := 0; n <= 40; n++ {
				l := make([]float32, n)
				for i := range l {
					l[i] = float32(int64(r.next()%9) - 6)
				}
				m, ok := maxValid(l)
				want := negInf32
				for _, v := range l {
					want = max(want, v)
				}
				if !ok || m != want {
					t.Fatalf("n %d: maxValid = %v, %v; want %v", n, m, ok, want)
				}
				if n > 0 {
					if i := indexEqual(l, m); i != refArgmax(l) {
						t.Fatalf("n %d: indexEqual(max) = %d, want %d", n, i, refArgmax(l))
					}
				}
				for from := 0; from <= n; from++ {
					for _, v := range []float32{-7, -3, 0, 2, 3} {
						want := n
						for i := from; i < n; i++ {
							if l[i] > v {
								want = i
								break
							}
						}
						if got := indexAbove(l, from, v); got != want {
							t.Fatalf("n %d: indexAbove(from %d, %v) = %d, want %d", n, from, v, got, want)
						}
					}
				}
				for i := range n {
					for _, bad := range []float32{nan32, inf32} {
						c := slices.Clone(l)
						c[i] = bad
						if _, ok := maxValid(c); ok {
							t.Fatalf("n %d: %v at %d not rejected", n, bad, i)
						}
					}
				}
			}
			// All -Inf; zeros of both signs (+0 reported, first zero found).
			l := []float32{negInf32, negInf32, negInf32, negInf32, negInf32, negInf32, negInf32, negInf32, negInf32}
			if m, ok := maxValid(l); !ok || m != negInf32 {
				t.Fatalf("all -Inf: %v %v", m, ok)
			}
			for i := range l {
				l[i] = -1
			}
			l[3], l[6] = negZero, 0
			if m, ok := maxValid(l); !ok || math.Float32bits(m) != 0 {
				t.Fatalf("±0: max %v (bits %#x)", m, math.Float32bits(m))
			}
			if i := indexEqual(l, 0); i != 3 {
				t.Fatalf("±0: indexEqual = %d, want 3", i)
			}
			if i := indexEqual(l, 5); i != len(l) {
				t.Fatalf("absent: indexEqual = %d", i)
			}
		})
	}
}

func TestIndexBetween(t *testing.T) {
	r := newRNG(37)
	nan32 := float32(math.NaN())
	for _, asm := range []bool{true, false} {
		withKernels(t, asm, func(t *testing.T) {
			for n := 0; n <= 40; n++ {
				l := make([]float32, n)
				for i := range l {
					l[i] = float32(int64(r.next()%9) - 4)
				}
				if n > 3 {
					l[3] = float32(math.Inf(-1))
				}
				for from := 0; from <= n; from++ {
					for _, ab := range [][2]float32{{-1, 1}, {2, 2}, {-10, -3}, {3, 10}, {5, 9}, {1, -1}, {nan32, 3}} {
						want := n
						for i := from; i < n; i++ {
							if l[i] >= ab[0] && l[i] <= ab[1] {
								want = i
								break
							}
						}
						if got := indexBetween(l, from, ab[0], ab[1]); got != want {
							t.Fatalf("n %d from %d [%v, %v]: %d, want %d", n, from, ab[0], ab[1], got, want)
						}
					}
				}
			}
		})
	}
}

// logitRange must bracket the logit of every token in a histogram bin.
func TestLogitRangeBrackets(t *testing.T) {
	r := newRNG(38)
	for _, V := range []int{50, 32000, 128256} {
		for _, temp := range []float32{1e-20, 0.05, 0.7, 1, 2.5} {
			p := Defaults()
			p.Temperature, p.TopP = temp, 0.9
			s := mustNew(t, p, V)
			l := testLogits(&r, 4000, 30)
			m := slices.Max(l)
			w := make([]uint64, len(l))
			weightsGo(w, l, float64(m), s.invT, s.scale, s.xmin)
			for i, x := range w {
				if x == 0 {
					continue
				}
				lo, hi := histRange(histKey(x))
				if a, b := s.logitRange(m, lo, hi); !(l[i] >= a && l[i] <= b) {
					t.Fatalf("V %d T %v: logit %v (weight %d, bin [%d, %d)) outside [%v, %v]", V, temp, l[i], x, lo, hi, a, b)
				}
			}
		}
	}
}

func TestDrawAtLeast(t *testing.T) {
	r := newRNG(34)
	for _, asm := range []bool{true, false} {
		withKernels(t, asm, func(t *testing.T) {
			for n := 0; n <= 70; n++ {
				w := make([]uint64, n)
				for i := range w {
					w[i] = r.next() >> (2 + r.next()%62) // < 2^62, many sizes
					if r.next()%4 == 0 {
						w[i] = 0
					}
				}
				for _, thr := range []uint64{0, 1, 2, 1 << 20, 1 << 40, 1 << 61} {
					var total uint64
					for _, x := range w {
						if x >= thr {
							total += x
						}
					}
					if got := sumAtLeast(w, thr); got != total {
						t.Fatalf("n %d thr %d: sumAtLeast %d, want %d", n, thr, got, total)
					}
					for _, tt := range []uint64{0, total / 3, total / 2, total - 1, total, r.next() % (total + 1)} {
						want, acc := n, uint64(0)
						for i, x := range w {
							if x >= thr {
								if acc += x; acc > tt {
									want = i
									break
								}
							}
						}
						if got := drawAtLeast(w, thr, tt); got != want {
							t.Fatalf("n %d thr %d t %d: drawAtLeast %d, want %d", n, thr, tt, got, want)
						}
					}
				}
			}
		})
	}
}

// The golden draws and the reference comparison hold with the Go kernels too
// (on amd64 the plain tests above ran the assembly).
func TestGoKernels(t *testing.T) {
	if !hasAVX2 {
		t.Skip("the plain tests already run the Go kernels here")
	}
	withKernels(t, false, func(t *testing.T) {
		TestGolden(t)
		TestMatchesReference(t)
		TestWeightsMatchExpDet(t)
	})
}

func benchKernel(b *testing.B, f func()) {
	cpu0 := cpuSeconds()
	for b.Loop() {
		f()
	}
	b.ReportMetric((cpuSeconds()-cpu0)*1e9/float64(b.N), "cpu-ns/op")
}

// BenchmarkKernels128k times each vocabulary-wide kernel alone, assembly and
// Go, over 128256 N(0,1) logits.
func BenchmarkKernels128k(b *testing.B) {
	l := benchLogits(1)
	m := float64(slices.Max(l))
	w := make([]uint64, len(l))
	for _, asm := range []bool{true, false} {
		name := "go"
		if asm {
			name = "asm"
			if !hasAVX2 {
				continue
			}
		}
		run := func(kernel string, f func()) {
			b.Run(kernel+"/"+name, func(b *testing.B) {
				saved := useAVX2
				useAVX2 = asm
				defer func() { useAVX2 = saved }()
				benchKernel(b, f)
			})
		}
		run("weights", func() { weights(w, l, m, 1, 0x1p46, -47*math.Ln2) })
		run("expSum", func() { expSum(l, m) })
		run("maxValid", func() { maxValid(l) })
		run("indexAbove", func() { indexAbove(l, 0, 100) })
	}
}

// Log-probabilities do not depend on the sampling path: the fused pass (T = 1)
// gives the same bits as the separate log-softmax pass (other temperatures).
func TestFusedLogprobsMatch(t *testing.T) {
	const V = 3001
	r := newRNG(36)
	l := testLogits(&r, V, 8)
	for _, asm := range []bool{true, false} {
		withKernels(t, asm, func(t *testing.T) {
			mk := func(temp float32) *Sampler {
				p := Defaults()
				p.Temperature, p.Logprobs, p.Seed = temp, ptr(4), ptr(uint64(3))
				return mustNew(t, p, V)
			}
			fused, plain := mk(1), mk(0.5)
			for range 5 {
				a := mustSample(t, fused, l, nil, 0)
				b := mustSample(t, plain, l, nil, 0)
				if !slices.Equal(a.TopLogprobs, b.TopLogprobs) {
					t.Fatalf("top logprobs differ: %v vs %v", a.TopLogprobs, b.TopLogprobs)
				}
			}
		})
	}
}
