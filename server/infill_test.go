package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"nanoserve/engine"
	"nanoserve/gguf"
	"nanoserve/llamacpp"
	"nanoserve/model"
	"nanoserve/tokenizer"
	"nanoserve/train"
)

// The /infill tests need a model with FIM tokens: a tiny one trained here
// with FIM samples (a few seconds: 40 steps on this package's sources), once.
var (
	fimOnce sync.Once
	fimEng  *engine.Engine
	fimPath string // the model's file
	fimErr  error
)

func fimEngine(t testing.TB) *engine.Engine {
	t.Helper()
	fimOnce.Do(func() {
		dir, err := os.MkdirTemp("", "nanoserve-fim-test")
		if err != nil {
			fimErr = err
			return
		}
		out := filepath.Join(dir, "fim.gguf")
		src, _ := filepath.Abs("../train")
		_, err = train.Run(train.Options{Corpus: []string{src}, Exts: []string{".go"}, FIMRate: 0.5,
			Shape: train.Config{Dim: 32, Layers: 1, Heads: 2, Hidden: 64, Ctx: 128, Vocab: 400},
			Batch: 4, Steps: 40, LR: 3e-3, Seed: 1, Threads: 1, EvalTokens: 1024, FinalEvalTokens: 1024, Out: out})
		if err != nil {
			// A model this small may not pass the release gate; the
			// candidate serves the tests just as well.
			out += ".candidate"
		}
		fimPath = out
		m, err := model.Load(out, model.Options{Threads: 1})
		if err != nil {
			fimErr = err
			return
		}
		// A batch of 32 tokens leaves llama-server's budget room for extra
		// context in a context of 128: prefix ≤ 24 tokens, suffix ≤ 6 − the
		// prompt's, extra ≤ 128 − 32 − 2·n_predict.
		fimEng, fimErr = engine.New(m, engine.Options{MaxBatchTokens: 32})
	})
	if fimErr != nil {
		t.Fatal(fimErr)
	}
	return fimEng
}

func newFIMServer(t testing.TB, mod func(*Options)) *testServer {
	t.Helper()
	// n_batch 32 as the engine's step (fimEngine): the budget tests below
	// count with it.
	opts := Options{ModelNames: []string{"fim"}, InfillBatch: 32, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if mod != nil {
		mod(&opts)
	}
	s, err := New(fimEngine(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return newTS(s, hs.URL)
}

const (
	fimPrefix = "package train\n\nfunc add(a, b int) int {\n\t"
	fimSuffix = "\n}\n\nfunc sub(a, b int) int {\n\treturn a - b\n}\n"
)

// llamaVimBody is shaped as llama.vim sends /infill (its documented
// fields: id_slot, the FIM inputs with ring-buffer chunks as input_extra,
// n_indent, samplers, cache_prompt, both time limits, response_fields).
func llamaVimBody(stream bool) string {
	b, _ := json.Marshal(map[string]any{
		"id_slot": 0, "input_prefix": fimPrefix, "input_suffix": fimSuffix,
		"input_extra": []map[string]string{{"filename": "ngram.go", "text": "package train\n\nimport \"math\"\n"}},
		"prompt":      "return ", "n_predict": 24, "stop": []string{}, "n_indent": 1, "top_k": 40, "top_p": 0.90,
		"samplers": []string{"top_k", "top_p", "infill"}, "stream": stream, "cache_prompt": true,
		"t_max_prompt_ms": 500, "t_max_predict_ms": 1000, "temperature": 0,
		"response_fields": []string{"content", "timings/prompt_n", "timings/prompt_ms", "timings/prompt_per_token_ms",
			"timings/prompt_per_second", "timings/predicted_n", "timings/predicted_ms", "timings/predicted_per_token_ms",
			"timings/predicted_per_second", "truncated", "tokens_cached"},
	})
	return string(b)
}

// llamaVSCodeBody is shaped as llama.vscode sends /infill (input_extra
// chunks, prompt, n_predict, top_k/top_p, samplers, cache_prompt, time
// limits; no response_fields).
func llamaVSCodeBody(stream bool) string {
	b, _ := json.Marshal(map[string]any{
		"input_prefix": fimPrefix, "input_suffix": fimSuffix,
		"input_extra": []map[string]string{{"filename": "data.go", "text": "package train\n"}, {"text": "// no filename\n"}},
		"prompt":      "", "n_predict": 16, "top_k": 40, "top_p": 0.99, "stream": stream,
		"samplers": []string{"top_k", "top_p", "infill"}, "cache_prompt": true, "t_max_prompt_ms": 500, "t_max_predict_ms": 2500,
		"temperature": 0, "return_tokens": true,
	})
	return string(b)
}

// TestInfillLlamaVim: llama.vim's request gets exactly its response_fields
// back, unnested as "timings/..." keys.
func TestInfillLlamaVim(t *testing.T) {
	ts := newFIMServer(t, nil)
	code, _, body := ts.post(t, "/infill", llamaVimBody(false))
	if code != 200 {
		t.Fatalf("status %d: %s", code, body)
	}
	got := decode[map[string]any](t, body)
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"content", "timings/predicted_ms", "timings/predicted_n", "timings/predicted_per_second", "timings/predicted_per_token_ms",
		"timings/prompt_ms", "timings/prompt_n", "timings/prompt_per_second", "timings/prompt_per_token_ms", "tokens_cached", "truncated"}
	if !slices.Equal(keys, want) {
		t.Errorf("fields %v, want %v", keys, want)
	}
	if _, ok := got["content"].(string); !ok {
		t.Errorf("content %v", got["content"])
	}
	if n, _ := got["timings/prompt_n"].(float64); n < 10 {
		t.Errorf("timings/prompt_n %v", got["timings/prompt_n"])
	}
}

type infillWire struct {
	Content         string `json:"content"`
	Tokens          []int  `json:"tokens"`
	Stop            bool   `json:"stop"`
	StopType        string `json:"stop_type"`
	Prompt          string `json:"prompt"`
	TokensPredicted int    `json:"tokens_predicted"`
	TokensEvaluated int    `json:"tokens_evaluated"`
	Timings         *struct {
		PredictedN int `json:"predicted_n"`
		PromptN    int `json:"prompt_n"`
	} `json:"timings"`
}

// TestInfillLlamaVSCode: llama.vscode's request gets llama-server's whole
// object; the prompt is the PSM layout (extra files behind <|file_sep|>,
// then prefix + prompt, suffix, middle), or SPM with --spm-infill.
func TestInfillLlamaVSCode(t *testing.T) {
	for _, spm := range []bool{false, true} {
		ts := newFIMServer(t, func(o *Options) { o.SPMInfill = spm })
		code, _, body := ts.post(t, "/infill", llamaVSCodeBody(false))
		if code != 200 {
			t.Fatalf("status %d: %s", code, body)
		}
		r := decode[infillWire](t, body)
		if !r.Stop || (r.StopType != "eos" && r.StopType != "limit") || r.Timings == nil || r.Timings.PredictedN != r.TokensPredicted ||
			len(r.Tokens) != r.TokensPredicted || r.TokensPredicted < 1 {
			t.Errorf("spm %v: response %+v", spm, r)
		}
		tk := ts.tok
		ids, err := llamacpp.InfillPrompt(tk, llamacpp.InfillInput{Prefix: fimPrefix, Suffix: fimSuffix,
			Extra: []llamacpp.InfillChunk{{Filename: "data.go", Text: "package train\n"}, {Text: "// no filename\n"}}},
			llamacpp.InfillBudget{Batch: 32, Predict: 16, Ctx: 128}, spm)
		if err != nil {
			t.Fatal(err)
		}
		want := tk.DecodeWith(ids, tokenizer.DecodeOptions{Special: tokenizer.SpecialRender})
		if r.Prompt != want || r.TokensEvaluated != len(ids) {
			t.Errorf("spm %v: prompt (%d tokens)\n%q\nwant (%d tokens)\n%q", spm, r.TokensEvaluated, r.Prompt, len(ids), want)
		}
		first := "<|fim_prefix|>"
		if spm {
			first = "<|fim_suffix|>"
		}
		if !strings.Contains(r.Prompt, "<|file_sep|>data.go\n") || !strings.Contains(r.Prompt, "<|file_sep|>tmp\n") ||
			!strings.Contains(r.Prompt, "<|file_sep|>filename\n"+first) || !strings.HasSuffix(r.Prompt, "<|fim_middle|>") {
			t.Errorf("spm %v: prompt layout %q", spm, r.Prompt)
		}
	}
}

// TestInfillSuffixFirstModel: a model marked as trained suffix first
// (nanoserve.fim.suffix_first, as `train --fim-spm-rate` > 0.5 writes it)
// is prompted SPM without --spm-infill; the same file without the mark,
// PSM.
func TestInfillSuffixFirstModel(t *testing.T) {
	fimEngine(t)
	f, err := gguf.Open(fimPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, mark := range []bool{false, true} {
		w := gguf.NewWriter()
		if err := w.AddFile(f, llamacpp.KeyFIMSuffixFirst); err != nil {
			t.Fatal(err)
		}
		if mark {
			w.AddKV(llamacpp.KeyFIMSuffixFirst, gguf.Bool(true))
		}
		path := filepath.Join(t.TempDir(), "m.gguf")
		if err := w.WriteFile(path); err != nil {
			t.Fatal(err)
		}
		m, err := model.Load(path, model.Options{Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		if m.Tokenizer.FIM().SuffixFirst != mark {
			t.Fatalf("mark %v: tokenizer's SuffixFirst %v", mark, m.Tokenizer.FIM().SuffixFirst)
		}
		eng, err := engine.New(m, engine.Options{MaxBatchTokens: 32})
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(eng, Options{ModelNames: []string{"fim"}, InfillBatch: 32, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(s)
		ts := newTS(s, hs.URL)
		code, _, body := ts.post(t, "/infill", `{"input_prefix":"func f() {\n\t","input_suffix":"\n}\n","n_predict":2,"temperature":0}`)
		hs.Close()
		eng.Close()
		m.Close()
		if code != 200 {
			t.Fatalf("status %d: %s", code, body)
		}
		r := decode[infillWire](t, body)
		first := map[bool]string{false: "<|fim_prefix|>", true: "<|fim_suffix|>"}[mark]
		if !strings.Contains(r.Prompt, "<|file_sep|>filename\n"+first) {
			t.Errorf("suffix-first mark %v: prompt %q", mark, r.Prompt)
		}
	}
}

// infillEvents parses an /infill SSE stream: data events only, no [DONE]
// (llama-server's non-OpenAI stream), the last one stop: true.
func infillEvents(t *testing.T, body []byte) []infillWire {
	t.Helper()
	var out []infillWire
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			t.Fatalf("unexpected line %q", line)
		}
		out = append(out, decode[infillWire](t, []byte(data)))
	}
	if len(out) == 0 || !out[len(out)-1].Stop {
		t.Fatalf("stream does not end with a stop event: %s", body)
	}
	for _, e := range out[:len(out)-1] {
		if e.Stop {
			t.Fatalf("stop event before the end: %s", body)
		}
	}
	return out
}

// TestInfillStreamEqualsWhole: the streamed pieces (and their tokens)
// concatenate to the non-streamed content, with n_indent cutting or not.
func TestInfillStreamEqualsWhole(t *testing.T) {
	ts := newFIMServer(t, nil)
	for _, body := range []string{llamaVSCodeBody(false), strings.Replace(llamaVimBody(false), `"response_fields"`, `"return_tokens":true,"x"`, 1)} {
		code, _, b := ts.post(t, "/infill", body)
		if code != 200 {
			t.Fatalf("status %d: %s", code, b)
		}
		whole := decode[infillWire](t, b)
		code, h, sb := ts.post(t, "/infill", strings.Replace(body, `"stream":false`, `"stream":true`, 1))
		if code != 200 || h.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("status %d %s: %s", code, h.Get("Content-Type"), sb)
		}
		ev := infillEvents(t, sb)
		var text strings.Builder
		var toks []int
		for _, e := range ev {
			text.WriteString(e.Content)
			toks = append(toks, e.Tokens...)
		}
		last := ev[len(ev)-1]
		if text.String() != whole.Content || last.Content != "" || last.StopType != whole.StopType || last.TokensPredicted != whole.TokensPredicted {
			t.Errorf("stream %q (%s, %d tokens) != whole %q (%s, %d tokens)", text.String(), last.StopType, last.TokensPredicted,
				whole.Content, whole.StopType, whole.TokensPredicted)
		}
		if !slices.Equal(toks, whole.Tokens) {
			t.Errorf("streamed tokens %v != %v", toks, whole.Tokens)
		}
	}
}

// TestInfillNoFIM: a FIM request on a model without FIM tokens is a clear
// 400, on /infill and as /v1/completions' suffix; so are malformed fields.
func TestInfillNoFIM(t *testing.T) {
	ts := newTestServer(t, nil)
	code, _, body := ts.post(t, "/infill", `{"input_prefix":"a","input_suffix":"b"}`)
	if code != 400 || !strings.Contains(string(body), "infill is not supported by this model: the model has no fill-in-the-middle tokens (no prefix, suffix, middle token)") {
		t.Errorf("/infill: %d %s", code, body)
	}
	code, _, body = ts.post(t, "/v1/completions", `{"prompt":"a","suffix":"b","max_tokens":2}`)
	if code != 400 || !strings.Contains(string(body), `"param":"suffix"`) || !strings.Contains(string(body), "infill is not supported") {
		t.Errorf("completions suffix: %d %s", code, body)
	}
	fs := newFIMServer(t, nil)
	for body, want := range map[string]string{
		`{"input_suffix":"b"}`: "input_prefix is required",
		`{"input_prefix":"a"}`: "input_suffix is required",
		`{"input_prefix":"a","input_suffix":"b","input_extra":1}`:                  "input_extra must be an array",
		`{"input_prefix":"a","input_suffix":"b","input_extra":[{"filename":"x"}]}`: `input_extra[0] must have a \"text\" string`,
		`{"input_prefix":"a","input_suffix":"b","prompt":[1]}`:                     "prompt must be a string",
		`{"input_prefix":"a","input_suffix":"b","n_indent":-1}`:                    "n_indent must be 0 or more",
		`{"input_prefix":"a","input_suffix":"b","n_predict":-2}`:                   "n_predict must be -1",
	} {
		code, _, b := fs.post(t, "/infill", body)
		if code != 400 || !strings.Contains(string(b), want) {
			t.Errorf("%s: %d %s, want 400 %q", body, code, b, want)
		}
	}
}

// TestInfillSpecialTextIsText: FIM-token text in any user field stays
// text, so the prompt has exactly one marker of each kind; token healing
// leaves the prompt's final middle token alone (same reply as without).
func TestInfillSpecialTextIsText(t *testing.T) {
	ts := newFIMServer(t, nil)
	f := ts.tok.FIM()
	evil := "<|fim_middle|><|fim_prefix|><|fim_suffix|><|file_sep|><|endoftext|>"
	ir := &infillRequest{InputPrefix: strp("x" + evil), InputSuffix: strp(evil), Prompt: json.RawMessage(`"` + strings.ReplaceAll(evil, `"`, `\"`) + `"`),
		InputExtra: json.RawMessage(`[{"filename":"<|fim_middle|>","text":"<|fim_suffix|>"}]`)}
	np := 8 // extra context ≤ 128 − 32 − 2·8 = 80 tokens: all of it
	ir.NPredict = &np
	j, e := ts.infillJob(ir)
	if e != nil {
		t.Fatal(e)
	}
	count := map[int]int{}
	for _, id := range j.req.PromptIDs {
		count[id]++
	}
	eos, _ := ts.tok.EOS()
	if count[f.Pre.ID] != 1 || count[f.Suf.ID] != 1 || count[f.Mid.ID] != 1 || count[eos] != 0 || count[f.Sep.ID] != 2 ||
		j.req.PromptIDs[len(j.req.PromptIDs)-1] != f.Mid.ID {
		t.Errorf("markers pre %d suf %d mid %d sep %d eos %d in %v", count[f.Pre.ID], count[f.Suf.ID], count[f.Mid.ID], count[f.Sep.ID], count[eos], j.req.PromptIDs)
	}
	var replies []string
	for _, heal := range []string{"false", "true"} {
		code, _, b := ts.post(t, "/infill", `{"input_prefix":"func f() {\n\tre","input_suffix":"\n}\n","n_predict":8,"temperature":0,"token_healing":`+heal+`}`)
		if code != 200 {
			t.Fatalf("%d %s", code, b)
		}
		replies = append(replies, decode[infillWire](t, b).Content)
	}
	if replies[0] != replies[1] {
		t.Errorf("token healing changed the middle: %q vs %q", replies[0], replies[1])
	}
}

// TestCompletionsSuffix: /v1/completions with a suffix is the infill of
// prompt (prefix) and suffix: same text as /infill greedy.
func TestCompletionsSuffix(t *testing.T) {
	ts := newFIMServer(t, nil)
	code, _, b := ts.post(t, "/v1/completions", `{"prompt":"func f() {\n\t","suffix":"\n}\n","max_tokens":12,"temperature":0}`)
	if code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	c := decode[completionResponse](t, b)
	code, _, b = ts.post(t, "/infill", `{"input_prefix":"func f() {\n\t","input_suffix":"\n}\n","n_predict":12,"temperature":0}`)
	if code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	if r := decode[infillWire](t, b); len(c.Choices) != 1 || c.Choices[0].Text != r.Content || r.Content == "" {
		t.Errorf("completions %q, infill %q", c.Choices[0].Text, r.Content)
	}
	// Ollama's generate with suffix: the same middle.
	code, _, b = ts.post(t, "/api/generate", `{"prompt":"func f() {\n\t","suffix":"\n}\n","system":"ignored","stream":false,"options":{"num_predict":12,"temperature":0}}`)
	if o := decode[ollamaGenerateResponse](t, b); code != 200 || o.Response != c.Choices[0].Text {
		t.Errorf("ollama generate with suffix: %d %q, want %q", code, o.Response, c.Choices[0].Text)
	}
	code, _, b = ts.post(t, "/v1/completions", `{"prompt":["a","b"],"suffix":"x","max_tokens":2}`)
	if code != 400 || !strings.Contains(string(b), "single string prompt") {
		t.Errorf("two prompts with a suffix: %d %s", code, b)
	}
}

// TestInfillBudget: a prefix, suffix and extra context far longer than the
// context are cut to llama-server's budget and the request runs.
func TestInfillBudget(t *testing.T) {
	ts := newFIMServer(t, nil)
	long := strings.Repeat("x := 1\n", 400)
	body, _ := json.Marshal(map[string]any{"input_prefix": long + "end", "input_suffix": "start" + long, "n_predict": 16, "temperature": 0,
		"input_extra": []map[string]string{{"filename": "a.go", "text": long}}})
	code, _, b := ts.post(t, "/infill", string(body))
	if code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	r := decode[infillWire](t, b)
	// ctx 128, batch 32: prefix ≤ 24, suffix ≤ 32/4 − 2 = 6, extra ≤ 128 −
	// 32 − 2·16 = 64, its end (the header and the file name cut away).
	if r.TokensEvaluated > 24+6+64+3 || !strings.Contains(r.Prompt, "end<|fim_suffix|>start") || strings.Contains(r.Prompt, "<|repo_name|>") ||
		!strings.Contains(r.Prompt, "x := 1\n<|file_sep|>filename\n<|fim_prefix|>") {
		t.Errorf("%d prompt tokens: %q", r.TokensEvaluated, r.Prompt)
	}
}

// TestIndentCut: n_indent ends the middle before the first later line
// indented less than n (a blank line too, as llama-server), keeping that
// line's indentation; the output is the same however the text arrives in
// pieces.
func TestIndentCut(t *testing.T) {
	for _, c := range []struct {
		n          int
		text, want string
		cut        bool
	}{
		{0, "a\nb\n", "a\nb\n", false},
		{1, "x := 1\n\ty := 2\n}\nfunc g() {", "x := 1\n\ty := 2\n", true},
		{2, "\ta\n\t\tb\n\tc\n", "\ta\n\t\tb\n\t", true},
		{1, "first\n\n\tafter blank", "first\n", true},
		{1, "a\n\t\t", "a\n\t\t", false},
		{4, "    ok\n    ok\n", "    ok\n    ok\n", false},
	} {
		for split := 1; split <= len(c.text); split++ {
			ic := &indentCut{n: c.n}
			var out strings.Builder
			for i := 0; i < len(c.text); i += split {
				out.WriteString(ic.push(c.text[i:min(i+split, len(c.text))]))
				// Nothing shown may be taken back: what is out is a prefix of the answer.
				if !strings.HasPrefix(c.want, out.String()) {
					t.Fatalf("n %d %q in pieces of %d: showed %q, not a prefix of %q", c.n, c.text, split, out.String(), c.want)
				}
			}
			out.WriteString(ic.flush())
			if out.String() != c.want || ic.cut != c.cut {
				t.Errorf("n %d %q in pieces of %d: %q (cut %v), want %q (cut %v)", c.n, c.text, split, out.String(), ic.cut, c.want, c.cut)
			}
		}
	}
}

// FuzzInfillRequest feeds arbitrary bodies to /infill's decoding and
// validation, everything before the engine: never a panic; a refusal is a
// 4xx with a message; an accepted request has a valid policy and a prompt
// that fits the context and ends with the middle token.
//
//	go test ./server -run '^$' -fuzz FuzzInfillRequest -fuzztime 5m -parallel 1
func FuzzInfillRequest(f *testing.F) {
	for _, seed := range []string{
		llamaVimBody(false), llamaVSCodeBody(true),
		`{"input_prefix":"a","input_suffix":"b","input_extra":[{"filename":null,"text":"x"}],"n_predict":-1}`,
		`{"input_prefix":"a","input_suffix":"b","input_extra":[{"text":1}],"prompt":null,"n_indent":3,"t_max_predict_ms":-1}`,
		`{"input_prefix":"<|fim_middle|>","input_suffix":"","max_tokens":5,"repeat_penalty":1.1,"response_fields":["timings/x"]}`,
		`{"input_prefix":1}`, `[]`, `{"input_prefix":"a","input_suffix":"b","n":2,"temperature":-1}`,
	} {
		f.Add([]byte(seed))
	}
	ts := newFIMServer(f, nil)
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest("POST", "/infill", bytes.NewReader(body))
		w := httptest.NewRecorder()
		var ir infillRequest
		e := ts.decodeJSON(w, r, &ir)
		var j *infillJob
		if e == nil {
			j, e = ts.infillJob(&ir)
		}
		if e != nil {
			if e.status < 400 || e.status > 499 || e.Message == "" {
				t.Fatalf("status %d message %q", e.status, e.Message)
			}
			return
		}
		ids := j.req.PromptIDs
		if err := j.req.Policy.Validate(); err != nil || len(ids) == 0 || len(ids) > ts.eng.CtxSize() || ids[len(ids)-1] != ts.tok.FIM().Mid.ID {
			t.Fatalf("accepted: policy %v, %d prompt tokens", err, len(ids))
		}
	})
}
