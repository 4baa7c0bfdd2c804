package sample

import (
	"encoding/json"
	"errors"
	"nanoserve/internal/testshared"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func ptr[T any](v T) *T { return &v }

func TestDefaultsValid(t *testing.T) {
	for _, p := range []Policy{Defaults(), Greedy()} {
		if err := p.Validate(); err != nil {
			t.Errorf("%+v: %v", p, err)
		}
	}
	var zero Policy
	if err := zero.Validate(); err == nil {
		t.Error("zero Policy validated; want an error (top_p 0)")
	}
}

func TestValidateNamesField(t *testing.T) {
	cases := []struct {
		field string
		edit  func(*Policy)
		msg   string // exact message when non-empty
	}{
		{"version", func(p *Policy) { p.Version = 99 }, ""},
		{"temperature", func(p *Policy) { p.Temperature = -1 }, "sample: temperature must be a finite number >= 0, got -1"},
		{"temperature", func(p *Policy) { p.Temperature = float32(inf()) }, ""},
		{"top_k", func(p *Policy) { p.TopK = -1 }, "sample: top_k must be >= 0 (0 disables it), got -1"},
		{"top_p", func(p *Policy) { p.TopP = 1.5 }, "sample: top_p must be in (0, 1], got 1.5"},
		{"top_p", func(p *Policy) { p.TopP = 0 }, ""},
		{"top_p", func(p *Policy) { p.TopP = float32(nan()) }, ""},
		{"min_p", func(p *Policy) { p.MinP = -0.1 }, ""},
		{"min_p", func(p *Policy) { p.MinP = 1.1 }, ""},
		{"repetition_penalty", func(p *Policy) { p.RepetitionPenalty = 0 }, ""},
		{"repeat_last_n", func(p *Policy) { p.RepeatLastN = -2 }, ""},
		{"presence_penalty", func(p *Policy) { p.PresencePenalty = 2.5 }, ""},
		{"frequency_penalty", func(p *Policy) { p.FrequencyPenalty = -3 }, ""},
		{"logit_bias[7]", func(p *Policy) { p.LogitBias = map[int]float32{3: 1, 7: 101, 9: 200} }, "sample: logit_bias[7] must be in [-100, 100], got 101"},
		{"logit_bias[-1]", func(p *Policy) { p.LogitBias = map[int]float32{-1: 1} }, ""},
		{"stop[1]", func(p *Policy) { p.Stop = StopStrings{"a", ""} }, "sample: stop[1] is empty"},
		{"stop_token_ids[0]", func(p *Policy) { p.StopTokenIDs = []int{-5} }, ""},
		{"max_tokens", func(p *Policy) { p.MaxTokens = -1 }, ""},
		{"logprobs", func(p *Policy) { p.Logprobs = ptr(21) }, ""},
		{"logprobs", func(p *Policy) { p.Logprobs = ptr(-1) }, ""},
	}
	for _, c := range cases {
		p := Defaults()
		c.edit(&p)
		err := p.Validate()
		if err == nil {
			t.Errorf("%s: no error", c.field)
			continue
		}
		if !errors.Is(err, ErrInvalidPolicy) {
			t.Errorf("%s: %v does not match ErrInvalidPolicy", c.field, err)
		}
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("error %q does not name field %q", err, c.field)
		}
		if !strings.HasPrefix(err.Error(), "sample: "+c.field+" ") {
			t.Errorf("error %q does not start with the field name", err)
		}
		if c.msg != "" && err.Error() != c.msg {
			t.Errorf("error %q, want %q", err, c.msg)
		}
	}
	// Valid edge values.
	for _, edit := range []func(*Policy){
		func(p *Policy) { p.TopP = 1; p.MinP = 1; p.RepeatLastN = -1 },
		func(p *Policy) { p.TopP = 1e-6; p.Logprobs = ptr(0) },
		func(p *Policy) { p.Logprobs = ptr(MaxLogprobs); p.PresencePenalty = -2; p.FrequencyPenalty = 2 },
		func(p *Policy) { p.LogitBias = map[int]float32{0: -100, 5: 100}; p.Version = 0 },
	} {
		p := Defaults()
		edit(&p)
		if err := p.Validate(); err != nil {
			t.Errorf("%+v: %v", p, err)
		}
	}
}

func TestNewChecksVocabulary(t *testing.T) {
	p := Defaults()
	p.LogitBias = map[int]float32{10: 1}
	if _, err := New(p, 10); err == nil || !strings.Contains(err.Error(), "logit_bias[10]") {
		t.Errorf("bias outside vocab: %v", err)
	}
	p = Defaults()
	p.StopTokenIDs = []int{1, 10}
	if _, err := New(p, 10); err == nil || !strings.Contains(err.Error(), "stop_token_ids[1]") {
		t.Errorf("stop id outside vocab: %v", err)
	}
	if _, err := New(Defaults(), 0); err == nil {
		t.Error("vocab 0 accepted")
	}
	p = Defaults()
	p.TopP = 2
	if _, err := New(p, 10); !errors.Is(err, ErrInvalidPolicy) {
		t.Errorf("New with invalid policy: %v", err)
	}
}

func TestPolicyJSONRoundTrip(t *testing.T) {
	p := Policy{
		Version: Version, Temperature: 0.7, TopK: 40, TopP: 0.95, MinP: 0.05,
		RepetitionPenalty: 1.1, RepeatLastN: 64, PresencePenalty: 0.5, FrequencyPenalty: -0.25,
		LogitBias: map[int]float32{50256: -100, 7: 2.5}, Seed: ptr(uint64(1<<63 + 12345)),
		Stop: StopStrings{"\n\n", "User:"}, StopTokenIDs: []int{2, 128009}, MaxTokens: 256,
		IgnoreEOS: true, Logprobs: ptr(5),
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"version":1,"temperature":0.7,"top_k":40,"top_p":0.95,"min_p":0.05,"repetition_penalty":1.1,"repeat_last_n":64,"presence_penalty":0.5,"frequency_penalty":-0.25,"logit_bias":{"50256":-100,"7":2.5},"seed":9223372036854788153,"stop":["\n\n","User:"],"stop_token_ids":[2,128009],"max_tokens":256,"ignore_eos":true,"logprobs":5}`
	if string(b) != want {
		t.Errorf("JSON\n got %s\nwant %s", b, want)
	}
	var q Policy
	if err := json.Unmarshal(b, &q); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, q) {
		t.Errorf("round trip\n got %+v\nwant %+v", q, p)
	}
	// Parse: absent keys keep the base, a bare stop string is a list of one.
	r, err := Parse([]byte(`{"temperature": 0, "stop": "###", "logit_bias": {"3": 1}}`), p)
	if err != nil {
		t.Fatal(err)
	}
	if r.Temperature != 0 || r.TopK != 40 || !reflect.DeepEqual(r.Stop, StopStrings{"###"}) || r.LogitBias[3] != 1 || r.LogitBias[7] != 2.5 {
		t.Errorf("Parse over base: %+v", r)
	}
	if _, ok := p.LogitBias[3]; ok {
		t.Error("Parse wrote into the base policy's logit_bias map")
	}
	if _, err := Parse([]byte(`{"temprature": 1}`), Defaults()); err == nil {
		t.Error("unknown key accepted")
	}
	if _, err := Parse([]byte(`{"top_p": 0}`), Defaults()); !errors.Is(err, ErrInvalidPolicy) {
		t.Errorf("invalid value: %v", err)
	}
	if _, err := Parse([]byte(`{"stop": 5}`), Defaults()); err == nil {
		t.Error("stop 5 accepted")
	}
	// An engine request may embed Policy: Policy must not hijack its decoding.
	var req struct {
		Prompt string `json:"prompt"`
		Policy
	}
	req.Policy = Defaults()
	if err := json.Unmarshal([]byte(`{"prompt":"hi","top_k":3,"stop":"x"}`), &req); err != nil {
		t.Fatal(err)
	}
	if req.Prompt != "hi" || req.TopK != 3 || req.Stop[0] != "x" || req.TopP != 1 {
		t.Errorf("embedded decode: %+v", req)
	}
}

func TestStopsOn(t *testing.T) {
	p := Defaults()
	p.StopTokenIDs = []int{42}
	if !p.StopsOn(2, true) || !p.StopsOn(42, false) || p.StopsOn(3, false) {
		t.Error("StopsOn without ignore_eos")
	}
	p.IgnoreEOS = true
	if p.StopsOn(2, true) || !p.StopsOn(42, false) {
		t.Error("StopsOn with ignore_eos")
	}
}

func TestFromGenerationConfig(t *testing.T) {
	cases := []struct {
		json string
		want func(*Policy)
		eos  []int
	}{
		{`{"bos_token_id": 1, "eos_token_id": 2}`, func(*Policy) {}, []int{2}},
		{`{"do_sample": true, "temperature": 0.6, "top_p": 0.9, "eos_token_id": [128001, 128008, 128009], "transformers_version": "4.45.0"}`,
			func(p *Policy) { p.Temperature = 0.6; p.TopP = 0.9 }, []int{128001, 128008, 128009}},
		{`{"temperature": 0.7, "top_k": 20, "top_p": 0.8, "min_p": 0, "repetition_penalty": 1.05, "max_new_tokens": 512, "eos_token_id": null}`,
			func(p *Policy) {
				p.Temperature = 0.7
				p.TopK = 20
				p.TopP = 0.8
				p.RepetitionPenalty = 1.05
				p.MaxTokens = 512
			}, nil},
		{`{"do_sample": false, "temperature": 0.9}`, func(p *Policy) { p.Temperature = 0 }, nil},
		{`{}`, func(*Policy) {}, nil},
	}
	for _, c := range cases {
		p, eos, err := FromGenerationConfig([]byte(c.json))
		if err != nil {
			t.Errorf("%s: %v", c.json, err)
			continue
		}
		want := Defaults()
		c.want(&want)
		if !reflect.DeepEqual(p, want) || !reflect.DeepEqual(eos, c.eos) {
			t.Errorf("%s:\n got %+v eos %v\nwant %+v eos %v", c.json, p, eos, want, c.eos)
		}
	}
	for _, c := range []struct{ json, in string }{
		{`{"top_p": 1.5}`, "sample: generation_config.json: top_p must be in (0, 1], got 1.5"},
		{`{"max_new_tokens": -1}`, "max_new_tokens"},
		{`{"eos_token_id": "x"}`, "eos_token_id"},
		{`{"eos_token_id": [-1]}`, "eos_token_id"},
		{`{"top_k": "x"}`, "top_k"},
		{`[`, "generation_config.json"},
	} {
		_, _, err := FromGenerationConfig([]byte(c.json))
		if err == nil || !strings.Contains(err.Error(), c.in) {
			t.Errorf("%s: error %v, want it to mention %q", c.json, err, c.in)
		}
	}
}

// The shared test models' generation_config.json files parse.
func TestFromGenerationConfigShared(t *testing.T) {
	want := map[string][]int{"llama_gqa": {2}, "llama_k": {2}, "qwen2": {151643}, "gpt2": {50256}}
	dir := filepath.Join(testshared.Dir(t), "testdata", "gguf")
	for name, eos := range want {
		b, err := os.ReadFile(filepath.Join(dir, name, "hf", "generation_config.json"))
		if err != nil {
			t.Fatal(err)
		}
		p, got, err := FromGenerationConfig(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, eos) || !reflect.DeepEqual(p, Defaults()) {
			t.Errorf("%s: policy %+v eos %v, want defaults and %v", name, p, got, eos)
		}
	}
}
