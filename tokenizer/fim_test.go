package tokenizer

import (
	"slices"
	"testing"
)

func fimVocab(t *testing.T) Vocab {
	t.Helper()
	v, err := TrainBPE([]string{"func main() { println(1) }\n", "package main\n"}, TrainOptions{VocabSize: 300,
		Special: []string{"<|endoftext|>", FIMPrefix, FIMMiddle, FIMSuffix, FIMPad, FIMRepoName, FIMFileSep}})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestFIMFoundByText: a vocabulary without FIM ids gets them from the
// token text; pad, repository and file separator end generation.
func TestFIMFoundByText(t *testing.T) {
	v := fimVocab(t)
	tk, err := FromVocab(v)
	if err != nil {
		t.Fatal(err)
	}
	f := tk.FIM()
	n := len(v.Tokens)
	want := FIMTokens{Pre: Some(n - 6), Mid: Some(n - 5), Suf: Some(n - 4), Pad: Some(n - 3), Rep: Some(n - 2), Sep: Some(n - 1)}
	if f != want || !f.OK() {
		t.Fatalf("FIM tokens %+v, want %+v", f, want)
	}
	for _, id := range []int{n - 3, n - 2, n - 1} {
		if !tk.IsEOG(id) {
			t.Errorf("%q does not end generation", v.Tokens[id])
		}
	}
	if tk.IsEOG(n - 6) {
		t.Errorf("the prefix token ends generation")
	}
}

// TestFIMTextIsOrdinary: user text spelling a FIM token encodes as
// ordinary text without special parsing — even when the vocabulary
// recorded the token as user-defined (which Encode always splits out), as
// Qwen2.5-Coder's tokenizer.json does.
func TestFIMTextIsOrdinary(t *testing.T) {
	v := fimVocab(t)
	n := len(v.Tokens)
	v.Types = slices.Clone(v.Types)
	for id := n - 6; id < n; id++ {
		v.Types[id] = TypeUserDefined
	}
	tk, err := FromVocab(v)
	if err != nil {
		t.Fatal(err)
	}
	text := "a" + FIMPrefix + "b" + FIMMiddle + FIMFileSep
	ids := tk.Encode(text, false)
	for _, id := range ids {
		if id >= n-6 {
			t.Fatalf("ordinary text %q gave FIM token %q in %v", text, v.Tokens[id], ids)
		}
	}
	if got := tk.Decode(ids); got != text {
		t.Errorf("round trip %q, want %q", got, text)
	}
	if ids := tk.Encode(FIMPrefix, true); !slices.Equal(ids, []int{n - 6}) {
		t.Errorf("with special parsing %q = %v, want [%d]", FIMPrefix, ids, n-6)
	}
	if v.Types[n-6] != TypeUserDefined {
		t.Error("FromVocab modified the caller's types")
	}
	if _, err := FromVocab(Vocab{Model: "gpt2", Tokens: v.Tokens, Merges: v.Merges, FIM: FIMTokens{Pre: Some(n)}}); err == nil {
		t.Error("FIM prefix id outside the vocabulary accepted")
	}
}
