package tensor

// Kernel benchmarks. SetBytes is the weight matrix's encoded size, so the
// MB/s column is the weight bandwidth the kernel sustains; compare it with
// BenchmarkReadBandwidth (the machine's streaming read rate).
//
// Napkin maths (TinyLlama-1.1B, dim 2048, hidden 5632, vocab 32000):
//   - decode reads every weight once per token: 1.1 G params · 2 B (F16) =
//     2.2 GB/token; at B GB/s of read bandwidth the ceiling is B/2.2 tok/s
//     (e.g. 20 GB/s → 9 tok/s F16, ~17 tok/s Q8_0 at 1.06 B/weight, ~30
//     tok/s Q4_K_M at ~0.6 B/weight). FLOPs are 2 per weight: 1 FLOP/byte
//     for F16, so the FMA units (~100 GFLOP/s/core) idle at a few %.
//   - prefill of n tokens does 2·n FLOPs per weight read; at n = 512 the
//     2 GFLOP/token · 512 = 1 TFLOP against 2.2 GB: compute bound, the
//     roofline is the FMA peak (2 FMA pipes · 8 lanes · 2 FLOPs = 32
//     FLOP/cycle/core, ~100 GFLOP/s/core at ~3 GHz).
//
// Matrices are replicated until the set exceeds 256 MB and the benchmark
// cycles through the copies, so no weight is served from the 32 MB L3 (a
// real model's 1-2 GB never is).
//
//	go test ./tensor -run XXX -bench 'ReadBandwidth|MatVec|GEMM' -benchtime 2s

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

var benchMatCache = map[string][]*Mat{}

// benchMats returns copies of a (rows, cols) matrix of type t totalling at
// least 256 MB.
func benchMats(b *testing.B, t DType, rows, cols int) []*Mat {
	key := fmt.Sprintf("%s/%d/%d", t, rows, cols)
	if m, ok := benchMatCache[key]; ok {
		return m
	}
	clear(benchMatCache) // keep at most one set alive
	rng := rand.New(rand.NewPCG(5, 6))
	const proto = 64 // distinct rows, tiled
	rb, err := t.RowBytes(cols)
	if err != nil {
		b.Fatal(err)
	}
	enc := make([]byte, proto*rb)
	for r := range proto {
		v := make([]float32, cols)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * 0.05)
		}
		if err := QuantizeRow(enc[r*rb:(r+1)*rb], t, v); err != nil {
			b.Fatal(err)
		}
	}
	size := rows * rb
	copies := max(1, (256<<20+size-1)/size)
	ms := make([]*Mat, copies)
	for c := range ms {
		data := make([]byte, size)
		for off := 0; off < size; off += len(enc) {
			copy(data[off:], enc)
		}
		ms[c] = &Mat{Type: t, Rows: rows, Cols: cols, Data: data}
	}
	benchMatCache[key] = ms
	return ms
}

// BenchmarkReadBandwidth streams a 1 GiB float32 slice (split between g
// goroutines): the roofline for decode.
func BenchmarkReadBandwidth(b *testing.B) {
	v := make([]float32, 1<<28)
	for i := range v {
		v[i] = 1
	}
	for _, g := range []int{1, 2} {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			b.SetBytes(int64(len(v)) * 4)
			var wg sync.WaitGroup
			sums := make([]float32, g)
			for b.Loop() {
				part := len(v) / g
				for i := range g {
					wg.Add(1)
					go func() {
						defer wg.Done()
						sums[i] = sumF32(v[i*part : (i+1)*part])
					}()
				}
				wg.Wait()
			}
			if sums[0] == 0 {
				b.Fatal("sum is 0")
			}
		})
	}
}

var mvShapes = [][2]int{{5632, 2048}, {2048, 5632}, {32000, 2048}}

// BenchmarkMatVec is decode: one token through a (rows, cols) matrix.
func BenchmarkMatVec(b *testing.B) {
	for _, t := range []DType{F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K} {
		for _, sh := range mvShapes {
			for _, th := range []int{1, 2} {
				b.Run(fmt.Sprintf("%s/%dx%d/threads=%d", t, sh[0], sh[1], th), func(b *testing.B) {
					ms := benchMats(b, t, sh[0], sh[1])
					p := NewPool(th)
					defer p.Close()
					x := make([]float32, sh[1])
					for i := range x {
						x[i] = 1
					}
					dst := make([]float32, sh[0])
					b.SetBytes(int64(len(ms[0].Data)))
					i := 0
					c0 := cpuSeconds()
					for b.Loop() {
						p.MatMul(dst, ms[i%len(ms)], x, 1)
						i++
					}
					if c := cpuSeconds() - c0; c > 0 {
						b.ReportMetric(float64(len(ms[0].Data))*float64(b.N)/c/1e6, "cpuMB/s")
					}
				})
			}
		}
	}
}

// BenchmarkMatVecCached is decode through a (96, 2048) matrix that stays
// in L2, on one thread: the kernels' arithmetic rate per core (including
// quantizeActs and the pool), which must exceed the per-core share of DRAM
// bandwidth for BenchmarkMatVec to be memory bound. cpuMB/s divides by the
// process's CPU time, so it holds up on a shared machine.
func BenchmarkMatVecCached(b *testing.B) {
	for _, t := range []DType{F16, Q8_0, Q4_0, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K} {
		b.Run(t.String(), func(b *testing.B) {
			const rows, cols = 96, 2048
			rng := rand.New(rand.NewPCG(1, 2))
			rb, _ := t.RowBytes(cols)
			data := make([]byte, rows*rb)
			v := make([]float32, cols)
			for r := range rows {
				for i := range v {
					v[i] = float32(rng.NormFloat64())
				}
				if err := QuantizeRow(data[r*rb:(r+1)*rb], t, v); err != nil {
					b.Fatal(err)
				}
			}
			w := &Mat{Type: t, Rows: rows, Cols: cols, Data: data}
			x := make([]float32, cols)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			dst := make([]float32, rows)
			p := NewPool(1)
			defer p.Close()
			b.SetBytes(int64(len(data)))
			c0 := cpuSeconds()
			for b.Loop() {
				p.MatMul(dst, w, x, 1)
			}
			if c := cpuSeconds() - c0; c > 0 {
				b.ReportMetric(float64(len(data))*float64(b.N)/c/1e6, "cpuMB/s")
			}
		})
	}
}

// BenchmarkRowDotStream is the quantized decode kernels alone (dotQRows,
// 128 rows of 2048 columns per call, no pool, no quantizeActs), one
// goroutine, over a set of 128 rows that stays in L2 ("l2") or a 256 MB
// set walked contiguously ("dram", a decode worker's stream); "read" is a
// plain SIMD read (sumF32) of the same DRAM set, the ceiling of one core's
// stream. cpuMB/s is per CPU-second of the process, so on a shared machine
// compare kernel/read within one run: the kernels' share of the read rate
// and their in-cache headroom over it say whether a decode kernel is
// bound by its arithmetic or by the stream.
//
//	go test ./tensor -run XXX -bench RowDotStream -benchtime 0.3s -count 5
func BenchmarkRowDotStream(b *testing.B) {
	const cols, chunk = 2048, 128
	for _, c := range []struct {
		t    DType
		set  string
		read bool
	}{
		{Q8_0, "l2", false}, {Q4_K, "l2", false}, {Q6_K, "l2", false},
		{IQ4_NL, "l2", false}, {MXFP4, "l2", false},
		{Q8_0, "dram", false}, {Q4_K, "dram", false}, {Q6_K, "dram", false},
		{IQ4_NL, "dram", false}, {MXFP4, "dram", false},
		{Q4_K, "dram", true},
	} {
		name := fmt.Sprintf("%s/%s", c.t, c.set)
		if c.read {
			name = "read/" + c.set
		}
		b.Run(name, func(b *testing.B) {
			rb, _ := c.t.RowBytes(cols)
			rng := rand.New(rand.NewPCG(1, 2))
			proto := make([]byte, chunk*rb)
			v := make([]float32, cols)
			for r := range chunk {
				for i := range v {
					v[i] = float32(rng.NormFloat64())
				}
				if err := QuantizeRow(proto[r*rb:(r+1)*rb], c.t, v); err != nil {
					b.Fatal(err)
				}
			}
			rows := chunk
			if c.set == "dram" {
				rows = (256 << 20) / rb / chunk * chunk
			}
			data := make([]byte, rows*rb)
			for o := 0; o < len(data); o += len(proto) {
				copy(data[o:], proto)
			}
			for i := range v {
				v[i] = float32(rng.NormFloat64())
			}
			var a quantizedActs
			if err := quantizeActs(&a, c.t, v); err != nil {
				b.Fatal(err)
			}
			dst := make([]float32, chunk)
			b.SetBytes(int64(chunk * rb))
			r := 0
			c0 := cpuSeconds()
			for b.Loop() {
				if c.read {
					dst[0] += sumF32(BytesF32(data[r*rb : (r+chunk)*rb]))
				} else {
					dotQRows(c.t, dst, data[r*rb:], rb, cols, &a, 0)
				}
				if r += chunk; r+chunk > rows {
					r = 0
				}
			}
			if cpu := cpuSeconds() - c0; cpu > 0 {
				b.ReportMetric(float64(chunk*rb)*float64(b.N)/cpu/1e6, "cpuMB/s")
			}
		})
	}
}

// BenchmarkGEMM is prefill: n tokens through a (rows, cols) matrix
// (benchMatMul's GFLOP/s and cpuGFLOP/s).
func BenchmarkGEMM(b *testing.B) {
	for _, t := range []DType{F32, F16, Q8_0, Q4_K, Q6_K, Q5_0} {
		for _, sh := range [][2]int{{2048, 2048}, {5632, 2048}, {2048, 5632}} {
			for _, n := range []int{4, 8, 128, 512} {
				for _, th := range []int{1, 2} {
					b.Run(fmt.Sprintf("%s/%dx%d/n=%d/threads=%d", t, sh[0], sh[1], n, th), func(b *testing.B) {
						benchMatMul(b, benchMats(b, t, sh[0], sh[1]), th, n)
					})
				}
			}
		}
	}
}

// benchMatMul times MatMul of n random tokens through the copies ms on a
// pool of th workers, cycling the copies so the weights come from DRAM.
// It reports GFLOP/s (2·rows·cols·n per op) and, since the machine is
// shared, GFLOP per CPU-second of the process (cpuGFLOP/s; with th = 2
// that includes the workers' spin-waits).
func benchMatMul(b *testing.B, ms []*Mat, th, n int) {
	p := NewPool(th)
	defer p.Close()
	rows, cols := ms[0].Rows, ms[0].Cols
	rng := rand.New(rand.NewPCG(1, 1))
	x := make([]float32, n*cols)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	dst := make([]float32, n*rows)
	b.SetBytes(int64(len(ms[0].Data)))
	i := 0
	c0 := cpuSeconds()
	for b.Loop() {
		p.MatMul(dst, ms[i%len(ms)], x, n)
		i++
	}
	flop := 2 * float64(rows) * float64(cols) * float64(n) * float64(b.N)
	b.ReportMetric(flop/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	if c := cpuSeconds() - c0; c > 0 {
		b.ReportMetric(flop/c/1e9, "cpuGFLOP/s")
	}
}

// BenchmarkFloatKernels sets the zmm (AVX-512F) and ymm float kernels side
// by side in one run: F16 prefill (n = 512, GFLOP/s) and decode (n = 1,
// MB/s of weights) at TinyLlama's shape. Compare with bench's FMA probes
// (ymm and zmm) and BenchmarkReadBandwidth.
//
//	go test ./tensor -run XXX -bench FloatKernels -count 3
func BenchmarkFloatKernels(b *testing.B) {
	saved := hasAVX512
	defer func() { hasAVX512 = saved }()
	for _, t := range []DType{F16, BF16, F32} {
		for _, th := range []int{1, 2} {
			for _, path := range []string{"avx512", "avx2"} {
				if path == "avx512" && !saved {
					continue
				}
				b.Run(fmt.Sprintf("%s/GEMM/2048x2048/n=512/threads=%d/%s", t, th, path), func(b *testing.B) {
					hasAVX512 = path == "avx512"
					benchMatMul(b, benchMats(b, t, 2048, 2048), th, 512)
				})
			}
			for _, path := range []string{"avx512", "avx2"} {
				if path == "avx512" && !saved {
					continue
				}
				b.Run(fmt.Sprintf("%s/MatVec/5632x2048/threads=%d/%s", t, th, path), func(b *testing.B) {
					hasAVX512 = path == "avx512"
					benchMatMul(b, benchMats(b, t, 5632, 2048), th, 1)
				})
			}
		}
	}
}

// BenchmarkGEMMSmall is the F16 tile GEMM at the 110M model's shapes
// (768 wide: q/k/v/o, gate/up, down) for a 128- and 512-token prefill on
// two threads: products of a few hundred microseconds, where the
// end-of-job barrier waits on the last block a worker claimed
// (claimBlock shrinks the blocks toward the end for that).
func BenchmarkGEMMSmall(b *testing.B) {
	for _, sh := range [][2]int{{768, 768}, {2048, 768}, {768, 2048}} {
		for _, n := range []int{128, 512} {
			b.Run(fmt.Sprintf("F16/%dx%d/n=%d/threads=2", sh[0], sh[1], n), func(b *testing.B) {
				benchMatMul(b, benchMats(b, F16, sh[0], sh[1]), 2, n)
			})
		}
	}
}

// BenchmarkDecodeRowLength is one-token products of F16 matrices from
// DRAM whose rows are shorter (512 columns, a MoE expert's down projection;
// 768 and 1024, the 110M and Qwen3.5-0.8B widths), as long as (2048, one
// 4 KiB page) and longer than a page: MB/s of weights against
// BenchmarkReadBandwidth. Short rows had streamed at ~2/3 of the long
// ones' rate while dot4Rows read four adjacent rows side by side; it reads
// four streams now.
func BenchmarkDecodeRowLength(b *testing.B) {
	for _, sh := range [][2]int{{2048, 512}, {768, 768}, {2048, 768}, {2048, 1024}, {768, 2048}, {2048, 2048}, {5632, 2048}, {256, 6144}} {
		for _, th := range []int{1, 2} {
			b.Run(fmt.Sprintf("F16/%dx%d/threads=%d", sh[0], sh[1], th), func(b *testing.B) {
				benchMatMul(b, benchMats(b, F16, sh[0], sh[1]), th, 1)
			})
		}
	}
}

// BenchmarkFewTokensFloat is F16 products of 2-7 tokens (a decode step of a few
// sequences, a speculative check, a MoE expert's share of a prefill) on
// one thread from DRAM: the block's first tile pass reads the rows, in
// streams for 2 and 3 tokens (tileStreams), by the four-token tile for 4
// and 7.
func BenchmarkFewTokensFloat(b *testing.B) {
	for _, sh := range [][2]int{{2048, 2048}, {2048, 1024}, {512, 2048}} {
		for _, n := range []int{2, 3, 4, 7} {
			b.Run(fmt.Sprintf("F16/%dx%d/n=%d", sh[0], sh[1], n), func(b *testing.B) {
				benchMatMul(b, benchMats(b, F16, sh[0], sh[1]), 1, n)
			})
		}
	}
}
