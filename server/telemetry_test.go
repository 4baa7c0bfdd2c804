package server

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"nanoserve/engine"
)

// sseObjects posts body and returns every SSE data object.
func sseObjects(t *testing.T, url, body string) []map[string]json.RawMessage {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var out []map[string]json.RawMessage
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("event %s: %v", data, err)
		}
		out = append(out, m)
	}
	return out
}

// TestStreamTelemetry: llama-server's return_progress and
// timings_per_token on chat, /completion and the Responses API. Progress:
// a first report with processed = cache, then one per prefill step (8
// tokens here), processed rising to total, the whole before the first
// token; a repeated prompt starts from its cached prefix. Timings: on
// every chunk but the opening role chunk, predicted_n counting the tokens
// so far; the progress chunks' timings start at prompt_n 0, prompt_ms 0.
// Neither field is sent unless asked for. (Before, none of this was sent.)
func TestStreamTelemetry(t *testing.T) {
	ts := newEngineServer(t, engine.Options{PrefillChunk: 8}, nil) // 8 prompt tokens a step
	prompt := strings.Repeat("Once upon a time there was a little dog. ", 3)
	type progress struct{ Total, Cache, Processed int }
	check := func(what string, objs []map[string]json.RawMessage, isToken func(map[string]json.RawMessage) bool, wantCache bool) {
		t.Helper()
		var reports []progress
		tokens, lastN := 0, 0
		for _, o := range objs {
			if raw, ok := o["prompt_progress"]; ok {
				var p progress
				json.Unmarshal(raw, &p)
				if tokens > 0 {
					t.Errorf("%s: progress %+v after a token", what, p)
				}
				var tm nativeTimings
				if json.Unmarshal(o["timings"], &tm) != nil {
					t.Errorf("%s: progress without timings: %v", what, o)
				} else if len(reports) == 0 && (tm.PromptN != 0 || tm.PromptMs != 0) {
					t.Errorf("%s: first progress timings %+v", what, tm)
				}
				reports = append(reports, p)
				continue
			}
			if isToken(o) {
				tokens++
				var tm nativeTimings
				// predicted_n counts the tokens generated so far: at least one
				// per token chunk, never falling, at most the budget of 6 (a
				// chunk may carry several tokens' text, e.g. held back for a
				// stop string or an incomplete UTF-8 sequence).
				if json.Unmarshal(o["timings"], &tm) != nil || tm.PredictedN < tokens || tm.PredictedN < lastN || tm.PredictedN > 6 {
					t.Errorf("%s: token chunk %d timings %s", what, tokens, o["timings"])
				}
				lastN = tm.PredictedN
			}
		}
		if len(reports) < 2 || tokens == 0 {
			t.Fatalf("%s: %d progress reports, %d token chunks in %v", what, len(reports), tokens, objs)
		}
		first, last := reports[0], reports[len(reports)-1]
		if first.Cache != first.Processed || last.Processed != last.Total || wantCache && first.Cache == 0 {
			t.Errorf("%s: reports %+v", what, reports)
		}
		if len(reports) != 1+(last.Total-first.Cache+7)/8 {
			t.Errorf("%s: %d reports for %d tokens to compute in steps of 8: %+v", what, len(reports), last.Total-first.Cache, reports)
		}
		for k := 1; k < len(reports); k++ {
			if r := reports[k]; r.Total != first.Total || r.Cache != first.Cache || r.Processed <= reports[k-1].Processed {
				t.Errorf("%s: reports %+v", what, reports)
			}
		}
	}
	chatBody := `{"messages":[{"role":"user","content":"` + prompt + `"}],"max_tokens":6,"ignore_eos":true,"stream":true,"timings_per_token":true,"return_progress":true}`
	chatToken := func(o map[string]json.RawMessage) bool {
		return strings.Contains(string(o["choices"]), `"content":"`)
	}
	check("chat", sseObjects(t, ts.url+"/v1/chat/completions", chatBody), chatToken, false)
	// The same prompt again: the first report counts the cached prefix.
	check("chat again", sseObjects(t, ts.url+"/v1/chat/completions", chatBody), chatToken, true)
	nativeBody := `{"prompt":"` + prompt + ` The end.","n_predict":6,"ignore_eos":true,"stream":true,"timings_per_token":true,"return_progress":true}`
	check("completion", sseObjects(t, ts.url+"/completion", nativeBody), func(o map[string]json.RawMessage) bool {
		return string(o["content"]) != `""` && string(o["stop"]) == "false"
	}, false)
	respBody := `{"input":"` + prompt + ` Then?","max_output_tokens":6,"ignore_eos":true,"stream":true,"timings_per_token":true,"return_progress":true}`
	objs := sseObjects(t, ts.url+"/v1/responses", respBody)
	check("responses", objs, func(o map[string]json.RawMessage) bool {
		return string(o["type"]) == `"response.output_text.delta"`
	}, false)
	for _, o := range objs {
		if _, ok := o["prompt_progress"]; ok && string(o["type"]) != `"response.in_progress"` {
			t.Errorf("responses: progress on a %s event", o["type"])
		}
	}
	if last := objs[len(objs)-1]; !strings.HasPrefix(string(last["type"]), `"response.`) || last["timings"] == nil { // completed, or incomplete at max_output_tokens
		t.Errorf("responses: last event %v", last)
	}
	// Not asked for: no progress, timings only where they always are.
	for _, o := range sseObjects(t, ts.url+"/v1/chat/completions", `{"messages":[{"role":"user","content":"`+prompt+`"}],"max_tokens":4,"stream":true}`) {
		if o["prompt_progress"] != nil || (o["timings"] != nil && !strings.Contains(string(o["choices"]), "[]")) {
			t.Errorf("unasked telemetry: %v", o)
		}
	}
}
