package server

import (
	"context"
	"encoding/json"
	"iter"
	"testing"

	"nanoserve/engine"
)

// cutReply makes the server's generator yield reply in pieces and end it
// with FinishLength, as when max_tokens runs out.
func cutReply(reply string) func(context.Context, engine.Request) (iter.Seq[engine.Token], func() *engine.Result) {
	return func(ctx context.Context, req engine.Request) (iter.Seq[engine.Token], func() *engine.Result) {
		res := &engine.Result{FinishReason: engine.FinishLength}
		toks := func(yield func(engine.Token) bool) {
			for _, piece := range pieces(reply, 5) {
				res.Text += piece
				res.IDs = append(res.IDs, 0)
				res.Usage.CompletionTokens++
				if !yield(engine.Token{Text: piece}) {
					res.FinishReason = engine.FinishCancelled
					return
				}
			}
		}
		return toks, func() *engine.Result {
			if res.Text != reply && res.FinishReason == engine.FinishLength {
				res.Text, res.Usage.CompletionTokens = reply, len(pieces(reply, 5))
			}
			return res
		}
	}
}

// A reply that max_tokens cut reports finish_reason "length" even when it
// holds tool calls: the client must know the reply is incomplete (a second
// call may be lost, or the first call's text ended where the budget did)
// rather than run the calls as if the model had finished — non-streamed,
// streamed and for the legacy functions field. The calls that parsed are
// still returned.
func TestToolCallsCutByMaxTokensFinishLength(t *testing.T) {
	ts := qwenToolServer(t, nil)
	req := `{"messages":[{"role":"user","content":"Weather in Zürich?"}],"max_tokens":40,"tools":[` + weatherTool + `]`
	legacy := `{"messages":[{"role":"user","content":"Weather?"}],"max_tokens":40,"functions":[{"name":"get_weather","parameters":{"type":"object"}}]`
	for name, reply := range map[string]string{
		"second call cut":    callReply + "\n<tool_call>\n{\"name\": \"get_we",
		"cut after the call": callReply,
	} {
		ts.gen = scripted(cutReply(reply))
		status, _, body := ts.post(t, "/v1/chat/completions", req+`}`)
		if status != 200 {
			t.Fatalf("%s: status %d: %s", name, status, body)
		}
		r := decode[toolReply](t, body)
		var calls []json.RawMessage
		json.Unmarshal(r.Choices[0].Message.ToolCalls, &calls)
		if r.Choices[0].FinishReason != "length" || len(calls) == 0 {
			t.Errorf("%s: non-streamed finish_reason %q with %d calls, want length with the parsed call: %s", name, r.Choices[0].FinishReason, len(calls), body)
		}
		_, _, body = ts.post(t, "/v1/chat/completions", req+`,"stream":true}`)
		if _, deltas, _, finish := streamed(t, body); finish != "length" || len(deltas) == 0 {
			t.Errorf("%s: streamed finish_reason %q with %d call deltas, want length", name, finish, len(deltas))
		}
		_, _, body = ts.post(t, "/v1/chat/completions", legacy+`}`)
		if r := decode[toolReply](t, body); r.Choices[0].FinishReason != "length" || r.Choices[0].Message.Function == nil {
			t.Errorf("%s: legacy finish_reason %q, want length with the function_call: %s", name, r.Choices[0].FinishReason, body)
		}
		_, _, body = ts.post(t, "/v1/chat/completions", legacy+`,"stream":true}`)
		if _, _, fdeltas, finish := streamed(t, body); finish != "length" || len(fdeltas) == 0 {
			t.Errorf("%s: legacy streamed finish_reason %q, want length", name, finish)
		}
	}
}
