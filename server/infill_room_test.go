package server

import (
	"encoding/json"
	"strings"
	"testing"
)

// The room /infill keeps for the middle is min(n_predict, ctx/2), ctx/2
// without a bound, and the prompt never takes it:
//   - an n_predict past half the context (an editor asking for "plenty")
//     does not squeeze the prefix and suffix out of the prompt: they are
//     cut to the batch as for n_predict -1;
//   - with n_predict -1 (the default) and a long input_extra, the prompt
//     leaves half the context to the middle instead of filling it (which
//     was a 400 "context length exceeded" for a request that set nothing).
func TestInfillRoomCappedAtHalfContext(t *testing.T) {
	ts := newFIMServer(t, nil)
	ctx := ts.eng.CtxSize()
	long := strings.Repeat("x := 1\n", 400)
	infill := func(np int, extra bool) infillWire {
		req := map[string]any{"input_prefix": long + "end", "input_suffix": "start" + long, "n_predict": np, "temperature": 0}
		if extra {
			req["input_extra"] = []map[string]string{{"filename": "a.go", "text": long}}
		}
		body, _ := json.Marshal(req)
		code, _, b := ts.post(t, "/infill", string(body))
		if code != 200 {
			t.Fatalf("n_predict %d (extra %v): %d %s", np, extra, code, b)
		}
		return decode[infillWire](t, b)
	}
	// fimPart is the prompt from the prefix token on: what the batch bounds.
	fimPart := func(r infillWire) string {
		i := strings.Index(r.Prompt, "<|fim_prefix|>")
		if i < 0 {
			t.Fatalf("no prefix token in %q", r.Prompt)
		}
		return r.Prompt[i:]
	}
	base := infill(-1, false)
	// ctx 128, batch 32: prefix 24 tokens, suffix 32/4 − 2 = 6.
	if base.TokensEvaluated < 30 || !strings.Contains(base.Prompt, "end<|fim_suffix|>start") {
		t.Fatalf("n_predict -1: %d prompt tokens %q", base.TokensEvaluated, base.Prompt)
	}
	for _, np := range []int{-1, 16, ctx / 2, ctx - 1, ctx, 10 * ctx} {
		for _, extra := range []bool{false, true} {
			r := infill(np, extra)
			if fimPart(r) != fimPart(base) {
				t.Errorf("n_predict %d (extra %v): prefix and suffix %q, want those of n_predict -1 %q", np, extra, fimPart(r), fimPart(base))
			}
			room := ctx / 2
			if np > 0 {
				room = min(np, room)
			}
			if r.TokensEvaluated > ctx-room || r.TokensPredicted < 1 {
				t.Errorf("n_predict %d (extra %v): %d prompt tokens leave %d of the %d positions the middle is due; %d predicted",
					np, extra, r.TokensEvaluated, ctx-r.TokensEvaluated, room, r.TokensPredicted)
			}
		}
	}
}
