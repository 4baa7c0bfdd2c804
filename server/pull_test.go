package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"nanoserve/hub"
	"nanoserve/internal/fakehub"
)

// TestOllamaPullProgress: a streamed /api/pull of a two-file quantization
// from the stand-in hub reports, per file, Ollama's status objects with the
// file's sha256 digest, its total and a completed count that grows to the
// total, then "success"; the model is served afterwards.
func TestOllamaPullProgress(t *testing.T) {
	files := map[string][]byte{}
	for i, n := range []int{48 << 10, 28 << 10} {
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(j*7 + i*13 + j>>9)
		}
		files[fmt.Sprintf("tiny-Q8_0-%05d-of-00002.gguf", i+1)] = b
	}
	h := fakehub.New()
	defer h.Close()
	repo := &fakehub.Repo{Commit: strings.Repeat("ab", 20), Files: map[string]fakehub.File{}}
	for name, b := range files {
		repo.Files[name] = fakehub.File{Data: b, LFS: true}
	}
	h.Add("org/tiny-GGUF", repo)
	h.Slow(5 * time.Millisecond)
	old := pullProgressEvery
	pullProgressEvery = time.Millisecond
	t.Cleanup(func() { pullProgressEvery = old })
	cache := t.TempDir()
	pull := func(ctx context.Context, name string) (ModelSpec, error) {
		r, err := hub.ParseRef(strings.TrimPrefix(name, "hf.co/"))
		if err != nil {
			return ModelSpec{}, err
		}
		c := &hub.Client{Endpoint: h.URL, CacheDir: cache}
		if _, err := c.Pull(ctx, r, "main"); err != nil {
			return ModelSpec{}, err
		}
		spec := testSpec(t, "aidreams", nil)
		spec.Names = []string{name}
		return spec, nil
	}
	ts := newTestRouter(t, RouterOptions{Models: []ModelSpec{testSpec(t, "mha", nil)}, Pull: pull}, nil)
	code, _, body := ts.post(t, "/api/pull", `{"model":"hf.co/org/tiny-GGUF:Q8_0"}`)
	if code != 200 {
		t.Fatalf("pull: %d %s", code, body)
	}
	type status struct {
		Status    string
		Digest    string
		Total     int64
		Completed int64
	}
	var last status
	seen := map[string][]status{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(body)), "\n") {
		var st status
		if err := json.Unmarshal([]byte(line), &st); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if st.Digest != "" {
			seen[st.Digest] = append(seen[st.Digest], st)
		}
		last = st
	}
	if last.Status != "success" {
		t.Errorf("last status %q, want success", last.Status)
	}
	for name, b := range files {
		sum := sha256.Sum256(b)
		digest := "sha256:" + hex.EncodeToString(sum[:])
		sts := seen[digest]
		if len(sts) < 3 {
			t.Errorf("%s: %d status objects, want the start, some progress and the end: %v", name, len(sts), sts)
			continue
		}
		for i, st := range sts {
			if st.Total != int64(len(b)) || st.Status != "pulling "+digest[7:19] || i > 0 && st.Completed < sts[i-1].Completed {
				t.Errorf("%s: status %d %+v (total %d, after completed %d)", name, i, st, len(b), sts[max(i-1, 0)].Completed)
			}
		}
		if c := sts[len(sts)-1].Completed; c != int64(len(b)) {
			t.Errorf("%s: completed ends at %d, total %d", name, c, len(b))
		}
		if !slices.ContainsFunc(sts, func(st status) bool { return st.Completed > 0 && st.Completed < int64(len(b)) }) {
			t.Errorf("%s: no status between 0 and the total: %v", name, sts)
		}
	}
	if len(seen) != len(files) {
		t.Errorf("status objects for %d digests, want %d", len(seen), len(files))
	}
	if code, _, b := ts.post(t, "/v1/completions", `{"model":"hf.co/org/tiny-GGUF:Q8_0","prompt":"Once","max_tokens":2}`); code != 200 {
		t.Errorf("the pulled model: %d %s", code, b)
	}
}

// TestPullFileEnds: the status objects of one file are throttled, yet the
// first (completed = what was on disk) and the last (completed = total) are
// always written.
func TestPullFileEnds(t *testing.T) {
	old := pullProgressEvery
	pullProgressEvery = time.Hour
	t.Cleanup(func() { pullProgressEvery = old })
	rec := httptest.NewRecorder()
	f := (&pullStream{w: rec}).file(hub.Transfer{File: "f", Digest: "sha256:" + strings.Repeat("0a", 32), Size: 100, Have: 10})
	for range 9 {
		f.Write(make([]byte, 10))
	}
	f.Close()
	want := `{"status":"pulling 0a0a0a0a0a0a","digest":"sha256:` + strings.Repeat("0a", 32) + `","total":100,"completed":10}` + "\n" +
		`{"status":"pulling 0a0a0a0a0a0a","digest":"sha256:` + strings.Repeat("0a", 32) + `","total":100,"completed":100}` + "\n"
	if got := rec.Body.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}

	// Size unknown (-1): the total is as far as the transfer got, never 0
	// below a nonzero completed (a client's bar would read over 100%).
	rec = httptest.NewRecorder()
	f = (&pullStream{w: rec}).file(hub.Transfer{File: "f", Digest: "sha256:" + strings.Repeat("0b", 32), Size: -1})
	f.Write(make([]byte, 30))
	f.Close()
	want = `{"status":"pulling 0b0b0b0b0b0b","digest":"sha256:` + strings.Repeat("0b", 32) + `","total":0,"completed":0}` + "\n" +
		`{"status":"pulling 0b0b0b0b0b0b","digest":"sha256:` + strings.Repeat("0b", 32) + `","total":30,"completed":30}` + "\n"
	if got := rec.Body.String(); got != want {
		t.Errorf("size unknown: got\n%s\nwant\n%s", got, want)
	}
}
