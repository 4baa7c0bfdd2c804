package server

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

const personSchema = `{"type":"object","properties":{"name":{"type":"string","maxLength":6},"age":{"type":"integer","minimum":0,"maximum":99}},"required":["name","age"],"additionalProperties":false}`

func checkPerson(t *testing.T, text string) {
	t.Helper()
	var p struct {
		Name *string
		Age  *int
	}
	d := json.NewDecoder(strings.NewReader(text))
	d.DisallowUnknownFields()
	if err := d.Decode(&p); err != nil || p.Name == nil || p.Age == nil || *p.Age < 0 || *p.Age > 99 || len([]rune(*p.Name)) > 6 {
		t.Fatalf("output %q does not fit the schema (%v)", text, err)
	}
}

// Every dialect of a constraint, on both endpoints, streamed and not,
// n = 2: every choice's output fits.
func TestStructuredOutputDialects(t *testing.T) {
	ts := newTestServer(t, nil)
	schemaStr, _ := json.Marshal(personSchema)
	fields := map[string]func(*testing.T, string){
		`"response_format":{"type":"json_schema","json_schema":{"name":"p","schema":` + personSchema + `,"strict":true}}`: checkPerson,
		`"json_schema":` + personSchema:                      checkPerson,
		`"guided_json":` + string(schemaStr):                 checkPerson,
		`"structured_outputs":{"json":` + personSchema + `}`: checkPerson,
		`"response_format":{"type":"json_object"}`: func(t *testing.T, s string) {
			var m map[string]any
			if err := json.Unmarshal([]byte(s), &m); err != nil {
				t.Fatalf("json_object output %q: %v", s, err)
			}
		},
		`"grammar":"root ::= [a-c]{2} \"!\""`:      matchRe(`^[a-c]{2}!$`),
		`"guided_grammar":"root ::= \"x\" [0-9]+"`: matchRe(`^x[0-9]+$`),
		`"guided_regex":"[A-Z]{3}"`:                matchRe(`^[A-Z]{3}$`),
		`"structured_outputs":{"regex":"(ab)+"}`:   matchRe(`^(ab)+$`),
		`"guided_choice":["left","right"]`:         matchRe(`^(left|right)$`),
		`"structured_outputs":{"choice":["up"]}`:   matchRe(`^up$`),
	}
	for field, check := range fields {
		for _, ep := range []string{"/v1/completions", "/v1/chat/completions"} {
			for _, stream := range []bool{false, true} {
				body := `{"model":"` + testModel + `","max_tokens":40,"temperature":1,"seed":3,"n":2,"stream":` + map[bool]string{false: "false", true: "true"}[stream] + `,` + field
				if ep == "/v1/completions" {
					body += `,"prompt":"Once"}`
				} else {
					body += `,"messages":[{"role":"user","content":"hi"}]}`
				}
				code, _, b := ts.post(t, ep, body)
				if code != 200 {
					t.Fatalf("%s %s: status %d: %s", ep, field, code, b)
				}
				for _, text := range choiceTexts(t, b, stream, ep != "/v1/completions") {
					check(t, text)
				}
			}
		}
	}
}

func matchRe(re string) func(*testing.T, string) {
	r := regexp.MustCompile(re)
	return func(t *testing.T, s string) {
		t.Helper()
		if !r.MatchString(s) {
			t.Fatalf("output %q does not match %s", s, re)
		}
	}
}

// choiceTexts extracts each choice's full text from a response or stream.
func choiceTexts(t *testing.T, b []byte, stream, isChat bool) []string {
	t.Helper()
	texts := map[int]string{}
	var events []string
	if stream {
		events = sseEvents(t, b)
	} else {
		events = []string{string(b)}
	}
	for _, ev := range events {
		if ev == "[DONE]" {
			continue
		}
		var r struct {
			Choices []struct {
				Index   int    `json:"index"`
				Text    string `json:"text"`
				Message *struct {
					Content string `json:"content"`
				} `json:"message"`
				Delta *struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(ev), &r); err != nil {
			t.Fatalf("%v: %s", err, ev)
		}
		for _, c := range r.Choices {
			switch {
			case c.Message != nil:
				texts[c.Index] += c.Message.Content
			case c.Delta != nil:
				texts[c.Index] += c.Delta.Content
			default:
				texts[c.Index] += c.Text
			}
		}
	}
	if len(texts) != 2 {
		t.Fatalf("want 2 choices, got %d", len(texts))
	}
	var out []string
	for i := range len(texts) {
		out = append(out, texts[i])
	}
	return out
}

// Nothing fails open: what cannot be enforced is a 400 naming it.
func TestStructuredOutputErrors(t *testing.T) {
	ts := newTestServer(t, nil)
	cases := []struct{ field, param, msg string }{
		{`"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","minProperties":2}}}`, "response_format", `"minProperties"`},
		{`"json_schema":{"type":"string","format":"iri"}`, "json_schema", `format "iri"`},
		{`"guided_json":{"type":"array","uniqueItems":true}`, "guided_json", `"uniqueItems"`},
		{`"grammar":"root ::= \"a"`, "grammar", "line 1 col 10: unterminated string literal"},
		{`"guided_grammar":"root ::= foo"`, "guided_grammar", `undefined rule "foo"`},
		{`"guided_regex":"(?=a)"`, "guided_regex", "not supported"},
		{`"response_format":{"type":"yaml"}`, "response_format", `"yaml"`},
		{`"grammar":"root ::= \"a\"","guided_regex":"a"`, "guided_regex", "only one output constraint"},
		{`"json_schema":{"type":"string","minLength":50}`, "max_tokens", "below what the shortest output"},
		{`"guided_choice":["a"],"ignore_eos":true`, "ignore_eos", "cannot be combined"},
		{`"use_beam_search":true`, "use_beam_search", "not supported"},
		{`"skip_special_tokens":false`, "skip_special_tokens", "not supported"},
		{`"min_tokens":-1`, "min_tokens", "min_tokens must be >= 0"},
	}
	for _, tc := range cases {
		for _, ep := range []string{"/v1/completions", "/v1/chat/completions"} {
			body := `{"model":"` + testModel + `","max_tokens":20,` + tc.field
			if ep == "/v1/completions" {
				body += `,"prompt":"Once"}`
			} else {
				body += `,"messages":[{"role":"user","content":"hi"}]}`
			}
			code, _, b := ts.post(t, ep, body)
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Param   *string `json:"param"`
				} `json:"error"`
			}
			json.Unmarshal(b, &e)
			if code != 400 || e.Error.Param == nil || *e.Error.Param != tc.param || !strings.Contains(e.Error.Message, tc.msg) {
				t.Errorf("%s %s: status %d %s, want 400 param %s containing %q", ep, tc.field, code, b, tc.param, tc.msg)
			}
		}
	}
	// Harmless defaults are accepted.
	code, _, b := ts.post(t, "/v1/completions", `{"model":"`+testModel+`","prompt":"Once","max_tokens":3,"use_beam_search":false,"skip_special_tokens":true,"guided_decoding_backend":"xgrammar","echo":false,"best_of":1,"user":"u","typical_p":1}`)
	if code != 200 {
		t.Fatalf("defaults rejected: %d %s", code, b)
	}
}

func TestMinTokensField(t *testing.T) {
	ts := newTestServer(t, nil)
	run := func(extra string) int {
		code, _, b := ts.post(t, "/v1/completions", `{"model":"`+testModel+`","prompt":"They lived happily ever after.","max_tokens":90,"temperature":1,"seed":1`+extra+`}`)
		if code != 200 {
			t.Fatalf("status %d: %s", code, b)
		}
		var r struct {
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		json.Unmarshal(b, &r)
		return r.Usage.CompletionTokens
	}
	// Without min_tokens this seed ends the story early (end-of-generation).
	if n := run(""); n >= 60 {
		t.Fatalf("baseline ran %d tokens; the test needs a request that stops early", n)
	}
	if n := run(`,"min_tokens":60`); n < 60 {
		t.Fatalf("min_tokens 60: %d tokens", n)
	}
}
