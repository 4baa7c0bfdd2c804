package bench

import (
	"encoding/binary"
	"math"
	"strings"
	"sync"
	"time"

	"nanoserve/model"
	"nanoserve/tensor"
)

// Chains of the compute-peak probes (peak_amd64.s).
const (
	fmaChains  = 12
	int8Chains = 8
	// Arithmetic per loop iteration: 8 float32 lanes × (multiply + add)
	// per chain; 32 int8 products × (multiply + add) per chain.
	fmaOpsPerIter  = fmaChains * 8 * 2
	int8OpsPerIter = int8Chains * 32 * 2
)

// Peak is the result of ProbePeak: the best arithmetic rate seen over
// several passes of the probe loops, per worker count, in 1e9 ops/s. An
// FMA counts 2 FLOPs; an int8 product 2 ops (multiply, add), as the
// quantized dot kernels do them: VPMADDUBSW, VPMADDWD, VPADDD. Kernel
// names the probe; with no probe for this CPU the rates are 0 and Kernel
// says so.
type Peak struct {
	Kernel  string `json:"kernel"`
	Passes  int    `json:"passes,omitempty"`
	Threads int    `json:"threads"` // workers of the _n_threads rates
	// float32 FMA, GFLOP/s, at the vector width tensor's float kernels
	// run (tensor.FloatKernels: zmm on AVX-512F hosts, else ymm).
	FMA1 float64 `json:"fma_gflops_1_thread,omitempty"`
	FMAN float64 `json:"fma_gflops_n_threads,omitempty"`
	// Both widths where the CPU has AVX-512F (the zmm probe ran).
	FMA256_1 float64 `json:"fma256_gflops_1_thread,omitempty"`
	FMA256N  float64 `json:"fma256_gflops_n_threads,omitempty"`
	FMA512_1 float64 `json:"fma512_gflops_1_thread,omitempty"`
	FMA512N  float64 `json:"fma512_gflops_n_threads,omitempty"`
	Int8_1   float64 `json:"int8_gops_1_thread,omitempty"`  // int8 multiply-add, GOP/s
	Int8N    float64 `json:"int8_gops_n_threads,omitempty"` //
	Seconds  float64 `json:"probe_seconds,omitempty"`       // time the probe took
	Measured bool    `json:"measured"`                      // false: no probe ran (see Kernel)
}

// fmaRef is the probe's FMA loop in Go: n times, every chain
// acc[c] += a·b lane by lane, rounded once (a fused multiply-add).
func fmaRef(acc *[fmaChains][8]float32, ab *[2][8]float32, n int) {
	for range n {
		for c := range acc {
			for l := range acc[c] {
				acc[c][l] = float32(math.FMA(float64(ab[0][l]), float64(ab[1][l]), float64(acc[c][l])))
			}
		}
	}
}

// int8Ref is the probe's integer loop in Go: n times, every chain
// acc[c][j] += Σ_{k<2} w[2j+k]·sat16(u[4j+2k]·s[4j+2k] + u[4j+2k+1]·s[4j+2k+1]),
// u unsigned bytes, s signed bytes, w int16 (ones in the probe), sums
// wrapping in int32 — VPMADDUBSW, VPMADDWD, VPADDD.
func int8Ref(acc *[int8Chains][8]int32, us *[3][32]byte, n int) {
	var d [8]int32
	for j := range d {
		for k := range 2 {
			p := 2*j + k // int16 lane of VPMADDUBSW's result
			v := int32(us[0][2*p])*int32(int8(us[1][2*p])) + int32(us[0][2*p+1])*int32(int8(us[1][2*p+1]))
			v = max(math.MinInt16, min(math.MaxInt16, v))
			w := int32(int16(binary.LittleEndian.Uint16(us[2][2*p:])))
			d[j] += v * w
		}
	}
	for range n {
		for c := range acc {
			for j := range acc[c] {
				acc[c][j] += d[j]
			}
		}
	}
}

// peakSink keeps the probes' results alive.
var peakSink float64

// ProbePeak measures the float32 FMA peak and the int8 multiply-add peak
// with 1 and threads workers, each pass running the probe loop for about
// dur (≤ 0: 20 ms) on every worker; a pass's rate is the work of all
// workers / wall time, the best of passes is kept.
func ProbePeak(threads, passes int, dur time.Duration) Peak {
	fma, i8, kernel := peakKernels()
	threads, passes = max(threads, 1), max(passes, 1)
	if dur <= 0 {
		dur = 20 * time.Millisecond
	}
	p := Peak{Kernel: kernel, Threads: threads}
	if fma == nil {
		return p
	}
	t0 := time.Now()
	p.Measured, p.Passes = true, passes
	runFMA := func(n int) float64 {
		var acc [fmaChains][8]float32
		ab := [2][8]float32{{1, 1, 1, 1, 1, 1, 1, 1}, {1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3}}
		fma(&acc, &ab, n)
		return float64(acc[fmaChains-1][7])
	}
	runI8 := func(n int) float64 {
		var acc [int8Chains][8]int32
		var us [3][32]byte
		for i := range 32 {
			us[0][i], us[1][i] = byte(i*7), byte(i*5-64)
		}
		for i := 0; i < 32; i += 2 {
			us[2][i] = 1
		}
		i8(&acc, &us, n)
		return float64(acc[int8Chains-1][7])
	}
	p.FMA1, p.FMAN = peakRates(runFMA, fmaOpsPerIter, threads, passes, dur)
	if fmaZ := peakKernelZ(); fmaZ != nil {
		// 512-bit FMAs: the ceiling of tensor's zmm float kernels.
		runZ := func(n int) float64 {
			var acc [fmaChains][16]float32
			var ab [2][16]float32
			for l := range 16 {
				ab[0][l], ab[1][l] = 1, 1e-3
			}
			fmaZ(&acc, &ab, n)
			return float64(acc[fmaChains-1][15])
		}
		p.FMA256_1, p.FMA256N = p.FMA1, p.FMAN
		p.FMA512_1, p.FMA512N = peakRates(runZ, 2*fmaOpsPerIter, threads, passes, dur)
		p.Kernel = "avx512: VFMADD231PS zmm; " + p.Kernel
		if tensor.FloatKernels() == "avx512" {
			p.FMA1, p.FMAN = p.FMA512_1, p.FMA512N
		} else {
			p.Kernel += " (float kernels on ymm: the share is of the ymm peak)"
		}
	}
	p.Int8_1, p.Int8N = peakRates(runI8, int8OpsPerIter, threads, passes, dur)
	p.Seconds = time.Since(t0).Seconds()
	return p
}

// peakRates calibrates the iteration count so one worker runs for about
// dur, then returns the best rate (1e9 ops/s) of passes with 1 worker and
// with threads workers.
func peakRates(run func(n int) float64, opsPerIter float64, threads, passes int, dur time.Duration) (one, all float64) {
	n := 1 << 12
	for {
		t0 := time.Now()
		peakSink += run(n)
		dt := time.Since(t0)
		if dt >= dur/8 || n >= 1<<40 {
			n = max(1, int(float64(n)*float64(dur)/float64(max(dt, 1))))
			break
		}
		n *= 2
	}
	rate := func(workers int) float64 {
		best := 0.0
		var wg sync.WaitGroup
		for range passes {
			sums := make([]float64, workers)
			t0 := time.Now()
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sums[w] = run(n)
				}()
			}
			wg.Wait()
			for _, s := range sums {
				peakSink += s
			}
			best = max(best, float64(workers)*float64(n)*opsPerIter/time.Since(t0).Seconds()/1e9)
		}
		return best
	}
	one = rate(1)
	all = one
	if threads > 1 {
		all = rate(threads)
	}
	return one, all
}

// prefillOps counts the arithmetic of one prefill of n tokens in Forward
// calls of at most batch tokens, split by the peak it runs against:
//   - every matrix product at 2 ops per weight per token (an MoE expert
//     tensor at ExpertsUsed/Experts of its weights); the token embedding
//     is a lookup, the LM head (output.weight, or the tied embedding)
//     runs once per Forward call, for the call's last token only;
//     int8 when MatMul multiplies the weight type with integer dots
//     against 8-bit activations (tensor.IntegerDot), float otherwise;
//   - attention, float: per layer and position p, q·k over its context
//     and the weighted sum of v, 2·ctx·q_dim each, ctx = p+1 (or the
//     layer's sliding window); norms, RoPE, softmax and activations are
//     not counted.
func prefillOps(m *model.Model, n, batch int) (float, int8 float64) {
	tied := true
	for _, t := range m.Tensors {
		if t.Name == "output.weight" {
			tied = false
		}
	}
	calls := float64((n + batch - 1) / max(batch, 1))
	for _, t := range m.Tensors {
		if len(t.Shape) < 2 {
			continue
		}
		w := 1.0
		for _, d := range t.Shape {
			w *= float64(d)
		}
		var ops float64
		switch {
		case t.Name == "position_embd.weight" || t.Name == "token_embd.weight" && !tied:
			continue
		case t.Name == "output.weight" || t.Name == "token_embd.weight":
			ops = 2 * w * calls
		case strings.Contains(t.Name, "_exps.") && m.Experts > 0:
			ops = 2 * w * float64(m.ExpertsUsed) / float64(m.Experts) * float64(n)
		default:
			ops = 2 * w * float64(n)
		}
		if tensor.IntegerDot(t.Type) {
			int8 += ops
		} else {
			float += ops
		}
	}
	for l := range m.Layers {
		if l < len(m.Recurrent) && m.Recurrent[l] {
			// A delta net's state update per token and value head: the
			// d×d state read for S·k, then decayed, updated by e·kᵀ and
			// read for S·q (three multiply-adds per entry). LFM2's short
			// convolutions add nothing worth counting.
			float += 6 * float64(n) * float64(m.SSMVHeads) * float64(m.SSMHeadDim*m.SSMHeadDim)
			continue
		}
		win := m.Window(l)
		for p := range n {
			ctx := p + 1
			if win > 0 {
				ctx = min(ctx, win)
			}
			float += 4 * float64(ctx) * float64(m.QDim())
		}
	}
	return float, int8
}

// prefillShares fills each measured pp test's arithmetic rate and its
// share of the probed Threads-worker peaks: the time its work takes at
// peak (float ops at the FMA peak, int8 ops at the int8 peak) over the
// measured time per prompt. Without a measured peak the share stays 0.
func (r *Result) prefillShares() {
	for i := range r.Tests {
		t := &r.Tests[i]
		if t.Kind != "pp" || t.Skipped != "" || !(t.TokS.Mean > 0) || t.NPrompt == 0 {
			continue
		}
		secs := float64(t.NPrompt) / t.TokS.Mean // per prompt, at the mean rate
		t.GOps = (t.FloatOps + t.Int8Ops) / secs / 1e9
		if p := r.Peak; p != nil && p.Measured && p.FMAN > 0 && p.Int8N > 0 {
			atPeak := t.FloatOps/(p.FMAN*1e9) + t.Int8Ops/(p.Int8N*1e9)
			t.PeakFrac = atPeak / secs
		}
	}
}
