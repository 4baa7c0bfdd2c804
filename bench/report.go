package bench

import (
	"fmt"
	"io"
	"strings"

	"nanoserve/tensor"
)

// WriteMarkdown prints r as llama-bench-style markdown tables: the pp/tg
// tests, then the depth and generated-length sweeps, then the bandwidth
// probe, the decode ceiling it implies, peak RSS and the load average.
func WriteMarkdown(w io.Writer, r *Result) error {
	var b strings.Builder
	m := &r.Model
	name := m.Synthetic
	if name == "" {
		name = m.Arch
	}
	if m.Synthetic != "" {
		name = "synthetic " + name
	}
	size := fmt.Sprintf("%.2f GiB", float64(m.WeightBytes)/(1<<30))
	if m.WeightBytes < 1<<30 {
		size = fmt.Sprintf("%.1f MiB", float64(m.WeightBytes)/(1<<20))
	}
	params := fmt.Sprintf("%.2f B", float64(m.Params)/1e9)
	if m.Params < 1e9 {
		params = fmt.Sprintf("%.1f M", float64(m.Params)/1e6)
	}
	fmt.Fprintf(&b, "| model | type | size | params | threads | test | t/s | latency | weight GB/s | of BW | of read | GOP/s | of peak |\n")
	fmt.Fprintf(&b, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	row := func(t *Test) {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %s | ", name, m.Type, size, params, r.System.Threads, t.Name)
		if t.Skipped != "" {
			fmt.Fprintf(&b, "skipped: %s | | | | | | |\n", t.Skipped)
			return
		}
		fmt.Fprintf(&b, "%.2f ± %.2f | ", t.TokS.Mean, t.TokS.SD)
		if t.Kind == "pp" {
			fmt.Fprintf(&b, "%.1f ms | | | | %.1f | ", t.LatencyMs.Mean, t.GOps)
			if t.PeakFrac > 0 {
				fmt.Fprintf(&b, "%.0f%% |\n", 100*t.PeakFrac)
			} else {
				fmt.Fprintf(&b, " |\n")
			}
			return
		}
		fmt.Fprintf(&b, "%.2f ms/tok | %.1f | %s | %s | | |\n", t.LatencyMs.Mean, t.WeightGBps, pct(t.BandwidthFrac), pct(t.ReadFrac))
	}
	for i := range r.Tests {
		row(&r.Tests[i])
	}
	if len(r.DepthSweep) > 0 {
		fmt.Fprintf(&b, "\ndecode rate against context depth:\n\n")
		fmt.Fprintf(&b, "| depth | test | t/s | ms/tok | weight GB/s | of BW | KV MB/tok |\n| ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
		for i := range r.DepthSweep {
			t := &r.DepthSweep[i]
			if t.Skipped != "" {
				fmt.Fprintf(&b, "| %d | %s | skipped: %s | | | | |\n", t.Depth, t.Name, t.Skipped)
				continue
			}
			fmt.Fprintf(&b, "| %d | %s | %.2f ± %.2f | %.2f | %.1f | %.0f%% | %.1f |\n", t.Depth, t.Name, t.TokS.Mean, t.TokS.SD,
				t.LatencyMs.Mean, t.WeightGBps, 100*t.BandwidthFrac, float64(t.KVBytes)/1e6)
		}
	}
	if len(r.GenSweep) > 0 {
		fmt.Fprintf(&b, "\ndecode rate against generated length (from an empty cache):\n\n")
		fmt.Fprintf(&b, "| generated | cumulative t/s | t/s since previous |\n| ---: | ---: | ---: |\n")
		for _, p := range r.GenSweep {
			fmt.Fprintf(&b, "| %d | %.2f ± %.2f | %.2f ± %.2f |\n", p.NGen, p.CumTokS.Mean, p.CumTokS.SD, p.WindowTokS.Mean, p.WindowTokS.SD)
		}
	}
	fmt.Fprintln(&b)
	for i := range r.Tests {
		if t := &r.Tests[i]; t.ReadGBps > 0 && r.Bandwidth != nil {
			fmt.Fprintf(&b, "%s: the model's weights read at %.1f GB/s on %d threads between its decode steps (%d tokens' worth after every %d); of read = decode's weight GB/s over that, of BW = over the probe below\n",
				t.Name, t.ReadGBps, r.Bandwidth.Threads, pairTokens, pairEvery)
		}
	}
	if bw := r.Bandwidth; bw != nil {
		fmt.Fprintf(&b, "memory read bandwidth: %.1f GB/s (1 thread), %.1f GB/s (%d threads), best of %d passes over %d MiB\n",
			bw.GBps1, bw.GBpsN, bw.Threads, bw.Passes, bw.BufferBytes>>20)
		fmt.Fprintf(&b, "decode reads %.1f MB of weights per token: ceiling %.1f tok/s at %d threads\n",
			float64(m.DecodeBytes)/1e6, r.TgLimit, bw.Threads)
	} else {
		fmt.Fprintf(&b, "decode reads %.1f MB of weights per token\n", float64(m.DecodeBytes)/1e6)
	}
	if p := r.Peak; p != nil {
		if p.Measured {
			fmt.Fprintf(&b, "compute peak (%s, best of %d passes): float32 FMA %.1f GFLOP/s (1 thread), %.1f GFLOP/s (%d threads); int8 multiply-add %.1f GOP/s (1 thread), %.1f GOP/s (%d threads)\n",
				p.Kernel, p.Passes, p.FMA1, p.FMAN, p.Threads, p.Int8_1, p.Int8N, p.Threads)
			if p.FMA512N > 0 {
				fmt.Fprintf(&b, "float32 FMA by width: ymm %.1f / %.1f GFLOP/s, zmm %.1f / %.1f GFLOP/s (1 / %d threads); float kernels: %s\n",
					p.FMA256_1, p.FMA256N, p.FMA512_1, p.FMA512N, p.Threads, tensor.FloatKernels())
			}
		} else {
			fmt.Fprintf(&b, "compute peak: %s\n", p.Kernel)
		}
	}
	var pps []string
	for i := range r.Tests {
		if t := &r.Tests[i]; t.Kind == "pp" && t.Skipped == "" && t.NPrompt > 0 {
			pps = append(pps, fmt.Sprintf("%s %.1f MFLOP float + %.1f MOP int8", t.Name, t.FloatOps/float64(t.NPrompt)/1e6, t.Int8Ops/float64(t.NPrompt)/1e6))
		}
	}
	if len(pps) > 0 {
		fmt.Fprintf(&b, "prefill arithmetic per token (matrices 2 ops per weight, int8 for quantized weights; attention 4·ctx·q_dim per layer, float): %s", strings.Join(pps, ", "))
		if r.Peak != nil && r.Peak.Measured {
			fmt.Fprintf(&b, "; of peak = time at the %d-thread peaks / measured time", r.Peak.Threads)
		}
		fmt.Fprintln(&b)
	}
	if m.KVType != "" {
		fmt.Fprintf(&b, "KV cache: %s\n", m.KVType)
	}
	if m.Weights.Placement != "" {
		fmt.Fprintf(&b, "weights: %s\n", m.Weights)
	}
	fmt.Fprintf(&b, "peak RSS: %.1f MiB", float64(r.PeakRSS)/(1<<20))
	if r.RSSNote != "" {
		fmt.Fprintf(&b, " (%s)", r.RSSNote)
	}
	fmt.Fprintf(&b, "; model load %.1f ms; ", m.LoadMs)
	if m.GenerateMs > 0 {
		fmt.Fprintf(&b, "synthetic file written in %.1f s; ", m.GenerateMs/1e3)
	}
	fmt.Fprintf(&b, "%s, %s/%s, %d CPUs; load average %.2f → %.2f\n", r.System.CPU, r.System.OS, r.System.Arch, r.System.NumCPU,
		r.System.LoadStart[0], r.System.LoadEnd[0])
	fmt.Fprintf(&b, "model: %s\n", m.Path)
	_, err := io.WriteString(w, b.String())
	return err
}

// pct formats a share as a whole percentage, or nothing when it is 0.
func pct(f float64) string {
	if f <= 0 {
		return ""
	}
	return fmt.Sprintf("%.0f%%", 100*f)
}
