package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestPredict: Vertex AI's prediction route runs each instance on the
// route its @requestFormat names (camelCase or a path), answers each as
// that route does (an error object for a bad one, the others unharmed),
// and the health alias answers as /health.
func TestPredict(t *testing.T) {
	if got := gcpFormat("/v1/chat/completions"); got != "chatCompletions" {
		t.Errorf("gcpFormat = %q", got)
	}
	if got := gcpFormat("/apply-template"); got != "applyTemplate" {
		t.Errorf("gcpFormat = %q", got)
	}
	ts := newTestServer(t, func(o *Options) { o.PredictRoute, o.HealthRoute = "/predict", "/healthz" })
	code, _, b := ts.post(t, "/predict", `{"instances":[
		{"@requestFormat":"chatCompletions","max_tokens":4,"temperature":0,"stream":true,"messages":[{"role":"user","content":"Hi"}]},
		{"@requestFormat":"/tokenize","content":"Once upon"},
		{"@requestFormat":"nope"}]}`)
	var out struct{ Predictions []json.RawMessage }
	if err := json.Unmarshal(b, &out); err != nil || code != 200 || len(out.Predictions) != 3 {
		t.Fatalf("predict: %d %s", code, b)
	}
	chat := decode[chatResponse](t, out.Predictions[0])
	if len(chat.Choices) != 1 || chat.Choices[0].Message.Content == nil || *chat.Choices[0].Message.Content == "" {
		t.Errorf("the chat prediction: %s", out.Predictions[0])
	}
	if tok := decode[struct{ Tokens []int }](t, out.Predictions[1]); len(tok.Tokens) == 0 {
		t.Errorf("the tokenize prediction: %s", out.Predictions[1])
	}
	if !strings.Contains(string(out.Predictions[2]), `"error"`) {
		t.Errorf("an unknown @requestFormat: %s", out.Predictions[2])
	}
	if code, _, b := ts.post(t, "/predict", `{"instance":[]}`); code != 400 {
		t.Errorf("no instances: %d %s", code, b)
	}
	resp, err := http.Get(ts.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("health alias: %d", resp.StatusCode)
	}
}
