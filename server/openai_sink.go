package server

// The OpenAI sink: a job's answer as one JSON object (completion or
// chat.completion) or as server-sent events (text_completion /
// chat.completion.chunk chunks, usage, [DONE]); see the package comment.

import (
	"math"
	"net/http"
	"time"

	"nanoserve/chat"
	"nanoserve/engine"
	"nanoserve/tokenizer"
)

func (s *Server) newResponder(w http.ResponseWriter, r *http.Request, j *job) *responder {
	out := &responder{frames: frames{w: w}, s: s, j: j, id: newID("cmpl-"), created: time.Now().Unix(),
		pending: map[int][]engine.Token{}, offset: map[int]int{}}
	if j.chat {
		out.id = newID("chatcmpl-")
	}
	if j.reply.parses() {
		out.replies = map[int]*chat.ReplyStream{}
	}
	return out
}

// responder writes one job's response.
type responder struct {
	frames
	s       *Server
	j       *job
	id      string
	created int64
	pending map[int][]engine.Token    // by choice index: tokens whose text has not shown yet (for logprobs)
	offset  map[int]int               // by choice index: completions text_offset of the next token
	replies map[int]*chat.ReplyStream // by choice index: reads reasoning and tool calls out of a streamed chat reply (nil: none to read)
}

// choices is the number of choices in the response.
func (o *responder) choices() int { return len(o.j.reqs) * o.j.n }

// startStream writes the SSE headers (and the chat role chunks) once.
func (o *responder) startStream() bool {
	if o.started {
		return !o.failed
	}
	o.start(append(sseHeaders, "Connection", "keep-alive")...)
	if o.j.chat {
		for i := range o.choices() {
			// The role alone, content null (llama-server's first chunk;
			// chatMessage.MarshalJSON): no empty content piece.
			if !o.send(o.chatChunk(i, &chatMessage{Role: "assistant"}, nil, nil)) {
				return false
			}
		}
		return true
	}
	return o.flush()
}

// send writes one server-sent event; with timings_per_token a chunk of a
// choice carries the timings as they stand (the opening role chunk none).
func (o *responder) send(v any) bool {
	switch c := v.(type) {
	case chatResponse:
		if c.Timings == nil && len(c.Choices) == 1 && c.Choices[0].Delta != nil && c.Choices[0].Delta.Role == "" {
			c.Timings = o.j.timingsNow(c.Choices[0].Index)
		}
		v = c
	case completionResponse:
		if c.Timings == nil && len(c.Choices) == 1 {
			c.Timings = o.j.timingsNow(c.Choices[0].Index)
		}
		v = c
	}
	return o.sse(v)
}

// Progress streams a prompt_progress chunk (return_progress): chat's
// carries delta {role, content: null}, a completion's empty text.
func (o *responder) Progress(p engine.PromptProgress) bool {
	if !o.startStream() {
		return false
	}
	if o.j.chat {
		c := o.chatChunk(0, &chatMessage{Role: "assistant"}, nil, nil)
		c.Timings, c.PromptProgress = o.j.progressTimings(p), progressOf(p)
		return o.send(c)
	}
	c := o.completionChunk(0, "", nil, nil)
	c.Timings, c.PromptProgress = o.j.progressTimings(p), progressOf(p)
	return o.send(c)
}

// Fail answers a job that could not start.
func (o *responder) Fail(e *apiError) { writeError(o.w, e) }

// Delta streams choice i's next piece (a plain response waits for End);
// false when the client is gone.
func (o *responder) Delta(i int, d delta) bool {
	if !o.j.stream {
		return true
	}
	if !o.startStream() {
		return false
	}
	if d.Text == "" {
		return true // held back (partial UTF-8 or a possible stop string)
	}
	var lps []engine.Token
	if o.j.logprobs >= 0 {
		lps = append(o.pending[i], d.Tokens...)
	}
	delete(o.pending, i)
	if o.replies != nil {
		o.pending[i] = lps // sent with the choice's next chunk, whatever it carries
		return o.sendReply(i, o.replyStream(i).Push(d.Text))
	}
	if o.j.chat {
		text := d.Text
		return o.send(o.chatChunk(i, &chatMessage{Content: &text}, o.chatLogprobs(lps), nil))
	}
	return o.send(o.completionChunk(i, d.Text, o.completionLogprobs(i, lps), nil))
}

// End writes the stream's end or the whole response.
func (o *responder) End(out *outcome) {
	if !o.j.stream {
		o.whole(out)
		return
	}
	if o.j.logprobs >= 0 {
		for i, held := range out.Held {
			o.pending[i] = append(o.pending[i], held...)
		}
	}
	o.end(out)
}

// failure is the first failed result's error message, or "".
func failure(results []*engine.Result) string {
	for _, res := range results {
		if res.FinishReason == engine.FinishError {
			msg := "generation failed"
			if res.Err != nil {
				msg += ": " + res.Err.Error()
			}
			return msg
		}
	}
	return ""
}

// cancelled reports whether any choice was cancelled.
func cancelled(results []*engine.Result) bool {
	for _, res := range results {
		if res.FinishReason == engine.FinishCancelled {
			return true
		}
	}
	return false
}

// end closes a stream: each choice's finish chunk, the usage chunk,
// [DONE].
func (o *responder) end(out *outcome) {
	results, u := out.Results, out.Usage
	if out.cancelled() {
		// The server cut it (drain timeout, per-request deadline): say so
		// and end the stream properly. Else the client went away.
		if e := out.Cut; e != nil {
			if !o.started {
				writeError(o.w, e)
				return
			}
			o.send(errorBody(e))
			o.sendDone()
		}
		return
	}
	if !o.startStream() {
		return
	}
	if msg := out.Failure; msg != "" {
		o.send(errorBody(&apiError{status: 500, Type: "server_error", Message: msg}))
		o.sendDone()
		return
	}
	for i, res := range results {
		reason := finishReason(res)
		if o.replies != nil {
			rs := o.replyStream(i)
			o.sendReply(i, rs.Finish())
			reason = o.j.finishReason(reason, rs.Calls())
		}
		lps := o.pending[i] // logprobs of tokens whose text never showed
		delete(o.pending, i)
		if o.j.chat {
			var clp *chatLogprobs
			if len(lps) > 0 {
				clp = o.chatLogprobs(lps)
			}
			o.send(o.chatChunk(i, &chatMessage{}, clp, &reason))
		} else {
			var tlp *completionLogprobs
			if len(lps) > 0 {
				tlp = o.completionLogprobs(i, lps)
			}
			o.send(o.completionChunk(i, "", tlp, &reason))
		}
	}
	if o.j.includeUsage {
		tm := outcomeTimings(out)
		if o.j.chat {
			o.send(chatResponse{ID: o.id, Object: "chat.completion.chunk", Created: o.created, Model: o.j.model, Choices: []chatChoice{}, Usage: &u,
				SystemFingerprint: fingerprint(), Timings: tm})
		} else {
			o.send(completionResponse{ID: o.id, Object: "text_completion", Created: o.created, Model: o.j.model, Choices: []completionChoice{}, Usage: &u,
				SystemFingerprint: fingerprint(), Timings: tm})
		}
	}
	o.sendDone()
}

func (o *responder) sendDone() { o.write([]byte("data: [DONE]\n\n")) }

// whole writes the non-streamed response.
func (o *responder) whole(out *outcome) {
	results, u := out.Results, out.Usage
	if e := out.Cut; e != nil {
		writeError(o.w, e)
		return
	}
	if msg := out.Failure; msg != "" {
		writeError(o.w, &apiError{status: http.StatusInternalServerError, Type: "server_error", Message: msg})
		return
	}
	var cc []chatChoice
	var tc []completionChoice
	for i, res := range results {
		reason := finishReason(res)
		var lps []engine.Token
		for _, t := range res.Logprobs {
			if !t.Stop {
				lps = append(lps, t)
			}
		}
		text := res.Text
		if o.j.chat {
			msg := &replyMessage{Role: "assistant", Content: &text}
			reason = o.j.replyMessage(msg, res.Text, reason)
			cc = append(cc, chatChoice{Index: i, Message: msg, Logprobs: o.chatLogprobs(lps), FinishReason: &reason})
		} else {
			tc = append(tc, completionChoice{Index: i, Text: text, Logprobs: o.completionLogprobs(i, lps), FinishReason: &reason})
		}
	}
	tm := outcomeTimings(out)
	var verbose *nativeResponse
	if o.j.verbose && len(results) > 0 {
		verbose = o.s.verboseObject(o.j, results[0])
	}
	if o.j.chat {
		writeJSON(o.w, http.StatusOK, chatResponse{ID: o.id, Object: "chat.completion", Created: o.created, Model: o.j.model, Choices: cc, Usage: &u,
			SystemFingerprint: fingerprint(), Timings: tm, Verbose: verbose})
		return
	}
	writeJSON(o.w, http.StatusOK, completionResponse{ID: o.id, Object: "text_completion", Created: o.created, Model: o.j.model, Choices: tc, Usage: &u,
		SystemFingerprint: fingerprint(), Timings: tm, Verbose: verbose})
}

// finishReason maps the engine's reason to OpenAI's: stop or length (a
// generation the server cut answers with an error instead, see cutError).
func finishReason(res *engine.Result) string {
	if res.FinishReason == engine.FinishLength {
		return "length"
	}
	return "stop"
}

func (o *responder) chatChunk(i int, delta *chatMessage, lp *chatLogprobs, finish *string) chatResponse {
	return chatResponse{ID: o.id, Object: "chat.completion.chunk", Created: o.created, Model: o.j.model,
		Choices: []chatChoice{{Index: i, Delta: delta, Logprobs: lp, FinishReason: finish}}, SystemFingerprint: fingerprint()}
}

func (o *responder) completionChunk(i int, text string, lp *completionLogprobs, finish *string) completionResponse {
	return completionResponse{ID: o.id, Object: "text_completion", Created: o.created, Model: o.j.model,
		Choices: []completionChoice{{Index: i, Text: text, Logprobs: lp, FinishReason: finish}}, SystemFingerprint: fingerprint()}
}

// tokenText is the text of one token as logprobs report it (the piece with
// its leading space).
func (o *responder) tokenText(id int) string {
	return o.s.tok.DecodeWith([]int{id}, tokenizer.DecodeOptions{Continuation: true, Special: tokenizer.SpecialRender})
}

// lp makes a logprob JSON-safe (a -Inf logprob becomes the float32 minimum).
func lp(v float32) float32 {
	if math.IsNaN(float64(v)) || math.IsInf(float64(v), -1) {
		return -math.MaxFloat32
	}
	return v
}

func byteInts(s string) []int {
	out := make([]int, len(s))
	for i := range len(s) {
		out[i] = int(s[i])
	}
	return out
}

func (o *responder) chatLogprobs(toks []engine.Token) *chatLogprobs {
	if o.j.logprobs < 0 {
		return nil
	}
	out := &chatLogprobs{Content: make([]chatTokenLogprob, 0, len(toks))}
	for _, t := range toks {
		text := o.tokenText(t.ID)
		e := chatTokenLogprob{Token: text, Logprob: lp(t.Logprob), Bytes: byteInts(text), TopLogprobs: []chatTopLogprob{}}
		for _, a := range t.Top {
			at := o.tokenText(a.ID)
			e.TopLogprobs = append(e.TopLogprobs, chatTopLogprob{Token: at, Logprob: lp(a.Logprob), Bytes: byteInts(at)})
		}
		out.Content = append(out.Content, e)
	}
	return out
}

func (o *responder) completionLogprobs(i int, toks []engine.Token) *completionLogprobs {
	if o.j.logprobs < 0 {
		return nil
	}
	out := &completionLogprobs{Tokens: []string{}, TokenLogprobs: []float32{}, TopLogprobs: []map[string]float32{}, TextOffset: []int{}}
	for _, t := range toks {
		text := o.tokenText(t.ID)
		out.Tokens = append(out.Tokens, text)
		out.TokenLogprobs = append(out.TokenLogprobs, lp(t.Logprob))
		top := make(map[string]float32, len(t.Top))
		for _, a := range t.Top {
			at := o.tokenText(a.ID)
			if _, dup := top[at]; !dup {
				top[at] = lp(a.Logprob)
			}
		}
		out.TopLogprobs = append(out.TopLogprobs, top)
		out.TextOffset = append(out.TextOffset, o.offset[i])
		o.offset[i] += len(text)
	}
	return out
}
