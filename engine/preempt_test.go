package engine

import "testing"

// With three or more running sequences the one preempted is the newest,
// whichever of the older ones runs out of blocks: vLLM's policy, which
// keeps the work of the oldest requests (closest to done, longest waited)
// and makes the latest arrival pay the recompute. Two sequences cannot
// tell "the newest" from "the next one after the one that needs blocks";
// three can.
func TestSchedPreemptNewestOfThree(t *testing.T) {
	// 9 blocks of 4: A (10 tokens), B (9) and C (9) start with 3 blocks
	// each; A is the first to need a 4th.
	h := newHarness(t, Options{MaxBatchTokens: 64, MaxSeqs: 4, NoPrefixCache: true}, 4, 9)
	h.add("A", 10, 1, 6)
	h.add("B", 9, 2, 6)
	h.add("C", 9, 3, 6)
	h.script(
		"A[0:10] B[0:9] C[0:9]",
		"A[10:11] B[9:10] C[9:10]",
		"A[11:12] B[10:11] C[10:11]",
		"A[12:13] B[11:12]", // A needs a 4th block: C, the newest, is preempted; B keeps running
	)
	if h.sc.preemptions != 1 || len(h.sc.waiting) != 1 || h.names[h.sc.waiting[0]] != "C" {
		var waiting []string
		for _, s := range h.sc.waiting {
			waiting = append(waiting, h.names[s])
		}
		t.Fatalf("preemptions %d, waiting %v: want C alone preempted", h.sc.preemptions, waiting)
	}
	// C comes back once blocks free up and finishes like the others.
	for len(h.sc.running)+len(h.sc.waiting) > 0 {
		h.step()
	}
	if h.sc.preemptions != 1 {
		t.Errorf("%d preemptions, want 1", h.sc.preemptions)
	}
}
