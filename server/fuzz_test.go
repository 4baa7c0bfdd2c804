package server

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzDecodeRequest feeds arbitrary bodies (and Content-Types) to the
// request decoder and the validation of /v1/completions and
// /v1/chat/completions bodies, everything before the engine. It must never
// panic; a refusal must be a 4xx with a message, naming its field (param)
// when it has one; an accepted request must carry a valid policy.
//
//	go test ./server -run '^$' -fuzz FuzzDecodeRequest -fuzztime 10m -parallel 1
func FuzzDecodeRequest(f *testing.F) {
	for _, seed := range []string{
		`{"prompt":"Once","max_tokens":5}`,
		`{"prompt":["a"],"temperature":0.7,"top_p":0.9,"top_k":-1,"stop":["\n"],"seed":3,"logprobs":2}`,
		`{"prompt":[1,2,3],"logit_bias":{"5":-100},"stop_token_ids":[2],"stream":true,"stream_options":{"include_usage":true}}`,
		`{"prompt":[[1,2]],"n":2,"best_of":2,"echo":true,"suffix":"x","parse_special":false,"token_healing":true}`,
		`{"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":3}`,
		`{"messages":[{"role":"system","content":[{"type":"text","text":"s"}]},{"role":"developer","content":null}],"logprobs":true,"top_logprobs":3}`,
		`{"messages":[{"role":"tool","content":"x"}],"tools":[{}],"response_format":{"type":"json_object"}}`,
		`{"prompt":"x","max_tokens":-1,"temperature":"hot","top_k":1.5}`,
		`{"prompt":"x","temperature":1e400}`,
		`{"prompt":"x","grammar":"root ::= [a-z]{1,3}","max_tokens":4}`,
		`{"prompt":"x","json_schema":{"type":"object","properties":{"a":{"type":"integer","minimum":3}},"required":["a"]},"max_tokens":12}`,
		`{"messages":[{"role":"user","content":"x"}],"guided_choice":["a","b"],"min_tokens":1,"use_beam_search":false}`,
		`{"prompt":"x","structured_outputs":{"regex":"[0-9]+"},"guided_json":"{}"}`,
		`prompt=hi&max_tokens=2`,
		`[1,2]`, `null`, `{"prompt":"x"} {}`, `{"prompt":"\ud800"}`, ``,
	} {
		f.Add(uint8(0), "application/json", []byte(seed))
		f.Add(uint8(1), "application/x-www-form-urlencoded", []byte(seed))
	}
	ts := newTestServer(f, nil)
	f.Fuzz(func(t *testing.T, kind uint8, contentType string, body []byte) {
		chatReq := kind%2 == 1
		path := "/v1/completions"
		if chatReq {
			path = "/v1/chat/completions"
		}
		r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		w := httptest.NewRecorder()
		var (
			j *job
			e *apiError
		)
		if chatReq {
			var cr chatRequest
			if e = ts.decodeJSON(w, r, &cr); e == nil {
				j, e = ts.chatJob(&cr)
			}
		} else {
			var cr completionRequest
			if e = ts.decodeJSON(w, r, &cr); e == nil {
				j, e = ts.completionJob(&cr)
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
		if len(j.reqs) == 0 || j.n < 1 {
			t.Fatalf("accepted with %d prompts and n = %d", len(j.reqs), j.n)
		}
		for _, req := range j.reqs {
			if err := req.Policy.Validate(); err != nil {
				t.Fatalf("accepted with an invalid policy: %v", err)
			}
			if req.Prompt == "" && len(req.PromptIDs) == 0 && !chatReq {
				// an empty string prompt is allowed only when the model adds BOS
				if _, ok := ts.tok.BOS(); !ok {
					t.Fatal("accepted an empty prompt for a model without BOS")
				}
			}
		}
	})
}
