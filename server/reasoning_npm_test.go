package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestOllamaNPMThink: the official ollama npm client's chat with think:
// true gets message.thinking and message.content from a (scripted) Qwen3
// reply, whole and streamed alike; think: false reaches the template as
// enable_thinking false.
func TestOllamaNPMThink(t *testing.T) {
	dir := npmClientDir(t, "ollama", ollamaNPMVersion, "ollama_think.mjs")
	sc := &script{replies: []string{thinkReply, thinkReply, "4"}}
	ts := reasoningServer(t, "Qwen-Qwen3-0.6B", nil)
	ts.gen = scripted(sc.gen)
	// The node client's requests come from another process, so nothing
	// orders this write before the handlers' reads for the race detector;
	// one request from this process does (internal/poll orders a write
	// before every later read).
	if resp, err := http.Get(ts.url + "/health"); err == nil {
		resp.Body.Close()
	}
	out := runNode(t, dir, "ollama_think.mjs", ts.url, qwenModel)
	type msg struct{ Content, Thinking string }
	var got struct {
		Whole  struct{ Message msg }
		Stream struct {
			Thinking, Content string
			Parts             int
		}
		Off struct{ Message msg }
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Whole.Message.Thinking != "Two plus two is four." || got.Whole.Message.Content != "The answer is 4." {
		t.Errorf("think true: %+v", got.Whole)
	}
	if got.Stream.Thinking != got.Whole.Message.Thinking || got.Stream.Content != got.Whole.Message.Content || got.Stream.Parts < 4 {
		t.Errorf("streamed %+v, whole %+v", got.Stream, got.Whole.Message)
	}
	if got.Off.Message.Content != "4" || got.Off.Message.Thinking != "" || !strings.HasSuffix(sc.prompt(2), "<think>\n\n</think>\n\n") {
		t.Errorf("think false: %+v; prompt ends %q", got.Off, tail(sc.prompt(2), 30))
	}
}
