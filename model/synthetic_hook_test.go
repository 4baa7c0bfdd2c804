package model

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"testing"
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
	if sum != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if h := sha256.Sum256(b); hex.EncodeToString(h[:]) != sum {
			t.Fatalf("synthetic %s %s seed %d: sha256 %x, the golden's file %s: the generator changed; rewrite the golden (bench/llamacpp_heldout.py --write)", shape, typ, seed, h, sum)
		}
	}
	return p
}
