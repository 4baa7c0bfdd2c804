package kvcache

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestReserveReleaseSlots(t *testing.T) {
	c, err := New(2, 4, 4, 5) // 5 blocks of 4 positions
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Bytes(), int64(2*2*5*4*4*4); got != want {
		t.Fatalf("Bytes = %d, want %d", got, want)
	}
	var a, b Seq
	if err := c.Reserve(&a, 6); err != nil { // 2 blocks
		t.Fatal(err)
	}
	if err := c.Reserve(&b, 9); err != nil { // 3 blocks
		t.Fatal(err)
	}
	if c.FreeBlocks() != 0 {
		t.Fatalf("free = %d, want 0", c.FreeBlocks())
	}
	// Every position of both sequences maps to a distinct row.
	seen := map[int]bool{}
	for _, s := range []*Seq{&a, &b} {
		for p := 0; p < c.Capacity(s); p++ {
			r := c.Slot(s, p)
			if seen[r] || r < 0 || r >= c.NumBlocks*c.BlockSize {
				t.Fatalf("slot %d reused or out of range", r)
			}
			seen[r] = true
		}
	}
	a.Len = 6
	if err := c.Reserve(&a, 3); !errors.Is(err, ErrOutOfBlocks) {
		t.Fatalf("Reserve past capacity: err = %v, want ErrOutOfBlocks", err)
	}
	if len(a.Blocks) != 2 {
		t.Fatalf("failed Reserve changed the table: %v", a.Blocks)
	}
	if err := c.Reserve(&a, 2); err != nil { // fits in the second block
		t.Fatal(err)
	}
	c.Release(&b)
	if c.FreeBlocks() != 3 || b.Len != 0 || len(b.Blocks) != 0 {
		t.Fatalf("after Release: free %d, b %+v", c.FreeBlocks(), b)
	}
	if err := c.Reserve(&a, 3); err != nil {
		t.Fatal(err)
	}
	k, v := c.Row(1, &a, 7)
	k[0], v[0] = 1, 2
	if k2, v2 := c.Row(1, &a, 7); k2[0] != 1 || v2[0] != 2 {
		t.Fatal("Row does not address the same storage twice")
	}
}

func TestNewRejectsBadShape(t *testing.T) {
	if _, err := New(0, 4, 4, 4); err == nil {
		t.Fatal("want error for zero layers")
	}
}

// check verifies the block manager's invariants: every block is exactly one
// of used (ref > 0), cached (ref 0, registered, in the LRU list) or free
// (ref 0, unregistered, on the free stack); the hash index points at
// registered blocks; the block tables of seqs account for every reference.
func check(t *testing.T, c *Cache, seqs ...*Seq) {
	t.Helper()
	refs := make([]int32, c.NumBlocks)
	for _, s := range seqs {
		for _, b := range s.Blocks {
			refs[b]++
		}
		if s.Len > c.Capacity(s) {
			t.Fatalf("seq Len %d beyond capacity %d", s.Len, c.Capacity(s))
		}
	}
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	for b := range c.NumBlocks {
		if c.ref[b] != refs[b] {
			t.Fatalf("block %d: ref %d, held by %d tables", b, c.ref[b], refs[b])
		}
	}
	if used := c.UsedBlocks(); used+c.CachedBlocks()+len(c.free) != c.NumBlocks {
		t.Fatalf("used %d + cached %d + free %d != %d blocks", used, c.CachedBlocks(), len(c.free), c.NumBlocks)
	}
}

// Check catches broken bookkeeping.
func TestCheckCatchesCorruption(t *testing.T) {
	for name, corrupt := range map[string]func(c *Cache){
		"double free":       func(c *Cache) { c.free = append(c.free, c.free[0]) },
		"used and free":     func(c *Cache) { c.ref[c.free[0]] = 1 },
		"stale index":       func(c *Cache) { c.byHash[42] = 0 },
		"cached not in LRU": func(c *Cache) { c.reg[c.free[0]] = true },
	} {
		c, _ := New(1, 1, 4, 4)
		if err := c.Check(); err != nil {
			t.Fatal(err)
		}
		corrupt(c)
		if err := c.Check(); err == nil {
			t.Errorf("%s: Check found nothing", name)
		}
	}
}

// fill writes position-distinct K rows for positions [from, s.Len) so
// copies can be checked, then commits.
func fill(c *Cache, s *Seq, tokens []int, from int) {
	for p := from; p < s.Len; p++ {
		k, v := c.Row(0, s, p)
		k[0], v[0] = float32(tokens[p]), float32(p)
	}
	c.Commit(s, tokens)
}

func seqOf(n, salt int) []int {
	t := make([]int, n)
	for i := range t {
		t[i] = 1000*salt + i
	}
	return t
}

// The life of a prefix: a finished sequence's full blocks stay cached, a
// new prompt with the same start reuses them, a different one does not,
// and eviction happens only when free blocks run out, oldest first.
func TestPrefixCacheScript(t *testing.T) {
	c, _ := New(1, 2, 4, 6) // 6 blocks of 4
	prompt := seqOf(10, 1)  // 2 full blocks + 2 positions

	var a Seq
	if got := c.Match(&a, prompt, len(prompt)-1); got != 0 {
		t.Fatalf("cold match reused %d", got)
	}
	if err := c.Reserve(&a, 10); err != nil {
		t.Fatal(err)
	}
	a.Len = 10
	fill(c, &a, prompt, 0)
	check(t, c, &a)
	if len(c.byHash) != 2 || c.UsedBlocks() != 3 {
		t.Fatalf("after prefill: %d registered, %d used", len(c.byHash), c.UsedBlocks())
	}

	// A concurrent sequence with the same prompt shares both full blocks.
	var b Seq
	if got := c.Match(&b, prompt, len(prompt)-1); got != 8 {
		t.Fatalf("warm match reused %d, want 8", got)
	}
	if b.Blocks[0] != a.Blocks[0] || b.Blocks[1] != a.Blocks[1] || c.ref[a.Blocks[0]] != 2 {
		t.Fatalf("shared blocks: a %v, b %v", a.Blocks, b.Blocks)
	}
	check(t, c, &a, &b)

	// The limit keeps at least the last token to recompute: a prompt of
	// exactly 8 tokens reuses only the first block.
	var d Seq
	if got := c.Match(&d, prompt[:8], 7); got != 4 {
		t.Fatalf("8-token prompt reused %d, want 4", got)
	}
	c.Release(&d)

	// A prompt that differs in the second block reuses only the first.
	other := append(slices.Clone(prompt[:4]), seqOf(6, 2)...)
	var e Seq
	if got := c.Match(&e, other, len(other)-1); got != 4 {
		t.Fatalf("diverging prompt reused %d, want 4", got)
	}
	c.Release(&e)
	check(t, c, &a, &b)

	// Releasing both: full blocks become cached, the partial one free.
	c.Release(&a)
	c.Release(&b)
	check(t, c)
	if c.CachedBlocks() != 2 || c.FreeBlocks() != 6 || c.UsedBlocks() != 0 {
		t.Fatalf("after release: cached %d, free %d, used %d", c.CachedBlocks(), c.FreeBlocks(), c.UsedBlocks())
	}

	// A cached block comes back used and keeps its rows.
	var f Seq
	if got := c.Match(&f, prompt, 9); got != 8 {
		t.Fatalf("match after release reused %d", got)
	}
	if k, _ := c.Row(0, &f, 5); k[0] != float32(prompt[5]) {
		t.Fatalf("cached row lost: %v", k[0])
	}
	check(t, c, &f)
	c.Release(&f)

	// Filling the pool evicts cached blocks only after the free ones, the
	// oldest released first: f released block 1 before block 0.
	var g Seq
	if err := c.Reserve(&g, 4*5); err != nil { // 5 blocks: 4 free + 1 evicted
		t.Fatal(err)
	}
	check(t, c, &g)
	if c.CachedBlocks() != 1 || len(c.byHash) != 1 {
		t.Fatalf("after eviction: %d cached, %d registered", c.CachedBlocks(), len(c.byHash))
	}
	var h Seq
	if got := c.Match(&h, prompt, 9); got != 4 {
		t.Fatalf("after evicting the second block, match reused %d, want 4 (the first block survives)", got)
	}
	check(t, c, &g, &h)
	if err := c.Reserve(&g, 4*6); !errors.Is(err, ErrOutOfBlocks) {
		t.Fatalf("over-full Reserve: %v", err)
	}
	check(t, c, &g, &h)
}

// Truncate releases tail blocks and copies a registered block before a
// sequence rewrites part of it, so other holders keep their rows.
func TestTruncateCopyOnWrite(t *testing.T) {
	c, _ := New(1, 2, 4, 8)
	toks := seqOf(12, 3)
	var a Seq
	if err := c.Reserve(&a, 12); err != nil {
		t.Fatal(err)
	}
	a.Len = 12
	fill(c, &a, toks, 0)
	var b Seq
	if got := c.Match(&b, toks, 12); got != 12 {
		t.Fatalf("match %d", got)
	}
	// a rewinds into its second (registered, shared) block.
	shared := a.Blocks[1]
	if got := c.Truncate(&a, 6); got != 6 {
		t.Fatalf("Truncate kept %d", got)
	}
	check(t, c, &a, &b)
	if a.Blocks[1] == shared || len(a.Blocks) != 2 {
		t.Fatalf("no copy-on-write: %v (shared %d)", a.Blocks, shared)
	}
	for p := range 6 {
		ka, _ := c.Row(0, &a, p)
		kb, _ := c.Row(0, &b, p)
		if ka[0] != kb[0] {
			t.Fatalf("position %d: copy %v, original %v", p, ka[0], kb[0])
		}
	}
	// Writing a's position 6 leaves b's block intact.
	k, _ := c.Row(0, &a, 6)
	k[0] = -1
	if kb, _ := c.Row(0, &b, 6); kb[0] != float32(toks[6]) {
		t.Fatal("rewrite reached the shared block")
	}
	// A private unregistered partial block is kept in place.
	if err := c.Reserve(&a, 1); err != nil {
		t.Fatal(err)
	}
	a.Len = 7
	blk := a.Blocks[1]
	c.Truncate(&a, 5)
	if a.Blocks[1] != blk {
		t.Fatal("private block copied")
	}
	c.Release(&a)
	c.Release(&b)
	check(t, c)
	if c.UsedBlocks() != 0 {
		t.Fatalf("%d blocks used after releasing all", c.UsedBlocks())
	}
}

// Random operations keep the invariants (a small model-checking loop).
func TestRandomOpsKeepInvariants(t *testing.T) {
	c, _ := New(1, 1, 4, 10)
	rng := rand.New(rand.NewPCG(1, 2))
	seqs := make([]*Seq, 4)
	toks := make([][]int, 4)
	for i := range seqs {
		seqs[i] = &Seq{}
	}
	prompts := [][]int{seqOf(20, 1), seqOf(20, 2), append(seqOf(8, 1), seqOf(12, 4)...)}
	for step := range 3000 {
		i := rng.IntN(len(seqs))
		s := seqs[i]
		switch op := rng.IntN(5); {
		case op == 0 && len(s.Blocks) == 0:
			toks[i] = prompts[rng.IntN(len(prompts))]
			c.Match(s, toks[i], rng.IntN(len(toks[i])))
		case op == 1 && toks[i] != nil:
			n := rng.IntN(6)
			if s.Len+n > len(toks[i]) {
				n = len(toks[i]) - s.Len
			}
			if c.Reserve(s, n) == nil {
				from := s.Len
				s.Len += n
				fill(c, s, toks[i], from)
			}
		case op == 2:
			c.Release(s)
			toks[i] = nil
		case op == 3:
			c.Truncate(s, rng.IntN(s.Len+1))
		}
		check(t, c, seqs...)
		// Every written position of every sequence holds its own token.
		for j, s := range seqs {
			for p := 0; p < s.Len; p++ {
				if k, _ := c.Row(0, s, p); k[0] != float32(toks[j][p]) {
					t.Fatalf("step %d: seq %d position %d holds %v, want %d", step, j, p, k[0], toks[j][p])
				}
			}
		}
	}
}

// Fork shares a sequence's written blocks (not its reserved tail); each
// side's next write into the shared partial block copies it first, and
// releasing both returns every block.
func TestForkSharesUntilWrite(t *testing.T) {
	c, _ := New(1, 2, 4, 8)
	toks := seqOf(6, 5)
	var a, b Seq
	if err := c.Reserve(&a, 10); err != nil { // 3 blocks, 6 positions written
		t.Fatal(err)
	}
	a.Len = 6
	fill(c, &a, toks, 0)
	c.Fork(&b, &a)
	check(t, c, &a, &b)
	if b.Len != 6 || len(b.Blocks) != 2 || b.Blocks[0] != a.Blocks[0] || b.Blocks[1] != a.Blocks[1] {
		t.Fatalf("fork: %v len %d, parent %v", b.Blocks, b.Len, a.Blocks)
	}
	if used := c.UsedBlocks(); used != 3 {
		t.Fatalf("%d blocks used after fork, want 3 (shared)", used)
	}
	// b writes position 6: copy-on-write of the partial block.
	shared := b.Blocks[1]
	c.Truncate(&b, b.Len)
	if b.Blocks[1] == shared || b.Blocks[0] != a.Blocks[0] {
		t.Fatalf("no copy-on-write: %v, parent %v", b.Blocks, a.Blocks)
	}
	if err := c.Reserve(&b, 1); err != nil {
		t.Fatal(err)
	}
	k, _ := c.Row(0, &b, 6)
	k[0] = -1
	for p := range 6 {
		ka, _ := c.Row(0, &a, p)
		kb, _ := c.Row(0, &b, p)
		if ka[0] != float32(toks[p]) || kb[0] != ka[0] {
			t.Fatalf("position %d: parent %v, fork %v", p, ka[0], kb[0])
		}
	}
	if ka, _ := c.Row(0, &a, 6); ka[0] == -1 {
		t.Fatal("the fork's write reached the parent's block")
	}
	check(t, c, &a, &b)
	c.Release(&a)
	c.Release(&b)
	check(t, c)
	if c.UsedBlocks() != 0 {
		t.Fatalf("%d blocks used after releasing both", c.UsedBlocks())
	}
}
