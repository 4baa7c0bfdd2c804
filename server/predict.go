package server

// Vertex AI's prediction protocol, as llama-server serves it for a Google
// Cloud custom container (AIP_MODE=PREDICTION; cmd/nanoserve reads the
// AIP_* variables into Options.PredictRoute and HealthRoute):
//
//	POST {AIP_PREDICT_ROUTE, default /predict}
//	  {"instances": [{"@requestFormat": "chatCompletions", ...body}, ...]}
//	→ {"predictions": [answer, ...]}
//
// Each instance is one request to another route of the table, named by
// @requestFormat: a path ("/v1/chat/completions") or its camelCase form
// (the path without /v1, each "/", "-" or "_" capitalising the next
// letter: chatCompletions, completion, applyTemplate). The instances run
// at once, each through the front like any request (the caller's headers,
// so its API key; stream forced off), and each prediction is that route's
// JSON answer — an error object for one that failed, the others unharmed.

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"unicode"
)

// maxInstances bounds one predict request (llama-server's limit).
const maxInstances = 128

// predictRoutes are the prediction route and the health alias of opts
// (none unless set).
func predictRoutes(o Options) []route {
	var out []route
	if o.PredictRoute != "" {
		out = append(out, route{method: http.MethodPost, path: o.PredictRoute, endpoint: "predict", generation: true,
			front: (*Front).handlePredict})
	}
	if o.HealthRoute != "" && o.HealthRoute != "/health" {
		out = append(out, route{method: http.MethodGet, path: o.HealthRoute, endpoint: "health", access: public, quiet: true,
			front: (*Front).handleHealth})
	}
	return out
}

// gcpFormat is a route path's @requestFormat name.
func gcpFormat(path string) string {
	path = strings.TrimPrefix(strings.TrimPrefix(path, "/v1"), "/")
	var b strings.Builder
	up := false
	for _, r := range path {
		switch {
		case r == '{':
			return b.String() // a wildcard: the rest is a parameter
		case r == '/' || r == '-' || r == '_':
			up = true
		case up:
			b.WriteRune(unicode.ToUpper(r))
			up = false
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// predictPath is the POST route an instance's @requestFormat names.
func predictPath(format string) (string, bool) {
	for _, rt := range routes() {
		if rt.method == http.MethodPost && (gcpFormat(rt.path) == format || rt.path == format) {
			return rt.path, true
		}
	}
	return "", false
}

func (f *Front) handlePredict(w http.ResponseWriter, r *http.Request) {
	body, e := f.readBody(w, r)
	if e != nil {
		writeError(w, e)
		return
	}
	var req struct {
		Instances []json.RawMessage `json:"instances"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Instances == nil {
		writeError(w, badRequest("instances", "the body must be a JSON object with an array field named instances"))
		return
	}
	if len(req.Instances) > maxInstances {
		writeError(w, badRequest("instances", "the instances array exceeds the maximum size of %d", maxInstances))
		return
	}
	preds := make([]json.RawMessage, len(req.Instances))
	var wg sync.WaitGroup
	for i, inst := range req.Instances {
		wg.Go(func() { preds[i] = f.predictOne(r, inst) })
	}
	wg.Wait()
	writeJSON(w, http.StatusOK, map[string]any{"predictions": preds})
}

// predictOne runs one instance through the front and returns its answer.
func (f *Front) predictOne(outer *http.Request, inst json.RawMessage) json.RawMessage {
	fail := func(format string, args ...any) json.RawMessage {
		return marshal(map[string]*apiError{"error": badRequest("", format, args...)})
	}
	var payload map[string]json.RawMessage
	if err := json.Unmarshal(inst, &payload); err != nil || payload == nil {
		return fail("each instance must be a JSON object")
	}
	var format string
	if err := json.Unmarshal(payload["@requestFormat"], &format); err != nil || format == "" {
		return fail("each instance must include a string @requestFormat")
	}
	path, ok := predictPath(format)
	if !ok {
		return fail("no route for @requestFormat %q", format)
	}
	delete(payload, "@requestFormat")
	if _, ok := payload["stream"]; ok {
		payload["stream"] = json.RawMessage("false") // the predict route does not stream
	}
	r, err := http.NewRequestWithContext(outer.Context(), http.MethodPost, path, bytes.NewReader(marshal(payload)))
	if err != nil {
		return fail("%v", err)
	}
	r.Header = outer.Header.Clone()
	r.RemoteAddr, r.Host = outer.RemoteAddr, outer.Host
	rec := &recorder{header: http.Header{}}
	f.ServeHTTP(rec, r)
	b := bytes.TrimSpace(rec.body.Bytes())
	if !json.Valid(b) {
		return marshal(string(b)) // a plain-text answer, as a JSON string
	}
	return b
}

// recorder is the http.ResponseWriter an instance's route writes to.
type recorder struct {
	header http.Header
	body   bytes.Buffer
	status int
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}
