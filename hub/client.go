package hub

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// DefaultEndpoint is the hub's address when HF_ENDPOINT is unset.
const DefaultEndpoint = "https://huggingface.co"

// Sentinel errors; returned errors wrap them with the repository or file.
var (
	ErrUnauthorized = errors.New("hub: unauthorized")
	ErrNotFound     = errors.New("hub: not found")
	ErrChecksum     = errors.New("hub: checksum mismatch")
	ErrNotCached    = errors.New("hub: not in the cache")
)

// Progress is called when a file's download starts: size is its length
// (-1 if unknown) and have the bytes already on disk from an earlier,
// interrupted attempt. Bytes received are written to the returned writer,
// which is closed when the file is done.
type Progress func(file string, size, have int64) io.WriteCloser

// Transfer is one file's download as a context's progress sink
// (WithProgress) sees it: Digest is "sha256:HEX" for LFS files (the hub's
// content hash) or "sha1:HEX" (the git blob id), Size the file's length (-1
// if unknown), Have the bytes already on disk from an earlier attempt.
type Transfer struct {
	File       string
	Digest     string
	Size, Have int64
}

type progressKey struct{}

// WithProgress returns ctx carrying a progress sink for the pulls made with
// it, beside the Client's own Progress: f is called when a file's transfer
// starts, the bytes received are written to what it returns, which is
// closed when the transfer ends (a resumed transfer calls f again with
// Have where the broken one stopped).
func WithProgress(ctx context.Context, f func(Transfer) io.WriteCloser) context.Context {
	return context.WithValue(ctx, progressKey{}, f)
}

// Client talks to one hub endpoint and fills one cache.
type Client struct {
	Endpoint string       // e.g. DefaultEndpoint, no trailing slash
	Token    string       // bearer token, or ""
	CacheDir string       // the hub cache root (holds models--org--name folders)
	HTTP     *http.Client // nil: http.DefaultClient
	Progress Progress     // nil: silent
	Retries  int          // resumed attempts after a broken transfer (0: 5, negative: none)
}

// FromEnv returns a Client configured as huggingface_hub configures itself:
// HF_ENDPOINT, HF_TOKEN, HF_HUB_CACHE / HF_HOME.
func FromEnv() *Client {
	c := &Client{Endpoint: DefaultEndpoint, Token: os.Getenv("HF_TOKEN"), CacheDir: DefaultCacheDir()}
	if e := os.Getenv("HF_ENDPOINT"); e != "" {
		c.Endpoint = strings.TrimRight(e, "/")
	}
	return c
}

// DefaultCacheDir is HF_HUB_CACHE, else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
func DefaultCacheDir() string {
	if d := os.Getenv("HF_HUB_CACHE"); d != "" {
		return d
	}
	if d := os.Getenv("HF_HOME"); d != "" {
		return filepath.Join(d, "hub")
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "huggingface", "hub")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "huggingface", "hub")
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

func (c *Client) newRequest(ctx context.Context, method, u string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	req.Header.Set("User-Agent", "nanoserve")
	return req, nil
}

// statusErr turns a failed response into an error naming what was asked.
func statusErr(resp *http.Response, what string) error {
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	detail := strings.TrimSpace(string(msg))
	if e := resp.Header.Get("X-Error-Message"); e != "" {
		detail = e
	}
	if detail != "" {
		detail = ": " + detail
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Errorf("%w: %s (HTTP %d: private or gated — accept its terms on the hub and set HF_TOKEN)%s",
			ErrUnauthorized, what, resp.StatusCode, detail)
	case http.StatusNotFound:
		return fmt.Errorf("%w: %s (HTTP 404)%s", ErrNotFound, what, detail)
	}
	return fmt.Errorf("hub: %s: HTTP %d%s", what, resp.StatusCode, detail)
}

// repoInfo is the part of the hub's model-info answer we read.
type repoInfo struct {
	SHA      string `json:"sha"`
	Siblings []struct {
		RFilename string `json:"rfilename"`
	} `json:"siblings"`
}

// info asks for the commit a revision names and the files it holds.
func (c *Client) info(ctx context.Context, repo, revision string) (commit string, files []string, err error) {
	u := c.Endpoint + "/api/models/" + repo + "/revision/" + url.PathEscape(revision)
	req, err := c.newRequest(ctx, http.MethodGet, u)
	if err != nil {
		return "", nil, err
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return "", nil, fmt.Errorf("hub: %s: %w", repo, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", nil, statusErr(resp, fmt.Sprintf("repository %s at revision %q", repo, revision))
	}
	var ri repoInfo
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&ri); err != nil {
		return "", nil, fmt.Errorf("hub: %s: bad model info: %w", repo, err)
	}
	if !isHex(ri.SHA, 40) {
		return "", nil, fmt.Errorf("hub: %s: model info has no commit id (sha %q)", repo, ri.SHA)
	}
	for _, s := range ri.Siblings {
		if safeRel(s.RFilename) {
			files = append(files, s.RFilename)
		}
	}
	return ri.SHA, files, nil
}

// safeRel reports whether a repository path is clean and relative, so it
// can be joined under a snapshot folder.
func safeRel(p string) bool {
	return p != "" && path.Clean(p) == p && !path.IsAbs(p) && p != ".." && !strings.HasPrefix(p, "../") &&
		!strings.Contains(p, "\\")
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// Pull downloads the files a reference names at a revision ("" = "main")
// into the cache, and returns the local path to load: the GGUF (first file
// of a split) or the snapshot folder of a transformers repository.
func (c *Client) Pull(ctx context.Context, r Ref, revision string) (string, error) {
	if revision == "" {
		revision = "main"
	}
	commit, files, err := c.info(ctx, r.Repo, revision)
	if err != nil {
		return "", err
	}
	sel, err := selectFiles(r, files)
	if err != nil {
		return "", err
	}
	root := filepath.Join(c.CacheDir, repoDir(r.Repo))
	for _, f := range sel.Files {
		if err := c.fetchFile(ctx, r.Repo, commit, f, root); err != nil {
			return "", err
		}
	}
	if revision != commit {
		if err := writeAtomic(filepath.Join(root, "refs", filepath.FromSlash(revision)), []byte(commit)); err != nil {
			return "", err
		}
	}
	return entryPath(root, commit, sel), nil
}

func entryPath(root, commit string, sel Selection) string {
	snap := filepath.Join(root, "snapshots", commit)
	if sel.Entry == "" {
		return snap
	}
	return filepath.Join(snap, filepath.FromSlash(sel.Entry))
}

// Cached resolves a reference from the cache alone (no network): the path
// Pull would return if every file it needs is present, else ErrNotCached.
func (c *Client) Cached(r Ref, revision string) (string, error) {
	if revision == "" {
		revision = "main"
	}
	root := filepath.Join(c.CacheDir, repoDir(r.Repo))
	commit := revision
	if !isHex(revision, 40) {
		b, err := os.ReadFile(filepath.Join(root, "refs", filepath.FromSlash(revision)))
		if err != nil {
			return "", fmt.Errorf("%w: %s at %s", ErrNotCached, r.Repo, revision)
		}
		commit = strings.TrimSpace(string(b))
	}
	snap := filepath.Join(root, "snapshots", commit)
	files, err := listFiles(snap)
	if err != nil || len(files) == 0 {
		return "", fmt.Errorf("%w: %s at %s", ErrNotCached, r.Repo, revision)
	}
	sel, err := selectFiles(r, files)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNotCached, err)
	}
	if sel.Entry == "" && !dirComplete(snap, files) {
		return "", fmt.Errorf("%w: %s at %s (incomplete)", ErrNotCached, r.Repo, revision)
	}
	return entryPath(root, commit, sel), nil
}

// Get returns the cached path of a reference, pulling it first if needed.
func (c *Client) Get(ctx context.Context, r Ref, revision string) (string, error) {
	if p, err := c.Cached(r, revision); err == nil {
		return p, nil
	}
	return c.Pull(ctx, r, revision)
}

// dirComplete reports whether a transformers snapshot has its weights: a
// .safetensors file, and every shard its index names.
func dirComplete(snap string, files []string) bool {
	have := map[string]bool{}
	st := false
	for _, f := range files {
		have[f] = true
		st = st || strings.HasSuffix(f, ".safetensors")
	}
	b, err := os.ReadFile(filepath.Join(snap, "model.safetensors.index.json"))
	if err != nil {
		return st
	}
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if json.Unmarshal(b, &idx) != nil {
		return false
	}
	for _, f := range idx.WeightMap {
		if !have[f] {
			return false
		}
	}
	return st
}

// listFiles lists the files (and links to files) under dir as slash paths.
func listFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if _, err := os.Stat(p); err != nil { // a dangling link is not a file
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	return out, err
}

// fileMeta is what a HEAD on /resolve says about a file.
type fileMeta struct {
	etag string // sha256 (LFS) or git blob sha1, lower-case hex
	size int64  // -1 if unknown
}

// head reads a file's id and size, following only redirects that do not
// already carry them (a renamed repository), not the CDN one.
func (c *Client) head(ctx context.Context, u, what, commit string) (fileMeta, error) {
	hc := *c.http()
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for hops := 0; ; hops++ {
		req, err := c.newRequest(ctx, http.MethodHead, u)
		if err != nil {
			return fileMeta{}, err
		}
		req.Header.Set("Accept-Encoding", "identity")
		resp, err := hc.Do(req)
		if err != nil {
			return fileMeta{}, fmt.Errorf("hub: %s: %w", what, err)
		}
		resp.Body.Close()
		h := resp.Header
		linked := h.Get("X-Linked-Etag")
		if resp.StatusCode >= 300 && resp.StatusCode < 400 && linked == "" {
			loc, err := resp.Location()
			if err != nil || hops >= 5 {
				return fileMeta{}, fmt.Errorf("hub: %s: redirect without a usable location", what)
			}
			u = loc.String()
			continue
		}
		if resp.StatusCode >= 400 {
			return fileMeta{}, statusErr(resp, what)
		}
		if rc := h.Get("X-Repo-Commit"); rc != "" && rc != commit {
			return fileMeta{}, fmt.Errorf("hub: %s: the hub answered for commit %s, not %s", what, rc, commit)
		}
		m := fileMeta{etag: normEtag(linked), size: -1}
		if m.etag == "" {
			m.etag = normEtag(h.Get("ETag"))
		}
		if !isHex(m.etag, 64) && !isHex(m.etag, 40) {
			return fileMeta{}, fmt.Errorf("hub: %s: ETag %q is neither a sha256 nor a git blob id, so the download cannot be verified", what, m.etag)
		}
		sz := h.Get("X-Linked-Size")
		if sz == "" && resp.StatusCode == http.StatusOK {
			sz = h.Get("Content-Length")
		}
		if n, err := strconv.ParseInt(sz, 10, 64); err == nil && n >= 0 {
			m.size = n
		}
		return m, nil
	}
}

func normEtag(e string) string {
	e = strings.TrimPrefix(strings.TrimSpace(e), "W/")
	return strings.ToLower(strings.Trim(e, `"`))
}

// fetchFile makes snapshots/<commit>/<file> in root, downloading its blob
// unless present.
func (c *Client) fetchFile(ctx context.Context, repo, commit, file, root string) error {
	what := repo + "/" + file
	u := c.Endpoint + "/" + repo + "/resolve/" + commit + "/" + escapePath(file)
	link := filepath.Join(root, "snapshots", commit, filepath.FromSlash(file))
	meta, err := c.head(ctx, u, what, commit)
	if err != nil {
		return err
	}
	blob := filepath.Join(root, "blobs", meta.etag)
	if _, err := os.Stat(blob); err != nil {
		if err := c.downloadBlob(ctx, u, what, blob, meta, filepath.Join(c.CacheDir, ".locks", repoDir(repo), meta.etag+".lock")); err != nil {
			return err
		}
	}
	return makeLink(link, blob)
}

func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

// downloadBlob fetches one blob under its lock: into blob.incomplete
// (resuming what is there with a Range request), checks the digest, then
// renames it into place.
func (c *Client) downloadBlob(ctx context.Context, u, what, blob string, meta fileMeta, lockPath string) error {
	if err := os.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	unlock, err := lockFile(ctx, lockPath)
	if err != nil {
		return fmt.Errorf("hub: lock %s: %w", what, err)
	}
	defer unlock()
	if _, err := os.Stat(blob); err == nil {
		return nil // another process finished it while we waited
	}
	part := blob + ".incomplete"
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	defer f.Close()
	retries := c.Retries
	switch {
	case retries == 0:
		retries = 5
	case retries < 0:
		retries = 0
	}
	// A partial file left by an earlier process may itself be corrupt: if
	// a resumed download fails its checksum, it is fetched once more whole.
	resumed := false
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		resumed = true
	}
	var lastErr error
	for attempt := 0; attempt <= retries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
			}
		}
		err := c.transfer(ctx, u, what, f, meta)
		if err == nil {
			lastErr = nil
			break
		}
		lastErr = err
		if errors.Is(err, ErrChecksum) && resumed {
			resumed = false
			if err := restart(f); err != nil {
				return err
			}
			continue
		}
		if !retryable(err) {
			break
		}
	}
	if lastErr != nil {
		if errors.Is(lastErr, ErrChecksum) {
			os.Remove(part) // never resume onto corrupt bytes
		}
		return lastErr
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	if err := os.Rename(part, blob); err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	return nil
}

// retryable: broken transfers and server errors are retried (resuming),
// answers that will not change are not.
func retryable(err error) bool {
	if errors.Is(err, ErrChecksum) || errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrNotFound) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	return true
}

// transfer appends the rest of the file to f (which holds a prefix of it)
// and verifies the whole.
func (c *Client) transfer(ctx context.Context, u, what string, f *os.File, meta fileMeta) error {
	have, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	if meta.size >= 0 && have > meta.size {
		if err := restart(f); err != nil {
			return err
		}
		have = 0
	}
	if meta.size >= 0 && have == meta.size {
		return verify(f, what, meta)
	}
	req, err := c.newRequest(ctx, http.MethodGet, u)
	if err != nil {
		return err
	}
	req.Header.Set("Accept-Encoding", "identity")
	if have > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", have))
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return fmt.Errorf("hub: %s: %w", what, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		if have > 0 { // the server ignored Range: start over
			if err := restart(f); err != nil {
				return err
			}
			have = 0
		}
	case http.StatusPartialContent:
		start, ok := contentRangeStart(resp.Header.Get("Content-Range"))
		if !ok || start != have {
			restart(f)
			return fmt.Errorf("hub: %s: asked for bytes from %d, got Content-Range %q", what, have, resp.Header.Get("Content-Range"))
		}
	case http.StatusRequestedRangeNotSatisfiable:
		restart(f)
		return fmt.Errorf("hub: %s: range from %d not satisfiable; starting over", what, have)
	default:
		return statusErr(resp, what)
	}
	var w io.Writer = f
	if c.Progress != nil {
		p := c.Progress(what, meta.size, have)
		defer p.Close()
		w = io.MultiWriter(w, p)
	}
	if pf, _ := ctx.Value(progressKey{}).(func(Transfer) io.WriteCloser); pf != nil {
		digest := "sha1:" + meta.etag
		if len(meta.etag) == 64 {
			digest = "sha256:" + meta.etag
		}
		p := pf(Transfer{File: what, Digest: digest, Size: meta.size, Have: have})
		defer p.Close()
		w = io.MultiWriter(w, p)
	}
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("hub: %s: transfer broken at byte %d: %w", what, mustSize(f), err)
	}
	return verify(f, what, meta)
}

func mustSize(f *os.File) int64 {
	n, _ := f.Seek(0, io.SeekCurrent)
	return n
}

func restart(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	_, err := f.Seek(0, io.SeekStart)
	return err
}

func contentRangeStart(h string) (int64, bool) {
	// "bytes START-END/TOTAL"
	s, ok := strings.CutPrefix(h, "bytes ")
	if !ok {
		return 0, false
	}
	a, _, ok := strings.Cut(s, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(a, 10, 64)
	return n, err == nil
}

// verify hashes the whole file and compares it with the hub's id: sha256
// for LFS files, the git blob sha1 ("blob <size>\x00" + content) otherwise.
// A short file is a broken transfer (retried); a wrong digest is ErrChecksum.
func verify(f *os.File, what string, meta fileMeta) error {
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	if meta.size >= 0 && size != meta.size {
		return fmt.Errorf("hub: %s: got %d bytes, want %d", what, size, meta.size)
	}
	var h hash.Hash
	if len(meta.etag) == 64 {
		h = sha256.New()
	} else {
		h = sha1.New()
		fmt.Fprintf(h, "blob %d\x00", size)
	}
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, size)); err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != meta.etag {
		kind := "sha256"
		if len(meta.etag) == 40 {
			kind = "git blob sha1"
		}
		return fmt.Errorf("%w: %s: %s %s, the hub says %s (download discarded)", ErrChecksum, what, kind, got, meta.etag)
	}
	return nil
}

// makeLink points a snapshot path at its blob with a relative symlink (a
// copy where links are not allowed).
func makeLink(link, blob string) error {
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	rel, err := filepath.Rel(filepath.Dir(link), blob)
	if err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	if cur, err := os.Readlink(link); err == nil && cur == rel {
		return nil
	}
	tmp := link + ".tmp" + strconv.Itoa(os.Getpid())
	os.Remove(tmp)
	if err := os.Symlink(rel, tmp); err != nil {
		if err := copyFile(blob, tmp); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, link); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("hub: %w", err)
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("hub: %w", err)
	}
	return out.Close()
}

// writeAtomic writes a small file by renaming a temporary one over it.
func writeAtomic(p string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	tmp := p + ".tmp" + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("hub: %w", err)
	}
	return nil
}
