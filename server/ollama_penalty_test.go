package server

import (
	"fmt"
	"testing"
)

// Ollama's sampling options mean what the OpenAI fields of the same name
// mean: /api/generate with presence_penalty p and frequency_penalty f
// answers as /v1/completions with the same p and f (greedy), and the
// two penalties give different answers here, so a swap shows.
func TestOllamaPenaltiesMatchOpenAI(t *testing.T) {
	ts := newTestServer(t, nil)
	const prompt = "Once upon a time"
	openai := func(p, f float64) string {
		code, _, b := ts.post(t, "/v1/completions", fmt.Sprintf(`{"prompt":%q,"max_tokens":48,"temperature":0,"presence_penalty":%v,"frequency_penalty":%v}`, prompt, p, f))
		if code != 200 {
			t.Fatalf("/v1/completions: %d %s", code, b)
		}
		return decode[completionResponse](t, b).Choices[0].Text
	}
	ollama := func(p, f float64) string {
		code, _, b := ts.post(t, "/api/generate", fmt.Sprintf(`{"prompt":%q,"raw":true,"stream":false,"options":{"num_predict":48,"temperature":0,"presence_penalty":%v,"frequency_penalty":%v}}`, prompt, p, f))
		if code != 200 {
			t.Fatalf("/api/generate: %d %s", code, b)
		}
		return decode[ollamaGenerateResponse](t, b).Response
	}
	pairs := [][2]float64{{1.5, 0}, {0, 1.5}, {2, 0.25}}
	seen := map[string]bool{}
	for _, pf := range pairs {
		want := openai(pf[0], pf[1])
		seen[want] = true
		if got := ollama(pf[0], pf[1]); got != want {
			t.Errorf("presence_penalty %v, frequency_penalty %v: /api/generate %q, /v1/completions %q", pf[0], pf[1], got, want)
		}
	}
	if len(seen) < 2 {
		t.Fatalf("the penalties %v all give the same answer: the test cannot tell them apart", pairs)
	}
}

// num_predict -1 (and any negative) is Ollama's "no limit": generation
// runs until the model ends it or the context is full — exactly what
// /v1/completions does with a max_tokens past the context (greedy: the
// same text, token count and finish).
func TestOllamaNumPredictUnbounded(t *testing.T) {
	ts := newTestServer(t, nil)
	const prompt = "Once upon a time"
	code, _, b := ts.post(t, "/v1/completions", fmt.Sprintf(`{"prompt":%q,"max_tokens":%d,"temperature":0}`, prompt, 4*ts.eng.CtxSize()))
	if code != 200 {
		t.Fatalf("/v1/completions: %d %s", code, b)
	}
	want := decode[completionResponse](t, b)
	if *want.Choices[0].FinishReason != "length" {
		t.Fatalf("/v1/completions ended by %q before the context was full: the test needs a prompt that runs on", *want.Choices[0].FinishReason)
	}
	for _, np := range []int{-1, -2} {
		code, _, b := ts.post(t, "/api/generate", fmt.Sprintf(`{"prompt":%q,"raw":true,"stream":false,"options":{"num_predict":%d,"temperature":0}}`, prompt, np))
		r := decode[ollamaGenerateResponse](t, b)
		if code != 200 || !r.Done || r.Response != want.Choices[0].Text || r.DoneReason != "length" ||
			r.EvalCount != want.Usage.CompletionTokens || r.PromptEvalCount != want.Usage.PromptTokens {
			t.Errorf("num_predict %d: %d %s\nwant %q after %d+%d tokens", np, code, b, want.Choices[0].Text, want.Usage.PromptTokens, want.Usage.CompletionTokens)
		}
	}
}
