package server

import (
	"testing"
)

// TestInputTokens: llama-server's token counting of a chat request,
// /chat/completions/input_tokens and /responses/input_tokens (each also
// under /v1), answers what the chat template renders, as
// {"object":"response.input_tokens","input_tokens":N}; /responses is
// /v1/responses without the prefix.
func TestInputTokens(t *testing.T) {
	ts := newTestServer(t, nil)
	tok := sharedEngine(t).Tokenizer()
	want := len(tok.Encode("<|system|>S\n<|user|>Tell me a story\n<|assistant|>", true))
	if _, ok := tok.BOS(); ok && tok.AddBOS() {
		want++
	}
	chatBody := `{"messages":[{"role":"system","content":"S"},{"role":"user","content":"Tell me a story"}]}`
	respBody := `{"instructions":"S","input":"Tell me a story"}`
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions/input_tokens", chatBody},
		{"/chat/completions/input_tokens", chatBody},
		{"/v1/responses/input_tokens", respBody},
		{"/responses/input_tokens", respBody},
	} {
		status, _, b := ts.post(t, c.path, c.body)
		m := decode[map[string]any](t, b)
		if status != 200 || m["input_tokens"] != float64(want) || m["object"] != "response.input_tokens" {
			t.Errorf("%s: %d %s, want %d input tokens", c.path, status, b, want)
		}
	}
	if status, _, b := ts.post(t, "/v1/chat/completions/input_tokens", `{"messages":"x"}`); status != 400 {
		t.Errorf("bad messages: %d %s", status, b)
	}
	sc := &script{replies: []string{"Hi."}}
	ts.gen = scripted(sc.gen)
	status, _, b := ts.post(t, "/responses", `{"input":"x"}`)
	if r := decode[responsesObject](t, b); status != 200 || r.Object != "response" || r.Status != "completed" {
		t.Errorf("/responses: %d %s", status, b)
	}
}
