package engine

import (
	"context"
	"slices"
	"strings"
	"testing"

	"nanoserve/sample"
)

// controlRun runs a greedy request on the built-in model whose logit bias
// pushes id to the top of every draw (+100), for 3 tokens.
func controlRun(t *testing.T, e *Engine, id int, fim, special bool) *Result {
	t.Helper()
	pol := sample.Greedy()
	pol.MaxTokens = 3
	pol.IgnoreEOS = true
	pol.LogitBias = map[int]float32{id: 100}
	res, err := e.Generate(context.Background(), Request{Prompt: "func main() {", Policy: pol, FIM: fim, Special: special})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestFIMMarkersMasked: a left-to-right request never draws a FIM marker,
// however strongly the logits favour it; a FIM request may draw the tokens
// that end a middle (pad, file separator) but never the layout markers.
func TestFIMMarkersMasked(t *testing.T) {
	e := builtin(t)
	f := e.Tokenizer().FIM()
	all := []int{f.Pre.ID, f.Suf.ID, f.Mid.ID, f.Pad.ID, f.Rep.ID, f.Sep.ID}
	for _, id := range all {
		res := controlRun(t, e, id, false, false)
		if slices.Contains(res.IDs, id) {
			t.Errorf("left to right: drew FIM marker %d (%q): ids %v", id, e.Tokenizer().Token(id), res.IDs)
		}
		if len(res.IDs) != 3 {
			t.Errorf("left to right, bias on %d: %d tokens, want 3 (%s)", id, len(res.IDs), res.FinishReason)
		}
	}
	for _, id := range []int{f.Pre.ID, f.Suf.ID, f.Mid.ID, f.Rep.ID} {
		if res := controlRun(t, e, id, true, false); slices.Contains(res.IDs, id) {
			t.Errorf("FIM: drew layout marker %d (%q)", id, e.Tokenizer().Token(id))
		}
	}
	for _, id := range []int{f.Pad.ID, f.Sep.ID} {
		if res := controlRun(t, e, id, true, false); !slices.Contains(res.IDs, id) {
			t.Errorf("FIM: the middle cannot end with %d (%q): ids %v", id, e.Tokenizer().Token(id), res.IDs)
		}
	}
}

// TestControlTokensNeverText: a control token drawn (end of text kept by
// ignore_eos) adds no text unless Request.Special asks for it.
func TestControlTokensNeverText(t *testing.T) {
	e := builtin(t)
	eos, _ := e.Tokenizer().EOS()
	name := e.Tokenizer().Token(eos)
	res := controlRun(t, e, eos, false, false)
	if !slices.Equal(res.IDs, []int{eos, eos, eos}) {
		t.Fatalf("ids %v, want three end-of-text tokens", res.IDs)
	}
	if res.Text != "" {
		t.Errorf("text %q, want \"\" (control tokens are not text)", res.Text)
	}
	res = controlRun(t, e, eos, false, true)
	if want := strings.Repeat(name, 3); res.Text != want {
		t.Errorf("special: text %q, want %q", res.Text, want)
	}
}

// TestEmptyPromptStartsDocument: an empty prompt is the token that starts
// a document (the built-in model adds no BOS to prompts; its BOS is the
// <|endoftext|> that separates its training documents), and generation
// from it works.
func TestEmptyPromptStartsDocument(t *testing.T) {
	e := builtin(t)
	ids, err := e.Encode(&Request{Prompt: ""})
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || e.Tokenizer().Token(ids[0]) != "<|endoftext|>" {
		t.Fatalf("empty prompt = %v, want [<|endoftext|>]", ids)
	}
	pol := sample.Greedy()
	pol.MaxTokens = 8
	res, err := e.Generate(context.Background(), Request{Prompt: "", Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.IDs) == 0 || res.Text == "" {
		t.Errorf("empty prompt generated %v %q", res.IDs, res.Text)
	}
}

// TestNonEmpty: with Request.NonEmpty an end-of-text token the logits
// favour above all (+100) cannot end the output before it has visible
// text; it ends right after.
func TestNonEmpty(t *testing.T) {
	e := builtin(t)
	eos, _ := e.Tokenizer().EOS()
	for _, non := range []bool{false, true} {
		pol := sample.Greedy()
		pol.MaxTokens = 20
		pol.LogitBias = map[int]float32{eos: 100}
		res, err := e.Generate(context.Background(), Request{Prompt: "if err != nil {", Policy: pol, TokenHealing: true, NonEmpty: non})
		if err != nil {
			t.Fatal(err)
		}
		if visible := strings.TrimSpace(res.Text) != ""; visible != non || res.FinishReason != FinishStop {
			t.Errorf("NonEmpty %v: text %q (%s)", non, res.Text, res.FinishReason)
		}
	}
}
