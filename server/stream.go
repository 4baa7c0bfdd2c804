package server

// Streamed answers: every streaming sink (OpenAI's and llama-server's
// server-sent events, Ollama's NDJSON) writes its frames through one
// writer.

import (
	"encoding/json"
	"net/http"
	"strings"
)

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

// responseFields applies llama-server's response_fields to an answer v:
// only the named fields, "a/b" reaching into a nested object under the
// key "a/b" (none named: v whole).
func responseFields(v any, fields []string) any {
	if len(fields) == 0 {
		return v
	}
	var whole map[string]any
	if json.Unmarshal(marshal(v), &whole) != nil {
		return v
	}
	out := map[string]any{}
	for _, path := range fields {
		var cur any = whole
		ok := true
		for _, k := range strings.Split(path, "/") {
			m, isMap := cur.(map[string]any)
			if !isMap {
				ok = false
				break
			}
			if cur, ok = m[k]; !ok {
				break
			}
		}
		if ok {
			out[path] = cur
		}
	}
	return out
}
