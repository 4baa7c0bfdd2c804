package server

import (
	"strings"
	"testing"
)

// A server whose completion defaults heal the prompt's last token and
// refuse an empty output (serve sets both for the built-in model) still
// takes every output constraint on /v1/completions: the defaults yield to
// the grammar, while an explicit token_healing with a constraint is refused.
func TestConstraintOverridesCompletionDefaults(t *testing.T) {
	ts := newTestServer(t, func(o *Options) { o.TokenHealing, o.NonEmpty = true, true })
	for _, field := range []string{
		`"guided_json":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}`,
		`"response_format":{"type":"json_object"}`,
		`"guided_regex":"[A-Z]{3}"`,
		`"guided_choice":["left","right"]`,
		`"grammar":"root ::= [a-c]{2} \"!\""`,
	} {
		body := `{"model":"` + testModel + `","prompt":"Once","max_tokens":40,"temperature":0,` + field + `}`
		if code, _, b := ts.post(t, "/v1/completions", body); code != 200 {
			t.Errorf("%s under the healing default: %d %s, want 200", field, code, b)
		}
	}
	body := `{"model":"` + testModel + `","prompt":"Once","max_tokens":8,"token_healing":true,"guided_regex":"[A-Z]{3}"}`
	if code, _, b := ts.post(t, "/v1/completions", body); code != 400 || !strings.Contains(string(b), "token_healing") {
		t.Errorf("explicit token_healing with a constraint: %d %s, want 400 naming token_healing", code, b)
	}
}
