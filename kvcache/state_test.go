package kvcache

import (
	"errors"
	"slices"
	"testing"
)

// TestStates walks the recurrent-state pool through every operation and
// checks the slots' contents and the bookkeeping (Check) after each.
func TestStates(t *testing.T) {
	c, err := New(1, 4, 4, 16)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.EnableStates(0, 3); err == nil {
		t.Error("EnableStates(0, 3) accepted")
	}
	if err := c.EnableStates(5, 3); err != nil {
		t.Fatal(err)
	}
	if err := c.EnableStates(5, 3); err == nil {
		t.Error("EnableStates twice accepted")
	}
	check := func(what string) {
		t.Helper()
		if err := c.Check(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	fill := func(s *Seq, v float32) {
		for i := range c.State(s) {
			c.State(s)[i] = v
		}
	}
	same := func(s *Seq, v float32) bool {
		return !slices.ContainsFunc(c.State(s), func(x float32) bool { return x != v })
	}
	a, b := &Seq{}, &Seq{}
	if err := c.Reserve(a, 8); err != nil || !c.HasState(a) || !same(a, 0) {
		t.Fatalf("Reserve: %v, state %v", err, c.State(a))
	}
	fill(a, 1)
	a.Len = 8
	if err := c.Reserve(b, 4); err != nil {
		t.Fatal(err)
	}
	check("reserve")
	// Fork copies; the pool is then empty.
	f := &Seq{}
	c.Fork(f, a)
	if f.Len != 8 || !same(f, 1) || c.FreeStates() != 0 {
		t.Fatalf("fork: Len %d, state %v, %d free", f.Len, c.State(f), c.FreeStates())
	}
	check("fork")
	e := &Seq{}
	if err := c.Reserve(e, 1); !errors.Is(err, ErrOutOfBlocks) || len(e.Blocks) != 0 || c.HasState(e) {
		t.Errorf("Reserve with no slot: %v, %d blocks", err, len(e.Blocks))
	}
	c.Fork(e, a)
	if e.Len != 0 || len(e.Blocks) != 0 || c.HasState(e) {
		t.Errorf("Fork with no slot: Len %d", e.Len)
	}
	c.Release(f)
	check("release")
	// Snapshot, then a truncation to it or beyond restores it.
	if !c.Snapshot(a) {
		t.Fatal("no snapshot")
	}
	fill(a, 2)
	a.Len = 11
	if n := c.Truncate(a, 10); n != 8 || a.Len != 8 || !same(a, 1) {
		t.Errorf("Truncate(10) after a snapshot at 8: kept %d, state %v", n, c.State(a))
	}
	if a.snap != 0 || c.FreeStates() != 1 {
		t.Errorf("snapshot not dropped: %d free", c.FreeStates())
	}
	check("snapshot")
	// No snapshot: everything is forgotten, the slot kept and zeroed.
	if n := c.Truncate(a, 5); n != 0 || len(a.Blocks) != 0 || !c.HasState(a) || !same(a, 0) {
		t.Errorf("Truncate without a snapshot kept %d", n)
	}
	check("forget")
	// Saved prefix states: Match resumes from the last saved boundary.
	toks := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	if err := c.Reserve(a, 12); err != nil {
		t.Fatal(err)
	}
	a.Len = 4
	fill(a, 4)
	c.Commit(a, toks)
	if !c.SaveState(a) || c.SavedStates() != 1 {
		t.Fatal("SaveState at 4")
	}
	a.Len = 12
	fill(a, 12)
	c.Commit(a, toks)
	c.Release(a)
	check("saved")
	m := &Seq{}
	if n := c.Match(m, toks, 11); n != 4 || !same(m, 4) {
		t.Errorf("Match: %d positions, state %v (want 4 from the saved boundary)", n, c.State(m))
	}
	check("match")
	// Slots run out: the saved state is evicted for a new sequence.
	g := &Seq{}
	if err := c.Reserve(g, 1); err != nil || c.SavedStates() != 0 || !same(g, 0) {
		t.Errorf("Reserve evicting a saved state: %v, %d saved", err, c.SavedStates())
	}
	for _, s := range []*Seq{b, m, g} {
		c.Release(s)
	}
	check("end")
	if c.FreeStates() != 3 || len(c.UsedStates()) != 0 {
		t.Errorf("%d free states, used %v", c.FreeStates(), c.UsedStates())
	}
	// Check catches a slot on the free list twice.
	c.stFree = append(c.stFree, c.stFree[0])
	if c.Check() == nil {
		t.Error("Check missed a slot listed twice")
	}
}
