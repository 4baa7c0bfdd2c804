package bench

// bench serve: load a running OpenAI-compatible server (ours, vLLM,
// llama-server, ...) with streaming requests and measure it from the
// client's side, in the manner of vLLM's `vllm bench serve`.
//
// Per request, with t0 the moment the request is sent, c_1..c_k the
// arrival times of the k streamed chunks that carry text, and t_end the
// end of the stream ("data: [DONE]"):
//
//	TTFT = c_1 − t0                         time to first token
//	E2EL = t_end − t0                       end-to-end latency
//	ITL  = c_j − c_{j−1}, j = 2..k          inter-token latencies (one per chunk gap)
//	TPOT = (E2EL − TTFT) / (n_out − 1)      time per output token after the first (n_out > 1)
//
// n_out is the server's usage.completion_tokens when it sends a usage
// chunk (we ask for one with stream_options.include_usage), else k. A
// server that holds text back (partial UTF-8, a possible stop string)
// sends two tokens in one chunk: ITL then counts one longer gap, TPOT is
// unaffected. Over the run, with D the wall time from the first request
// sent to the last stream ended: request throughput = completed / D,
// output throughput = Σ n_out / D (decode throughput when prompts are
// short), total throughput = Σ (n_in + n_out) / D. Distributions report
// the mean, the median and the 99th percentile (linear interpolation
// between order statistics, as numpy's default); ITL pools every gap of
// every request.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// ServePrompt is one prompt of a file-based workload.
type ServePrompt struct {
	System    string `json:"system,omitempty"`     // chat: a system message; completions: text before Prompt
	Prompt    string `json:"prompt"`               // the user's text (/infill: the text before the cursor)
	Suffix    string `json:"suffix,omitempty"`     // /infill: the text after the cursor
	MaxTokens int    `json:"max_tokens,omitempty"` // output length (0: ServeOptions.OutputLen)
}

// ServeOptions configure RunServe. Zero values take the defaults noted.
type ServeOptions struct {
	BaseURL     string  // the server, e.g. http://127.0.0.1:8080 (a trailing /v1 is accepted)
	Endpoint    string  // "/v1/completions" (default), "/v1/chat/completions" or llama-server's "/infill"
	Model       string  // the "model" field ("": omitted)
	APIKey      string  // sent as "Authorization: Bearer KEY" when set
	NumPrompts  int     // timed requests (≤ 0: 100, or the file's prompt count)
	Concurrency int     // most requests in flight (≤ 0: no limit)
	RequestRate float64 // Poisson arrivals per second, seeded (≤ 0 or +Inf: all at once)
	Seed        uint64  // prompts and arrival times

	// Synthetic prompts (used when Prompts is nil): InputLen random words
	// per request (≤ 0: 32), after a SharedPrefixLen-word system prompt
	// that every request shares (0: none) — many users, one long system
	// prompt. Words are common English words, about one token each on
	// real vocabularies; the report counts the tokens the server saw.
	InputLen        int
	SharedPrefixLen int
	OutputLen       int // max_tokens of every request (≤ 0: 128)
	IgnoreEOS       bool
	Prompts         []ServePrompt // file-based prompts, cycled to NumPrompts

	Warmup   int           // untimed requests before the run (< 0: none)
	Timeout  time.Duration // per request (0: none)
	Progress io.Writer     // one line per phase; nil: silent
	Client   *http.Client  // nil: a client with a connection per concurrent request

	clock func() time.Time // tests: a scripted clock (nil: time.Now)
}

// Dist summarises one latency over the run, in milliseconds.
type Dist struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean_ms"`
	P50  float64 `json:"median_ms"`
	P99  float64 `json:"p99_ms"`
}

// ServeResult is what bench serve reports (JSON field names follow
// vLLM's result file where one exists).
type ServeResult struct {
	BaseURL         string  `json:"base_url"`
	Endpoint        string  `json:"endpoint"`
	Model           string  `json:"model,omitempty"`
	Dataset         string  `json:"dataset"` // "random", "shared-prefix" or "file"
	NumPrompts      int     `json:"num_prompts"`
	Concurrency     int     `json:"max_concurrency"`
	RequestRate     float64 `json:"request_rate"` // 0: all at once
	Seed            uint64  `json:"seed"`
	InputLen        int     `json:"input_len,omitempty"`
	SharedPrefixLen int     `json:"shared_prefix_len,omitempty"`
	OutputLen       int     `json:"output_len"`
	Warmup          int     `json:"warmup"`

	Completed int      `json:"completed"`
	Failed    int      `json:"failed"`
	Errors    []string `json:"errors,omitempty"` // the first few failures

	DurationS         float64 `json:"duration"`
	InputTokens       int     `json:"total_input_tokens"`
	OutputTokens      int     `json:"total_output_tokens"`
	UsageReported     bool    `json:"usage_reported"` // every token count came from the server's usage
	RequestThroughput float64 `json:"request_throughput"`
	OutputThroughput  float64 `json:"output_throughput"`
	TotalThroughput   float64 `json:"total_token_throughput"`

	TTFT Dist `json:"ttft"`
	TPOT Dist `json:"tpot"`
	ITL  Dist `json:"itl"`
	E2EL Dist `json:"e2el"`

	LoadStart [3]float64 `json:"loadavg_start"`
	LoadEnd   [3]float64 `json:"loadavg_end"`
}

// trace is what one request recorded.
type trace struct {
	err       error
	sent      time.Time
	chunks    []time.Time // arrival of each chunk carrying text
	end       time.Time
	nIn, nOut int
	usage     bool // nIn, nOut are the server's
}

// ErrNoServer is returned when the warm-up (or every timed request) fails:
// there is nothing to measure.
var ErrNoServer = errors.New("bench: the server answered no request")

// RunServe runs the workload against o.BaseURL and summarises it.
func RunServe(ctx context.Context, o ServeOptions) (*ServeResult, error) {
	if err := o.resolve(); err != nil {
		return nil, err
	}
	reqs := o.requests()
	res := &ServeResult{BaseURL: o.BaseURL, Endpoint: o.Endpoint, Model: o.Model, NumPrompts: o.NumPrompts,
		Concurrency: max(o.Concurrency, 0), RequestRate: o.RequestRate, Seed: o.Seed, OutputLen: o.OutputLen, Warmup: max(o.Warmup, 0),
		Dataset: "file"}
	if o.Prompts == nil {
		res.Dataset, res.InputLen = "random", o.InputLen
		if o.SharedPrefixLen > 0 {
			res.Dataset, res.SharedPrefixLen = "shared-prefix", o.SharedPrefixLen
		}
	}
	if math.IsInf(res.RequestRate, 1) {
		res.RequestRate = 0
	}
	if o.Warmup > 0 {
		o.progress("warm-up: %d requests", o.Warmup)
		// Warm-up prompts are the run's own, so a prefix cache sees the
		// shared prefix (as it would in steady state) but not the
		// timed requests' own words.
		wu := make([]request, o.Warmup)
		for i := range wu {
			wu[i] = o.synthetic(uint64(o.NumPrompts + i))
			if o.Prompts != nil {
				wu[i] = reqs[i%len(reqs)]
			}
		}
		for _, t := range o.run(ctx, wu, 0) {
			if t.err != nil {
				return nil, fmt.Errorf("%w: warm-up: %v", ErrNoServer, t.err)
			}
		}
	}
	o.progress("timed: %d requests, concurrency %d, rate %g/s", len(reqs), res.Concurrency, res.RequestRate)
	res.LoadStart = loadAvg()
	start := o.clock()
	traces := o.run(ctx, reqs, o.RequestRate)
	end := o.clock()
	res.LoadEnd = loadAvg()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bench: serve run interrupted: %w", err)
	}
	summarize(res, traces, end.Sub(start))
	if res.Completed == 0 {
		return res, fmt.Errorf("%w: %s", ErrNoServer, strings.Join(res.Errors, "; "))
	}
	return res, nil
}

func (o *ServeOptions) resolve() error {
	if o.clock == nil {
		o.clock = time.Now
	}
	o.BaseURL = strings.TrimSuffix(strings.TrimSuffix(o.BaseURL, "/"), "/v1")
	if !strings.HasPrefix(o.BaseURL, "http://") && !strings.HasPrefix(o.BaseURL, "https://") {
		return fmt.Errorf("bench: base URL %q: want http://HOST:PORT", o.BaseURL)
	}
	switch o.Endpoint {
	case "":
		o.Endpoint = "/v1/completions"
	case "/v1/completions", "/v1/chat/completions", "/infill":
	default:
		return fmt.Errorf("bench: endpoint %q: want /v1/completions, /v1/chat/completions or /infill", o.Endpoint)
	}
	if o.InputLen <= 0 {
		o.InputLen = 32
	}
	if o.OutputLen <= 0 {
		o.OutputLen = 128
	}
	if o.SharedPrefixLen < 0 {
		return fmt.Errorf("bench: shared prefix length %d: want 0 or more words", o.SharedPrefixLen)
	}
	if o.Prompts != nil && len(o.Prompts) == 0 {
		return errors.New("bench: the prompt file holds no prompts")
	}
	if o.NumPrompts <= 0 {
		o.NumPrompts = 100
		if o.Prompts != nil {
			o.NumPrompts = len(o.Prompts)
		}
	}
	if math.IsNaN(o.RequestRate) || o.RequestRate < 0 {
		return fmt.Errorf("bench: request rate %g: want requests per second (0: all at once)", o.RequestRate)
	}
	if o.Client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = max(o.Concurrency, 64)
		tr.DisableCompression = true
		o.Client = &http.Client{Transport: tr}
	}
	return nil
}

func (o *ServeOptions) progress(format string, a ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, "bench serve: "+format+"\n", a...)
	}
}

// request is one prepared request.
type request struct {
	system, prompt, suffix string
	maxTokens              int
}

// requests lays out the timed workload.
func (o *ServeOptions) requests() []request {
	out := make([]request, o.NumPrompts)
	for i := range out {
		if o.Prompts != nil {
			p := o.Prompts[i%len(o.Prompts)]
			out[i] = request{system: p.System, prompt: p.Prompt, suffix: p.Suffix, maxTokens: p.MaxTokens}
			if out[i].maxTokens <= 0 {
				out[i].maxTokens = o.OutputLen
			}
			continue
		}
		out[i] = o.synthetic(uint64(i))
	}
	return out
}

// synthetic is request i of the seeded random workload: its own InputLen
// words (stream (seed, i)) after the shared system prompt (stream
// (seed, 2^63), the same for every i). For /infill the words are cut in
// two at the middle: the text before and after the cursor.
func (o *ServeOptions) synthetic(i uint64) request {
	r := request{prompt: words(rand.New(rand.NewPCG(o.Seed, i)), o.InputLen), maxTokens: o.OutputLen}
	if o.Endpoint == "/infill" {
		w := strings.Fields(r.prompt)
		r.prompt, r.suffix = strings.Join(w[:len(w)/2], " ")+" ", strings.Join(w[len(w)/2:], " ")
	}
	if o.SharedPrefixLen > 0 {
		r.system = words(rand.New(rand.NewPCG(o.Seed, 1<<63)), o.SharedPrefixLen)
	}
	return r
}

// vocabulary of synthetic prompts: short, common English words.
var promptWords = strings.Fields(`the of and to in is was he for it with as his on be at by had are but from
or have an they which one you were her all she there would their we him been has when who will more no if
out so said what up its about into than them can only other new some could time these two may then do
first any my now such like our over man me even most made after also did many before must through back
years where much your way well down should because each just those people how too little state good very
make world still own see men work long get here between both life being under never day same another know
while last might us great old year off come since against go came right used take three`)

func words(r *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(promptWords[r.IntN(len(promptWords))])
	}
	return b.String()
}

// arrivals are the send times of n requests after the run's start: a
// Poisson process of the given rate (exponential gaps of mean 1/rate from
// the seeded stream (seed, 2^62)), or all at zero for rate ≤ 0 or +Inf.
func arrivals(seed uint64, rate float64, n int) []time.Duration {
	due := make([]time.Duration, n)
	if rate <= 0 || math.IsInf(rate, 1) {
		return due
	}
	r := rand.New(rand.NewPCG(seed, 1<<62))
	var t float64 // seconds
	for i := range due {
		t += r.ExpFloat64() / rate
		due[i] = time.Duration(t * float64(time.Second))
	}
	return due
}

// run sends reqs, at most Concurrency at a time, each at its arrival time
// (rate > 0), and returns their traces in order.
func (o *ServeOptions) run(ctx context.Context, reqs []request, rate float64) []trace {
	traces := make([]trace, len(reqs))
	var sem chan struct{}
	if o.Concurrency > 0 {
		sem = make(chan struct{}, o.Concurrency)
	}
	due := arrivals(o.Seed, rate, len(reqs))
	begin := time.Now()
	var wg sync.WaitGroup
	for i := range reqs {
		if d := due[i] - time.Since(begin); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
			}
		}
		if sem != nil {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			for j := i; j < len(reqs); j++ {
				traces[j].err = ctx.Err()
			}
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			traces[i] = o.do(ctx, reqs[i])
			if sem != nil {
				<-sem
			}
		}()
	}
	wg.Wait()
	return traces
}

// body is the JSON request for r. /infill gets llama-server's fields
// (input_prefix, input_suffix, n_predict; the system text, if any, opens
// the prefix), as editor plugins send them.
func (o *ServeOptions) body(r request) []byte {
	m := map[string]any{"max_tokens": r.maxTokens, "temperature": 0, "stream": true,
		"stream_options": map[string]any{"include_usage": true}}
	if o.Endpoint == "/infill" {
		m = map[string]any{"n_predict": r.maxTokens, "temperature": 0, "stream": true, "cache_prompt": true,
			"input_prefix": r.system + r.prompt, "input_suffix": r.suffix}
	}
	if o.Model != "" {
		m["model"] = o.Model
	}
	if o.IgnoreEOS {
		m["ignore_eos"] = true
	}
	if o.Endpoint == "/v1/chat/completions" {
		msgs := []map[string]string{}
		if r.system != "" {
			msgs = append(msgs, map[string]string{"role": "system", "content": r.system})
		}
		m["messages"] = append(msgs, map[string]string{"role": "user", "content": r.prompt})
	} else if o.Endpoint != "/infill" {
		p := r.prompt
		if r.system != "" {
			p = r.system + "\n\n" + r.prompt
		}
		m["prompt"] = p
	}
	b, _ := json.Marshal(m) // plain values: cannot fail
	return b
}

// do sends one streaming request and records when its chunks arrived.
func (o *ServeOptions) do(ctx context.Context, r request) (t trace) {
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.BaseURL+o.Endpoint, bytes.NewReader(o.body(r)))
	if err != nil {
		t.err = fmt.Errorf("bench: %w", err)
		return t
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	// A server may close a kept-alive connection just as a request goes
	// out on it (llama-server does between requests); the server saw
	// nothing, so the transport may send it again — which it does only
	// for requests marked idempotent. A nil entry marks it without sending
	// the header.
	req.Header["Idempotency-Key"] = nil
	if o.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+o.APIKey)
	}
	t.sent = o.clock()
	resp, err := o.Client.Do(req)
	if err != nil {
		t.err = fmt.Errorf("bench: %w", err)
		return t
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		t.err = fmt.Errorf("bench: %s: HTTP %d: %s", o.Endpoint, resp.StatusCode, bytes.TrimSpace(b))
		return t
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		t.err = fmt.Errorf("%w: Content-Type %q, not text/event-stream: %q", ErrMalformedSSE, ct, b)
		return t
	}
	sr := newSSEReader(resp.Body)
	var u *sseUsage
	for {
		c, done, err := sr.next()
		now := o.clock()
		if err != nil {
			t.err = err
			return t
		}
		if done {
			t.end = now
			break
		}
		if c.text != "" {
			t.chunks = append(t.chunks, now)
		}
		if c.usage != nil {
			u = c.usage
		}
		if c.final { // llama-server's native stream: no [DONE]
			t.end = now
			break
		}
	}
	t.nOut = len(t.chunks)
	if u != nil {
		t.nIn, t.nOut, t.usage = u.PromptTokens, u.CompletionTokens, true
	}
	if len(t.chunks) == 0 {
		t.err = fmt.Errorf("bench: %s: the stream carried no text (usage: %d output tokens)", o.Endpoint, t.nOut)
	}
	return t
}

// maxErrors is how many failures a result lists.
const maxErrors = 5

// summarize fills res's counts, throughputs and distributions from the
// traces of a run that took d.
func summarize(res *ServeResult, traces []trace, d time.Duration) {
	var ttft, tpot, itl, e2el []float64
	res.UsageReported = true
	for _, t := range traces {
		if t.err != nil {
			res.Failed++
			if len(res.Errors) < maxErrors {
				res.Errors = append(res.Errors, t.err.Error())
			}
			continue
		}
		res.Completed++
		res.InputTokens += t.nIn
		res.OutputTokens += t.nOut
		res.UsageReported = res.UsageReported && t.usage
		first := t.chunks[0].Sub(t.sent)
		total := t.end.Sub(t.sent)
		ttft = append(ttft, ms(first))
		e2el = append(e2el, ms(total))
		if t.nOut > 1 {
			tpot = append(tpot, ms(total-first)/float64(t.nOut-1))
		}
		for j := 1; j < len(t.chunks); j++ {
			itl = append(itl, ms(t.chunks[j].Sub(t.chunks[j-1])))
		}
	}
	if res.Completed == 0 {
		res.UsageReported = false
	}
	res.DurationS = d.Seconds()
	if s := d.Seconds(); s > 0 {
		res.RequestThroughput = float64(res.Completed) / s
		res.OutputThroughput = float64(res.OutputTokens) / s
		res.TotalThroughput = float64(res.InputTokens+res.OutputTokens) / s
	}
	res.TTFT, res.TPOT, res.ITL, res.E2EL = newDist(ttft), newDist(tpot), newDist(itl), newDist(e2el)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func newDist(xs []float64) Dist {
	d := Dist{N: len(xs)}
	if len(xs) == 0 {
		return d
	}
	for _, x := range xs {
		d.Mean += x
	}
	d.Mean /= float64(len(xs))
	s := slices.Clone(xs)
	slices.Sort(s)
	d.P50, d.P99 = percentile(s, 50), percentile(s, 99)
	return d
}

// percentile of sorted s: linear interpolation between the order
// statistics around rank p/100·(n−1).
func percentile(s []float64, p float64) float64 {
	r := p / 100 * float64(len(s)-1)
	lo := int(math.Floor(r))
	if lo >= len(s)-1 {
		return s[len(s)-1]
	}
	f := r - float64(lo)
	return s[lo] + f*(s[lo+1]-s[lo])
}

// LoadPrompts reads a JSONL prompt file: one JSON object per line with
// "prompt" (required), optional "system" and "max_tokens"; blank lines
// are skipped. Errors name the line.
func LoadPrompts(r io.Reader) ([]ServePrompt, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var out []ServePrompt
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var p ServePrompt
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("bench: prompt file line %d: %v", n, err)
		}
		if p.Prompt == "" {
			return nil, fmt.Errorf("bench: prompt file line %d: no \"prompt\"", n)
		}
		if p.MaxTokens < 0 {
			return nil, fmt.Errorf("bench: prompt file line %d: max_tokens %d is negative", n, p.MaxTokens)
		}
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("bench: prompt file: %w", err)
	}
	if len(out) == 0 {
		return nil, errors.New("bench: the prompt file holds no prompts")
	}
	return out, nil
}

// WriteServeMarkdown writes r as a table, one row per measure.
func WriteServeMarkdown(w io.Writer, r *ServeResult) error {
	var b strings.Builder
	rate := "all at once"
	if r.RequestRate > 0 {
		rate = fmt.Sprintf("%g req/s (Poisson, seed %d)", r.RequestRate, r.Seed)
	}
	conc := "no limit"
	if r.Concurrency > 0 {
		conc = fmt.Sprint(r.Concurrency)
	}
	fmt.Fprintf(&b, "bench serve: %s%s, dataset %s, %d requests, concurrency %s, arrivals %s, output %d tokens\n\n",
		r.BaseURL, r.Endpoint, r.Dataset, r.NumPrompts, conc, rate, r.OutputLen)
	b.WriteString("| measure | value |\n| --- | ---: |\n")
	row := func(k, f string, a ...any) { fmt.Fprintf(&b, "| %s | "+f+" |\n", append([]any{k}, a...)...) }
	row("successful requests", "%d", r.Completed)
	row("failed requests", "%d", r.Failed)
	row("duration", "%.2f s", r.DurationS)
	row("input tokens", "%d", r.InputTokens)
	row("output tokens", "%d", r.OutputTokens)
	row("request throughput", "%.2f req/s", r.RequestThroughput)
	row("output token throughput", "%.2f tok/s", r.OutputThroughput)
	row("total token throughput", "%.2f tok/s", r.TotalThroughput)
	for _, d := range []struct {
		name string
		d    Dist
	}{{"TTFT", r.TTFT}, {"TPOT", r.TPOT}, {"ITL", r.ITL}, {"E2E latency", r.E2EL}} {
		row(d.name+" mean / median / p99", "%.2f / %.2f / %.2f ms", d.d.Mean, d.d.P50, d.d.P99)
	}
	fmt.Fprintf(&b, "\nload average %.2f → %.2f", r.LoadStart[0], r.LoadEnd[0])
	if !r.UsageReported && r.Completed > 0 {
		b.WriteString("; the server sent no usage: output tokens counted as text chunks, input tokens unknown")
	}
	b.WriteByte('\n')
	for _, e := range r.Errors {
		fmt.Fprintf(&b, "error: %s\n", e)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
