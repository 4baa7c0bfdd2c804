package server

import (
	"fmt"
	"testing"

	"nanoserve/engine"
)

// A server whose engine speculates (prompt lookup, k fixed at 4): the
// nanoserve_spec_*, vllm:spec_decode_* and llamacpp:spec_decode_* series
// agree and count what the requests did; "speculative": false gives the
// same text and leaves the counters alone.
func TestSpecMetricsAndOffSwitch(t *testing.T) {
	ts := newEngineServer(t, engine.Options{Spec: engine.SpecOptions{Mode: engine.SpecNgram, K: 4, Fixed: true}}, nil)

	prompt := "Echoes of the night"
	complete := func(extra string) string {
		body := fmt.Sprintf(`{"prompt":%q,"max_tokens":40,"temperature":0,"ignore_eos":true%s}`, prompt, extra)
		code, _, b := ts.post(t, "/v1/completions", body)
		if code != 200 {
			t.Fatalf("status %d: %s", code, b)
		}
		return decode[struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
		}](t, b).Choices[0].Text
	}
	const mv = `{model_name="` + testModel + `"}`
	series := []string{"drafts_total", "draft_tokens_total", "accepted_tokens_total"}
	agree := func(mets map[string]float64) {
		t.Helper()
		for _, name := range series {
			ours, ok := mets["nanoserve_spec_"+name]
			v, ok2 := mets["vllm:spec_decode_num_"+name+mv]
			l, ok3 := mets["llamacpp:spec_decode_num_"+name]
			if !ok || !ok2 || !ok3 || ours != v || ours != l {
				t.Errorf("%s: nanoserve %v (%v), vllm %v (%v), llamacpp %v (%v)", name, ours, ok, v, ok2, l, ok3)
			}
		}
		var perPos float64
		for i := range 4 {
			p := mets[fmt.Sprintf(`nanoserve_spec_accepted_tokens_per_pos_total{position="%d"}`, i)]
			if p != mets[fmt.Sprintf(`vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name="%s",position="%d"}`, testModel, i)] ||
				p != mets[fmt.Sprintf(`llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="%d"}`, i)] {
				t.Errorf("position %d: the three per-position series differ", i)
			}
			perPos += p
		}
		if perPos != mets["nanoserve_spec_accepted_tokens_total"] {
			t.Errorf("per-position accepted sum %v, total %v", perPos, mets["nanoserve_spec_accepted_tokens_total"])
		}
	}
	// A prompt that repeats itself: P, the model's continuation of P, P.
	prompt = prompt + complete(`,"speculative":false`) + " " + prompt
	off := complete(`,"speculative":false`)
	m0 := scrape(t, ts.url)
	agree(m0)
	if m0["nanoserve_spec_drafts_total"] != 0 {
		t.Errorf("speculative:false still speculated: %v drafts", m0["nanoserve_spec_drafts_total"])
	}
	on := complete("")
	if on != off {
		t.Errorf("speculative text %q, without %q", on, off)
	}
	m1 := scrape(t, ts.url)
	agree(m1)
	if m1["nanoserve_spec_drafts_total"] == 0 || m1["nanoserve_spec_accepted_tokens_total"] == 0 ||
		m1["nanoserve_spec_draft_tokens_total"] < m1["nanoserve_spec_accepted_tokens_total"] {
		t.Errorf("after a repetitive completion: %v drafts, %v proposed, %v accepted", m1["nanoserve_spec_drafts_total"],
			m1["nanoserve_spec_draft_tokens_total"], m1["nanoserve_spec_accepted_tokens_total"])
	}
}
