package server

import (
	"slices"
	"testing"
)

// A pulled model whose file names another model already answers to is
// served under its other names (the taken ones stay the other model's);
// one whose first name is served already is not added twice.
func TestRouterAddTakenNames(t *testing.T) {
	ts := newTestRouter(t, RouterOptions{Models: []ModelSpec{testSpec(t, "aidreams", nil)}}, nil)
	rt := ts.router
	spec := testSpec(t, "mha", nil)
	spec.Names = []string{"hf.co/org/mha:Q8_0", "aidreams.bin", "mha"}
	if err := rt.add(spec); err != nil {
		t.Fatal(err)
	}
	list := rt.list()
	if len(list) != 2 || !slices.Equal(list[1].Names, []string{"hf.co/org/mha:Q8_0", "mha"}) || !slices.Contains(list[0].Names, "aidreams.bin") {
		t.Fatalf("after add: %v, %v", list[0].Names, list[len(list)-1].Names)
	}
	if err := rt.add(spec); err != nil || len(rt.list()) != 2 {
		t.Errorf("adding the same first name again: %v, %d models", err, len(rt.list()))
	}
}
