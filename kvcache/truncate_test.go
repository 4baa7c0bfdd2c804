package kvcache

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// A registered block held by one sequence alone is still shared — with
// every later prompt that matches it — so rewinding into it and writing
// must copy it first: the next prefix hit reads the K/V of the tokens it
// was registered under, not the rewrite.
func TestTruncateCopiesRegisteredSoleOwner(t *testing.T) {
	c, _ := New(1, 2, 4, 8)
	toks := seqOf(8, 1)
	var a Seq
	if err := c.Reserve(&a, 8); err != nil {
		t.Fatal(err)
	}
	a.Len = 8
	fill(c, &a, toks, 0) // blocks 0 and 1 registered, a the only holder
	if got := c.Truncate(&a, 6); got != 6 {
		t.Fatalf("Truncate kept %d", got)
	}
	other := append(slices.Clone(toks[:6]), 77, 78)
	fill(c, &a, other, 6) // nothing new to commit (a.Len is 6)
	if err := c.Reserve(&a, 2); err != nil {
		t.Fatal(err)
	}
	a.Len = 8
	fill(c, &a, other, 6)
	c.Release(&a)
	check(t, c)
	var b Seq
	if got := c.Match(&b, toks, 8); got != 8 {
		t.Fatalf("prefix hit of the original tokens: %d positions, want 8", got)
	}
	for p := range 8 {
		if k, v := c.Row(0, &b, p); k[0] != float32(toks[p]) || v[0] != float32(p) {
			t.Fatalf("position %d of the prefix hit holds token %v, registered for %d", p, k[0], toks[p])
		}
	}
	var d Seq
	if got := c.Match(&d, other, 8); got != 8 {
		t.Fatalf("prefix hit of the rewritten tokens: %d positions, want 8", got)
	}
	for p := range 8 {
		if k, _ := c.Row(0, &d, p); k[0] != float32(other[p]) {
			t.Fatalf("position %d of the rewritten prefix holds %v, want %d", p, k[0], other[p])
		}
	}
	check(t, c, &b, &d)
}

// After Truncate, the blocks a sequence rewrites are registered under
// their new tokens when it commits again, at a block boundary and inside
// a block: a later prompt with the new tokens reuses them all.
func TestTruncateForgetsHashes(t *testing.T) {
	for _, keep := range []int{4, 6} {
		c, _ := New(1, 2, 4, 12)
		old := seqOf(12, 1)
		var a Seq
		if err := c.Reserve(&a, 12); err != nil {
			t.Fatal(err)
		}
		a.Len = 12
		fill(c, &a, old, 0)
		c.Truncate(&a, keep)
		nw := append(slices.Clone(old[:keep]), seqOf(12-keep, 2)...)
		if err := c.Reserve(&a, 12-keep); err != nil {
			t.Fatal(err)
		}
		a.Len = 12
		fill(c, &a, nw, keep)
		var b Seq
		if got := c.Match(&b, nw, 12); got != 12 {
			t.Fatalf("keep %d: a prompt of the rewritten tokens reuses %d positions, want 12", keep, got)
		}
		for p := range 12 {
			if k, _ := c.Row(0, &b, p); k[0] != float32(nw[p]) {
				t.Fatalf("keep %d: position %d holds %v, want %d", keep, p, k[0], nw[p])
			}
		}
		c.Release(&b)
		c.Release(&a)
		var o Seq
		got := c.Match(&o, old, 12)
		for p := range got {
			if k, _ := c.Row(0, &o, p); k[0] != float32(old[p]) {
				t.Fatalf("keep %d: the old tokens' prefix hit reads %v at %d, want %d", keep, k[0], p, old[p])
			}
		}
		check(t, c, &o)
	}
}

// Random rewinds and rewrites with other tokens (a chat whose last turn is
// edited, speculative proposals rejected) keep two promises: every
// position holds the K/V of its own prefix (so does every prefix hit), and
// the full blocks a sequence has just committed are found again by its
// tokens (the pool is large enough that nothing is evicted).
func TestRewriteKeepsPrefixCacheTrue(t *testing.T) {
	const bs = 4
	c, _ := New(1, 1, bs, 4096) // never full: no eviction forgets a prefix
	rng := rand.New(rand.NewPCG(38, 10))
	seqs := make([]*Seq, 3)
	toks := make([][]int, 3)
	for i := range seqs {
		seqs[i] = &Seq{}
	}
	tokenFor := func(int) int { return 1 + rng.IntN(2) } // few tokens: prefixes collide often
	write := func(s *Seq, tk []int, from int) {
		for p := from; p < s.Len; p++ {
			k, v := c.Row(0, s, p)
			k[0], v[0] = float32(tk[p]), float32(prefixID(tk[:p+1]))
		}
		c.Commit(s, tk)
	}
	hits := 0
	for step := range 4000 {
		i := rng.IntN(len(seqs))
		s := seqs[i]
		switch op := rng.IntN(4); {
		case toks[i] == nil: // a new prompt, maybe with a cached prefix
			for range 4 + rng.IntN(14) {
				toks[i] = append(toks[i], tokenFor(0))
			}
			if got := c.Match(s, toks[i], len(toks[i])-1); got > 0 {
				hits++
			}
		case op <= 1: // compute the prompt's next tokens, or generate new ones
			n := 1 + rng.IntN(5)
			if c.Reserve(s, n) != nil {
				continue
			}
			for len(toks[i]) < s.Len+n {
				toks[i] = append(toks[i], tokenFor(0))
			}
			from := s.Len
			s.Len += n
			write(s, toks[i], from)
			// What s just committed is found by its tokens (under its
			// blocks, or under equal ones registered before).
			full := s.Len / bs * bs
			var probe Seq
			if got := c.Match(&probe, toks[i], full); got != full {
				t.Fatalf("step %d: seq %d committed %d positions, a prompt of its tokens reuses %d", step, i, full, got)
			}
			for p := 0; p < probe.Len; p++ {
				if _, v := c.Row(0, &probe, p); v[0] != float32(prefixID(toks[i][:p+1])) {
					t.Fatalf("step %d: a prefix hit reads the K/V of another prefix at %d", step, p)
				}
			}
			c.Release(&probe)
		case op == 2: // rewind: what follows is generated anew
			c.Truncate(s, rng.IntN(s.Len+1))
			toks[i] = toks[i][:s.Len]
		default:
			c.Release(s)
			toks[i] = nil
		}
		check(t, c, seqs...)
		for j, s := range seqs {
			for p := 0; p < s.Len; p++ {
				if k, v := c.Row(0, s, p); k[0] != float32(toks[j][p]) || v[0] != float32(prefixID(toks[j][:p+1])) {
					t.Fatalf("step %d: seq %d position %d holds token %v (prefix %v), want %d (prefix %d)",
						step, j, p, k[0], v[0], toks[j][p], prefixID(toks[j][:p+1]))
				}
			}
		}
	}
	if hits == 0 {
		t.Fatal("no prefix hit in the whole run")
	}
}

// prefixID names a token prefix (a hash small enough to be exact in a
// float32): what a position's K/V depends on.
func prefixID(tk []int) int {
	h := 0
	for _, t := range tk {
		h = (h*31 + t) % 1000003
	}
	return h
}
