package server

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzAPIRequest feeds arbitrary bodies to the Responses and Anthropic
// Messages decoders and on to chatJob, everything before the engine. It
// must never panic; a refusal must be a 4xx with a message naming its
// field (param) when it has one; an accepted request must carry a valid
// policy.
//
//	go test ./server -run '^$' -fuzz FuzzAPIRequest -fuzztime 1m -parallel 1
func FuzzAPIRequest(f *testing.F) {
	for _, seed := range []string{
		`{"input":"hi","instructions":"s","max_output_tokens":5}`,
		`{"input":[{"role":"user","content":[{"type":"input_text","text":"a"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"x"}]}`,
		`{"input":[{"type":"reasoning","content":[{"type":"reasoning_text","text":"t"}]},{"role":"assistant","content":"a"}],"reasoning":{"effort":"low"}}`,
		`{"input":"x","tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],"tool_choice":{"type":"function","name":"f"}}`,
		`{"input":"x","text":{"format":{"type":"json_schema","name":"n","schema":{"type":"object"}}},"max_output_tokens":0}`,
		`{"input":[{"type":"item_reference","id":"x"}],"truncation":"auto","background":true}`,
		`{"max_tokens":5,"system":"s","messages":[{"role":"user","content":"hi"}],"stop_sequences":["a"]}`,
		`{"max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"x"}]}]}`,
		`{"max_tokens":5,"messages":[{"role":"user","content":"x"}],"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"g"}}`,
		`{"max_tokens":5,"messages":[{"role":"user","content":"x"}],"thinking":{"type":"enabled","budget_tokens":-1}}`,
		`{"messages":[{"role":"user","content":[{"type":"image"}]}]}`,
		`[1]`, `null`, `{"input":null}`, ``,
	} {
		f.Add(uint8(0), []byte(seed))
		f.Add(uint8(1), []byte(seed))
	}
	ts := newTestServer(f, nil)
	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		anthropic := kind%2 == 1
		r := httptest.NewRequest(http.MethodPost, "/v1/responses", bytes.NewReader(body))
		w := httptest.NewRecorder()
		var (
			cr *chatRequest
			e  *apiError
		)
		if anthropic {
			var ar anthropicRequest
			if e = ts.decodeJSON(w, r, &ar); e == nil {
				cr, e = anthropicChat(&ar, kind%4 == 3)
			}
		} else {
			var rr responsesRequest
			if e = ts.decodeJSON(w, r, &rr); e == nil {
				cr, _, e = responsesChat(&rr, nil)
			}
		}
		var j *job
		if e == nil {
			if j, e = ts.chatJob(cr); e != nil && !anthropic {
				e = responsesParam(e)
			}
		}
		if e != nil {
			if e.status < 400 || e.status > 499 {
				t.Fatalf("status %d for a bad body: %s", e.status, e.Message)
			}
			if e.Message == "" || !utf8.ValidString(e.Message) && utf8.ValidString(string(body)) {
				t.Fatalf("empty or mangled message (param %v)", e.Param)
			}
			if e.Param != nil && !strings.Contains(e.Message, *e.Param) && !strings.Contains(e.Message, "model") {
				t.Fatalf("a field error that does not name its field %q: %s", *e.Param, e.Message)
			}
			return
		}
		if len(j.reqs) != 1 || j.n != 1 {
			t.Fatalf("accepted with %d prompts and n = %d", len(j.reqs), j.n)
		}
		if err := j.reqs[0].Policy.Validate(); err != nil {
			t.Fatalf("accepted with an invalid policy: %v", err)
		}
	})
}
