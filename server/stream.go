package server

// Streamed answers: every streaming sink (OpenAI's and llama-server's
// server-sent events, Ollama's NDJSON) writes its frames through one
// writer.

import "net/http"

// frames writes a streamed answer: its status and headers once, then
// frames, each flushed at once; after a failed write (the client is gone)
// nothing more.
type frames struct {
	w       http.ResponseWriter
	started bool // status and headers written
	failed  bool // a write failed
}

// sseHeaders are the headers of a server-sent events stream.
var sseHeaders = []string{"Content-Type", "text/event-stream", "Cache-Control", "no-cache", "X-Accel-Buffering", "no"}

// start writes the status and the headers (name, value pairs) once.
func (f *frames) start(headers ...string) {
	if f.started {
		return
	}
	f.started = true
	for i := 0; i+1 < len(headers); i += 2 {
		f.w.Header().Set(headers[i], headers[i+1])
	}
	f.w.WriteHeader(http.StatusOK)
}

// flush sends what is written; false once the client is gone.
func (f *frames) flush() bool {
	if http.NewResponseController(f.w).Flush() != nil {
		f.failed = true
	}
	return !f.failed
}

// write writes one frame and flushes it; false once the client is gone.
func (f *frames) write(b []byte) bool {
	if f.failed {
		return false
	}
	if _, err := f.w.Write(b); err != nil {
		f.failed = true
		return false
	}
	return f.flush()
}

// sse writes v as one server-sent event, "data: JSON\n\n".
func (f *frames) sse(v any) bool {
	b := append([]byte("data: "), marshal(v)...)
	return f.write(append(b, "\n\n"...))
}

// ndjson writes v as one line of newline-delimited JSON.
func (f *frames) ndjson(v any) bool { return f.write(append(marshal(v), '\n')) }
