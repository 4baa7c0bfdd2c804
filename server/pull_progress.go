package server

// Ollama's /api/pull progress: while a hub pull downloads, the NDJSON
// stream carries one status object per file and moment, as Ollama's
// registry pulls do, so Ollama clients draw a bar per file:
//
//	{"status":"pulling 1a2b3c4d5e6f","digest":"sha256:1a2b…","total":16999200,"completed":4194304}
//
// completed grows to total for each file (a resumed transfer starts where
// the broken one stopped); digest is the hub's content hash of the file.

import (
	"io"
	"net/http"
	"sync"
	"time"

	"nanoserve/hub"
)

// pullProgressEvery is the least time between two status objects of one
// file (the first and the last are always written).
var pullProgressEvery = 250 * time.Millisecond

// pullStatus is one of Ollama's pull status objects.
type pullStatus struct {
	Status    string `json:"status"`
	Digest    string `json:"digest"`
	Total     int64  `json:"total"`
	Completed int64  `json:"completed"`
}

// pullStream writes status objects to a pull's response (one writer at a
// time: a pull's files may download concurrently).
type pullStream struct {
	mu sync.Mutex
	w  http.ResponseWriter
}

func (ps *pullStream) write(st pullStatus) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.w.Write(append(marshal(st), '\n'))
	http.NewResponseController(ps.w).Flush()
}

// file is the hub's progress sink for one transfer.
func (ps *pullStream) file(t hub.Transfer) io.WriteCloser {
	f := &pullFile{ps: ps, t: t, done: t.Have}
	f.report()
	return f
}

type pullFile struct {
	ps   *pullStream
	t    hub.Transfer
	done int64
	last time.Time
}

func (f *pullFile) report() {
	f.last = time.Now()
	total := f.t.Size
	if total < 0 {
		total = f.done // size unknown: as far as it got
	}
	short := f.t.Digest
	if i := len(short) - 64; i > 0 && short[i-1] == ':' {
		short = short[i : i+12]
	}
	f.ps.write(pullStatus{Status: "pulling " + short, Digest: f.t.Digest, Total: total, Completed: f.done})
}

func (f *pullFile) Write(p []byte) (int, error) {
	f.done += int64(len(p))
	if time.Since(f.last) >= pullProgressEvery {
		f.report()
	}
	return len(p), nil
}

func (f *pullFile) Close() error {
	f.report()
	return nil
}
