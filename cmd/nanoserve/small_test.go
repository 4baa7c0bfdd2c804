package main

import (
	"encoding/json"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"nanoserve/defaultmodel"
	"nanoserve/inspect"
	"nanoserve/internal/testshared"
	"nanoserve/model"
)

// captureStdout runs f with os.Stdout redirected and returns what it wrote.
func captureStdout(t *testing.T, f func() error) (string, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	out := make(chan string)
	go func() { b, _ := io.ReadAll(r); out <- string(b) }()
	ferr := f()
	w.Close()
	os.Stdout = old
	return <-out, ferr
}

func parseIDs(t *testing.T, s string) []int {
	t.Helper()
	var ids []int
	for _, f := range strings.Fields(s) {
		id, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("bad id %q in %q", f, s)
		}
		ids = append(ids, id)
	}
	return ids
}

// TestInspectBuiltin: inspect without MODEL describes the built-in model.
func TestInspectBuiltin(t *testing.T) {
	want, err := defaultmodel.Path()
	if err != nil {
		t.Skip(err)
	}
	out, err := captureStdout(t, func() error { return runInspect([]string{"--json", "--no-hash"}) })
	if err != nil {
		t.Fatal(err)
	}
	var info inspect.Info
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if info.Path != want || info.Architecture != "llama" || info.Training == nil || info.Tokenizer == nil {
		t.Errorf("inspect: path %s (want %s), arch %s, training %v", info.Path, want, info.Architecture, info.Training != nil)
	}
	if err := runInspect([]string{"a", "b"}); err == nil {
		t.Error("two models accepted")
	}
}

// TestTokenizeDefaults: tokenize/detokenize use the built-in model's
// tokenizer without flags, and --model's tokenizer when given.
func TestTokenizeDefaults(t *testing.T) {
	p, err := defaultmodel.Path()
	if err != nil {
		t.Skip(err)
	}
	const text = "func main() {\n\tfmt.Println(\"hi\")\n}"
	builtin, err := model.LoadTokenizer(p)
	if err != nil {
		t.Fatal(err)
	}
	out, err := captureStdout(t, func() error { return runTokenize([]string{text}) })
	if err != nil {
		t.Fatal(err)
	}
	ids := parseIDs(t, out)
	if want := builtin.Encode(text, false); !slices.Equal(ids, want) {
		t.Errorf("tokenize: %v, want the built-in tokenizer's %v", ids, want)
	}
	args := []string{}
	for _, id := range ids {
		args = append(args, strconv.Itoa(id))
	}
	back, err := captureStdout(t, func() error { return runDetokenize(args) })
	if err != nil || strings.TrimSuffix(back, "\n") != text {
		t.Errorf("detokenize: %q, %v; want %q", back, err, text)
	}

	qwen := testshared.Path(t, "testdata/gguf/qwen2/qwen2-F16.gguf")
	qtok, err := model.LoadTokenizer(qwen)
	if err != nil {
		t.Fatal(err)
	}
	out, err = captureStdout(t, func() error { return runTokenize([]string{"--model", qwen, text}) })
	if err != nil {
		t.Fatal(err)
	}
	if want := qtok.Encode(text, false); !slices.Equal(parseIDs(t, out), want) {
		t.Errorf("tokenize --model qwen: %s, want %v", out, want)
	}
	if slices.Equal(qtok.Encode(text, false), ids) {
		t.Fatal("the two tokenizers agree: the test cannot tell them apart")
	}
	_, err = captureStdout(t, func() error {
		return runTokenize([]string{"--model", testshared.Path(t, "models/llama2c/aidreams260K.bin"), "x"})
	})
	if err == nil || !strings.Contains(err.Error(), "--tokenizer") {
		t.Errorf("llama2.c model without --tokenizer: %v", err)
	}
}

// TestChatBuiltin: chat with the built-in model explains it completes code
// and points at generate.
func TestChatBuiltin(t *testing.T) {
	err := runChat(nil)
	if err == nil || !strings.Contains(err.Error(), "completion model") || !strings.Contains(err.Error(), "nanoserve generate") {
		t.Errorf("chat with the built-in model: %v", err)
	}
}
