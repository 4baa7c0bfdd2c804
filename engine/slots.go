package engine

// The slot view: llama-server's GET /slots, read off the scheduler.
//
// llama-server runs a fixed array of --parallel slots, each holding at
// most one sequence; monitoring tools read which slots are busy and how
// far each one's prompt and generation got. The engine has no slots of its
// own — MaxSeqs sequences run at once, in any order — so the view numbers
// them: a sequence that enters the running set takes the lowest slot no
// running sequence holds, and keeps it until it leaves (finished,
// cancelled or preempted: a preempted sequence takes a slot again when it
// is readmitted). Each slot remembers the last sequence it held, as
// llama-server's slot keeps its previous task.
//
// The view is taken with the other statistics at the end of every step
// (snapshot, under cmu), so it costs O(MaxSeqs) per step and a reader
// (Slots) only copies it under mu.

import (
	"slices"

	"nanoserve/sample"
)

// Slot is one slot of the view.
type Slot struct {
	ID int // 0 .. MaxSeqs-1
	// Busy: a running sequence holds the slot. Otherwise the fields below
	// describe the last sequence it held (Task 0: none yet).
	Busy bool
	Task uint64 // the request's arrival number (1, 2, ...); 0: never used
	// Prompt tokens, of which Cached came from the prefix cache or a
	// session, and Processed have their K/V now (Cached included).
	Prompt, Cached, Processed int
	Decoded                   int // tokens generated so far
	// Remain is how many tokens the budget still allows (-1: no budget
	// but the context, or the slot is idle).
	Remain int
	Policy sample.Policy // the sequence's sampling policy
}

// slotTable is the scheduler's side of the view (under cmu).
type slotTable struct {
	held []*seq // by slot id: the running sequence holding it (nil: idle)
	view []Slot // by slot id
}

func newSlotTable(n int) slotTable {
	t := slotTable{held: make([]*seq, n), view: make([]Slot, n)}
	for i := range t.view {
		t.view[i] = Slot{ID: i, Remain: -1}
	}
	return t
}

// update frees the slots of sequences that left running, gives each
// running sequence without a slot the lowest free one, and refreshes the
// view from the sequences.
func (t *slotTable) update(running []*seq) {
	for i, s := range t.held {
		if s != nil && !slices.Contains(running, s) {
			t.view[i] = slotOf(i, s, false)
			t.held[i] = nil
		}
	}
	for _, s := range running {
		if slices.Contains(t.held, s) {
			continue
		}
		if i := slices.Index(t.held, nil); i >= 0 {
			t.held[i] = s
		}
	}
	for i, s := range t.held {
		if s != nil {
			t.view[i] = slotOf(i, s, true)
		}
	}
}

// slotOf describes sequence s in slot i; an idle slot keeps the last
// sequence's prompt figures but no budget (llama-server resets a finished
// task's n_remain and n_decoded).
func slotOf(i int, s *seq, busy bool) Slot {
	sl := Slot{ID: i, Busy: busy, Task: s.id + 1, Prompt: s.nPrompt, Cached: s.cached,
		Processed: min(s.kv.Len, s.nPrompt), Remain: -1, Policy: s.c.pol}
	if !busy {
		return sl
	}
	sl.Decoded = max(len(s.tokens)-s.nPrompt, 0)
	if m := s.c.pol.MaxTokens; m > 0 {
		sl.Remain = max(m-sl.Decoded, 0)
	}
	return sl
}

// Slots is the slot view as of the latest scheduler step: MaxSeqs slots.
func (e *Engine) Slots() []Slot {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.slotView)
}
