package server

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"nanoserve/engine"
)

// TestSlotsEndpoint: GET /slots lists MaxSeqs slots in llama-server's
// shape — a slot that never held a task has no params; after a request it
// keeps the task's prompt figures and parameters but, idle, no budget —
// and answers 501 when switched off (--slots=false).
func TestSlotsEndpoint(t *testing.T) {
	get := func(url string) (int, []byte) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	ts := newEngineServer(t, engine.Options{MaxSeqs: 2}, nil)
	code, b := get(ts.url + "/slots")
	slots := decode[[]map[string]any](t, b)
	if code != 200 || len(slots) != 2 || slots[1]["id"] != 1.0 || slots[0]["is_processing"] != false || slots[0]["n_ctx"] != float64(ts.eng.CtxSize()) {
		t.Fatalf("/slots before any request: %d %s", code, b)
	}
	if _, ok := slots[0]["params"]; ok {
		t.Errorf("a slot that never held a task has params: %s", b)
	}
	if code, _, b := ts.post(t, "/completion", `{"prompt":"Once upon a time","n_predict":4,"temperature":0,"seed":7}`); code != 200 {
		t.Fatalf("/completion: %d %s", code, b)
	}
	code, b = get(ts.url + "/slots")
	slots = decode[[]map[string]any](t, b)
	s0 := slots[0]
	params, _ := s0["params"].(map[string]any)
	next, _ := s0["next_token"].([]any)
	if code != 200 || s0["is_processing"] != false || s0["id_task"] != 1.0 || s0["n_prompt_tokens"].(float64) < 4 ||
		params["n_predict"] != 4.0 || params["seed"] != 7.0 || params["temperature"] != 0.0 || len(next) != 1 {
		t.Fatalf("/slots after a request: %d %s", code, b)
	}
	if nt := next[0].(map[string]any); nt["n_remain"] != -1.0 || nt["n_decoded"] != 0.0 || nt["has_next_token"] != false {
		t.Errorf("an idle slot's next_token: %v", nt)
	}
	if _, ok := slots[1]["id_task"]; ok {
		t.Errorf("slot 1 held no task: %s", b)
	}
	if code, b := get(ts.url + "/slots?fail_on_no_slot=1"); code != 200 {
		t.Errorf("fail_on_no_slot with idle slots: %d %s", code, b)
	}
	off := newTestServer(t, func(o *Options) { o.NoSlots = true })
	if code, b := get(off.url + "/slots"); code != 501 || !strings.Contains(string(b), "not_supported_error") {
		t.Errorf("slots off: %d %s, want 501", code, b)
	}
}
