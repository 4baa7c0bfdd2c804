package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"nanoserve/kvcache"
	"nanoserve/model"
)

// fakeModel is a forwarder with no weights: it writes each token into its
// cache slot (layer 0, K row = token+1) and returns, for an output token at
// position pos, one-hot logits at a hash of the K rows of positions
// 0..pos read back through the block table. A position whose K/V was never
// computed (or was lost) therefore changes the next token, as it would in
// a real model.
type fakeModel struct {
	vocab   int
	gate    chan struct{} // if non-nil, Forward waits for one value (tests hold the model, not a mutex)
	entered chan struct{} // if non-nil (cap 1), Forward signals that it started
	calls   int
	tokens  int   // tokens computed over all calls
	fail    error // if set, Forward fails with it
}

func newFakeCache(t testing.TB, blockSize, blocks int) *kvcache.Cache {
	t.Helper()
	c, err := kvcache.New(1, 1, blockSize, blocks)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (f *fakeModel) Forward(b model.Batch, c *kvcache.Cache) ([]float32, error) {
	if f.entered != nil {
		select {
		case f.entered <- struct{}{}:
		default:
		}
	}
	if f.gate != nil {
		<-f.gate
	}
	f.calls++
	if f.fail != nil {
		return nil, f.fail
	}
	f.tokens += len(b.Tokens)
	var logits []float32
	for i, tok := range b.Tokens {
		s, pos := b.Seq[i], b.Pos[i]
		if pos >= c.Capacity(s) {
			return nil, fmt.Errorf("fake: position %d beyond the %d reserved", pos, c.Capacity(s))
		}
		c.K[0][c.Slot(s, pos)] = float32(tok + 1)
		s.Len = pos + 1
		if b.Output != nil && !b.Output[i] {
			continue
		}
		h := uint64(1469598103934665603)
		for p := 0; p <= pos; p++ {
			h = (h ^ uint64(c.K[0][c.Slot(s, p)])) * 1099511628211
		}
		row := make([]float32, f.vocab)
		row[h%uint64(f.vocab)] = 1
		logits = append(logits, row...)
	}
	return logits, nil
}

// harness drives a scheduler step by step the way the driver does: plan,
// fake Forward, "sample" the argmax, commit. Each sequence generates gen
// tokens and then is done.
type harness struct {
	t      *testing.T
	sc     *scheduler
	fw     *fakeModel
	names  map[*seq]string
	byName map[string]*seq
	want   map[*seq]int // tokens to generate
	out    map[string][]int
	cancel map[string]context.CancelFunc
	nextID uint64
}

func newHarness(t *testing.T, o Options, blockSize, blocks int) *harness {
	o = resolve(o, blockSize*blocks)
	return &harness{t: t, sc: newScheduler(newFakeCache(t, blockSize, blocks), o), fw: &fakeModel{vocab: 97},
		names: map[*seq]string{}, byName: map[string]*seq{}, want: map[*seq]int{}, out: map[string][]int{},
		cancel: map[string]context.CancelFunc{}}
}

// add queues sequence name with a prompt of n tokens (ids derived from
// salt, so two names with the same salt share a prompt) generating gen.
func (h *harness) add(name string, n, salt, gen int) {
	ctx, cancel := context.WithCancel(context.Background())
	toks := make([]int, n)
	for i := range toks {
		toks[i] = (salt*31 + i*7) % 97
	}
	s := &seq{id: h.nextID, ctx: ctx, tokens: toks, nPrompt: n}
	s.kv = &s.own
	h.nextID++
	h.names[s], h.byName[name], h.want[s], h.cancel[name] = name, s, gen, cancel
	h.sc.add(s)
}

// step runs one step and describes it: "A[0:32] B[40:41]" (the positions
// each sequence computes), then "-X" for each sequence that ended.
func (h *harness) step() string {
	h.t.Helper()
	p := h.sc.plan()
	var desc []string
	off := 0
	for _, s := range p.seqs {
		desc = append(desc, fmt.Sprintf("%s[%d:%d]", h.names[s], p.batch.Pos[off], p.batch.Pos[off]+s.n))
		off += s.n
	}
	for _, x := range p.ended {
		desc = append(desc, "-"+h.names[x.s]+"("+x.reason+")")
	}
	if len(p.seqs) == 0 {
		return strings.Join(desc, " ")
	}
	logits, err := h.fw.Forward(*p.batch, h.sc.cache)
	if err != nil {
		h.t.Fatal(err)
	}
	r := stepResult{rows: make([][]sampled, len(p.out))}
	off = 0
	for i, s := range p.out {
		// Draw (argmax) row by row while the draw equals the proposal, as
		// the driver's verify does; without a draft there is one row.
		name := h.names[s]
		var x sampled
		for j := 0; j < s.rows(); j++ {
			row := logits[(off+j)*h.fw.vocab : (off+j+1)*h.fw.vocab]
			tok := slices.Index(row, 1)
			h.out[name] = append(h.out[name], tok)
			x = sampled{token: tok, accepted: j, done: len(h.out[name]) >= h.want[s]}
			if x.done || j == len(s.draft) || tok != s.draft[j] {
				break
			}
		}
		off += s.rows()
		r.rows[i] = []sampled{x}
	}
	for _, s := range h.sc.commit(p, r) {
		desc = append(desc, "-"+h.names[s])
	}
	if err := h.sc.cache.Check(); err != nil {
		h.t.Fatal(err)
	}
	return strings.Join(desc, " ")
}

// script runs steps and compares each description with want.
func (h *harness) script(want ...string) {
	h.t.Helper()
	for i, w := range want {
		if got := h.step(); got != w {
			h.t.Fatalf("step %d: %q, want %q", i+1, got, w)
		}
	}
}

// A long prompt is fed in PrefillChunk pieces, and the step budget is
// split: running sequences first (oldest first, each leaving one token for
// every later one), then admissions with what is left.
func TestSchedChunksAndBudget(t *testing.T) {
	h := newHarness(t, Options{MaxBatchTokens: 48, PrefillChunk: 32, MaxSeqs: 4, NoPrefixCache: true}, 16, 32)
	h.add("A", 80, 1, 2)
	h.add("B", 30, 2, 2)
	h.script(
		"A[0:32] B[0:16]", // A's first chunk; B takes the 16 left
		"A[32:64] B[16:30]",
		"A[64:80] B[30:31] -B", // B's first token, then its second ends it
		"A[80:81] -A",
	)
	if used := h.sc.cache.UsedBlocks(); used != 0 {
		t.Errorf("%d blocks used after both ended", used)
	}
}

// A decode is never starved by a long prompt admitted after it: every
// step carries the running sequence's one token.
func TestSchedDecodeNeverStarved(t *testing.T) {
	h := newHarness(t, Options{MaxBatchTokens: 32, PrefillChunk: 64, MaxSeqs: 4, NoPrefixCache: true}, 16, 64)
	h.add("D", 4, 1, 8)
	h.script("D[0:4]")
	h.add("L", 200, 2, 1)
	h.script(
		"D[4:5] L[0:31]",
		"D[5:6] L[31:62]",
		"D[6:7] L[62:93]",
		"D[7:8] L[93:124]",
	)
}

// Admission is first come, first served: a head that does not fit waits,
// and a later small request does not overtake it.
func TestSchedFCFSNoOvertaking(t *testing.T) {
	// 8 blocks of 4: A holds 5 while it runs; H needs 6; S would fit in 3.
	h := newHarness(t, Options{MaxBatchTokens: 64, MaxSeqs: 4, NoPrefixCache: true}, 4, 8)
	h.add("A", 18, 1, 3)
	h.script("A[0:18]")
	h.add("H", 22, 2, 1)
	h.add("S", 2, 3, 1)
	h.script(
		"A[18:19]",             // H does not fit beside A; S waits behind H
		"A[19:20] -A",          // A ends this step
		"H[0:22] S[0:2] -H -S", // now the head runs, S behind it
	)
}

// A prompt whose full blocks are cached (from a finished sequence with the
// same start) is admitted with them attached and computes only the rest.
func TestSchedPrefixHitAdmission(t *testing.T) {
	h := newHarness(t, Options{MaxBatchTokens: 64, MaxSeqs: 4}, 8, 16)
	h.add("A", 20, 5, 1)
	h.script("A[0:20] -A")
	h.add("B", 27, 5, 1) // the same first 20 tokens: blocks [0:8] and [8:16] are cached
	h.script("B[16:27] -B")
	if h.sc.prefixHit != 16 || h.sc.prefixQuery != 47 {
		t.Errorf("prefix hit %d of %d tokens, want 16 of 47", h.sc.prefixHit, h.sc.prefixQuery)
	}
}

// When blocks run out the newest running sequence is preempted; it comes
// back in arrival order, recomputes every token it had (prompt and
// generated) and produces exactly the tokens it produces alone.
func TestSchedPreemptNewestAndRecompute(t *testing.T) {
	alone := func(name string, n, salt, gen int) []int {
		h := newHarness(t, Options{MaxBatchTokens: 64, MaxSeqs: 4, NoPrefixCache: true}, 4, 32)
		h.add(name, n, salt, gen)
		for len(h.sc.running)+len(h.sc.waiting) > 0 {
			h.step()
		}
		return h.out[name]
	}
	// 6 blocks of 4: A (10 tokens) and B (9) start with 3 blocks each; the
	// first to need a 4th forces a preemption of the newest, B.
	h := newHarness(t, Options{MaxBatchTokens: 64, MaxSeqs: 4, NoPrefixCache: true}, 4, 6)
	h.add("A", 10, 1, 6)
	h.add("B", 9, 2, 6)
	h.script(
		"A[0:10] B[0:9]",
		"A[10:11] B[9:10]",
		"A[11:12] B[10:11]",
		"A[12:13]", // A needs a 4th block: B (newest) is preempted
	)
	if h.sc.preemptions != 1 || len(h.sc.waiting) != 1 || h.names[h.sc.waiting[0]] != "B" {
		t.Fatalf("preemptions %d, waiting %d", h.sc.preemptions, len(h.sc.waiting))
	}
	h.script("A[13:14]", "A[14:15] -A", "B[0:12]") // B recomputes its 9 prompt and 3 generated tokens
	for len(h.sc.running)+len(h.sc.waiting) > 0 {
		h.step()
	}
	for _, c := range []struct {
		name       string
		n, salt, g int
	}{{"A", 10, 1, 6}, {"B", 9, 2, 6}} {
		if want := alone(c.name, c.n, c.salt, c.g); !slices.Equal(h.out[c.name], want) {
			t.Errorf("%s: %v after preemption, %v alone", c.name, h.out[c.name], want)
		}
	}
}

// A cancelled sequence, running or waiting, leaves at the next plan and
// its blocks are free before that step's Forward.
func TestSchedCancelFreesBlocks(t *testing.T) {
	h := newHarness(t, Options{MaxBatchTokens: 64, MaxSeqs: 1, NoPrefixCache: true}, 4, 16)
	h.add("A", 10, 1, 50)
	h.add("W", 5, 2, 1)
	h.script("A[0:10]", "A[10:11]")
	used := h.sc.cache.UsedBlocks()
	h.cancel["A"]()
	h.cancel["W"]()
	if got := h.step(); got != "-A(cancelled) -W(cancelled)" {
		t.Fatalf("step after cancel: %q", got)
	}
	if u := h.sc.cache.UsedBlocks(); used == 0 || u != 0 {
		t.Errorf("%d blocks used before cancelling, %d after one step (want 0)", used, u)
	}
}

// n > 1: the prompt is computed once; when its logits come back the
// sequence forks, the choices share the prompt's blocks, and the shared
// partial block is copied before either writes into it.
func TestSchedForkSharesPrompt(t *testing.T) {
	h := newHarness(t, Options{MaxBatchTokens: 64, MaxSeqs: 4, NoPrefixCache: true}, 4, 16)
	h.add("A", 10, 1, 3)
	a := h.byName["A"]
	a.forks = []*choice{{}, {}}
	p := h.sc.plan()
	if len(p.seqs) != 1 || p.seqs[0].n != 10 {
		t.Fatalf("prefill plan: %d seqs", len(p.seqs))
	}
	if _, err := h.fw.Forward(*p.batch, h.sc.cache); err != nil {
		t.Fatal(err)
	}
	h.sc.commit(p, stepResult{rows: [][]sampled{{{token: 1}, {token: 2}, {token: 3}}}})
	if len(h.sc.running) != 3 || h.sc.cache.UsedBlocks() != 3 {
		t.Fatalf("after the fork: %d running, %d blocks used (want 3, 3: shared)", len(h.sc.running), h.sc.cache.UsedBlocks())
	}
	for i, s := range h.sc.running {
		if s.tokens[10] != 1+i || s.kv.Len != 10 {
			t.Errorf("choice %d: token %d, len %d", i, s.tokens[10], s.kv.Len)
		}
	}
	p = h.sc.plan()
	if len(p.seqs) != 3 {
		t.Fatalf("decode plan: %d seqs", len(p.seqs))
	}
	if err := h.sc.cache.Check(); err != nil {
		t.Fatal(err)
	}
	// Each choice got its own copy of the partial third block; the two full
	// ones stay shared.
	r := h.sc.running
	if r[0].kv.Blocks[0] != r[1].kv.Blocks[0] || r[0].kv.Blocks[2] == r[1].kv.Blocks[2] || r[1].kv.Blocks[2] == r[2].kv.Blocks[2] {
		t.Errorf("blocks %v %v %v", r[0].kv.Blocks, r[1].kv.Blocks, r[2].kv.Blocks)
	}
}

// A speculative plan: a decoding sequence feeds its last token and the
// proposals (all with logits); after verification it keeps the K/V of the
// accepted proposals and truncates the rest, releasing blocks that held
// only rejected positions; blocks holding unverified tokens never enter
// the prefix cache; proposals are bounded by the step budget (one token
// left for each later sequence) and the output equals plain decoding's.
func TestSchedSpeculativePlan(t *testing.T) {
	plain := newHarness(t, Options{MaxBatchTokens: 64, MaxSeqs: 4}, 4, 32)
	plain.add("A", 6, 1, 20)
	for len(plain.sc.running)+len(plain.sc.waiting) > 0 {
		plain.step()
	}
	cont := plain.out["A"] // A's plain output

	h := newHarness(t, Options{MaxBatchTokens: 64, MaxSeqs: 4}, 4, 32)
	// Proposals per decode step of A: how many, and which (by output
	// index) are wrong.
	type prop struct {
		k     int
		wrong int // index in the proposal of the first wrong token (-1: none)
	}
	props := []prop{{3, -1}, {4, 0}, {5, 2}, {2, -1}}
	step := 0
	h.sc.propose = func(s *seq, room int) []int {
		if h.names[s] != "A" || step >= len(props) {
			return s.draft[:0]
		}
		pr := props[step]
		step++
		gen := len(s.tokens) - s.nPrompt // output tokens so far; the next is cont[gen]
		d := s.draft[:0]
		for j := range min(pr.k, room) {
			t := cont[gen+j]
			if j == pr.wrong {
				t = (t + 1) % 97
			}
			d = append(d, t)
		}
		return d
	}
	h.add("A", 6, 1, 20)
	a := h.byName["A"]
	check := func(wantLen, wantBlocks int) {
		t.Helper()
		if a.kv.Len != wantLen || len(a.kv.Blocks) != wantBlocks || len(a.tokens) != wantLen+1 {
			t.Fatalf("after step: kv len %d in %d blocks, %d tokens; want %d in %d blocks, %d tokens",
				a.kv.Len, len(a.kv.Blocks), len(a.tokens), wantLen, wantBlocks, wantLen+1)
		}
	}
	h.script("A[0:6]")
	check(6, 2)
	h.script("A[6:10]") // 3 proposals, all accepted, and the token after them
	check(10, 3)
	h.script("A[10:15]") // 4 proposals, the first wrong: one token, positions 11..14 dropped
	check(11, 3)         // block [12:16) held only rejected positions: released
	// Nothing past the verified tokens is registered: a prompt equal to
	// A's tokens plus the rejected proposals reuses only the verified full
	// blocks.
	probe := slices.Clone(a.tokens[:11])
	probe = append(probe, (cont[5]+1)%97, cont[6], cont[7], cont[8], cont[9])
	var ps kvcache.Seq
	if n := h.sc.cache.Match(&ps, probe, len(probe)); n != 8 {
		t.Errorf("prefix cache matched %d positions of A's verified+rejected tokens, want 8 (two verified blocks)", n)
	}
	h.sc.cache.Release(&ps)
	h.script("A[11:17]") // 5 proposals, the third wrong: two kept, then the correction
	check(14, 4)
	// Budget: running sequences first, proposals included (2 here), then
	// admission with what is left; once B runs, A leaves it one token.
	h.sc.maxBatch = 4
	h.add("B", 3, 2, 3)
	h.script("A[14:17] B[0:1]")
	props = append(props, prop{8, -1})
	h.script("A[17:20] B[1:2]")
	for len(h.sc.running)+len(h.sc.waiting) > 0 {
		h.step()
	}
	if !slices.Equal(h.out["A"], cont) {
		t.Errorf("speculative output %v, plain %v", h.out["A"], cont)
	}
	if used := h.sc.cache.UsedBlocks(); used != 0 {
		t.Errorf("%d blocks used after the end", used)
	}
}

// Prompts that arrive together reach their first tokens one after
// another: once a prompt completes in a step that holds at least split
// prompt tokens, the next prompt waits for the next step (every token of a
// step lands at once, so packing it in would only delay the first). The
// running decode rides in every step; prompts shorter than split still
// share a step; a running sequence's unfinished prompt waits like a new
// one.
func TestSchedOneCompletedPromptPerStep(t *testing.T) {
	h := newHarness(t, Options{MaxBatchTokens: 256, MaxSeqs: 8, NoPrefixCache: true}, 16, 64)
	h.add("D", 8, 1, 6)
	h.script("D[0:8]")
	h.add("A", 100, 2, 2)
	h.add("B", 100, 3, 2)
	h.add("C", 40, 4, 1)
	h.script(
		"D[8:9] A[0:100]",                   // A completes: B and C wait (not A[0:100] B[0:100] C[0:40])
		"D[9:10] A[100:101] B[0:100] -A",    // A's second token ends it; B completes, C waits
		"D[10:11] B[100:101] C[0:40] -B -C", // C alone is a prompt of its own
		"D[11:12]",
		"D[12:13] -D",
	)
	// Short prompts (under split tokens together) share one step.
	for _, n := range []string{"S1", "S2", "S3", "S4", "S5"} {
		h.add(n, 20, 5, 1)
	}
	h.script("S1[0:20] S2[0:20] S3[0:20] S4[0:20] -S1 -S2 -S3 -S4", "S5[0:20] -S5")
	// A prompt fed in chunks completes in a step where a later running
	// sequence's prompt is only part-way: that one waits a step.
	h = newHarness(t, Options{MaxBatchTokens: 128, PrefillChunk: 96, MaxSeqs: 8, NoPrefixCache: true}, 16, 64)
	h.add("X", 160, 6, 1)
	h.add("Y", 200, 7, 1)
	h.script(
		"X[0:96] Y[0:32]",
		"X[96:160] -X", // X completes with 64 prompt tokens: Y sits this step out
		"Y[32:128]",    // then Y goes on
		"Y[128:200] -Y",
	)
}
