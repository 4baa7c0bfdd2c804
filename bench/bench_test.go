package bench

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"nanoserve/llamacpp"
	"nanoserve/model"
	"nanoserve/tensor"
)

func fileSHA(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func mustShape(t *testing.T, name string) Shape {
	t.Helper()
	s, err := LookupShape(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustMix(t *testing.T, name string) Mix {
	t.Helper()
	m, err := ParseMix(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSyntheticDeterministic: the file is a function of (shape, type,
// seed) only — not of the number of workers — and the seed matters.
func TestSyntheticDeterministic(t *testing.T) {
	dir := t.TempDir()
	s := mustShape(t, "tiny")
	for _, typ := range []string{"f16", "q8_0", "q4_k_m"} {
		mix := mustMix(t, typ)
		a, b, c := filepath.Join(dir, typ+"a.gguf"), filepath.Join(dir, typ+"b.gguf"), filepath.Join(dir, typ+"c.gguf")
		if err := WriteSynthetic(a, s, mix, 7, 1); err != nil {
			t.Fatal(err)
		}
		if err := WriteSynthetic(b, s, mix, 7, 3); err != nil {
			t.Fatal(err)
		}
		if err := WriteSynthetic(c, s, mix, 8, 2); err != nil {
			t.Fatal(err)
		}
		ha, hb, hc := fileSHA(t, a), fileSHA(t, b), fileSHA(t, c)
		if ha != hb {
			t.Errorf("%s: seed 7 with 1 and 3 workers: sha256 %s != %s", typ, ha, hb)
		}
		if ha == hc {
			t.Errorf("%s: seeds 7 and 8 give the same file", typ)
		}
	}
}

// TestSyntheticGolden pins the generator: if this hash changes, files
// cached under the same name would silently differ — bump
// generatorVersion and update the hash.
func TestSyntheticGolden(t *testing.T) {
	p := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := WriteSynthetic(p, mustShape(t, "tiny"), mustMix(t, "f32"), 1, 2); err != nil {
		t.Fatal(err)
	}
	const want = "386c8fd6c7f9706002c58966c37aed1db187d89e7a2b3c968a0083a32c05567f"
	if got := fileSHA(t, p); got != want {
		t.Errorf("tiny f32 seed 1: sha256 %s, want %s (generator changed: bump generatorVersion)", got, want)
	}
}

// TestSyntheticCache: SyntheticFile writes once, then reuses the file.
func TestSyntheticCache(t *testing.T) {
	dir := t.TempDir()
	s, mix := mustShape(t, "tiny"), mustMix(t, "q8_0")
	p1, created, err := SyntheticFile(dir, s, mix, 3, 0)
	if err != nil || !created {
		t.Fatalf("first call: created=%v err=%v", created, err)
	}
	if filepath.Base(p1) != "tiny-q8_0-3.gguf" {
		t.Errorf("name %s, want tiny-q8_0-3.gguf", filepath.Base(p1))
	}
	p2, created, err := SyntheticFile(dir, s, mix, 3, 0)
	if err != nil || created || p2 != p1 {
		t.Fatalf("second call: %s created=%v err=%v, want %s reused", p2, created, err, p1)
	}
}

// TestNormalWeights: the Irwin–Hall generator gives mean ≈ 0, sd ≈ 0.02.
func TestNormalWeights(t *testing.T) {
	r := newRNG(42)
	v := make([]float32, 1<<18)
	r.fillNormal(v, weightStd)
	var s, s2 float64
	for _, x := range v {
		s += float64(x)
		s2 += float64(x) * float64(x)
	}
	mean := s / float64(len(v))
	sd := math.Sqrt(s2/float64(len(v)) - mean*mean)
	if math.Abs(mean) > 1e-4 || math.Abs(sd-weightStd) > 2e-4 {
		t.Errorf("mean %g sd %g, want 0 and %g", mean, sd, weightStd)
	}
}

// TestRunTiny writes tiny synthetic models, loads them with model.Load and
// runs a quick benchmark; the JSON has every field, with positive numbers.
func TestRunTiny(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		shape, typ string
		kv         tensor.DType
	}{{"tiny", "q8_0", tensor.F16}, {"tiny-gpt2", "f16", tensor.F32}, {"tiny-moe", "q4_k_m", tensor.F16}} {
		s, mix := mustShape(t, c.shape), mustMix(t, c.typ)
		p, _, err := SyntheticFile(dir, s, mix, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		m, err := model.Load(p, model.Options{Threads: 2})
		if err != nil {
			t.Fatalf("%s: %v", c.shape, err)
		}
		info := Describe(m, p)
		info.Synthetic, info.Type = s.Name, mix.Name
		opts := Options{Prompts: []int{16, 40}, Gens: []int{2 * pairEvery}, Reps: 2, Batch: 32, Depths: []int{0, 24, 300},
			GenLens: []int{4, 8}, SweepGen: 4, SweepReps: 2, BandwidthBytes: 4 << 20, smallProbe: true, KVType: c.kv,
			PeakDur: time.Millisecond}
		res, err := Run(m, info, opts)
		perTok := m.KVBytesPerToken(c.kv)
		m.Close()
		if err != nil {
			t.Fatalf("%s: %v", c.shape, err)
		}
		// The KV bytes count the cache type's (depth 24, 4 tokens decoded).
		if d := res.DepthSweep[1]; res.Model.KVType != strings.ToLower(c.kv.String()) || d.KVBytes != perTok*int64(24+4/2) {
			t.Errorf("%s: KV cache %q, %d KV bytes at depth 24; want %s, %d", c.shape, res.Model.KVType, d.KVBytes, c.kv, perTok*26)
		}
		js, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(js, &doc); err != nil {
			t.Fatal(err)
		}
		positive := func(path string) {
			t.Helper()
			var v any = doc
			for _, k := range strings.Split(path, ".") {
				switch x := v.(type) {
				case map[string]any:
					v = x[k]
				case []any:
					var i int
					for _, ch := range k {
						i = i*10 + int(ch-'0')
					}
					if i >= len(x) {
						t.Errorf("%s %s: index %d of %d", c.shape, path, i, len(x))
						return
					}
					v = x[i]
				}
			}
			if f, ok := v.(float64); !ok || !(f > 0) {
				t.Errorf("%s: %s = %v, want a positive number", c.shape, path, v)
			}
		}
		for _, f := range []string{
			"model.params", "model.weight_bytes", "model.decode_bytes_per_token", "model.file_bytes",
			"bandwidth.gbps_1_thread", "bandwidth.gbps_n_threads", "tg_limit_tok_s", "peak_rss_bytes", "seconds",
			"tests.0.tok_s.mean", "tests.0.latency_ms.mean", "tests.1.tok_s.mean", "tests.2.tok_s.mean",
			"tests.2.latency_ms.mean", "tests.2.weight_gbps", "tests.2.bandwidth_frac",
			"tests.2.paired_read_gbps", "tests.2.paired_read_frac",
			"depth_sweep.0.tok_s.mean", "depth_sweep.1.tok_s.mean", "depth_sweep.1.kv_bytes_per_token",
			"gen_sweep.0.cum_tok_s.mean", "gen_sweep.1.window_tok_s.mean",
			"tests.0.float_ops", "tests.1.gops",
		} {
			positive(f)
		}
		// The prefill's share of the compute peak, next to decode's of
		// the bandwidth: quantized weights count as int8 ops.
		if _, _, kernel := peakKernels(); strings.HasPrefix(kernel, "no SIMD") {
			if p, _ := doc["peak"].(map[string]any); p == nil || p["kernel"] != kernel || p["measured"] != false {
				t.Errorf("%s: peak %v, want the kernel's note %q", c.shape, doc["peak"], kernel)
			}
		} else {
			for _, f := range []string{"peak.fma_gflops_1_thread", "peak.fma_gflops_n_threads", "peak.int8_gops_1_thread",
				"peak.int8_gops_n_threads", "tests.1.peak_frac"} {
				positive(f)
			}
		}
		if c.typ != "f16" {
			positive("tests.1.int8_ops")
		} else if res.Tests[1].Int8Ops != 0 {
			t.Errorf("%s %s: %v int8 ops", c.shape, c.typ, res.Tests[1].Int8Ops)
		}
		if res.Tests[0].Name != "pp16" || res.Tests[2].Name != fmt.Sprintf("tg%d", 2*pairEvery) || len(res.Tests[2].TokS.Samples) != 2 {
			t.Errorf("%s: tests %+v", c.shape, res.Tests)
		}
		// GPT-2's learned positions end at 256: depth 300 cannot run.
		if got := res.DepthSweep[2].Skipped != ""; got != (s.Arch == "gpt2") {
			t.Errorf("%s: depth 300 skipped=%v", c.shape, got)
		}
		if res.Model.DecodeBytes >= res.Model.WeightBytes+int64(s.Vocab*s.Dim*2) || res.Model.DecodeBytes <= 0 {
			t.Errorf("%s: decode bytes %d vs weight bytes %d", c.shape, res.Model.DecodeBytes, res.Model.WeightBytes)
		}
		var sb strings.Builder
		if err := WriteMarkdown(&sb, res); err != nil {
			t.Fatal(err)
		}
		md := sb.String()
		if res.Peak.Measured && (!strings.Contains(md, fmt.Sprintf("%.0f%% |\n", 100*res.Tests[1].PeakFrac)) ||
			!strings.Contains(md, fmt.Sprintf("float32 FMA %.1f GFLOP/s", res.Peak.FMA1)) || !strings.Contains(md, "pp40 ")) {
			t.Errorf("%s: markdown lacks the peak or the share of it:\n%s", c.shape, md)
		}
		if !strings.Contains(sb.String(), "| pp40 |") || !strings.Contains(sb.String(), "tg4@d24") {
			t.Errorf("%s: markdown lacks rows:\n%s", c.shape, sb.String())
		}
	}
}

func TestLookupErrors(t *testing.T) {
	if _, err := LookupShape("nope"); err == nil {
		t.Error("unknown shape accepted")
	}
	if _, err := ParseMix("q9_9"); err == nil {
		t.Error("unknown type accepted")
	}
	// The formats of issue 31: MXFP4 on every matrix (a bench-only mix),
	// IQ4_XS and IQ3_S as llama-quantize mixes them.
	for name, want := range map[string][2]tensor.DType{"MXFP4": {tensor.MXFP4, tensor.Q6_K}, "iq4_xs": {tensor.IQ4_XS, tensor.Q6_K}, "iq3_s": {tensor.IQ3_S, tensor.Q6_K}} {
		m := mustMix(t, name)
		if q, o := m.TensorType("attn_q", 0, 2, 256, false), m.TensorType("output", -1, 2, 256, true); q != want[0] || o != want[1] {
			t.Errorf("%s: attn_q %s, output %s; want %s, %s", name, q, o, want[0], want[1])
		}
	}
	for _, n := range []string{"tinyllama", "SmolLM2-135M", "gpt2", "110m"} {
		if _, err := LookupShape(n); err != nil {
			t.Error(err)
		}
	}
}

func TestReadSum(t *testing.T) {
	b := make([]byte, 4096)
	for i := 0; i < len(b); i += 8 {
		b[i] = byte(i / 8)
	}
	if got, want := readSum(b), readSumGo(b); got != want {
		t.Errorf("readSum %d, readSumGo %d", got, want)
	}
}

// BenchmarkWriteTensor: generating and quantizing synthetic weights (bytes
// of float32 input per second), per type.
func BenchmarkWriteTensor(b *testing.B) {
	for _, typ := range []tensor.DType{tensor.F16, tensor.Q8_0, tensor.Q4_K, tensor.Q6_K} {
		b.Run(typ.String(), func(b *testing.B) {
			st := synthTensor{name: "w", typ: typ, rows: 256, cols: 2048, fill: "normal"}
			b.SetBytes(int64(st.rows * st.cols * 4))
			for b.Loop() {
				if err := writeTensor(io.Discard, st, 1, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestSyntheticTokenizer: the synthetic vocabulary, written through
// llamacpp.VocabKVs, reads back as the tokenizer it describes: BOS is <s>,
// text falls back to the byte tokens (with SentencePiece's "▁" prefix: no
// merges reach the "▁tN" pieces), and token N decodes to " tN".
func TestSyntheticTokenizer(t *testing.T) {
	p := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := WriteSynthetic(p, mustShape(t, "tiny"), mustMix(t, "f32"), 1, 2); err != nil {
		t.Fatal(err)
	}
	tok, err := llamacpp.LoadTokenizer(p)
	if err != nil {
		t.Fatal(err)
	}
	if bos, ok := tok.BOS(); !ok || bos != 1 {
		t.Errorf("BOS = %d, %v; want 1", bos, ok)
	}
	var want []int
	for _, b := range []byte("▁ab") {
		want = append(want, 3+int(b))
	}
	if got := tok.Encode("ab", false); !slices.Equal(got, want) {
		t.Errorf(`Encode("ab") = %v, want %v`, got, want)
	}
	if got := tok.Decode([]int{1, 300, 3 + 'x'}); got != " t300x" && got != "t300x" {
		t.Errorf("Decode = %q, want %q", got, " t300x")
	}
}

// TestMixNames: every name --type lists (MixNames) is a mix ParseMix
// accepts, the formats of issue 31 among them, and the flag's help shows
// the list.
func TestMixNames(t *testing.T) {
	names := MixNames()
	for _, n := range names {
		if _, err := ParseMix(n); err != nil {
			t.Errorf("--type lists %q: %v", n, err)
		}
	}
	for _, n := range []string{"iq4_xs", "iq4_nl", "iq3_s", "mxfp4", "q2_k", "q3_k_m"} {
		if !slices.Contains(names, n) {
			t.Errorf("--type does not list %s", n)
		}
	}
	var f Flags
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	f.RegisterFlags(fs)
	if u := fs.Lookup("type").Usage; !strings.Contains(u, strings.Join(names, ", ")) {
		t.Errorf("--type help %q does not list the mixes", u)
	}
}
