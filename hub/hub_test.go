package hub

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"nanoserve/internal/fakehub"
)

const commit = "0123456789abcdef0123456789abcdef01234567"

func randBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// standIn starts a hub with a GGUF repository (three quantizations, one
// split in three, a vision projector), a transformers repository and a
// gated one.
func standIn(t *testing.T) *fakehub.Hub {
	t.Helper()
	h := fakehub.New()
	t.Cleanup(h.Close)
	h.Token = "hf_secret"
	h.Add("org/tiny-GGUF", &fakehub.Repo{Commit: commit, Refs: map[string]string{"v1": commit}, Files: map[string]fakehub.File{
		".gitattributes":                     {Data: []byte("*.gguf filter=lfs\n")},
		"README.md":                          {Data: []byte("# tiny\n")},
		"tiny-Q4_K_M.gguf":                   {Data: randBytes(200_000, 1), LFS: true},
		"tiny-Q4_K_S.gguf":                   {Data: randBytes(1000, 2), LFS: true},
		"Q8_0/tiny-Q8_0-00001-of-00003.gguf": {Data: randBytes(3000, 3), LFS: true},
		"Q8_0/tiny-Q8_0-00002-of-00003.gguf": {Data: randBytes(3000, 4), LFS: true},
		"Q8_0/tiny-Q8_0-00003-of-00003.gguf": {Data: randBytes(3000, 5), LFS: true},
		"mmproj-tiny-F16.gguf":               {Data: randBytes(500, 6), LFS: true},
	}})
	h.Add("org/tiny-hf", &fakehub.Repo{Commit: strings.Repeat("ab", 20), Files: map[string]fakehub.File{
		".gitattributes":                   {Data: []byte("x")},
		"config.json":                      {Data: []byte(`{"model_type":"llama"}`)},
		"tokenizer.json":                   {Data: []byte(`{"model":{}}`)},
		"model-00001-of-00002.safetensors": {Data: randBytes(5000, 7), LFS: true},
		"model-00002-of-00002.safetensors": {Data: randBytes(5000, 8), LFS: true},
		"model.safetensors.index.json":     {Data: []byte(`{"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}}`)},
		"pytorch_model.bin":                {Data: randBytes(100, 9), LFS: true},
	}})
	h.Add("org/gated", &fakehub.Repo{Commit: strings.Repeat("cd", 20), Gated: true, Files: map[string]fakehub.File{
		"gated-Q8_0.gguf": {Data: randBytes(2000, 10), LFS: true},
	}})
	return h
}

func client(t *testing.T, h *fakehub.Hub, cache string) *Client {
	if cache == "" {
		cache = t.TempDir()
	}
	return &Client{Endpoint: h.URL, CacheDir: cache, HTTP: h.Client()}
}

func pull(t *testing.T, c *Client, ref, rev string) string {
	t.Helper()
	r, err := ParseRef(ref)
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Pull(context.Background(), r, rev)
	if err != nil {
		t.Fatalf("Pull(%s): %v", ref, err)
	}
	return p
}

func sameFile(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes, differ from the hub's %d", path, len(got), len(want))
	}
}

func TestParseRef(t *testing.T) {
	good := map[string]Ref{
		"org/name":                      {Repo: "org/name"},
		"hf.co/org/name:Q4_K_M":         {Repo: "org/name", Quant: "Q4_K_M"},
		"huggingface.co/org/na.me:q8_0": {Repo: "org/na.me", Quant: "q8_0"},
		"org/name:sub/file-Q8_0.gguf":   {Repo: "org/name", File: "sub/file-Q8_0.gguf"},
		"org/name:config.json":          {Repo: "org/name", File: "config.json"},
	}
	for s, want := range good {
		got, err := ParseRef(s)
		if err != nil || got != want {
			t.Errorf("ParseRef(%q) = %+v, %v; want %+v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "name", "./model.gguf", "/abs/path.gguf", "org/name:", "org/name:../x.gguf",
		"org/name:a//b.gguf", "org/../x", "a/b/c", "org/name:Q4 K"} {
		if r, err := ParseRef(s); err == nil {
			t.Errorf("ParseRef(%q) = %+v, want an error", s, r)
		}
	}
}

func TestSelect(t *testing.T) {
	files := []string{"README.md", "m-Q4_K_M.gguf", "m-Q4_K_S.gguf", "m-Q4_K.gguf", "Q8_0/m-Q8_0-00001-of-00002.gguf",
		"Q8_0/m-Q8_0-00002-of-00002.gguf", "mmproj-m-F16.gguf", "m-f16.gguf", "m-IQ4_XS-00001-of-00002.gguf",
		"Q6_K/m-00001-of-00002.gguf", "Q6_K/m-00002-of-00002.gguf"}
	cases := []struct {
		ref   string
		files []string
		err   string
	}{
		{"o/m", []string{"m-Q4_K_M.gguf"}, ""},
		{"o/m:Q4_K", []string{"m-Q4_K.gguf"}, ""},
		{"o/m:q4_k_s", []string{"m-Q4_K_S.gguf"}, ""},
		{"o/m:F16", []string{"m-f16.gguf"}, ""},
		{"o/m:Q8_0", []string{"Q8_0/m-Q8_0-00001-of-00002.gguf", "Q8_0/m-Q8_0-00002-of-00002.gguf"}, ""},
		{"o/m:Q8_0/m-Q8_0-00002-of-00002.gguf", []string{"Q8_0/m-Q8_0-00001-of-00002.gguf", "Q8_0/m-Q8_0-00002-of-00002.gguf"}, ""},
		{"o/m:README.md", []string{"README.md"}, ""},
		{"o/m:Q6_K", []string{"Q6_K/m-00001-of-00002.gguf", "Q6_K/m-00002-of-00002.gguf"}, ""},
		{"o/m:Q2_K", nil, "no a GGUF file tagged Q2_K (it has: "},
		{"o/m:IQ4_XS", nil, "missing its file m-IQ4_XS-00002-of-00002.gguf"},
		{"o/m:nope.gguf", nil, `no file "nope.gguf"`},
	}
	for _, c := range cases {
		r, err := ParseRef(c.ref)
		if err != nil {
			t.Fatal(err)
		}
		sel, err := selectFiles(r, files)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err = %v, want %q", c.ref, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(sel.Files, c.files) || sel.Entry != c.files[0] {
			t.Errorf("%s: %+v, %v; want %v", c.ref, sel, err, c.files)
		}
	}
	// Several GGUFs and none tagged Q4_K_M: a bare REPO asks to choose.
	_, err := selectFiles(Ref{Repo: "o/m"}, []string{"a-Q8_0.gguf", "a-F16.gguf"})
	if !errors.Is(err, ErrNoMatch) || !strings.Contains(err.Error(), "matches several") {
		t.Errorf("ambiguous: %v", err)
	}
	sel, err := selectFiles(Ref{Repo: "o/m"}, []string{"only-Q8_0.gguf", "mmproj-x.gguf"})
	if err != nil || sel.Entry != "only-Q8_0.gguf" {
		t.Errorf("single GGUF: %+v %v", sel, err)
	}
}

// TestPullGGUF pulls by quant tag and checks the standard cache layout.
func TestPullGGUF(t *testing.T) {
	h := standIn(t)
	cache := t.TempDir()
	c := client(t, h, cache)
	var starts []string
	c.Progress = func(file string, size, have int64) io.WriteCloser {
		starts = append(starts, fmt.Sprintf("%s %d %d", file, size, have))
		return nopWC{}
	}
	p := pull(t, c, "org/tiny-GGUF:Q4_K_M", "")
	data := randBytes(200_000, 1)
	root := filepath.Join(cache, "models--org--tiny-GGUF")
	if want := filepath.Join(root, "snapshots", commit, "tiny-Q4_K_M.gguf"); p != want {
		t.Fatalf("path %s, want %s", p, want)
	}
	sameFile(t, p, data)
	target, err := os.Readlink(p)
	if err != nil || target != filepath.Join("..", "..", "blobs", fakehub.SHA256(data)) {
		t.Errorf("snapshot link -> %q (%v), want ../../blobs/<sha256>", target, err)
	}
	ref, _ := os.ReadFile(filepath.Join(root, "refs", "main"))
	if string(ref) != commit {
		t.Errorf("refs/main = %q", ref)
	}
	if !slices.Equal(starts, []string{"org/tiny-GGUF/tiny-Q4_K_M.gguf 200000 0"}) {
		t.Errorf("progress starts %v", starts)
	}
	// A second pull downloads nothing; Cached finds it without the network.
	before := h.Served("tiny-Q4_K_M.gguf")
	if p2 := pull(t, c, "org/tiny-GGUF", ""); p2 != p || h.Served("tiny-Q4_K_M.gguf") != before {
		t.Errorf("re-pull: %s, served %d more bytes", p2, h.Served("tiny-Q4_K_M.gguf")-before)
	}
	h.Close()
	if got, err := c.Cached(Ref{Repo: "org/tiny-GGUF", Quant: "Q4_K_M"}, ""); err != nil || got != p {
		t.Errorf("Cached = %s, %v", got, err)
	}
	if _, err := c.Cached(Ref{Repo: "org/tiny-GGUF", Quant: "Q4_K_S"}, ""); !errors.Is(err, ErrNotCached) {
		t.Errorf("Cached(Q4_K_S) err = %v, want ErrNotCached", err)
	}
}

func TestPullSplitAndRevision(t *testing.T) {
	h := standIn(t)
	cache := t.TempDir()
	c := client(t, h, cache)
	p := pull(t, c, "hf.co/org/tiny-GGUF:Q8_0", "v1")
	if !strings.HasSuffix(p, filepath.Join(commit, "Q8_0", "tiny-Q8_0-00001-of-00003.gguf")) {
		t.Fatalf("entry %s", p)
	}
	for i := range 3 {
		sameFile(t, filepath.Join(filepath.Dir(p), fmt.Sprintf("tiny-Q8_0-%05d-of-00003.gguf", i+1)), randBytes(3000, uint64(3+i)))
	}
	if b, _ := os.ReadFile(filepath.Join(cache, "models--org--tiny-GGUF", "refs", "v1")); string(b) != commit {
		t.Errorf("refs/v1 = %q", b)
	}
	// A commit id as the revision writes no ref.
	c2 := client(t, h, "")
	pull(t, c2, "org/tiny-GGUF:Q4_K_S", commit)
	if _, err := os.Stat(filepath.Join(c2.CacheDir, "models--org--tiny-GGUF", "refs")); err == nil {
		t.Error("pull by commit wrote refs/")
	}
	r, _ := ParseRef("org/tiny-GGUF:Q8_0")
	if _, err := c.Pull(context.Background(), r, "nope"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown revision: %v", err)
	}
}

func TestPullDirectory(t *testing.T) {
	h := standIn(t)
	c := client(t, h, "")
	p := pull(t, c, "org/tiny-hf", "")
	files, err := listFiles(p)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "model.safetensors.index.json", "tokenizer.json"}
	if !slices.Equal(files, want) {
		t.Errorf("snapshot holds %v, want %v", files, want)
	}
	sameFile(t, filepath.Join(p, "config.json"), []byte(`{"model_type":"llama"}`))
	if got, err := c.Cached(Ref{Repo: "org/tiny-hf"}, ""); err != nil || got != p {
		t.Errorf("Cached = %s, %v", got, err)
	}
	// A missing shard makes the cached copy incomplete.
	os.Remove(filepath.Join(p, "model-00002-of-00002.safetensors"))
	if _, err := c.Cached(Ref{Repo: "org/tiny-hf"}, ""); !errors.Is(err, ErrNotCached) {
		t.Errorf("Cached after removing a shard: %v", err)
	}
}

func TestAuthAndNotFound(t *testing.T) {
	h := standIn(t)
	c := client(t, h, "")
	r, _ := ParseRef("org/gated:Q8_0")
	_, err := c.Pull(context.Background(), r, "")
	if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "HF_TOKEN") {
		t.Fatalf("gated without token: %v", err)
	}
	c.Token = "hf_secret"
	p, err := c.Pull(context.Background(), r, "")
	if err != nil {
		t.Fatalf("gated with token: %v", err)
	}
	sameFile(t, p, randBytes(2000, 10))
	r, _ = ParseRef("org/missing")
	if _, err := c.Pull(context.Background(), r, ""); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "org/missing") {
		t.Errorf("missing repo: %v", err)
	}
	r, _ = ParseRef("org/tiny-GGUF:Q2_K")
	if _, err := c.Pull(context.Background(), r, ""); !errors.Is(err, ErrNoMatch) || !strings.Contains(err.Error(), "tiny-Q4_K_M.gguf") {
		t.Errorf("missing quant: %v", err)
	}
}

// TestResumeAfterInterrupt: the first pull is cut at 37% with no retries
// and leaves a partial file; the next pull asks for the rest with Range and
// ends with the right sha256, having downloaded each byte once.
func TestResumeAfterInterrupt(t *testing.T) {
	h := standIn(t)
	cache := t.TempDir()
	c := client(t, h, cache)
	c.Retries = -1
	const file = "tiny-Q4_K_M.gguf"
	data := randBytes(200_000, 1)
	h.Cut(file, 74_000)
	r, _ := ParseRef("org/tiny-GGUF:Q4_K_M")
	_, err := c.Pull(context.Background(), r, "")
	if err == nil || !strings.Contains(err.Error(), "transfer broken") {
		t.Fatalf("cut transfer: err = %v", err)
	}
	blob := filepath.Join(cache, "models--org--tiny-GGUF", "blobs", fakehub.SHA256(data))
	if fi, err := os.Stat(blob + ".incomplete"); err != nil || fi.Size() != 74_000 {
		t.Fatalf("partial file: %v %v", fi, err)
	}
	if _, err := os.Stat(blob); err == nil {
		t.Fatal("the blob is visible before it was verified")
	}
	if _, err := os.Stat(filepath.Join(cache, "models--org--tiny-GGUF", "snapshots", commit, file)); err == nil {
		t.Fatal("snapshot link made for a partial download")
	}
	c = client(t, h, cache)
	p := pull(t, c, "org/tiny-GGUF:Q4_K_M", "")
	sameFile(t, p, data)
	if got := h.Ranges(); !slices.Equal(got, []string{file + " bytes=74000-"}) {
		t.Errorf("ranged GETs %v", got)
	}
	if n := h.Served(file); n != int64(len(data)) {
		t.Errorf("served %d bytes for a %d-byte file", n, len(data))
	}
	if _, err := os.Stat(blob + ".incomplete"); err == nil {
		t.Error("partial file left behind")
	}
}

// TestRetryWithinPull: two cuts in one pull are resumed by the retries.
func TestRetryWithinPull(t *testing.T) {
	h := standIn(t)
	c := client(t, h, "")
	const file = "tiny-Q4_K_M.gguf"
	h.Cut(file, 10_000, 150_000)
	p := pull(t, c, "org/tiny-GGUF:Q4_K_M", "")
	sameFile(t, p, randBytes(200_000, 1))
	if got := h.Ranges(); !slices.Equal(got, []string{file + " bytes=10000-", file + " bytes=150000-"}) {
		t.Errorf("ranged GETs %v", got)
	}
	// A server that ignores Range: the client starts over and still verifies.
	h2 := standIn(t)
	h2.IgnoreRange(true)
	h2.Cut(file, 50_000)
	c2 := client(t, h2, "")
	sameFile(t, pull(t, c2, "org/tiny-GGUF:Q4_K_M", ""), randBytes(200_000, 1))
	if n, g := h2.Served(file), h2.Gets(file); n != 250_000 || g != 2 {
		t.Errorf("range ignored: served %d bytes in %d GETs, want 250000 in 2 (the cut prefix, then the whole file once)", n, g)
	}
}

func TestWrongChecksum(t *testing.T) {
	h := standIn(t)
	cache := t.TempDir()
	c := client(t, h, cache)
	h.Corrupt("tiny-Q4_K_M.gguf", true)
	h.Corrupt("README.md", true)
	r, _ := ParseRef("org/tiny-GGUF:Q4_K_M")
	_, err := c.Pull(context.Background(), r, "")
	if !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("corrupt LFS file: %v", err)
	}
	blobs, _ := os.ReadDir(filepath.Join(cache, "models--org--tiny-GGUF", "blobs"))
	if len(blobs) != 0 {
		t.Errorf("blobs left after a bad checksum: %v", blobs)
	}
	if h.Gets("tiny-Q4_K_M.gguf") != 1 {
		t.Errorf("a checksum mismatch was retried (%d GETs)", h.Gets("tiny-Q4_K_M.gguf"))
	}
	// A small file is checked against its git blob id.
	r, _ = ParseRef("org/tiny-GGUF:README.md")
	if _, err = c.Pull(context.Background(), r, ""); !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), "git blob sha1") {
		t.Fatalf("corrupt small file: %v", err)
	}
	h.Corrupt("README.md", false)
	sameFile(t, pull(t, c, "org/tiny-GGUF:README.md", ""), []byte("# tiny\n"))
	// An ETag that is not a digest cannot be verified.
	h.AdvertiseETag("README.md", "W/\"xyz\"")
	if _, err = c.Pull(context.Background(), r, ""); err == nil || !strings.Contains(err.Error(), "cannot be verified") {
		t.Errorf("unverifiable ETag: %v", err)
	}
}

// TestConcurrentPull: two clients (own lock file descriptors, as two
// processes have) pull one file at once; it is downloaded once and both
// get the verified file.
func TestConcurrentPull(t *testing.T) {
	h := standIn(t)
	h.Slow(time.Millisecond)
	cache := t.TempDir()
	var wg sync.WaitGroup
	paths := make([]string, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, _ := ParseRef("org/tiny-GGUF:Q4_K_M")
			paths[i], errs[i] = client(t, h, cache).Pull(context.Background(), r, "")
		}()
	}
	wg.Wait()
	for i := range 2 {
		if errs[i] != nil {
			t.Fatalf("pull %d: %v", i, errs[i])
		}
		sameFile(t, paths[i], randBytes(200_000, 1))
	}
	if n := h.Served("tiny-Q4_K_M.gguf"); n != 200_000 {
		t.Errorf("served %d bytes: the file was downloaded more than once", n)
	}
}

// TestConcurrentPullProcesses runs a second pull in a child process.
func TestConcurrentPullProcesses(t *testing.T) {
	if os.Getenv("HUB_TEST_CHILD") != "" {
		c := &Client{Endpoint: os.Getenv("HUB_TEST_ENDPOINT"), CacheDir: os.Getenv("HUB_TEST_CACHE")}
		r, _ := ParseRef("org/tiny-GGUF:Q4_K_M")
		if _, err := c.Pull(context.Background(), r, ""); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	h := standIn(t)
	h.Slow(time.Millisecond)
	cache := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestConcurrentPullProcesses$", "-test.count=1")
	cmd.Env = append(os.Environ(), "HUB_TEST_CHILD=1", "HUB_TEST_ENDPOINT="+h.URL, "HUB_TEST_CACHE="+cache)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := pull(t, client(t, h, cache), "org/tiny-GGUF:Q4_K_M", "")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child pull: %v\n%s", err, out.String())
	}
	sameFile(t, p, randBytes(200_000, 1))
	if n := h.Served("tiny-Q4_K_M.gguf"); n != 200_000 {
		t.Errorf("served %d bytes: the file was downloaded more than once", n)
	}
}

func TestListRemove(t *testing.T) {
	h := standIn(t)
	c := client(t, h, "")
	pull(t, c, "org/tiny-GGUF:Q4_K_M", "")
	pull(t, c, "org/tiny-GGUF:Q4_K_S", "")
	pull(t, c, "org/tiny-hf", "")
	repos, err := c.List()
	if err != nil || len(repos) != 2 || repos[0].Repo != "org/tiny-GGUF" || repos[1].Repo != "org/tiny-hf" {
		t.Fatalf("List = %+v, %v", repos, err)
	}
	if repos[0].Size != 201_000 || repos[0].Refs["main"] != commit || len(repos[0].Snapshots[commit]) != 2 {
		t.Errorf("tiny-GGUF: %+v", repos[0])
	}
	removed, err := c.Remove(Ref{Repo: "org/tiny-GGUF", Quant: "Q4_K_S"})
	if err != nil || len(removed) != 2 { // the link and its blob
		t.Fatalf("Remove(Q4_K_S) = %v, %v", removed, err)
	}
	if _, err := c.Cached(Ref{Repo: "org/tiny-GGUF", Quant: "Q4_K_M"}, ""); err != nil {
		t.Errorf("Q4_K_M gone after removing Q4_K_S: %v", err)
	}
	repos, _ = c.List()
	if repos[0].Size != 200_000 {
		t.Errorf("size after rm %d", repos[0].Size)
	}
	if _, err := c.Remove(Ref{Repo: "org/tiny-hf"}); err != nil {
		t.Fatal(err)
	}
	if repos, _ = c.List(); len(repos) != 1 {
		t.Errorf("after rm repo: %+v", repos)
	}
	if _, err := c.Remove(Ref{Repo: "org/none"}); !errors.Is(err, ErrNotCached) {
		t.Errorf("rm missing: %v", err)
	}
}

type nopWC struct{}

func (nopWC) Write(p []byte) (int, error) { return len(p), nil }
func (nopWC) Close() error                { return nil }

// TestTokenNotSentToCDN: the LFS redirect goes to another host (as the
// hub's CDN is); the token authenticates the hub, never the CDN.
func TestTokenNotSentToCDN(t *testing.T) {
	h := standIn(t)
	h.CDNHost("localhost")
	c := client(t, h, "")
	c.Token = "hf_secret"
	sameFile(t, pull(t, c, "org/gated:Q8_0", ""), randBytes(2000, 10))
	if n := h.CDNAuth(); n != 0 {
		t.Errorf("%d CDN requests carried the token", n)
	}
}

// TestRenamedRepo: the hub redirects a renamed repository's API and
// resolve URLs; the pull follows them and caches under the name asked for.
func TestRenamedRepo(t *testing.T) {
	h := standIn(t)
	h.Rename("org/old-name", "org/tiny-GGUF")
	c := client(t, h, "")
	p := pull(t, c, "org/old-name:Q4_K_S", "")
	sameFile(t, p, randBytes(1000, 2))
	if !strings.Contains(p, "models--org--old-name") {
		t.Errorf("cached at %s", p)
	}
}

// TestLeftoverPartial: a complete partial file (a crash between download
// and rename) is verified without a GET; a corrupt one is fetched again
// whole instead of failing the pull.
func TestLeftoverPartial(t *testing.T) {
	data := randBytes(200_000, 1)
	const file = "tiny-Q4_K_M.gguf"
	for _, corrupt := range []bool{false, true} {
		h := standIn(t)
		cache := t.TempDir()
		blobs := filepath.Join(cache, "models--org--tiny-GGUF", "blobs")
		os.MkdirAll(blobs, 0o755)
		part := bytes.Clone(data)
		if corrupt {
			part = part[:120_000]
			part[1000] ^= 1
		}
		if err := os.WriteFile(filepath.Join(blobs, fakehub.SHA256(data)+".incomplete"), part, 0o644); err != nil {
			t.Fatal(err)
		}
		sameFile(t, pull(t, client(t, h, cache), "org/tiny-GGUF:Q4_K_M", ""), data)
		wantGets, wantServed := 0, int64(0)
		if corrupt {
			wantGets, wantServed = 2, 80_000+200_000 // the resumed tail, then the whole file
		}
		if g, n := h.Gets(file), h.Served(file); g != wantGets || n != wantServed {
			t.Errorf("corrupt=%v: %d GETs, %d bytes; want %d, %d", corrupt, g, n, wantGets, wantServed)
		}
	}
}
