// Package fakehub is a stand-in Hugging Face hub for tests: it serves the
// model-info API and /resolve/REV/FILE as the hub does (git-blob ETags for
// small files; LFS files redirected to a CDN path with X-Linked-Etag, the
// sha256, and X-Linked-Size; Range requests answered 206), and injects the
// faults a real network produces: transfers cut after N bytes, corrupted
// bodies, servers that ignore Range, 401 for gated repositories without the
// token, 404 for unknown repositories, revisions and files.
package fakehub

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// File is one file of a repository.
type File struct {
	Data []byte
	LFS  bool // served through the CDN redirect with X-Linked-Etag
}

// Repo is a repository with one commit.
type Repo struct {
	Commit string            // 40 hex digits
	Refs   map[string]string // extra revision names → Commit ("main" always works)
	Files  map[string]File
	Gated  bool // needs the hub's Token
}

// Hub is the stand-in server.
type Hub struct {
	*httptest.Server
	Token string // the token gated repositories accept

	mu sync.Mutex
	// The following fields are protected by mu.
	repos       map[string]*Repo
	cuts        map[string][]int64 // file → absolute offsets at which the next transfers break
	corrupt     map[string]bool    // file → serve one flipped byte
	ignoreRange bool
	slow        time.Duration     // pause per 4 KiB of body
	served      map[string]int64  // file → body bytes sent by GETs
	ranges      []string          // "file bytes=N-" of every ranged GET
	gets        map[string]int    // file → GETs of its content
	wrongETag   map[string]string // file → ETag to advertise instead of the real one
	cdnHost     string            // host name LFS redirects use ("" = the hub's own URL)
	cdnAuth     int               // CDN requests that carried an Authorization header
	renamed     map[string]string // old repository name → new
}

// New starts a stand-in hub; Close it when done.
func New() *Hub {
	h := &Hub{repos: map[string]*Repo{}, cuts: map[string][]int64{}, corrupt: map[string]bool{},
		served: map[string]int64{}, gets: map[string]int{}, wrongETag: map[string]string{}, renamed: map[string]string{}}
	h.Server = httptest.NewServer(http.HandlerFunc(h.serve))
	return h
}

// Add puts a repository on the hub.
func (h *Hub) Add(name string, r *Repo) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.repos[name] = r
}

// Cut makes the next len(at) transfers of file break after reaching the
// given absolute byte offsets.
func (h *Hub) Cut(file string, at ...int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cuts[file] = append(h.cuts[file], at...)
}

// Corrupt makes every transfer of file carry one wrong byte.
func (h *Hub) Corrupt(file string, on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.corrupt[file] = on
}

// AdvertiseETag makes HEAD on file report etag instead of its real id.
func (h *Hub) AdvertiseETag(file, etag string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.wrongETag[file] = etag
}

// IgnoreRange makes the server answer ranged GETs with the whole file.
func (h *Hub) IgnoreRange(on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ignoreRange = on
}

// Slow pauses the body every 4 KiB, so concurrent pulls overlap.
func (h *Hub) Slow(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.slow = d
}

// CDNHost makes LFS redirects point at host (e.g. "localhost", a different
// host name for the same server, as the hub's CDN is another host).
func (h *Hub) CDNHost(host string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cdnHost = host
}

// CDNAuth is the number of CDN requests that carried an Authorization header.
func (h *Hub) CDNAuth() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cdnAuth
}

// Rename makes every request for repository old redirect (307) to new, as
// the hub does for renamed repositories.
func (h *Hub) Rename(old, new string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.renamed[old] = new
}

// Served is the body bytes GETs of file have sent so far.
func (h *Hub) Served(file string) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.served[file]
}

// Gets is the number of content GETs of file.
func (h *Hub) Gets(file string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.gets[file]
}

// Ranges lists "file bytes=N-" for every ranged GET so far.
func (h *Hub) Ranges() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.ranges)
}

// SHA256 is the hex sha256 of b (an LFS file's id).
func SHA256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// GitBlobID is git's id of a blob: sha1("blob <n>\x00" + b).
func GitBlobID(b []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

func (h *Hub) repo(w http.ResponseWriter, r *http.Request, name, rev string) (*Repo, bool) {
	h.mu.Lock()
	repo := h.repos[name]
	h.mu.Unlock()
	if repo == nil {
		w.Header().Set("X-Error-Message", "Repository not found")
		http.Error(w, "Repository not found", http.StatusNotFound)
		return nil, false
	}
	if repo.Gated && r.Header.Get("Authorization") != "Bearer "+h.Token {
		w.Header().Set("X-Error-Message", "Access to model "+name+" is restricted.")
		http.Error(w, "gated", http.StatusUnauthorized)
		return nil, false
	}
	if rev != "main" && rev != repo.Commit && repo.Refs[rev] == "" {
		w.Header().Set("X-Error-Message", "Invalid rev id: "+rev)
		http.Error(w, "revision not found", http.StatusNotFound)
		return nil, false
	}
	return repo, true
}

func (h *Hub) serve(w http.ResponseWriter, r *http.Request) {
	p := r.URL.EscapedPath()
	h.mu.Lock()
	for old, nw := range h.renamed {
		for _, pre := range []string{"/api/models/", "/"} {
			if rest, ok := strings.CutPrefix(p, pre+old+"/"); ok {
				h.mu.Unlock()
				http.Redirect(w, r, pre+nw+"/"+rest, http.StatusTemporaryRedirect)
				return
			}
		}
	}
	if strings.HasPrefix(p, "/cdn/") && r.Header.Get("Authorization") != "" {
		h.cdnAuth++
	}
	h.mu.Unlock()
	switch {
	case strings.HasPrefix(p, "/api/models/"):
		// /api/models/ORG/NAME/revision/REV
		parts := strings.SplitN(strings.TrimPrefix(p, "/api/models/"), "/", 4)
		if len(parts) != 4 || parts[2] != "revision" {
			http.NotFound(w, r)
			return
		}
		rev := unescape(parts[3])
		repo, ok := h.repo(w, r, parts[0]+"/"+parts[1], rev)
		if !ok {
			return
		}
		type sib struct {
			RFilename string `json:"rfilename"`
		}
		info := struct {
			ID       string `json:"id"`
			SHA      string `json:"sha"`
			Siblings []sib  `json:"siblings"`
		}{ID: parts[0] + "/" + parts[1], SHA: repo.Commit}
		for _, f := range slices.Sorted(maps.Keys(repo.Files)) {
			info.Siblings = append(info.Siblings, sib{f})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(info)
	case strings.HasPrefix(p, "/cdn/"):
		// /cdn/ORG/NAME/FILE… (the redirect target of LFS files)
		parts := strings.SplitN(strings.TrimPrefix(p, "/cdn/"), "/", 3)
		if len(parts) != 3 {
			http.NotFound(w, r)
			return
		}
		h.mu.Lock()
		repo := h.repos[parts[0]+"/"+parts[1]]
		h.mu.Unlock()
		file := unescape(parts[2])
		f, ok := File{}, false
		if repo != nil {
			f, ok = repo.Files[file]
		}
		if !ok {
			http.NotFound(w, r)
			return
		}
		h.content(w, r, file, f.Data)
	default:
		// /ORG/NAME/resolve/REV/FILE…
		parts := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 5)
		if len(parts) != 5 || parts[2] != "resolve" {
			http.NotFound(w, r)
			return
		}
		name := parts[0] + "/" + parts[1]
		repo, ok := h.repo(w, r, name, unescape(parts[3]))
		if !ok {
			return
		}
		file := unescape(parts[4])
		f, ok := repo.Files[file]
		if !ok {
			w.Header().Set("X-Error-Code", "EntryNotFound")
			http.Error(w, "Entry not found", http.StatusNotFound)
			return
		}
		h.mu.Lock()
		adv := h.wrongETag[file]
		h.mu.Unlock()
		w.Header().Set("X-Repo-Commit", repo.Commit)
		if f.LFS {
			id := SHA256(f.Data)
			if adv != "" {
				id = adv
			}
			w.Header().Set("X-Linked-Etag", `"`+id+`"`)
			w.Header().Set("X-Linked-Size", strconv.Itoa(len(f.Data)))
			w.Header().Set("ETag", `"`+GitBlobID([]byte("version https://git-lfs.github.com/spec/v1\n"))+`"`)
			base := h.URL
			h.mu.Lock()
			if h.cdnHost != "" {
				base = "http://" + net.JoinHostPort(h.cdnHost, strconv.Itoa(h.Listener.Addr().(*net.TCPAddr).Port))
			}
			h.mu.Unlock()
			w.Header().Set("Location", base+"/cdn/"+name+"/"+parts[4])
			w.WriteHeader(http.StatusFound)
			return
		}
		id := GitBlobID(f.Data)
		if adv != "" {
			id = adv
		}
		w.Header().Set("ETag", `"`+id+`"`)
		h.content(w, r, file, f.Data)
	}
}

// content serves data with Range support and the injected faults.
func (h *Hub) content(w http.ResponseWriter, r *http.Request, file string, data []byte) {
	h.mu.Lock()
	ignore, slow, corrupt := h.ignoreRange, h.slow, h.corrupt[file]
	var cut int64 = -1
	if r.Method == http.MethodGet {
		h.gets[file]++
		if q := h.cuts[file]; len(q) > 0 {
			cut, h.cuts[file] = q[0], q[1:]
		}
		if rg := r.Header.Get("Range"); rg != "" {
			h.ranges = append(h.ranges, file+" "+rg)
		}
	}
	h.mu.Unlock()
	if corrupt {
		data = slices.Clone(data)
		data[len(data)/2] ^= 0x55
	}
	start := int64(0)
	if rg, ok := strings.CutPrefix(r.Header.Get("Range"), "bytes="); ok && !ignore {
		a, b, _ := strings.Cut(rg, "-")
		n, err := strconv.ParseInt(a, 10, 64)
		if err != nil || b != "" || n < 0 {
			http.Error(w, "only bytes=N- ranges", http.StatusBadRequest)
			return
		}
		if n >= int64(len(data)) {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", len(data)))
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		}
		start = n
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", n, len(data)-1, len(data)))
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(data)-int(start)))
	w.Header().Set("Accept-Ranges", "bytes")
	if start > 0 {
		w.WriteHeader(http.StatusPartialContent)
	} else {
		w.WriteHeader(http.StatusOK)
	}
	if r.Method == http.MethodHead {
		return
	}
	end := int64(len(data))
	if cut >= 0 && cut < end {
		end = max(cut, start)
	}
	for off := start; off < end; {
		n := min(end-off, 4096)
		if _, err := w.Write(data[off : off+n]); err != nil {
			return
		}
		h.mu.Lock()
		h.served[file] += n
		h.mu.Unlock()
		off += n
		if slow > 0 {
			w.(http.Flusher).Flush()
			time.Sleep(slow)
		}
	}
	if end < int64(len(data)) {
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the client sees the body end early
	}
}

func unescape(s string) string {
	parts := strings.Split(s, "/")
	for i, p := range parts {
		if u, err := url.PathUnescape(p); err == nil {
			parts[i] = u
		}
	}
	return strings.Join(parts, "/")
}
