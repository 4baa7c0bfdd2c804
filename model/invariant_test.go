package model

import (
	"flag"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"nanoserve/internal/testshared"
	"nanoserve/kvcache"
	"nanoserve/tensor"
)

// invariantFixtures are the GGUF files of ../shared/testdata/gguf the
// batch-invariance test runs: F16 and every quantized variant (Q8_0, the
// Q5_0/Q5_1/Q8_0 mixes of llama_gqa's K-quant files, Q4_K + Q5_K + Q6_K
// in llama_k's), and llamaq's llama-quantize types with their own kernels
// (Q2_K + Q3_K, Q4_1, IQ4_NL, IQ4_XS, IQ3_S + Q4_K; testdata/gguf-quants).
var invariantFixtures = []string{
	"llama_gqa/llama_gqa-F16.gguf",
	"llama_gqa/llama_gqa-Q8_0.gguf",
	"llama_gqa/llama_gqa-Q4_K_M.gguf",
	"llama_gqa/llama_gqa-Q4_K_S.gguf",
	"llama_k/llama_k-Q4_K_M.gguf",
	"llama_k/llama_k-Q4_K_S.gguf",
	"../gguf-quants/Q2_K/llamaq-Q2_K.gguf",
	"../gguf-quants/Q4_1/llamaq-Q4_1.gguf",
	"../gguf-quants/IQ4_NL/llamaq-IQ4_NL.gguf",
	"../gguf-quants/IQ4_XS/llamaq-IQ4_XS.gguf",
	"../gguf-quants/IQ3_M/llamaq-IQ3_M.gguf",
}

// TestBatchInvariant: a token's logits are bit-identical whatever else is
// in its step. Each of N sequences is first run alone (its whole prompt in
// one Forward, every position's logits kept); then all are run again
// through one cache by a random scheduler whose steps mix prompt chunks
// (1-24 tokens) with single-token decodes, 1 to 64 tokens per step, while
// sequences are preempted (released, then recomputed from position 0 in a
// fresh block table) and later sequences reuse an earlier one's committed
// prefix blocks (prefix-cache hits, their first Forward starting past 0).
// Every logit of every step is compared with the lone run's using ==.
// One random schedule per file (~15 s in all); -invariant.rounds=N runs N.
func TestBatchInvariant(t *testing.T) {
	rounds := *invariantRounds
	for _, rel := range invariantFixtures {
		t.Run(filepath.Base(rel), func(t *testing.T) {
			m := mustLoad(t, testshared.Path(t, "testdata/gguf/"+rel), Options{Threads: 2})
			for round := range rounds {
				checkInvariant(t, m, uint64(round))
			}
		})
	}
}

var invariantRounds = flag.Int("invariant.rounds", 1, "TestBatchInvariant: random schedules per fixture")

// invSeq is one sequence of the mixed schedule.
type invSeq struct {
	toks   []int
	prompt int // tokens fed in chunks; the rest one at a time
	s      *kvcache.Seq
	done   int // tokens whose logits were produced in this life
	ref    []float32
}

func checkInvariant(t *testing.T, m *Model, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 77))
	const nseq = 12
	shared := make([]int, 32) // a prefix two blocks long that half the sequences start with
	for i := range shared {
		shared[i] = 2 + rng.IntN(m.Vocab-2)
	}
	seqs := make([]*invSeq, nseq)
	total := 0
	for i := range seqs {
		n := 20 + rng.IntN(40)
		toks := make([]int, n)
		for j := range toks {
			toks[j] = 2 + rng.IntN(m.Vocab-2)
		}
		if i%2 == 1 {
			copy(toks, shared)
		}
		seqs[i] = &invSeq{toks: toks, prompt: 1 + rng.IntN(n), s: &kvcache.Seq{}}
		seqs[i].ref = runSeq(t, m, toks, 0)
		total += n
	}
	c, err := m.NewCache(4 * total)
	if err != nil {
		t.Fatal(err)
	}
	active := map[int]bool{}
	next := 0 // sequences start a few at a time, so later ones find committed prefixes
	steps, hits, preempted, mixed := 0, 0, 0, 0
	for len(active) > 0 || next < nseq {
		for next < nseq && (len(active) < 3 || rng.IntN(3) == 0) {
			q := seqs[next]
			if k := c.Match(q.s, q.toks, len(q.toks)-1); k > 0 {
				hits++
				q.done = k
			}
			active[next] = true
			next++
		}
		var b Batch
		var who []int // sequence of each output row
		chunks, decodes := 0, 0
		for i := range nseq {
			q := seqs[i]
			if !active[i] || len(b.Tokens) >= 64 || rng.IntN(4) == 0 {
				continue
			}
			n := 1
			if q.done < q.prompt {
				n = min(q.prompt-q.done, 1+rng.IntN(24))
				chunks++
			} else {
				decodes++
			}
			n = min(n, 64-len(b.Tokens))
			if err := c.Reserve(q.s, q.done+n-q.s.Len); err != nil {
				t.Fatal(err)
			}
			for p := q.done; p < q.done+n; p++ {
				b.Tokens, b.Pos, b.Seq, b.Output = append(b.Tokens, q.toks[p]), append(b.Pos, p), append(b.Seq, q.s), append(b.Output, true)
				who = append(who, i)
			}
		}
		if len(b.Tokens) == 0 {
			continue
		}
		if chunks > 0 && decodes > 0 {
			mixed++
		}
		lg, err := m.Forward(b, c)
		if err != nil {
			t.Fatal(err)
		}
		steps++
		for r, i := range who {
			q, p := seqs[i], b.Pos[r]
			got, want := lg[r*m.Vocab:(r+1)*m.Vocab], q.ref[p*m.Vocab:(p+1)*m.Vocab]
			for v := range got {
				if math.Float32bits(got[v]) != math.Float32bits(want[v]) {
					t.Fatalf("seed %d step %d (%d tokens, %d prompt chunks, %d decodes): sequence %d position %d logit %d = %v, alone %v",
						seed, steps, len(b.Tokens), chunks, decodes, i, p, v, got[v], want[v])
				}
			}
		}
		for i := range nseq {
			q := seqs[i]
			if !active[i] {
				continue
			}
			q.done = q.s.Len
			c.Commit(q.s, q.toks)
			switch {
			case q.done == len(q.toks):
				c.Release(q.s)
				delete(active, i)
			case rng.IntN(25) == 0: // preemption: recompute from scratch later
				c.Release(q.s)
				q.done = 0
				preempted++
			}
		}
	}
	if hits == 0 || preempted == 0 || mixed == 0 {
		t.Fatalf("seed %d: the schedule had %d prefix hits, %d preemptions, %d mixed steps; want all", seed, hits, preempted, mixed)
	}
	t.Logf("seed %d: %d steps (%d mixing prompt chunks and decodes), %d prefix hits, %d preemptions", seed, steps, mixed, hits, preempted)
}

// TestBatchInvariantArchs is TestBatchInvariant on the issue-31
// architectures (../shared/testdata/gguf-archs): SmolLM3's RoPE-less
// layers, gpt-oss's attention sinks, windowed layers and biased experts,
// Gemma 4's shared-KV layers (which read an owner's cache blocks), per-layer
// head sizes (rows narrower than the cache's) and per-layer inputs, under
// the mixed chunked-prefill / decode / preemption / prefix-hit schedule.
func TestBatchInvariantArchs(t *testing.T) {
	for _, name := range []string{"smollm3", "gpt-oss", "gemma4"} {
		t.Run(name, func(t *testing.T) {
			_, path := archPath(t, name, "F16")
			m := mustLoad(t, path, Options{Threads: 2})
			for round := range *invariantRounds {
				checkInvariant(t, m, uint64(round))
			}
		})
	}
}

// TestBatchInvariantQ4_0 is TestBatchInvariant on llamaq (gguf-quants)
// with every layer matrix and the output head requantized in memory to
// Q4_0, Q5_0 and Q5_1 (no such file is shipped; Q4_1's is a fixture): the packed kernels of
// one, four and a ragged number of tokens, through the fused QKV product
// and the shared-activation products, give every token the bits it gets
// alone.
func TestBatchInvariantQ4_0(t *testing.T) {
	for _, ty := range []tensor.DType{tensor.Q4_0, tensor.Q5_0, tensor.Q5_1} {
		t.Run(ty.String(), func(t *testing.T) {
			m := mustLoad(t, testshared.Path(t, "testdata/gguf-quants/F16/llamaq-F16.gguf"), Options{Threads: 2})
			requant := func(w *tensor.Mat) *tensor.Mat {
				if w == nil || w.Cols%32 != 0 {
					return w
				}
				rb, _ := ty.RowBytes(w.Cols)
				out := make([]byte, w.Rows*rb)
				row := make([]float32, w.Cols)
				for r := range w.Rows {
					tensor.DequantizeRow(row, w.Type, w.Row(r))
					if err := tensor.QuantizeRow(out[r*rb:(r+1)*rb], ty, row); err != nil {
						t.Fatal(err)
					}
				}
				return &tensor.Mat{Type: ty, Rows: w.Rows, Cols: w.Cols, Data: out}
			}
			for l := range m.w.layers {
				lw := &m.w.layers[l]
				lw.wq, lw.wk, lw.wv, lw.wqkv, lw.wo = requant(lw.wq), requant(lw.wk), requant(lw.wv), requant(lw.wqkv), requant(lw.wo)
				lw.wGate, lw.wUp, lw.wDown = requant(lw.wGate), requant(lw.wUp), requant(lw.wDown)
			}
			m.w.output = requant(m.w.output)
			if wm := m.WeightMemory(); m.w.output.Repacked() && wm.Repacked != wm.Matrices {
				t.Errorf("WeightMemory: %d of %d matrix bytes repacked, want all (every matrix is %s)", wm.Repacked, wm.Matrices, ty)
			}
			checkInvariant(t, m, 0)
		})
	}
}
