package server

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ollamaNPMVersion is the official ollama npm client the test installs.
const ollamaNPMVersion = "0.6.4"

// needTool skips the test without a tool it needs, and fails it in CI
// (.ci/run sets NANOSERVE_CI), where every tool must be present.
func needTool(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("NANOSERVE_CI") != "" {
		t.Fatalf("CI: "+format, args...)
	}
	t.Skipf(format, args...)
}

// ollamaClientDir installs the ollama npm client once into the user cache
// and returns the folder, with the test script beside its node_modules.
func ollamaClientDir(t *testing.T) string {
	return npmClientDir(t, "ollama", ollamaNPMVersion, "ollama_client.mjs")
}

// npmClientDir installs npm package pkg@version once into the user cache
// and returns the folder, with testdata/script copied beside its
// node_modules.
func npmClientDir(t *testing.T, pkg, version, script string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		needTool(t, "node is not installed: the %s npm client test needs Node.js and npm", pkg)
	}
	if _, err := exec.LookPath("npm"); err != nil {
		needTool(t, "npm is not installed: the %s npm client test needs it to install the client", pkg)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "nanoserve-test", "npm-"+pkg+"-"+version)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--prefix", dir, pkg+"@"+version)
		if out, err := cmd.CombinedOutput(); err != nil {
			needTool(t, "npm install %s@%s failed (is the npm registry reachable?): %v\n%s", pkg, version, err, out)
		}
	}
	b, err := os.ReadFile(filepath.Join("testdata", script))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, script), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runNode runs script in dir with args and returns its standard output.
func runNode(t *testing.T, dir, script string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{script}, args...)...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("node %s: %v\n%s\n%s", script, err, out, stderr)
	}
	return out
}

// TestOllamaNPMClient drives a live two-model server with the official
// ollama npm client: version, tags, show, chat whole and streamed (equal
// text), generate whole and streamed (equal to /v1/completions greedy),
// format json, embed (a batch of two, unit vectors), ps, and the errors
// (unknown model 404, an Ollama-registry pull 400, suffix 400).
func TestOllamaNPMClient(t *testing.T) {
	dir := ollamaClientDir(t)
	a, b := testSpec(t, "aidreams", nil), testSpec(t, "mha", nil)
	a.Preload = true // as serve does with the models named at start: their manifests are known
	ts := newTestRouter(t, RouterOptions{Models: []ModelSpec{a, b}, MaxLoaded: 1}, nil)
	if err := ts.front.Preload(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := runNode(t, dir, "ollama_client.mjs", ts.url, "aidreams")
	type msg struct{ Role, Content string }
	type done struct {
		Done            bool   `json:"done"`
		DoneReason      string `json:"done_reason"`
		EvalCount       int    `json:"eval_count"`
		PromptEvalCount int    `json:"prompt_eval_count"`
		TotalDuration   int64  `json:"total_duration"`
	}
	type errOut struct {
		Error  string
		Status int `json:"status"`
	}
	var got struct {
		Version struct{ Version string }
		Tags    struct {
			Models []struct {
				Name    string
				Details struct{ Family string } `json:"details"`
			}
		}
		Show struct {
			Capabilities []string
			Details      struct{ Family string }
			ModelInfo    map[string]any `json:"model_info"`
		}
		Chat struct {
			Message msg
			done
		}
		ChatStream struct {
			Text  string
			Parts int
			Last  done
		}
		Generate struct {
			Response string
			done
		}
		GenerateStream struct {
			Text  string
			Parts int
			Last  done
		}
		JSON     struct{ Response string }
		Embed    struct{ Embeddings [][]float64 }
		PS       struct{ Models []struct{ Name string } }
		Unknown  errOut `json:"unknownModel"`
		Registry errOut `json:"registryPull"`
		Suffix   errOut `json:"suffix"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Version.Version == "" {
		t.Errorf("version: %s", out)
	}
	if len(got.Tags.Models) != 2 || got.Tags.Models[0].Name != "aidreams" || got.Tags.Models[1].Name != "mha" || got.Tags.Models[0].Details.Family != "llama" ||
		got.Tags.Models[1].Details.Family != "" {
		t.Errorf("tags: %+v", got.Tags)
	}
	if got.Show.Details.Family != "llama" || got.Show.ModelInfo["general.architecture"] != "llama" || len(got.Show.Capabilities) == 0 {
		t.Errorf("show: %+v", got.Show)
	}
	if got.Chat.Message.Role != "assistant" || got.Chat.Message.Content == "" || !got.Chat.Done || got.Chat.EvalCount != 12 || got.Chat.DoneReason != "length" {
		t.Errorf("chat: %+v", got.Chat)
	}
	if got.ChatStream.Text != got.Chat.Message.Content || got.ChatStream.Parts < 3 || !got.ChatStream.Last.Done || got.ChatStream.Last.EvalCount != 12 {
		t.Errorf("chat stream %+v, whole %q", got.ChatStream, got.Chat.Message.Content)
	}
	want := complete(t, ts, "aidreams", "Once upon a time")
	if got.Generate.Response != want || got.GenerateStream.Text != want || got.GenerateStream.Parts < 3 ||
		got.Generate.PromptEvalCount == 0 || got.Generate.TotalDuration <= 0 {
		t.Errorf("generate %+v, streamed %+v; /v1/completions %q", got.Generate, got.GenerateStream, want)
	}
	if s := strings.TrimSpace(got.JSON.Response); s == "" || s[0] != '{' {
		t.Errorf("format json: %q", got.JSON.Response)
	}
	if len(got.Embed.Embeddings) != 2 || len(got.Embed.Embeddings[0]) != 64 {
		t.Errorf("embed: %d embeddings", len(got.Embed.Embeddings))
	} else {
		n := 0.0
		for _, x := range got.Embed.Embeddings[1] {
			n += x * x
		}
		if n < 0.999 || n > 1.001 {
			t.Errorf("embedding norm² %v, want 1", n)
		}
	}
	if len(got.PS.Models) != 1 || got.PS.Models[0].Name != "aidreams" {
		t.Errorf("ps: %+v (only aidreams was used)", got.PS)
	}
	if got.Unknown.Status != 404 || !strings.Contains(got.Unknown.Error, "no-such-model") {
		t.Errorf("unknown model: %+v", got.Unknown)
	}
	if got.Registry.Status != 400 || !strings.Contains(got.Registry.Error, "hf.co/") {
		t.Errorf("registry pull: %+v", got.Registry)
	}
	if got.Suffix.Status != 400 || !strings.Contains(got.Suffix.Error, "suffix") {
		t.Errorf("suffix: %+v", got.Suffix)
	}
}
