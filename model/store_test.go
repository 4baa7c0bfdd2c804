package model

import (
	"math"
	"slices"
	"testing"

	"nanoserve/internal/testshared"
	"nanoserve/tensor"
)

// TestParallelKVStore: a prompt long enough for storeKV to run on the
// pool (256 tokens of one sequence) leaves the same cache bytes and the
// same logits, bit for bit, with 1, 2 and 3 workers, for an F16 and an
// F32 cache (the fixture's 16-wide heads allow no Q8_0 cache).
func TestParallelKVStore(t *testing.T) {
	path := testshared.Path(t, "models/llama2c/tiny_gqa.bin")
	const n = 256
	toks := make([]int, n)
	for i := range toks {
		toks[i] = 1 + (i*37)%500
	}
	for _, kv := range []tensor.DType{tensor.F16, tensor.F32} {
		var ref []float32
		var refK, refV [][]byte
		var refKF [][]float32
		for _, th := range []int{1, 2, 3} {
			m := mustLoad(t, path, Options{Threads: th})
			if n*m.CacheKVDim() < parStoreMin {
				t.Fatalf("%d tokens of kv_dim %d do not reach parStoreMin", n, m.CacheKVDim())
			}
			c, err := m.NewCacheType(n, kv)
			if err != nil {
				t.Fatal(err)
			}
			lg := runSeqIn(t, m, c, toks, 0)
			if th == 1 {
				ref, refK, refV, refKF = lg, c.KE, c.VE, c.K
				continue
			}
			for i := range lg {
				if math.Float32bits(lg[i]) != math.Float32bits(ref[i]) {
					t.Fatalf("%s, %d workers: logit %d is %v, %v with one", kv, th, i, lg[i], ref[i])
				}
			}
			for l := range refK {
				if !slices.Equal(c.KE[l], refK[l]) || !slices.Equal(c.VE[l], refV[l]) {
					t.Fatalf("%s, %d workers: cache layer %d differs from one worker's", kv, th, l)
				}
			}
			for l := range refKF {
				if !slices.Equal(c.K[l], refKF[l]) {
					t.Fatalf("%s, %d workers: F32 cache layer %d differs from one worker's", kv, th, l)
				}
			}
		}
	}
}
