package server

// The front's endpoints, written once over the model table (a server of
// one model is a table of one): /v1/models and /v1/models/{id}, /health,
// /ready, /metrics, and Ollama's /api/tags, /api/ps, /api/version and
// /api/pull.

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"nanoserve/engine"
	"nanoserve/hub"
)

// listed is one model as the listings see it.
type listed struct {
	names    []string
	aliases  []string // the operator's names (host.Spec.Aliases)
	tags     []string
	manifest *Manifest
	srv      *Server // nil: not loaded
	bytes    int64
	expires  time.Time // zero: kept loaded
}

// listModels are the served models in order.
func (f *Front) listModels() []listed {
	var out []listed
	for _, e := range f.models.Entries() {
		m := listed{names: e.Names, aliases: e.Aliases, tags: e.Tags, manifest: e.Manifest}
		if e.Loaded {
			m.srv, m.bytes, m.expires = e.Value, e.Bytes, e.Expires
		}
		out = append(out, m)
	}
	return out
}

func (f *Front) card(m listed) modelCard {
	c := modelCard{ID: m.names[0], Object: "model", Created: f.created, OwnedBy: "nanoserve",
		Aliases: nonNil(m.aliases), Tags: nonNil(m.tags), Status: &modelStatus{Value: "unloaded"},
		Loaded: new(m.srv != nil), Manifest: m.manifest}
	switch {
	case m.srv != nil:
		c.MaxModelLen = m.srv.eng.CtxSize()
		c = c.withCache(m.srv.eng)
		c.Status.Value = "loaded"
		c.Meta = newModelMeta(m.srv.eng, m.manifest)
	case m.manifest != nil:
		c.MaxModelLen = m.manifest.ContextLength
	}
	return c
}

// modelStatus is llama-server's status object of a listed model.
type modelStatus struct {
	Value string `json:"value"` // loaded, unloaded
}

// modelMeta is llama-server's meta object of a loaded model: vocabulary
// size, the context a sequence gets and the trained one, the embedding
// width, parameters and the weight files' bytes.
type modelMeta struct {
	NVocab    int   `json:"n_vocab"`
	NCtx      int   `json:"n_ctx"`
	NCtxTrain int   `json:"n_ctx_train"`
	NEmbd     int   `json:"n_embd"`
	NParams   int64 `json:"n_params"`
	Size      int64 `json:"size"`
}

func newModelMeta(eng *engine.Engine, man *Manifest) *modelMeta {
	m := &modelMeta{NVocab: eng.Tokenizer().Size(), NCtx: eng.CtxSize()}
	if md := eng.Model(); md != nil {
		m.NCtxTrain, m.NEmbd, m.NParams = md.ContextLen, md.Dim, md.ParamCount()
	}
	if man != nil {
		m.Size = man.SizeBytes
	}
	return m
}

// nonNil is s, or an empty list (a JSON [] rather than null).
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (f *Front) handleModels(w http.ResponseWriter, r *http.Request) {
	var data []modelCard
	for _, m := range f.listModels() {
		data = append(data, f.card(m))
	}
	writeJSON(w, http.StatusOK, struct {
		Object string      `json:"object"`
		Data   []modelCard `json:"data"`
	}{"list", data})
}

func (f *Front) handleModel(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, "/v1/models/")
	i, ok := f.models.Lookup(id)
	if !ok || id == "" {
		writeError(w, unknownModel(id, f.models.Names()))
		return
	}
	writeJSON(w, http.StatusOK, f.card(f.listModels()[i]))
}

// handleHealth: 200 while every loaded model's engine loop beats.
func (f *Front) handleHealth(w http.ResponseWriter, r *http.Request) {
	for _, m := range f.listModels() {
		if m.srv == nil {
			continue
		}
		beat := m.srv.eng.Heartbeat()
		if beat.IsZero() {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "error",
				"message": fmt.Sprintf("the engine of the model %q is stopped", m.names[0])})
			return
		}
		if age := f.now().Sub(beat); age > f.healthStall {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "error",
				"message": fmt.Sprintf("the engine loop of the model %q has not stepped for %v (limit %v): it is hung", m.names[0], age.Round(time.Second), f.healthStall)})
			return
		}
	}
	status := "ok"
	if f.draining.Load() {
		status = "draining"
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": status})
}

// handleReady: 200 when the models named at start have loaded (Preload),
// no loaded model's queue is full, and the server is not draining.
func (f *Front) handleReady(w http.ResponseWriter, r *http.Request) {
	var why string
	loaded := []string{}
	running, waiting := 0, 0
	for _, m := range f.listModels() {
		if m.srv == nil {
			continue
		}
		loaded = append(loaded, m.names[0])
		st := m.srv.eng.Stats()
		running += st.Running
		waiting += st.Waiting
		switch {
		case why != "":
		case m.srv.eng.Heartbeat().IsZero():
			why = fmt.Sprintf("the engine of the model %q is stopped", m.names[0])
		case st.Waiting >= m.srv.eng.Options().MaxQueue:
			why = fmt.Sprintf("the queue of the model %q is full (%d waiting)", m.names[0], st.Waiting)
		case m.srv.slots != nil && len(m.srv.slots) >= cap(m.srv.slots):
			why = fmt.Sprintf("the model %q is full (%d requests running or waiting)", m.names[0], cap(m.srv.slots))
		}
	}
	switch {
	case f.draining.Load():
		why = "the server is draining for shutdown"
	case !f.models.Ready():
		why = "the models named at start are still loading"
	}
	if why != "" {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready", "message": why})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "model": f.models.List()[0].Names[0], "loaded": loaded,
		"running": running, "waiting": waiting})
}

// handleMetrics writes the server's request series, the router's and each
// loaded model's own series labelled model_name (families merged, so each
// has one HELP and TYPE).
func (f *Front) handleMetrics(w http.ResponseWriter, r *http.Request) {
	if f.metricsOff(w) {
		return
	}
	setProcessStart(w)
	serveFamilies(w, r, func() ([]*dto.MetricFamily, error) {
		front, err := f.m.reg.Gather()
		if err != nil {
			return nil, err
		}
		fams := slices.DeleteFunc(front, func(f *dto.MetricFamily) bool { return !isPerServer(f.GetName()) })
		loadedN, loads, unloads := f.models.Counts()
		own := prometheus.NewRegistry()
		own.MustRegister(constCollector(gaugeMetrics([]gauge{
			{name: "nanoserve_models_loaded", help: "Models loaded (multi-model server).", value: float64(loadedN)},
			{name: "nanoserve_model_loads_total", help: "Model loads.", value: float64(loads), counter: true},
			{name: "nanoserve_model_unloads_total", help: "Model unloads (least recently used, keep_alive).", value: float64(unloads), counter: true},
		})))
		more, err := own.Gather()
		if err != nil {
			return nil, err
		}
		fams = append(fams, more...)
		single := len(f.models.List()) == 1
		for _, m := range f.listModels() {
			if m.srv == nil {
				continue
			}
			mf, err := m.srv.gatherModel()
			if err != nil {
				return nil, err
			}
			for _, f := range mf {
				if isPerServer(f.GetName()) {
					continue
				}
				if isLlamaMetric(f) && single {
					fams = append(fams, f) // unlabelled, as llama-server writes them
					continue
				}
				for _, s := range f.Metric {
					withModelName(s, m.names[0])
				}
				fams = append(fams, f)
			}
		}
		return mergeFamilies(fams), nil
	})
}

func (f *Front) handleOllamaTags(w http.ResponseWriter, r *http.Request) {
	out := []ollamaModel{}
	for _, m := range f.listModels() {
		var size int64
		if m.manifest != nil {
			size = m.manifest.SizeBytes
		}
		out = append(out, ollamaModel{Name: m.names[0], Model: m.names[0], ModifiedAt: modifiedAt(m.manifest), Size: size,
			Digest: digest(m.manifest), Details: details(m.manifest)})
	}
	writeJSON(w, http.StatusOK, map[string]any{"models": out})
}

func (f *Front) handleOllamaPS(w http.ResponseWriter, r *http.Request) {
	out := []ollamaModel{}
	for _, m := range f.listModels() {
		if m.srv == nil {
			continue
		}
		expires := "0001-01-01T00:00:00Z" // kept loaded
		if !m.expires.IsZero() {
			expires = m.expires.UTC().Format(time.RFC3339Nano)
		}
		zero := int64(0)
		out = append(out, ollamaModel{Name: m.names[0], Model: m.names[0], Size: m.bytes, Digest: digest(m.manifest),
			Details: details(m.manifest), ExpiresAt: expires, SizeVRAM: &zero})
	}
	writeJSON(w, http.StatusOK, map[string]any{"models": out})
}

func (f *Front) handleOllamaVersion(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"version": ollamaVersion, "nanoserve": Version})
}

type ollamaPullRequest struct {
	unsupportedParams
	Model  string `json:"model"`
	Name   string `json:"name"`
	Stream *bool  `json:"stream"`
}

func (p *ollamaPullRequest) modelName() string { return p.Model }

// handleOllamaPull answers Ollama's pull: models come from the Hugging
// Face hub through `nanoserve pull`, and a server serves the models named
// at its start, so a pull is a clear 400 saying how.
func (f *Front) handleOllamaPull(w http.ResponseWriter, r *http.Request) {
	var req ollamaPullRequest
	if e := f.decodeJSON(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	name, e := ollamaName(req.Model, req.Name)
	if e != nil {
		writeError(w, e)
		return
	}
	if _, ok := f.lookupAny(name); ok {
		writeJSON(w, http.StatusOK, map[string]string{"status": "success"})
		return
	}
	hf := strings.HasPrefix(name, "hf.co/") || strings.HasPrefix(name, "huggingface.co/")
	if hf && f.pull != nil {
		if f.pullRef != nil {
			ref, err := f.pullRef(name)
			if err != nil {
				writeError(w, badRequest("model", "model %q is not a Hugging Face name hf.co/ORG/REPO[:QUANT|:FILE]: %v", name, err))
				return
			}
			if _, ok := f.lookupAny(ref); ok {
				// Served already (named by its reference at start).
				writeJSON(w, http.StatusOK, map[string]string{"status": "success"})
				return
			}
		}
		f.pullModel(w, r, name, req.Stream == nil || *req.Stream)
		return
	}
	msg := fmt.Sprintf("this server does not pull models at run time: run `nanoserve pull %s` and start the server with --model %s", strings.TrimPrefix(name, "hf.co/"), strings.TrimPrefix(name, "hf.co/"))
	if !hf {
		msg = fmt.Sprintf("%q is an Ollama registry name; nanoserve pulls from the Hugging Face hub: name the model as hf.co/ORG/REPO:QUANT (`nanoserve pull ORG/REPO:QUANT`)", name)
	}
	writeError(w, badRequest("model", "%s", msg))
}

// pullModel downloads a hub model through RouterOptions.Pull and serves
// it: NDJSON status lines ({"status": "pulling NAME"}, per-file progress
// with digest, total and completed (pull_progress.go), then "success") or,
// with stream false, the last one alone.
func (f *Front) pullModel(w http.ResponseWriter, r *http.Request, name string, stream bool) {
	if stream {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		w.Write(append(marshal(map[string]string{"status": "pulling " + name}), '\n'))
		http.NewResponseController(w).Flush()
	}
	ctx := r.Context()
	if stream {
		ctx = hub.WithProgress(ctx, (&pullStream{w: w}).file)
	}
	spec, err := f.pull(ctx, name)
	if err == nil {
		f.models.Add(spec)
	}
	if err != nil {
		e := &apiError{status: http.StatusBadGateway, Type: "server_error", Message: fmt.Sprintf("pulling %s failed: %v", name, err)}
		if stream {
			w.Write(append(marshal(ollamaError{e.Message}), '\n'))
			return
		}
		writeError(w, e)
		return
	}
	if stream {
		w.Write(append(marshal(map[string]string{"status": "success"}), '\n'))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "success"})
}

// lookupAny reports whether name is a served model's.
func (f *Front) lookupAny(name string) (int, bool) {
	return f.models.Lookup(name)
}
