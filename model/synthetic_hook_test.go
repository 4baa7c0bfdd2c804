package model

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"nanoserve/internal/hfwrite"
)

// syntheticFile writes bench's synthetic GGUF file of a shape, weight
// type and seed into dir and returns its path. The bench package
// (which imports this one) provides it from the external test package
// (synthetic_bench_test.go), so goldens of architectures the shared
// fixtures lack can name a file the test writes instead of shipping it.
var syntheticFile func(dir, shape, typ string, seed uint64) (string, error)

// mustSynthetic writes the synthetic file and checks that it is the file
// the golden was made from (sha256; "" skips the check).
func mustSynthetic(t *testing.T, shape, typ string, seed uint64, sum string) string {
	t.Helper()
	if syntheticFile == nil {
		t.Fatal("no synthetic-file writer (synthetic_bench_test.go)")
	}
	p, err := syntheticFile(t.TempDir(), shape, typ, seed)
	if err != nil {
		t.Fatal(err)
	}
	checkSHA256(t, p, sum, "the synthetic generator changed")
	return p
}

// checkSHA256 requires the file at path to have the sha256 sum (hex; ""
// skips the check): a golden compared against another file than its own
// would fail, or pass, for the wrong reason. why names the likely cause.
func checkSHA256(t *testing.T, path, sum, why string) {
	t.Helper()
	if sum == "" {
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if h := sha256.Sum256(b); hex.EncodeToString(h[:]) != sum {
		t.Fatalf("%s: sha256 %x, the golden's file %s (%s): rewrite the golden (bench/llamacpp_heldout.py --write)", path, h, sum, why)
	}
}

// writeHFEdited writes the GGUF file src as a Hugging Face checkpoint
// (write: an hfwrite writer) in a temporary directory named name, then
// sets fields in its config.json and drops the tensors drop matches
// (either nil: none), and returns the directory.
func writeHFEdited(t *testing.T, write func(src, dir string) error, src, name string, fields map[string]any, drop func(string) bool) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := write(src, dir); err != nil {
		t.Fatal(err)
	}
	if fields != nil {
		if err := hfwrite.SetConfig(dir, fields); err != nil {
			t.Fatal(err)
		}
	}
	if drop != nil {
		if err := hfwrite.DropTensors(dir, drop); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// checkSameLogits requires the Hugging Face checkpoint's model h to give
// the GGUF model g's logits bit for bit over 300 tokens, and returns the
// tokens and g's logits.
func checkSameLogits(t *testing.T, g, h *Model) ([]int, []float32) {
	t.Helper()
	toks := make([]int, 300)
	for i := range toks {
		toks[i] = (i*131 + 7) % g.Vocab
	}
	lg := runSeq(t, g, toks, 0)
	if lh := runSeq(t, h, toks, 0); !slices.Equal(lg, lh) {
		d, at := maxAbsDiff(lg, lh)
		t.Errorf("Hugging Face logits differ from the GGUF's by %g at %d", d, at)
	}
	return toks, lg
}

// syntheticHybrids are bench's synthetic hybrid shapes whose llama.cpp
// goldens testdata/heldout holds (TestHeldOutLcpp): LFM2-MoE (σ-gated
// experts after a dense layer) and Granite 4.0-H (Mamba-2 layers).
var syntheticHybrids = []string{"tiny-lfm2moe", "tiny-granitehybrid"}

// TestSyntheticHybridParity: on the synthetic hybrids, the cached forward
// (one token at a time and in chunks of 5) equals the float64 recompute,
// two sequences batched equal each alone, and a prompt's logits are bit
// for bit the same in chunks of 1, 3, 16 and all at once (the recurrent
// state carried across Forward calls) — TestHybridParity and
// TestHybridChunkInvariant for the architectures the shared fixtures lack.
func TestSyntheticHybridParity(t *testing.T) {
	for _, name := range syntheticHybrids {
		t.Run(name, func(t *testing.T) {
			m := mustLoad(t, mustSynthetic(t, name, "f16", 1, ""), Options{Threads: 2})
			if !m.IsHybrid() {
				t.Fatal("not loaded as a hybrid")
			}
			toks := make([]int, 90)
			for i := range toks {
				toks[i] = 3 + (i*37+11)%(m.Vocab-3)
			}
			checkCacheParity(t, m, toks, 5e-4)
			checkBatched(t, m, toks, toks[7:40], 0)
			ref := runSeq(t, m, toks, 1)
			for _, chunk := range []int{0, 3, 16} {
				if got := runSeq(t, m, toks, chunk); !slices.Equal(got, ref) {
					d, at := maxAbsDiff(got, ref)
					t.Errorf("chunk %d: logits differ from one token at a time by %g at %d", chunk, d, at)
				}
			}
		})
	}
}
