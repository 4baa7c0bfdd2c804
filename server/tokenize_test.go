package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"nanoserve/chat"
)

func TestTokenizeDetokenize(t *testing.T) {
	ts := newTestServer(t, nil)
	tok := ts.eng.Model().Tokenizer
	const text = "Once upon a time, there was a cat."
	code, _, body := ts.post(t, "/tokenize", `{"content":"`+text+`"}`)
	var got struct {
		Tokens []int `json:"tokens"`
	}
	if code != 200 || json.Unmarshal(body, &got) != nil || !slices.Equal(got.Tokens, tok.Encode(text, true)) {
		t.Fatalf("tokenize: %d %s, want %v", code, body, tok.Encode(text, true))
	}
	_, _, body = ts.post(t, "/tokenize", `{"content":"`+text+`","add_special":true}`)
	var withBOS struct {
		Tokens []int `json:"tokens"`
	}
	json.Unmarshal(body, &withBOS)
	if b, ok := tok.BOS(); ok && tok.AddBOS() && (len(withBOS.Tokens) != len(got.Tokens)+1 || withBOS.Tokens[0] != b) {
		t.Errorf("add_special: %v", withBOS.Tokens)
	}
	_, _, body = ts.post(t, "/tokenize", `{"content":"`+text+`","with_pieces":true}`)
	var pieces struct {
		Tokens []struct {
			ID    int    `json:"id"`
			Piece string `json:"piece"`
		} `json:"tokens"`
	}
	if err := json.Unmarshal(body, &pieces); err != nil || len(pieces.Tokens) != len(got.Tokens) {
		t.Fatalf("with_pieces: %s", body)
	}
	var joined strings.Builder
	for i, p := range pieces.Tokens {
		if p.ID != got.Tokens[i] {
			t.Errorf("piece %d id %d, want %d", i, p.ID, got.Tokens[i])
		}
		joined.WriteString(p.Piece)
	}
	if strings.TrimSpace(joined.String()) != text {
		t.Errorf("pieces join to %q", joined.String())
	}
	ids, _ := json.Marshal(got.Tokens)
	code, _, body = ts.post(t, "/detokenize", `{"tokens":`+string(ids)+`}`)
	var back struct {
		Content string `json:"content"`
	}
	if code != 200 || json.Unmarshal(body, &back) != nil || back.Content != tok.Decode(got.Tokens) || strings.TrimSpace(back.Content) != text {
		t.Errorf("detokenize: %d %s", code, body)
	}
	for _, c := range []struct{ path, body, param string }{
		{"/tokenize", `{}`, "content"},
		{"/detokenize", `{}`, "tokens"},
		{"/detokenize", fmt.Sprintf(`{"tokens":[1,%d]}`, tok.Size()), "tokens[1]"},
		{"/detokenize", `{"tokens":[1,-1]}`, "tokens[1]"},
		{"/detokenize", `{"tokens":[1.5]}`, "tokens[0]"},
	} {
		code, _, body := ts.post(t, c.path, c.body)
		if code != 400 || !strings.Contains(string(body), `"param":"`+c.param+`"`) {
			t.Errorf("%s %s: %d %s, want 400 naming %s", c.path, c.body, code, body, c.param)
		}
	}
}

func TestApplyTemplate(t *testing.T) {
	ts := newTestServer(t, nil)
	msgs := `[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}]`
	code, _, body := ts.post(t, "/apply-template", `{"messages":`+msgs+`}`)
	tmpl, err := chat.Parse(testTemplate)
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := (&chat.Prompter{Template: tmpl}).Prompt([]chat.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"}})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Prompt string `json:"prompt"`
	}
	if code != 200 || json.Unmarshal(body, &got) != nil || got.Prompt != want || !strings.Contains(want, "Be brief.") {
		t.Errorf("apply-template: %d %s, want %q", code, body, want)
	}
	// reasoning_content reaches the template as a message field.
	ts2 := newTestServer(t, func(o *Options) {
		o.Template, _ = chat.Parse(`{% for m in messages %}[{{ m.reasoning_content }}]{{ m.content }}{% endfor %}`)
	})
	code, _, body = ts2.post(t, "/apply-template", `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a","reasoning_content":"think"},{"role":"user","content":"q2"}]}`)
	if code != 200 || !strings.Contains(string(body), `[]q[think]a[]q2`) {
		t.Errorf("reasoning_content: %d %s", code, body)
	}
	if code, _, body := ts.post(t, "/apply-template", `{"messages":[{"role":"wizard","content":"x"}]}`); code != 400 || !strings.Contains(string(body), "messages[0].role") {
		t.Errorf("bad role: %d %s", code, body)
	}
	noTmpl := newTestServer(t, func(o *Options) { o.Template = nil })
	if code, _, body := noTmpl.post(t, "/apply-template", `{"messages":`+msgs+`}`); code != 400 || !strings.Contains(string(body), "no chat template") {
		t.Errorf("no template: %d %s", code, body)
	}
	// With an API key the utilities need it too.
	keyed := newTestServer(t, func(o *Options) { o.APIKey = "k" })
	for _, p := range []string{"/tokenize", "/detokenize", "/apply-template"} {
		if code, _, _ := keyed.post(t, p, `{}`); code != http.StatusUnauthorized {
			t.Errorf("%s without the key: %d", p, code)
		}
	}
}
