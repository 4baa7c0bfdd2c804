package server

import (
	"context"
	"testing"

	"nanoserve/engine"
)

// "token_healing": true reaches the engine: the completion (whole and
// streamed) is the engine's healed text, which differs from the plain one
// here, and usage counts the prompt as tokenized; absent or false leaves
// the request as it was.
func TestCompletionTokenHealing(t *testing.T) {
	ts := newTestServer(t, nil)
	const prompt = "Once upon a time there was a little gir"
	healed, err := ts.eng.Generate(context.Background(), engine.Request{Prompt: prompt, Policy: greedy(16), TokenHealing: true})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := ts.eng.Generate(context.Background(), engine.Request{Prompt: prompt, Policy: greedy(16)})
	if err != nil {
		t.Fatal(err)
	}
	if healed.Healed == "" || healed.Text == plain.Text {
		t.Fatalf("the engine did not heal %q (healed %q): %q vs %q", prompt, healed.Healed, healed.Text, plain.Text)
	}
	for _, tc := range []struct {
		field string
		want  *engine.Result
	}{{`,"token_healing":true`, healed}, {`,"token_healing":false`, plain}, {"", plain}} {
		body := `{"prompt":"` + prompt + `","max_tokens":16,"temperature":0` + tc.field
		code, _, b := ts.post(t, "/v1/completions", body+"}")
		if code != 200 {
			t.Fatalf("%s: status %d: %s", tc.field, code, b)
		}
		r := decode[completionResponse](t, b)
		if r.Choices[0].Text != tc.want.Text || r.Usage == nil || r.Usage.PromptTokens != len(tc.want.PromptIDs) {
			t.Errorf("%s: text %q usage %+v, want %q with %d prompt tokens", tc.field, r.Choices[0].Text, r.Usage,
				tc.want.Text, len(tc.want.PromptIDs))
		}
		_, _, sb := ts.post(t, "/v1/completions", body+`,"stream":true}`)
		if text, _, _ := streamText(t, sseEvents(t, sb), false); text != tc.want.Text {
			t.Errorf("%s: streamed %q, want %q", tc.field, text, tc.want.Text)
		}
	}
	code, _, b := ts.post(t, "/v1/completions", `{"prompt":"x","token_healing":"yes"}`)
	if code != 400 {
		t.Errorf("token_healing of the wrong type: status %d: %s", code, b)
	}
}
