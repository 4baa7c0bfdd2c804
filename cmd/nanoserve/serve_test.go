package main

import (
	"maps"
	"runtime"
	"strings"
	"testing"

	"nanoserve/engine"
	"nanoserve/internal/testshared"
)

// TestServeFlagValidation: numeric flags out of range are refused before
// anything loads, naming the flag.
func TestServeFlagValidation(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--threads", "-3"}, "--threads -3"},
		{[]string{"--threads", "0"}, "--threads 0"},
		{[]string{"--max-seqs", "-1"}, "--max-seqs -1"},
		{[]string{"--max-body", "0"}, "--max-body 0"},
		{[]string{"--max-queue", "-5"}, "--max-queue -5"},
		{[]string{"--kv-cache-tokens", "-1"}, "--kv-cache-tokens -1"},
		{[]string{"--port", "70000"}, "--port 70000"},
		{[]string{"--ctx", "-1"}, "--ctx -1"},
		{[]string{"--drain", "-1s"}, "--drain -1s"},
		{[]string{"--body-timeout", "0s"}, "--body-timeout 0s"},
		{[]string{"--request-timeout", "-1m"}, "--request-timeout -1m0s"},
		{[]string{"--kv-cache-memory", "lots"}, "--kv-cache-memory \"lots\""},
		{[]string{"--kv-cache-type", "q4_0"}, "--kv-cache-type q4_0"},
	} {
		// An unusable host makes serve fail (not serve forever) should a
		// check let the flag through.
		err := runServe(append(c.args, "--host", "256.0.0.1"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("serve %v: err %v, want one naming %q", c.args, err, c.want)
		}
	}
}

// TestLongContextNeedsFlag: a context beyond the model's trained length is
// refused without --allow-long-context (the built-in model: 256 positions).
func TestLongContextNeedsFlag(t *testing.T) {
	mf := modelFlags{threads: 1, ctxSize: 100000}
	_, err := mf.load()
	if err == nil || !strings.Contains(err.Error(), "--ctx 100000 exceeds the 1024 positions") || !strings.Contains(err.Error(), "--allow-long-context") {
		t.Fatalf("err %v", err)
	}
	mf.longCtx, mf.ctxSize = true, 1200
	m, err := mf.load()
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
}

// TestVersion: the version line names the release, the commit and the Go
// version; --version and version print it.
func TestVersion(t *testing.T) {
	v := versionString()
	for _, want := range []string{"nanoserve dev", "(commit ", runtime.Version(), runtime.GOOS + "/" + runtime.GOARCH} {
		if !strings.Contains(v, want) {
			t.Errorf("version %q lacks %q", v, want)
		}
	}
	commit = "abc123"
	defer func() { commit = "" }()
	if v := versionString(); !strings.Contains(v, "(commit abc123") {
		t.Errorf("ldflags commit not shown: %q", v)
	}
	if _, ok := commands["version"]; !ok {
		t.Error("no version command")
	}
}

// TestPolicyFlagValidation: generate's and chat's sampling flags below
// their "off" value are refused, naming the flag.
func TestPolicyFlagValidation(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--logprobs", "-7"}, "--logprobs -7"},
		{[]string{"--seed", "-5"}, "--seed -5"},
		{[]string{"--max-tokens", "-5"}, "max_tokens"},
		{[]string{"--top-k", "-3"}, "top_k"},
	} {
		fs := newFlags("generate")
		var pf policyFlags
		pf.register(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		if _, err := pf.policy(fs, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want one naming %q", c.args, err, c.want)
		}
	}
}

// TestBenchFlagValidation: bench refuses counts below 1 before any work.
func TestBenchFlagValidation(t *testing.T) {
	for _, c := range [][]string{{"-r", "0"}, {"--threads", "-2"}, {"--batch", "0"}, {"--sweep-n", "0"}, {"--bw-mib", "-1"}} {
		err := runBench(append([]string{"--synthetic", "no-such-shape"}, c...))
		if err == nil || !strings.Contains(err.Error(), c[0]+" "+c[1]) {
			t.Errorf("bench %v: err %v", c, err)
		}
	}
}

// TestTrainConvertFlagValidation: train and convert name a flag no run can
// use before they read any input.
func TestTrainConvertFlagValidation(t *testing.T) {
	for _, c := range [][]string{
		{"--dim", "-4"}, {"--layers", "0"}, {"--heads", "0"}, {"--kv-heads", "-1"}, {"--ffn", "0"},
		{"--ctx", "0"}, {"--vocab", "-1"}, {"--batch", "0"}, {"--steps", "-10"}, {"--threads", "-3"},
		{"--warmup", "-1"}, {"--eval-every", "0"}, {"--lr", "0"}, {"--min-lr", "1"}, {"--weight-decay", "-0.1"},
		{"--clip", "-1"}, {"--held-out", "1"}, {"--rope-theta", "0"}, {"--checkpoint-every", "0"},
	} {
		err := runTrain(append([]string{"--corpus", "/no/such/corpus", "--out", "/no/such/out.gguf"}, c...))
		if err == nil || !strings.Contains(err.Error(), c[0]+" "+c[1]) {
			t.Errorf("train %v: err %v, want one naming %s", c, err, c[0])
		}
	}
	err := runConvert([]string{"--threads", "-2", "/no/such/in.gguf", "/no/such/out.gguf"})
	if err == nil || !strings.Contains(err.Error(), "--threads -2") {
		t.Errorf("convert --threads -2: err %v", err)
	}
}

func TestServeToolFormatFlag(t *testing.T) {
	err := runServe([]string{"--tool-call-format", "gpt"})
	if err == nil || !strings.Contains(err.Error(), "--tool-call-format") || !strings.Contains(err.Error(), "hermes") {
		t.Errorf("bad --tool-call-format: %v", err)
	}
}

// TestSpecFlags: serve and generate refuse bad speculation flags with an
// error naming the flag, and a draft model of another vocabulary with the
// engine's ErrDraftVocab; good flags build the options.
func TestSpecFlags(t *testing.T) {
	sh := testshared.Dir(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--spec", "eagle"}, "--spec eagle"},
		{[]string{"--spec", "ngram", "--spec-k", "0"}, "--spec-k 0"},
		{[]string{"--spec", "ngram", "--spec-k", "65"}, "--spec-k 65"},
		{[]string{"--spec", "draft"}, "needs --draft-model"},
		{[]string{"--spec", "ngram", "--draft-model", "x.gguf"}, "only with --spec draft"},
		{[]string{"--spec", "draft", "--draft-model", sh + "/testdata/gguf/qwen2/qwen2-F16.gguf"}, "vocabulary differs"},
	} {
		// Every case fails before serving: the flag checks, or the draft
		// model's load (after serve binds its port, a free one).
		err := runServe(append(c.args, "--port", "0"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("serve %v: err %v, want one naming %q", c.args, err, c.want)
		}
		if err := runGenerate(append(c.args, "--max-tokens", "1", "x")); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("generate %v: err %v, want one naming %q", c.args, err, c.want)
		}
	}
	var sf specFlags
	fs := newFlags("generate")
	sf.register(fs)
	if err := fs.Parse([]string{"--spec", "ngram", "--spec-k", "5", "--spec-fixed-k"}); err != nil {
		t.Fatal(err)
	}
	o, done, err := sf.options(&modelFlags{}, nil, 0)
	done()
	if err != nil || o.Mode != engine.SpecNgram || o.K != 5 || !o.Fixed {
		t.Errorf("options %+v, %v", o, err)
	}
}

// TestKVCacheType: --kv-cache-type reaches the engine's cache (bytes per
// position: f16 half of f32, q8_0 34 per 32 values on the built-in model's
// 2·6 layers × 64 kv_dim), and q8_0 on a model whose head dim is not
// whole 32-value blocks is refused naming the flag and the reason.
func TestKVCacheType(t *testing.T) {
	for typ, perTok := range map[string]int64{"f32": 2 * 6 * 64 * 4, "f16": 2 * 6 * 64 * 2, "q8_0": 2 * 6 * 2 * 34, "": 2 * 6 * 64 * 2} {
		mf := modelFlags{threads: 1, kvType: typ}
		m, err := mf.load()
		if err != nil {
			t.Fatal(err)
		}
		if got := m.KVBytesPerToken(mf.kv); got != perTok {
			t.Errorf("--kv-cache-type %q: %d bytes per token, want %d", typ, got, perTok)
		}
		eng, err := engine.New(m, engine.Options{CtxSize: 32, KVType: mf.kv})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := eng.CacheBytes(), perTok*int64(eng.Options().CacheTokens); got != want {
			t.Errorf("--kv-cache-type %q: engine cache %d bytes, want %d", typ, got, want)
		}
		eng.Close()
		if typ == "" { // inspect lists every type's bytes
			info, err := describe("", m, false)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]int64{"f32": 3072, "f16": 1536, "q8_0": 816}
			if !maps.Equal(info.KVBytesByType, want) || info.KVBytesPerTok != 1536 {
				t.Errorf("inspect: %d bytes per token, by type %v; want 1536, %v", info.KVBytesPerTok, info.KVBytesByType, want)
			}
		}
		m.Close()
	}
	mf := modelFlags{threads: 1, kvType: "q8_0", model: testshared.Path(t, "testdata/gguf-archs/gemma2/gemma2-F16.gguf")}
	if _, err := mf.load(); err == nil || !strings.Contains(err.Error(), "--kv-cache-type q8_0") || !strings.Contains(err.Error(), "head_dim") {
		t.Errorf("q8_0 on head dim 16: %v", err)
	}
}
