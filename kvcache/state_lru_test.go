package kvcache

import "testing"

// Saved prefix states are a cache like registered blocks: when a sequence
// needs a slot and none is free, the least recently *used* saved state
// goes, so a prefix that keeps being hit (a shared system prompt) keeps its
// state while one saved later but never reused is evicted.
func TestSavedStatesEvictLeastRecentlyUsed(t *testing.T) {
	c, err := New(1, 4, 4, 16)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.EnableStates(5, 4); err != nil {
		t.Fatal(err)
	}
	save := func(toks []int, v float32) {
		t.Helper()
		s := &Seq{}
		if err := c.Reserve(s, len(toks)); err != nil {
			t.Fatal(err)
		}
		s.Len = len(toks)
		for i := range c.State(s) {
			c.State(s)[i] = v
		}
		c.Commit(s, toks)
		if !c.SaveState(s) {
			t.Fatalf("SaveState %v", toks)
		}
		c.Release(s)
	}
	p, q := []int{1, 2, 3, 4}, []int{21, 22, 23, 24}
	save(p, 1) // saved first
	save(q, 2) // saved second: the most recently saved
	// p is hit: it becomes the most recently used.
	m := &Seq{}
	if n := c.Match(m, append(p, 99), 5); n != 4 {
		t.Fatalf("Match p: %d positions, want 4", n)
	}
	c.Release(m)
	// Three sequences take the two free slots and one saved state's.
	var held []*Seq
	for range 3 {
		s := &Seq{}
		if err := c.Reserve(s, 1); err != nil {
			t.Fatal(err)
		}
		held = append(held, s)
	}
	if c.SavedStates() != 1 {
		t.Fatalf("%d saved states after taking three slots of four, want 1", c.SavedStates())
	}
	for _, s := range held {
		c.Release(s)
	}
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	if n := c.Match(&Seq{}, append(p, 99), 5); n != 4 {
		t.Errorf("the recently hit prefix lost its state (Match %d positions, want 4)", n)
	}
	if n := c.Match(&Seq{}, append(q, 99), 5); n != 0 {
		t.Errorf("the prefix never reused kept its state (Match %d positions, want 0)", n)
	}
}
