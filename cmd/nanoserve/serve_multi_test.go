package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"nanoserve/defaultmodel"
	"nanoserve/internal/fakehub"
	"nanoserve/internal/testshared"
)

// TestServeMulti runs `serve --model BUILTIN --model GGUF --alias ...`:
// /v1/models lists both with manifests (the GGUF's weights_sha256 is the
// file's sha256, quantization Q4_K or the like), each name form reaches
// its model, and the answers equal each model served alone.
func TestServeMulti(t *testing.T) {
	builtin, err := builtinModelPath()
	if err != nil {
		t.Skip("no built-in model in this build: " + err.Error())
	}
	gguf := testshared.Path(t, "testdata/gguf/llama_gqa/llama_gqa-Q4_K_M.gguf")
	bname := filepath.Base(builtin)
	wantA, wantB := complete(t, builtin, bname), complete(t, gguf, "llama_gqa-Q4_K_M.gguf")
	if wantA == wantB {
		t.Fatal("the two models answer alike: the test could not tell them apart")
	}

	dir := t.TempDir() // --models-dir: a model loaded on demand, described in the background
	if err := os.Symlink(testshared.Path(t, "testdata/gguf/qwen2/qwen2-F16.gguf"), filepath.Join(dir, "qwen2-F16.gguf")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, cancel, []string{"--model", builtin, "--model", gguf, "--alias", "gqa=llama_gqa-Q4_K_M", "--models-dir", dir,
			"--port", "0", "--threads", "1", "--max-seqs", "2", "--models-max", "2"}, func(a net.Addr) { addrc <- a })
	}()
	var addr net.Addr
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	base := "http://" + addr.String()
	c := &http.Client{Timeout: 60 * time.Second}
	ask := func(name string) string {
		body, _ := json.Marshal(map[string]any{"model": name, "prompt": "func main() {", "max_tokens": 12, "temperature": 0})
		resp, err := c.Post(base+"/v1/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var out struct{ Choices []struct{ Text string } }
		if resp.StatusCode != 200 || json.Unmarshal(b, &out) != nil || len(out.Choices) != 1 {
			t.Fatalf("%q: HTTP %d %s", name, resp.StatusCode, b)
		}
		return out.Choices[0].Text
	}
	for name, want := range map[string]string{"": wantA, "llama_gqa-Q4_K_M.gguf": wantB, "llama_gqa-Q4_K_M": wantB,
		"gqa": wantB, "gqa:latest": wantB, strings.TrimSuffix(bname, ".gguf") + ":latest": wantA} {
		if got := ask(name); got != want {
			t.Errorf("model %q: %q, want %q", name, got, want)
		}
	}

	var list struct {
		Data []struct {
			ID       string
			Loaded   bool
			Aliases  []string
			Manifest *struct {
				Architecture   string `json:"architecture"`
				Quantization   string `json:"quantization"`
				WeightsSHA256  string `json:"weights_sha256"`
				TemplateSHA256 string `json:"template_sha256"`
				Tokenizer      string `json:"tokenizer"`
				ContextLength  int    `json:"context_length"`
			}
		}
	}
	var b []byte
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := c.Get(base + "/v1/models")
		if err != nil {
			t.Fatal(err)
		}
		b, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err := json.Unmarshal(b, &list); err != nil || len(list.Data) != 3 {
			t.Fatalf("/v1/models: %s", b)
		}
		if list.Data[2].Manifest != nil || time.Now().After(deadline) {
			break
		}
	}
	if q := list.Data[2]; q.ID != "qwen2-F16.gguf" || q.Loaded || q.Manifest == nil || q.Manifest.Architecture != "qwen2" || q.Manifest.Quantization != "F16" {
		t.Errorf("the --models-dir model, not loaded: %s", b)
	}
	data, err := os.ReadFile(gguf)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	m := list.Data[1].Manifest
	if list.Data[1].ID != "llama_gqa-Q4_K_M.gguf" || m == nil || m.WeightsSHA256 != hex.EncodeToString(sum[:]) || m.Architecture != "llama" ||
		m.Quantization != "Q4_K_M" || m.Tokenizer == "" || m.ContextLength == 0 || !strings.Contains(strings.Join(list.Data[1].Aliases, ","), "gqa") {
		t.Errorf("/v1/models: %s", b)
	}
	if list.Data[0].Manifest == nil || list.Data[0].Manifest.WeightsSHA256 == "" {
		t.Errorf("the built-in model's manifest: %s", b)
	}
}

// TestServeOllamaPull: Ollama's /api/pull of hf.co/ORG/REPO:QUANT pulls
// from a stand-in hub and serves the model under that name, answering as
// the file served alone; a repository the hub lacks is a 502 naming it.
func TestServeOllamaPull(t *testing.T) {
	data, err := defaultmodel.Bytes()
	if err != nil {
		t.Skip(err)
	}
	local := filepath.Join(t.TempDir(), "go.gguf")
	if err := os.WriteFile(local, data, 0o644); err != nil {
		t.Fatal(err)
	}
	h := fakehub.New()
	defer h.Close()
	h.Add("org/go-GGUF", &fakehub.Repo{Commit: strings.Repeat("e1", 20), Files: map[string]fakehub.File{"go-Q8_0.gguf": {Data: data, LFS: true}}})
	t.Setenv("HF_ENDPOINT", h.URL)
	t.Setenv("HF_HOME", t.TempDir())
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_HUB_OFFLINE", "")
	want := complete(t, local, "go.gguf")

	gguf := testshared.Path(t, "testdata/gguf/llama_gqa/llama_gqa-Q4_K_M.gguf")
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, cancel, []string{"--model", gguf, "--port", "0", "--threads", "1", "--max-seqs", "2"}, func(a net.Addr) { addrc <- a })
	}()
	var addr net.Addr
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	base := "http://" + addr.String()
	c := &http.Client{Timeout: 60 * time.Second}
	post := func(path, body string) (int, []byte) {
		resp, err := c.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	if code, b := post("/api/pull", `{"model":"hf.co/org/go-GGUF:Q8_0","stream":false}`); code != 200 || !strings.Contains(string(b), `"success"`) {
		t.Fatalf("pull: %d %s", code, b)
	}
	code, b := post("/v1/completions", `{"model":"hf.co/org/go-GGUF:Q8_0","prompt":"func main() {","max_tokens":12,"temperature":0}`)
	var out struct{ Choices []struct{ Text string } }
	if code != 200 || json.Unmarshal(b, &out) != nil || len(out.Choices) != 1 || out.Choices[0].Text != want {
		t.Errorf("the pulled model: %d %s, want %q", code, b, want)
	}
	code, b = post("/api/pull", `{"model":"hf.co/org/missing:Q8_0"}`)
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); code != 200 || len(lines) != 2 || !strings.Contains(lines[1], `"error"`) || !strings.Contains(lines[1], "org/missing") {
		t.Errorf("missing repository: %d %s", code, b)
	}
}

// /api/pull of a malformed hub name (hf.co/org/repo:/etc/passwd) was a 502
// from the download that followed, and a pull of a model served already
// (named by its hub reference at start) failed with `the name … is taken`.
// The name is checked before anything is written (400 naming it), and a
// reference a served model answers to is a success with nothing pulled.
func TestServeOllamaPullNames(t *testing.T) {
	data, err := defaultmodel.Bytes()
	if err != nil {
		t.Skip(err)
	}
	h := fakehub.New()
	defer h.Close()
	h.Add("org/go-GGUF", &fakehub.Repo{Commit: strings.Repeat("e1", 20), Files: map[string]fakehub.File{"go-Q8_0.gguf": {Data: data, LFS: true}}})
	t.Setenv("HF_ENDPOINT", h.URL)
	t.Setenv("HF_HOME", t.TempDir())
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_HUB_OFFLINE", "")

	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, cancel, []string{"--model", "org/go-GGUF:Q8_0", "--port", "0", "--threads", "1", "--max-seqs", "2"}, func(a net.Addr) { addrc <- a })
	}()
	var addr net.Addr
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	base := "http://" + addr.String()
	c := &http.Client{Timeout: 60 * time.Second}
	post := func(path, body string) (int, string) {
		resp, err := c.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, body := range []string{
		`{"model":"hf.co/org/go-GGUF:/etc/passwd","stream":false}`,
		`{"model":"hf.co/org/go-GGUF:/etc/passwd"}`,
		`{"model":"hf.co/org/go-GGUF:../x.gguf"}`,
		`{"model":"hf.co/org/go-GGUF:not a tag"}`,
		`{"model":"hf.co/../../etc:Q8_0"}`,
	} {
		if code, b := post("/api/pull", body); code != http.StatusBadRequest || !strings.Contains(b, "is not a Hugging Face name") {
			t.Errorf("pull %s: %d %s, want 400 naming the name", body, code, b)
		}
	}
	for _, body := range []string{`{"model":"hf.co/org/go-GGUF:Q8_0","stream":false}`, `{"model":"hf.co/org/go-GGUF:Q8_0"}`} {
		if code, b := post("/api/pull", body); code != http.StatusOK || !strings.Contains(b, `"success"`) || strings.Contains(b, "error") {
			t.Errorf("pull of the served model %s: %d %s, want success", body, code, b)
		}
	}
	resp, err := c.Get(base + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var list struct{ Data []struct{ ID string } }
	json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if len(list.Data) != 1 || list.Data[0].ID != "org/go-GGUF:Q8_0" {
		t.Errorf("after the pulls /v1/models lists %+v, want the one model", list.Data)
	}
}
