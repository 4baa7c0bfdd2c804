package server

// llama-server's streamed telemetry, asked for per request:
//
//   - timings_per_token: every streamed chunk carries the timings object
//     (timings), as it stands: the prompt's (cache_n, prompt_n, prompt_ms
//     and rates, from the engine's prefill reports) and the generation's so
//     far (predicted_n tokens, predicted_ms since the first token). The
//     opening role chunk has none.
//   - return_progress: while the prompt is processed, the stream carries
//     prompt_progress {total, cache, processed, time_ms} chunks: one when
//     the request is admitted (processed = cache, the positions the prefix
//     cache held) and one after each prefill step (the last with processed
//     = total). Chat chunks carry delta {role, content: null}, /completion
//     and completions chunks empty text, the Responses API a
//     response.in_progress event.
//
// The engine reports prefill through engine.Request.Progress on its
// scheduler goroutine; progressLog queues the reports and run hands them to
// the sink (progressSink) from the job's goroutine, between tokens.

import (
	"sync"
	"time"

	"nanoserve/engine"
)

// promptProgress is llama-server's prompt_progress object.
type promptProgress struct {
	Total     int   `json:"total"`
	Cache     int   `json:"cache"`
	Processed int   `json:"processed"`
	TimeMs    int64 `json:"time_ms"`
}

func progressOf(p engine.PromptProgress) *promptProgress {
	return &promptProgress{Total: p.Total, Cache: p.Cached, Processed: p.Processed, TimeMs: p.Elapsed.Milliseconds()}
}

// progressSink is a sink that streams prompt progress (return_progress).
type progressSink interface {
	Progress(p engine.PromptProgress) bool
}

// progressLog collects the engine's prefill reports of a job's first
// prompt: every report in order (for return_progress) and the latest (for
// timings).
type progressLog struct {
	mu      sync.Mutex
	pending []engine.PromptProgress
	last    engine.PromptProgress
	notify  chan struct{} // one token: reports are pending
}

func newProgressLog() *progressLog { return &progressLog{notify: make(chan struct{}, 1)} }

// report is engine.Request.Progress: it never blocks.
func (l *progressLog) report(p engine.PromptProgress) {
	l.mu.Lock()
	l.pending = append(l.pending, p)
	l.last = p
	l.mu.Unlock()
	select {
	case l.notify <- struct{}{}:
	default:
	}
}

// take returns the reports not yet taken.
func (l *progressLog) take() []engine.PromptProgress {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.pending
	l.pending = nil
	return out
}

func (l *progressLog) latest() engine.PromptProgress {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

// telemetry is a streamed job's per-chunk timings state.
type telemetry struct {
	log   *progressLog
	first time.Time   // the first generated token (zero: none yet)
	n     map[int]int // tokens generated so far, by choice
}

// liveTimings are the timings as they stand: the prompt's from the latest
// prefill report, choice i's generation so far.
func (t *telemetry) liveTimings(i int) *nativeTimings {
	p := t.log.latest()
	tm := &nativeTimings{CacheN: p.Cached, PromptN: max(p.Processed-p.Cached, 0), PromptMs: float64(p.Elapsed.Microseconds()) / 1000}
	if tm.PromptN > 0 && tm.PromptMs > 0 {
		tm.PromptPerTokenMs, tm.PromptPerSecond = tm.PromptMs/float64(tm.PromptN), 1000*float64(tm.PromptN)/tm.PromptMs
	}
	tm.PredictedN = t.n[i]
	if !t.first.IsZero() {
		tm.PredictedMs = float64(time.Since(t.first).Microseconds()) / 1000
		// The first token comes from the prompt's logits: the rate is over
		// the decode steps after it, as llamaTimings.
		if steps := tm.PredictedN - 1; steps > 0 && tm.PredictedMs > 0 {
			tm.PredictedPerTokenMs, tm.PredictedPerSecond = tm.PredictedMs/float64(steps), 1000*float64(steps)/tm.PredictedMs
		}
	}
	return tm
}

// count records choice i's new tokens.
func (t *telemetry) count(i int, d delta) {
	if t.first.IsZero() {
		t.first = time.Now()
	}
	if !d.Stop {
		t.n[i]++
	}
}

// telemetryFields are the request fields that ask for it (llama-server's).
type telemetryFields struct {
	TimingsPerToken *bool `json:"timings_per_token"`
	ReturnProgress  *bool `json:"return_progress"`
}

// setTelemetry arms a streamed job's telemetry from the request's fields.
func (j *job) setTelemetry(f telemetryFields, stream bool) {
	if !stream {
		return
	}
	timings, progress := f.TimingsPerToken != nil && *f.TimingsPerToken, f.ReturnProgress != nil && *f.ReturnProgress
	if !timings && !progress {
		return
	}
	j.progress = progress
	j.telemetry = &telemetry{log: newProgressLog(), n: map[int]int{}}
	if !timings {
		j.telemetry.n = nil
	}
	j.reqs[0].Progress = j.telemetry.log.report
}

// timingsNow is what a chunk of choice i carries: the live timings when
// the request asked for them per token, else nil.
func (j *job) timingsNow(i int) *nativeTimings {
	if j.telemetry == nil || j.telemetry.n == nil {
		return nil
	}
	return j.telemetry.liveTimings(i)
}

// progressTimings are the timings a progress chunk carries (nil unless
// asked for): the prompt so far, nothing generated.
func (j *job) progressTimings(p engine.PromptProgress) *nativeTimings {
	if j.telemetry == nil || j.telemetry.n == nil {
		return nil
	}
	tm := &nativeTimings{CacheN: p.Cached, PromptN: max(p.Processed-p.Cached, 0), PromptMs: float64(p.Elapsed.Microseconds()) / 1000}
	if tm.PromptN > 0 && tm.PromptMs > 0 {
		tm.PromptPerTokenMs, tm.PromptPerSecond = tm.PromptMs/float64(tm.PromptN), 1000*float64(tm.PromptN)/tm.PromptMs
	}
	return tm
}
