package server

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestOllamaNPMPullStream: the official ollama npm client's pull with
// stream: true, from the stand-in hub through a live server, reports what
// an Ollama progress bar needs: per file, the digest, the total and a
// completed count that grows to the total, then success; the model is
// listed afterwards.
func TestOllamaNPMPullStream(t *testing.T) {
	dir := npmClientDir(t, "ollama", ollamaNPMVersion, "ollama_pull_client.mjs")
	ts, files := newPullServer(t)
	const name = "hf.co/org/tiny-GGUF:Q8_0"
	out := runNode(t, dir, "ollama_pull_client.mjs", ts.url, name)
	var got struct {
		Parts []pullTestStatus
		Tags  []string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	checkPullProgress(t, got.Parts, files)
	if !slices.Contains(got.Tags, name) {
		t.Errorf("tags after the pull: %v, want %s among them", got.Tags, name)
	}
	t.Logf("%d progress parts for %d files", len(got.Parts), len(files))
}
