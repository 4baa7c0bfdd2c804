package engine

import (
	"context"
	"sync"
	"testing"
)

// TestSlots: the slot view numbers running sequences from 0 in admission
// order, shows each one's prompt and generation progress, and after a
// sequence ends keeps its task and prompt figures but no budget; a later
// sequence takes the lowest free slot.
func TestSlots(t *testing.T) {
	e, f := fakeEngine(t, Options{MaxSeqs: 2}, true)
	release := sync.OnceFunc(func() { close(f.gate) })
	defer release() // a failure below must not leave the model held
	if s := e.Slots(); len(s) != 2 || s[0].Busy || s[1].Task != 0 || s[1].Remain != -1 {
		t.Fatalf("slots before any request: %+v", s)
	}
	a, err := e.Submit(context.Background(), fakeReq(5))
	if err != nil {
		t.Fatal(err)
	}
	<-f.entered // A's prefill is in the model
	b, err := e.Submit(context.Background(), fakeReq(3))
	if err != nil {
		t.Fatal(err)
	}
	f.gate <- struct{}{} // the prefill step ends: A has 1 token
	<-f.entered          // the next step (B admitted beside A) is in the model
	s := e.Slots()
	if !s[0].Busy || s[0].Task != 1 || s[0].Prompt != 4 || s[0].Processed != 4 || s[0].Decoded != 1 || s[0].Remain != 4 ||
		s[0].Policy.MaxTokens != 5 || s[1].Busy {
		t.Fatalf("after A's prefill: %+v", s)
	}
	f.gate <- struct{}{}
	<-f.entered
	if s := e.Slots(); !s[0].Busy || !s[1].Busy || s[1].Task != 2 || s[1].Decoded != 1 || s[1].Remain != 2 || s[0].Decoded != 2 {
		t.Fatalf("A and B running: %+v", s)
	}
	release()
	a.Result()
	b.Result()
	s = e.Slots()
	for i, want := range []uint64{1, 2} {
		if s[i].Busy || s[i].Task != want || s[i].Prompt != 4 || s[i].Decoded != 0 || s[i].Remain != -1 {
			t.Errorf("slot %d after the end: %+v", i, s[i])
		}
	}
	c, err := e.Submit(context.Background(), fakeReq(2))
	if err != nil {
		t.Fatal(err)
	}
	c.Result()
	if s := e.Slots(); s[0].Task != 3 || s[1].Task != 2 {
		t.Errorf("a third request did not take slot 0: %+v", s)
	}
}
