package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"nanoserve/chat"
)

// A chat template that recurses without end (a macro calling itself) used to
// kill the process with "fatal error: stack overflow" on the first chat
// request. The interpreter's limits make it a 400 naming the limit, and the
// server keeps serving.
func TestRecursiveTemplateIs400(t *testing.T) {
	tmpl, err := chat.Parse(`{% macro f(x) %}{{ f(x) }}{% endmacro %}{{ f(1) }}`)
	if err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, func(o *Options) { o.Template = tmpl })
	body := `{"model":"` + testModel + `","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`
	for range 2 {
		code, _, b := ts.post(t, "/v1/chat/completions", body)
		if code != http.StatusBadRequest {
			t.Fatalf("status %d, want 400; body %s", code, b)
		}
		var e struct {
			Error struct {
				Message string  `json:"message"`
				Param   *string `json:"param"`
			} `json:"error"`
		}
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(e.Error.Message, "recursion depth") && !strings.Contains(e.Error.Message, "step limit") {
			t.Errorf("message %q should name the limit the template exceeded", e.Error.Message)
		}
	}
	code, _, b := ts.post(t, "/v1/completions", `{"model":"`+testModel+`","prompt":"hi","max_tokens":2}`)
	if code != http.StatusOK {
		t.Fatalf("completions after the bad template: status %d, body %s", code, b)
	}
}
