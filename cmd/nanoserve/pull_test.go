package main

import (
	"bytes"
	"context"
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
	"nanoserve/gguf"
	"nanoserve/internal/fakehub"
	"nanoserve/internal/tinyhf"
)

// TestPullServe publishes the built-in model on a stand-in hub, whole and
// split in two, then: `nanoserve pull REPO:Q8_0`, `serve --model REPO:Q8_0`
// (from the cache) and `serve --model REPO:F32` (pulled on first use, a
// split GGUF) answer the same greedy completion as the model file itself.
func TestPullServe(t *testing.T) {
	data, err := defaultmodel.Bytes()
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	local := filepath.Join(dir, "go.gguf")
	if err := os.WriteFile(local, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(local)
	if err != nil {
		t.Fatal(err)
	}
	w := gguf.NewWriter()
	if err := w.AddFile(f); err != nil {
		t.Fatal(err)
	}
	parts, err := w.WriteSplit(filepath.Join(dir, "go-F32"), 2)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]fakehub.File{
		"README.md":    {Data: []byte("built-in model\n")},
		"go-Q8_0.gguf": {Data: data, LFS: true},
	}
	for _, p := range parts {
		b, _ := os.ReadFile(p)
		files["F32/"+filepath.Base(p)] = fakehub.File{Data: b, LFS: true}
	}
	h := fakehub.New()
	defer h.Close()
	h.Add("org/go-GGUF", &fakehub.Repo{Commit: strings.Repeat("e1", 20), Files: files})
	home := t.TempDir()
	t.Setenv("HF_ENDPOINT", h.URL)
	t.Setenv("HF_HOME", home)
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_HUB_OFFLINE", "")

	if err := runPull([]string{"org/go-GGUF:Q8_0"}); err != nil {
		t.Fatal(err)
	}
	pulled := filepath.Join(home, "hub", "models--org--go-GGUF", "snapshots", strings.Repeat("e1", 20), "go-Q8_0.gguf")
	if b, err := os.ReadFile(pulled); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("pulled file: %v", err)
	}
	gets := h.Gets("go-Q8_0.gguf")

	want := complete(t, local, "go.gguf")
	if strings.TrimSpace(want) == "" {
		t.Fatal("empty completion")
	}
	t.Setenv("HF_ENDPOINT", "http://127.0.0.1:1") // cached: no network needed
	if got := complete(t, "org/go-GGUF:Q8_0", "org/go-GGUF:Q8_0"); got != want {
		t.Errorf("served from the cache: %q, want %q", got, want)
	}
	if h.Gets("go-Q8_0.gguf") != gets {
		t.Error("serve --model REPO:Q8_0 downloaded again although the model was cached")
	}
	t.Setenv("HF_ENDPOINT", h.URL)
	if got := complete(t, "org/go-GGUF:F32", "org/go-GGUF:F32"); got != want {
		t.Errorf("split model pulled on first use: %q, want %q", got, want)
	}
	if h.Gets("F32/go-F32-00002-of-00002.gguf") != 1 {
		t.Error("the split's second file was not pulled")
	}
	// list shows the repository and its files; rm of one quantization keeps the other.
	out, err := captureStdout(t, func() error { return runList(nil) })
	if err != nil || !strings.Contains(out, "org/go-GGUF") || !strings.Contains(out, "go-Q8_0.gguf") ||
		!strings.Contains(out, "F32/go-F32-00002-of-00002.gguf") || !strings.Contains(out, "main=e1e1e1e1e1e1") {
		t.Errorf("list: %v\n%s", err, out)
	}
	if err := runRm([]string{"org/go-GGUF:F32"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pulled); err != nil {
		t.Errorf("rm REPO:F32 removed the Q8_0 file: %v", err)
	}
	out, _ = captureStdout(t, func() error { return runList(nil) })
	if strings.Contains(out, "go-F32") {
		t.Errorf("list after rm still shows the split:\n%s", out)
	}
	if err := runRm([]string{"org/go-GGUF"}); err != nil {
		t.Fatal(err)
	}
	if err := runRm([]string{"org/go-GGUF"}); err == nil || !strings.Contains(err.Error(), "not in the cache") {
		t.Errorf("rm twice: %v", err)
	}
	// Offline, an uncached reference is a clear error.
	t.Setenv("HF_HUB_OFFLINE", "1")
	mf := modelFlags{model: "org/go-GGUF:README.md", revision: "main", threads: 1}
	if _, err := mf.load(); err == nil || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") {
		t.Errorf("offline uncached: %v", err)
	}
}

// complete serves --model model and returns the greedy completion of a
// fixed prompt, asked for under the name name.
func complete(t *testing.T, model, name string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, cancel, []string{"--model", model, "--port", "0", "--threads", "1", "--max-seqs", "2"},
			func(a net.Addr) { addrc <- a })
	}()
	var addr net.Addr
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("serve --model %s: %v", model, err)
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	body, _ := json.Marshal(map[string]any{"model": name, "prompt": "func main() {", "max_tokens": 12, "temperature": 0})
	c := &http.Client{Timeout: 60 * time.Second}
	resp, err := c.Post("http://"+addr.String()+"/v1/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: HTTP %d %s", model, resp.StatusCode, b)
	}
	var out struct {
		Model   string `json:"model"`
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &out); err != nil || len(out.Choices) != 1 {
		t.Fatalf("%s: %s", model, b)
	}
	if out.Model != name {
		t.Errorf("response model %q, want %q", out.Model, name)
	}
	return out.Choices[0].Text
}

// TestPullServeDirectory publishes a transformers checkpoint (config,
// tokenizer, safetensors) on the stand-in hub; `serve --model org/tiny-llama`
// pulls the whole directory and answers as serving the local folder does.
func TestPullServeDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := tinyhf.Write(dir, tinyhf.LlamaSpec()); err != nil {
		t.Fatal(err)
	}
	files := map[string]fakehub.File{".gitattributes": {Data: []byte("*.safetensors filter=lfs\n")}}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = fakehub.File{Data: b, LFS: strings.HasSuffix(e.Name(), ".safetensors")}
	}
	if _, ok := files["config.json"]; !ok {
		t.Fatalf("tinyhf wrote no config.json: %v", entries)
	}
	h := fakehub.New()
	defer h.Close()
	h.Add("org/tiny-llama", &fakehub.Repo{Commit: strings.Repeat("d4", 20), Files: files})
	t.Setenv("HF_ENDPOINT", h.URL)
	t.Setenv("HF_HOME", t.TempDir())
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_HUB_OFFLINE", "")
	want := complete(t, dir, filepath.Base(dir))
	if want == "" {
		t.Fatal("empty completion from the local folder")
	}
	if got := complete(t, "org/tiny-llama", "org/tiny-llama"); got != want {
		t.Errorf("pulled directory: %q, want %q", got, want)
	}
}

// TestResolveModelPaths: names that end like model files stay paths (no
// hub request); an unknown repository's error says it is not a local file.
func TestResolveModelPaths(t *testing.T) {
	h := fakehub.New()
	defer h.Close()
	t.Setenv("HF_ENDPOINT", h.URL)
	t.Setenv("HF_HOME", t.TempDir())
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HF_HUB_OFFLINE", "")
	for _, p := range []string{"models/missing.gguf", "dir/model.safetensors", "./x"} {
		got, ref, err := resolveModel(p, "main")
		if err != nil || got != p || ref != "" {
			t.Errorf("resolveModel(%q) = %q, %q, %v; want the path back", p, got, ref, err)
		}
	}
	_, _, err := resolveModel("org/missing", "main")
	if err == nil || !strings.Contains(err.Error(), "not a local file") || !strings.Contains(err.Error(), "404") {
		t.Errorf("unknown repo: %v", err)
	}
}

// TestDownloadProgressLines: --model REPO:QUANT pulled with stderr not a
// terminal logs the download as it goes (amounts, percentage, rate, ETA)
// and a closing line, through package progress.
func TestDownloadProgressLines(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 8<<10) // 128 KiB
	h := fakehub.New()
	defer h.Close()
	h.Add("org/p-GGUF", &fakehub.Repo{Commit: strings.Repeat("c3", 20), Files: map[string]fakehub.File{"p-Q8_0.gguf": {Data: data, LFS: true}}})
	h.Slow(3 * time.Millisecond)
	t.Setenv("HF_ENDPOINT", h.URL)
	t.Setenv("HF_HOME", t.TempDir())
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_HUB_OFFLINE", "")
	errFile, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	oldErr, oldEvery := os.Stderr, progressEvery
	os.Stderr, progressEvery = errFile, 10*time.Millisecond
	_, _, err = resolveModel("org/p-GGUF:Q8_0", "main")
	os.Stderr, progressEvery = oldErr, oldEvery
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(errFile.Name())
	log := string(b)
	var during, end int
	for l := range strings.SplitSeq(log, "\n") {
		if !strings.HasPrefix(l, "downloading ") || !strings.Contains(l, "p-Q8_0.gguf: ") {
			continue
		}
		switch {
		case strings.Contains(l, " MiB of 0.1 MiB (") && strings.Contains(l, "MiB/s, eta "):
			during++
		case strings.Contains(l, ": 0.1 MiB in ") && strings.HasSuffix(l, "MiB/s"):
			end++
		}
	}
	if during == 0 || end != 1 {
		t.Errorf("%d progress lines, %d closing lines, want ≥ 1 and 1:\n%s", during, end, log)
	}
}
