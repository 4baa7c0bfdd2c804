package model

import (
	"errors"
	"nanoserve/tensor"
	"slices"
	"strings"
	"testing"

	"nanoserve/internal/testshared"
	"nanoserve/kvcache"
)

// checkCacheParity runs tokens through the cache one at a time (decode) and
// in chunks of 5 (chunked prefill) and compares every position's logits with
// the full-recompute reference.
func checkCacheParity(t *testing.T, m *Model, tokens []int, tol float64) {
	t.Helper()
	checkCacheParityKV(t, m, tokens, tol, tensor.F32)
}

// checkCacheParityKV is checkCacheParity over a KV cache of type kv,
// against the reference that rounds K and V the same way (ForwardRefKV).
func checkCacheParityKV(t *testing.T, m *Model, tokens []int, tol float64, kv tensor.DType) {
	t.Helper()
	ref, err := m.ForwardRefKV(tokens, kv)
	if err != nil {
		t.Fatal(err)
	}
	for _, chunk := range []int{1, 5} {
		got := runSeqKV(t, m, tokens, chunk, kv)
		for p := range tokens {
			g, r := got[p*m.Vocab:(p+1)*m.Vocab], ref[p*m.Vocab:(p+1)*m.Vocab]
			if d, at := maxAbsDiff(g, r); d > tol {
				t.Errorf("%s cache, chunk %d pos %d: cached logits differ from reference by %g at id %d (%g vs %g)", kv, chunk, p, d, at, g[at], r[at])
				return
			}
		}
	}
}

func TestCacheParityLlama2c(t *testing.T) {
	toks := []int{1, 450, 7483, 310, 3444, 338, 263, 4996, 17354, 1701, 29916, 432, 17204, 975, 278, 17366, 11203, 29889}
	for _, name := range []string{"tiny_mha", "tiny_gqa"} {
		t.Run(name, func(t *testing.T) {
			m := mustLoad(t, testshared.Path(t, "models/llama2c/"+name+".bin"), Options{Threads: 2})
			checkCacheParity(t, m, toks, 1e-4)
		})
	}
}

// checkBatched runs two sequences of different lengths together in each
// Forward call (prefill of both, then joint decode steps, then one alone)
// and checks every output against running each sequence by itself.
func checkBatched(t *testing.T, m *Model, a, b []int, tol float64) {
	t.Helper()
	checkBatchedKV(t, m, a, b, tol, tensor.F32)
}

// checkBatchedKV is checkBatched with both runs over KV caches of type kv.
func checkBatchedKV(t *testing.T, m *Model, a, b []int, tol float64, kv tensor.DType) {
	t.Helper()
	refA, refB := runSeqKV(t, m, a, 1, kv), runSeqKV(t, m, b, 1, kv)
	c, err := m.NewCacheType(len(a)+len(b)+32, kv)
	if err != nil {
		t.Fatal(err)
	}
	sa, sb := &kvcache.Seq{}, &kvcache.Seq{}
	if err := c.Reserve(sb, len(b)); err != nil { // b first: interleaved block ids
		t.Fatal(err)
	}
	if err := c.Reserve(sa, len(a)); err != nil {
		t.Fatal(err)
	}
	check := func(name string, got []float32, ref []float32, pos int) {
		t.Helper()
		if d, at := maxAbsDiff(got, ref[pos*m.Vocab:(pos+1)*m.Vocab]); d > tol {
			t.Errorf("%s pos %d: batched logits differ by %g at id %d", name, pos, d, at)
		}
	}
	// Prefill a[:5] and b[:3] interleaved in one batch, outputs on the last of each.
	pa, pb := 5, 3
	var bt Batch
	for i := range max(pa, pb) {
		if i < pa {
			bt.Tokens, bt.Pos, bt.Seq, bt.Output = append(bt.Tokens, a[i]), append(bt.Pos, i), append(bt.Seq, sa), append(bt.Output, i == pa-1)
		}
		if i < pb {
			bt.Tokens, bt.Pos, bt.Seq, bt.Output = append(bt.Tokens, b[i]), append(bt.Pos, i), append(bt.Seq, sb), append(bt.Output, i == pb-1)
		}
	}
	lg, err := m.Forward(bt, c)
	if err != nil {
		t.Fatal(err)
	}
	// Output order is batch order: b's last (index 5) comes before a's last (index 8).
	check("b", lg[:m.Vocab], refB, pb-1)
	check("a", lg[m.Vocab:2*m.Vocab], refA, pa-1)
	// Joint decode while both have tokens, then a alone.
	for pa < len(a) {
		bt = Batch{Tokens: []int{a[pa]}, Pos: []int{pa}, Seq: []*kvcache.Seq{sa}, Output: []bool{true}}
		if pb < len(b) {
			bt.Tokens, bt.Pos, bt.Seq, bt.Output = append(bt.Tokens, b[pb]), append(bt.Pos, pb), append(bt.Seq, sb), append(bt.Output, true)
		}
		lg, err := m.Forward(bt, c)
		if err != nil {
			t.Fatal(err)
		}
		check("a", lg[:m.Vocab], refA, pa)
		if pb < len(b) {
			check("b", lg[m.Vocab:], refB, pb)
			pb++
		}
		pa++
	}
	if sa.Len != len(a) || sb.Len != len(b) {
		t.Errorf("Len a=%d b=%d, want %d %d", sa.Len, sb.Len, len(a), len(b))
	}
}

func TestBatchedVsSequential(t *testing.T) {
	m := mustLoad(t, testshared.Path(t, "models/llama2c/tiny_gqa.bin"), Options{Threads: 2})
	a := []int{1, 450, 7483, 310, 3444, 338, 263, 4996, 17354, 1701, 29916, 432, 17204, 975, 278, 17366, 11203, 29889, 13, 13}
	b := []int{1, 319, 350, 315, 360, 382, 383, 402, 29871}
	checkBatched(t, m, a, b, 1e-4)
}

// TestRewind regenerates from a shared prefix: after Truncate (or a batch
// starting below Len), the recomputed positions match a fresh run.
func TestRewind(t *testing.T) {
	m := mustLoad(t, testshared.Path(t, "models/llama2c/tiny_mha.bin"), Options{})
	toks := []int{1, 450, 7483, 310, 3444, 338, 263}
	alt := []int{1, 450, 7483, 310, 29871, 13, 13}
	ref := runSeq(t, m, alt, 0)
	c, _ := m.NewCache(16)
	s := &kvcache.Seq{}
	if err := c.Reserve(s, len(toks)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Forward(Batch{Tokens: toks, Pos: []int{0, 1, 2, 3, 4, 5, 6}, Seq: []*kvcache.Seq{s, s, s, s, s, s, s}}, c); err != nil {
		t.Fatal(err)
	}
	lg, err := m.Forward(Batch{Tokens: alt[4:], Pos: []int{4, 5, 6}, Seq: []*kvcache.Seq{s, s, s}, Output: []bool{true, true, true}}, c)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := maxAbsDiff(lg, ref[4*m.Vocab:]); d > 1e-4 {
		t.Errorf("rewound logits differ by %g", d)
	}
	if s.Len != 7 {
		t.Errorf("Len = %d", s.Len)
	}
}

func TestForwardBadBatch(t *testing.T) {
	m := mustLoad(t, testshared.Path(t, "models/llama2c/tiny_mha.bin"), Options{})
	c, _ := m.NewCache(64)
	s := &kvcache.Seq{}
	if err := c.Reserve(s, 20); err != nil { // 2 blocks of 16: capacity 32
		t.Fatal(err)
	}
	if _, err := m.Forward(Batch{Tokens: []int{1, 2, 3}, Pos: []int{0, 1, 2}, Seq: []*kvcache.Seq{s, s, s}}, c); err != nil {
		t.Fatal(err)
	}
	other, _ := kvcache.ForTokens(m.Layers+1, m.KVDim(), 16)
	seqs := func(n int) []*kvcache.Seq {
		v := make([]*kvcache.Seq, n)
		for i := range v {
			v[i] = s
		}
		return v
	}
	fresh := &kvcache.Seq{}
	cases := []struct {
		name string
		b    Batch
		c    *kvcache.Cache
		want string
	}{
		{"empty", Batch{}, c, "no tokens"},
		{"length mismatch", Batch{Tokens: []int{5}, Pos: []int{3, 4}, Seq: seqs(1)}, c, "positions"},
		{"output length", Batch{Tokens: []int{5}, Pos: []int{3}, Seq: seqs(1), Output: []bool{true, false}}, c, "output flags"},
		{"token too large", Batch{Tokens: []int{32000}, Pos: []int{3}, Seq: seqs(1)}, c, "token id 32000 out of range"},
		{"negative token", Batch{Tokens: []int{-1}, Pos: []int{3}, Seq: seqs(1)}, c, "token id -1"},
		{"nil seq", Batch{Tokens: []int{5}, Pos: []int{3}, Seq: []*kvcache.Seq{nil}}, c, "no sequence"},
		{"negative pos", Batch{Tokens: []int{5}, Pos: []int{-1}, Seq: seqs(1)}, c, "negative position"},
		{"gap", Batch{Tokens: []int{5}, Pos: []int{4}, Seq: seqs(1)}, c, "gap"},
		{"non-consecutive", Batch{Tokens: []int{5, 6}, Pos: []int{3, 5}, Seq: seqs(2)}, c, "follows position 3"},
		{"beyond capacity", Batch{Tokens: []int{5}, Pos: []int{0}, Seq: []*kvcache.Seq{fresh}}, c, "reserved capacity 0"},
		{"nil cache", Batch{Tokens: []int{5}, Pos: []int{3}, Seq: seqs(1)}, nil, "nil cache"},
		{"wrong cache", Batch{Tokens: []int{5}, Pos: []int{3}, Seq: seqs(1)}, other, "cache holds"},
	}
	for _, tc := range cases {
		_, err := m.Forward(tc.b, tc.c)
		if err == nil || !errors.Is(err, ErrBatch) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want ErrBatch containing %q", tc.name, err, tc.want)
		}
	}
	if s.Len != 3 {
		t.Errorf("failed batches changed Len to %d", s.Len)
	}
	// Positions up to the reserved capacity work; one past does not.
	toks := make([]int, 29)
	pos := make([]int, 29)
	for i := range toks {
		toks[i], pos[i] = 7, i+3
	}
	if _, err := m.Forward(Batch{Tokens: toks, Pos: pos, Seq: seqs(29)}, c); err != nil {
		t.Fatalf("fill to capacity: %v", err)
	}
	if _, err := m.Forward(Batch{Tokens: []int{7}, Pos: []int{32}, Seq: seqs(1)}, c); err == nil || !strings.Contains(err.Error(), "capacity") {
		t.Errorf("past capacity: %v", err)
	}
}

// TestDecodeAllocs pins that a steady-state decode step allocates nothing,
// on one thread and with parallel attention over a long context.
func TestDecodeAllocs(t *testing.T) {
	for _, tc := range []struct {
		model   string
		threads int
		from    int
	}{{"aidreams260K", 1, 1}, {"tiny_mha", 2, 200}} {
		m := mustLoad(t, testshared.Path(t, "models/llama2c/"+tc.model+".bin"), Options{Threads: tc.threads})
		c, _ := m.NewCache(256)
		s := &kvcache.Seq{}
		if err := c.Reserve(s, 256); err != nil {
			t.Fatal(err)
		}
		toks := make([]int, tc.from)
		pos := make([]int, tc.from)
		for i := range toks {
			toks[i], pos[i] = 1+i%100, i
		}
		if _, err := m.Forward(Batch{Tokens: toks, Pos: pos, Seq: slices.Repeat([]*kvcache.Seq{s}, tc.from)}, c); err != nil {
			t.Fatal(err)
		}
		b := Batch{Tokens: []int{1}, Pos: []int{0}, Seq: []*kvcache.Seq{s}, Output: []bool{true}}
		p := tc.from
		step := func() {
			b.Pos[0] = p
			if _, err := m.Forward(b, c); err != nil {
				t.Fatal(err)
			}
			p++
		}
		step()
		if allocs := testing.AllocsPerRun(20, step); allocs > 0 {
			t.Errorf("%s, %d threads: decode step allocates %.1f times", tc.model, tc.threads, allocs)
		}
	}

	// A batched decode step of three sequences (the engine's steady state)
	// on a two-worker pool, past 180 positions each so that attention runs
	// as a job on the pool (work ≥ parAttnMin).
	m := mustLoad(t, testshared.Path(t, "models/llama2c/tiny_mha.bin"), Options{Threads: 2})
	c, _ := m.NewCache(3 * 256)
	const from = 180
	var pre Batch
	b := Batch{Tokens: []int{1, 2, 3}, Pos: []int{0, 0, 0}, Output: []bool{true, true, true}}
	for range 3 {
		s := &kvcache.Seq{}
		if err := c.Reserve(s, 256); err != nil {
			t.Fatal(err)
		}
		b.Seq = append(b.Seq, s)
		for i := range from {
			pre.Tokens, pre.Pos, pre.Seq = append(pre.Tokens, 1+i%100), append(pre.Pos, i), append(pre.Seq, s)
		}
	}
	if _, err := m.Forward(pre, c); err != nil {
		t.Fatal(err)
	}
	if 3*(from+1)*m.Heads*m.HeadDim < parAttnMin {
		t.Fatal("batched decode would not run attention on the pool")
	}
	p := from
	step := func() {
		for i := range b.Pos {
			b.Pos[i] = p
		}
		if _, err := m.Forward(b, c); err != nil {
			t.Fatal(err)
		}
		p++
	}
	step()
	if allocs := testing.AllocsPerRun(20, step); allocs > 0 {
		t.Errorf("batched decode of 3 sequences allocates %.1f times per step", allocs)
	}
}

// TestSlidingWindow: with a window the cached forward still matches the
// reference; a window covering everything changes nothing; a short one
// changes the logits beyond it.
func TestSlidingWindow(t *testing.T) {
	m := mustLoad(t, testshared.Path(t, "models/llama2c/tiny_gqa.bin"), Options{})
	toks := []int{1, 450, 7483, 310, 3444, 338, 263, 4996, 17354, 1701}
	full := runSeq(t, m, toks, 0)
	m.SlidingWindow = len(toks)
	if d, _ := maxAbsDiff(runSeq(t, m, toks, 0), full); d > 1e-6 {
		t.Errorf("window covering the sequence changed logits by %g", d)
	}
	m.SlidingWindow = 4
	checkCacheParity(t, m, toks, 1e-4)
	win := runSeq(t, m, toks, 0)
	if d, _ := maxAbsDiff(win[:4*m.Vocab], full[:4*m.Vocab]); d > 1e-6 {
		t.Errorf("positions inside the window changed by %g", d)
	}
	if d, _ := maxAbsDiff(win[4*m.Vocab:], full[4*m.Vocab:]); d < 1e-3 {
		t.Errorf("window of 4 did not change later logits (%g)", d)
	}
}
