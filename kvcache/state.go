package kvcache

import (
	"fmt"
	"slices"
)

// Recurrent state beside the blocks (hybrid models: Qwen3.5's gated delta
// net, LFM2's short convolutions).
//
// A hybrid model's linear layers keep, per sequence, a fixed-size state
// instead of one K/V row per position: the last d_conv−1 inputs of each
// causal convolution and, for a delta-net layer, a (v_heads, d_v, d_k)
// matrix. All of one sequence's recurrent layers live in one slot of
// StateFloats() float32 values, from a pool of StateSlots() slots that the
// cache allocates together with its blocks, so both count under one
// memory budget (Bytes).
//
// A slot belongs to at most one Seq (or holds a snapshot or a saved prefix
// state, below). Reserve gives a sequence without one
// a zeroed slot (failing with ErrOutOfBlocks, and changing nothing, when
// none is free), Release returns it, Fork copies the source's state into a
// slot of its own for the new sequence. A state summarises every position
// before Seq.Len and cannot be rewound: Truncate below Len goes back to the
// sequence's snapshot when it has one at or before the new length
// (Snapshot, below: speculative decoding), else forgets all positions (the
// state is zeroed, the blocks released, Len 0, so the caller recomputes
// them); Match attaches a cached prefix only up to a block boundary whose
// state was saved (SaveState, below: prefix caching). The model zeroes a
// state itself when a sequence restarts at position 0.

// EnableStates gives the cache a pool of slots recurrent-state slots of
// floats float32 values each (per sequence, all recurrent layers). Call it
// once, before any sequence uses the cache.
func (c *Cache) EnableStates(floats, slots int) error {
	if floats <= 0 || slots <= 0 {
		return fmt.Errorf("kvcache: invalid recurrent state pool: %d floats × %d slots", floats, slots)
	}
	if c.stFloats != 0 {
		return fmt.Errorf("kvcache: recurrent states already enabled")
	}
	c.stFloats = floats
	c.stData = make([]float32, floats*slots)
	c.stFree = make([]int32, slots)
	for i := range c.stFree {
		c.stFree[i] = int32(slots - 1 - i) // pop order 0, 1, 2, ...
	}
	return nil
}

// StateFloats is the float32 values of one sequence's recurrent state; 0
// when the cache holds none (a pure attention model).
func (c *Cache) StateFloats() int { return c.stFloats }

// StateSlots is the number of recurrent-state slots (sequences that can
// hold a state at once).
func (c *Cache) StateSlots() int {
	if c.stFloats == 0 {
		return 0
	}
	return len(c.stData) / c.stFloats
}

// FreeStates is the number of unused state slots.
func (c *Cache) FreeStates() int { return len(c.stFree) }

// AvailableStates is the slots a sequence can get: free ones and those
// holding saved prefix states (evicted on demand).
func (c *Cache) AvailableStates() int { return c.freeSlots() }

// StateBytes is the memory of the state pool.
func (c *Cache) StateBytes() int64 { return int64(len(c.stData)) * 4 }

// HasState reports whether s holds a state slot.
func (c *Cache) HasState(s *Seq) bool { return s.state > 0 }

// NeedsState reports whether s would need a state slot that no one has
// free: the cache holds states, s has none and the pool is empty.
func (c *Cache) NeedsState(s *Seq) bool {
	return c.stFloats > 0 && s.state == 0 && c.freeSlots() == 0
}

// State returns s's recurrent state (StateFloats values), nil when s holds
// no slot.
func (c *Cache) State(s *Seq) []float32 {
	if s.state <= 0 || c.stFloats == 0 {
		return nil
	}
	o := int(s.state-1) * c.stFloats
	return c.stData[o : o+c.stFloats : o+c.stFloats]
}

// takeState gives s a zeroed slot; the caller checked one is free.
func (c *Cache) takeState(s *Seq) {
	s.state = c.popSlot() + 1
	clear(c.State(s))
}

// dropState returns s's slot to the pool.
func (c *Cache) dropState(s *Seq) {
	if s.state > 0 {
		c.stFree = append(c.stFree, s.state-1)
		s.state = 0
	}
}

// checkStates verifies the slot free list (no slot twice, all in range).
func (c *Cache) checkStates() error {
	slots := c.StateSlots()
	seen := make([]bool, slots)
	for _, s := range c.stFree {
		if s < 0 || int(s) >= slots || seen[s] {
			return fmt.Errorf("kvcache: state slot %d twice on the free list or out of range", s)
		}
		seen[s] = true
	}
	if len(c.stLRU) != len(c.stSaved) {
		return fmt.Errorf("kvcache: %d saved states, %d in the LRU list", len(c.stSaved), len(c.stLRU))
	}
	for _, h := range c.stLRU {
		s, ok := c.stSaved[h]
		if !ok || s < 0 || int(s) >= slots || seen[s] {
			return fmt.Errorf("kvcache: saved state %x in slot %d: unknown, out of range, free or twice", h, s)
		}
		seen[s] = true
	}
	return nil
}

// UsedStates lists the slots in use, sorted (for tests: after every
// sequence ended, none).
func (c *Cache) UsedStates() []int {
	free := make([]bool, c.StateSlots())
	for _, s := range c.stFree {
		free[s] = true
	}
	var used []int
	for i, f := range free {
		if !f {
			used = append(used, i)
		}
	}
	return slices.Clip(used)
}

// Snapshots (speculative decoding): Snapshot copies s's state, as of
// position s.Len, into a second slot from the same pool; a later
// Truncate(s, n) with s.Len > n ≥ that position restores it and keeps the
// positions up to it (the caller recomputes the rest), instead of
// forgetting everything. Any Truncate or Release drops the snapshot, as
// does DropSnapshot.

// Snapshot records s's state at s.Len; false (nothing changes) when the
// cache holds no states, s has none, or no slot is free.
func (c *Cache) Snapshot(s *Seq) bool {
	if c.stFloats == 0 || s.state == 0 {
		return false
	}
	if s.snap == 0 {
		if c.freeSlots() == 0 {
			return false
		}
		s.snap = c.popSlot() + 1
	}
	copy(c.slot(s.snap), c.State(s))
	s.snapLen = s.Len
	return true
}

// DropSnapshot returns s's snapshot slot, if any.
func (c *Cache) DropSnapshot(s *Seq) {
	if s.snap > 0 {
		c.stFree = append(c.stFree, s.snap-1)
		s.snap, s.snapLen = 0, 0
	}
}

// slot is the values of slot id−1.
func (c *Cache) slot(id int32) []float32 {
	o := int(id-1) * c.stFloats
	return c.stData[o : o+c.stFloats : o+c.stFloats]
}

// forgetAll releases s's blocks and zeroes its state: Len 0, the slot kept.
func (c *Cache) forgetAll(s *Seq) {
	for i := len(s.Blocks) - 1; i >= 0; i-- {
		c.deref(s.Blocks[i])
	}
	s.Blocks, s.Len, s.hashes = s.Blocks[:0], 0, s.hashes[:0]
	c.DropSnapshot(s)
	clear(c.State(s))
}

// Prefix states (prefix caching for hybrid models): SaveState stores a
// copy of a sequence's state as of a block boundary under the chained hash
// of the block that ends there, in a slot of the same pool; Match then
// attaches a cached prefix only up to the last boundary whose state is
// saved and restores that state into the sequence's own slot. Saved states
// are evicted least recently used when a sequence needs a slot and none is
// free (they are a cache, like unused registered blocks).

// SaveState saves s's state under the hash of its last block, when s.Len
// is a block boundary whose block is committed (Commit). It reports
// whether a state is saved there (already, or now); false when no slot
// can be had.
func (c *Cache) SaveState(s *Seq) bool {
	if c.stFloats == 0 || s.state == 0 || s.Len == 0 || s.Len%c.BlockSize != 0 || len(s.hashes) < s.Len/c.BlockSize {
		return false
	}
	h := s.hashes[s.Len/c.BlockSize-1]
	if _, ok := c.stSaved[h]; ok {
		c.touchSaved(h)
		return true
	}
	if c.freeSlots() == 0 {
		return false
	}
	slot := c.popSlot()
	copy(c.slot(slot+1), c.State(s))
	if c.stSaved == nil {
		c.stSaved = map[uint64]int32{}
	}
	c.stSaved[h] = slot
	c.stLRU = append(c.stLRU, h)
	return true
}

// SavedStates is the number of saved prefix states.
func (c *Cache) SavedStates() int { return len(c.stSaved) }

// touchSaved makes h the most recently used saved state.
func (c *Cache) touchSaved(h uint64) {
	if i := slices.Index(c.stLRU, h); i >= 0 {
		c.stLRU = append(slices.Delete(c.stLRU, i, i+1), h)
	}
}

// evictSaved frees the least recently used saved state; false if none.
func (c *Cache) evictSaved() bool {
	if len(c.stLRU) == 0 {
		return false
	}
	h := c.stLRU[0]
	c.stLRU = c.stLRU[1:]
	c.stFree = append(c.stFree, c.stSaved[h])
	delete(c.stSaved, h)
	return true
}

// freeSlots is the slots a sequence can get: free ones and saved states.
func (c *Cache) freeSlots() int { return len(c.stFree) + len(c.stSaved) }

// popSlot takes a free slot, evicting the least recently used saved state
// if needed; the caller checked freeSlots() > 0.
func (c *Cache) popSlot() int32 {
	if len(c.stFree) == 0 {
		c.evictSaved()
	}
	n := len(c.stFree)
	slot := c.stFree[n-1]
	c.stFree = c.stFree[:n-1]
	return slot
}

// matchStates is Match for a cache with states: the longest run of
// registered blocks holding tokens[0:k·BlockSize], k·BlockSize ≤ limit,
// whose last block has a saved state, which s (empty) gets a copy of.
func (c *Cache) matchStates(s *Seq, tokens []int, limit int) int {
	bs := c.BlockSize
	limit = min(limit, len(tokens))
	var par uint64
	var hs []uint64
	var bl []int
	best := 0
	for i := 0; (i+1)*bs <= limit; i++ {
		blk := tokens[i*bs : (i+1)*bs]
		h := chainHash(par, blk)
		b, ok := c.byHash[h]
		if !ok || c.parent[b] != par || !c.sameTokens(b, blk) {
			break
		}
		hs, bl = append(hs, h), append(bl, b)
		if _, ok := c.stSaved[h]; ok {
			best = i + 1
		}
		par = h
	}
	if best == 0 || s.state == 0 && c.freeSlots() < 2 { // the saved state itself must stay while copied
		return 0
	}
	h := hs[best-1]
	c.touchSaved(h) // most recent: evicted last
	if s.state == 0 {
		if len(c.stFree) == 0 {
			c.evictSaved() // the least recently used, not h (two or more saved)
		}
		s.state = c.popSlot() + 1
	}
	copy(c.State(s), c.slot(c.stSaved[h]+1))
	for i := range best {
		b := bl[i]
		if c.ref[b] == 0 {
			c.unlink(b)
		}
		c.ref[b]++
		s.Blocks = append(s.Blocks, b)
		s.hashes = append(s.hashes, hs[i])
	}
	s.Len = best * bs
	return s.Len
}
