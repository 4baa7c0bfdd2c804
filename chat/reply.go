package chat

import "strings"

// ReplyConfig says how to read one reply.
type ReplyConfig struct {
	Syntax ReasoningSyntax // the model's reasoning markers (Template.Reasoning)
	Format ReasoningFormat // how reasoning is returned ("": auto)
	// Prompt is the rendered prompt the reply continues (its end is
	// enough): whether it leaves a reasoning block open decides where the
	// reply starts.
	Prompt string
	// Tools is the tool-call format to parse in the content ("" or
	// ToolFormatNone: none). Harmony replies carry their own calls.
	Tools ToolFormat
	NewID func() string // call ids (nil: NewToolCallID(Tools))
	// Continue is the part of a final assistant message the reply
	// continues (PromptContinue's resolved part): the reply starts inside
	// the reasoning or inside the answer, mid-text, whatever Prompt says.
	Continue Continuation
}

// Reply is a whole reply, parsed.
type Reply struct {
	Reasoning string
	Content   string
	Calls     []ToolCall
}

// ReplyDelta is what one piece of a streamed reply adds.
type ReplyDelta struct {
	Reasoning string
	Content   string
	Calls     []ToolCallDelta
}

func (d ReplyDelta) empty() bool { return d.Reasoning == "" && d.Content == "" && len(d.Calls) == 0 }

// ParseReply splits a complete reply into reasoning, content and tool calls.
func ParseReply(cfg ReplyConfig, text string) Reply {
	s := NewReplyStream(cfg)
	var r Reply
	add := func(d ReplyDelta) {
		r.Reasoning += d.Reasoning
		r.Content += d.Content
		for _, c := range d.Calls {
			if c.Name != "" {
				r.Calls = append(r.Calls, ToolCall{ID: c.ID, Name: c.Name})
			} else if n := len(r.Calls); n > 0 {
				r.Calls[n-1].Arguments += c.Arguments
			}
		}
	}
	add(s.Push(text))
	add(s.Finish())
	return r
}

// ReplyStream parses a reply as it is generated: Push each piece of text,
// then Finish. The accumulated deltas equal ParseReply on the whole text.
type ReplyStream struct {
	cfg   ReplyConfig
	tags  *thinkSplitter   // tag-pair syntaxes
	harm  *harmonySplitter // harmony
	tools *ToolStream      // content → content + calls
	raw   bool             // deepseek-legacy: content is the raw text
	calls int              // calls emitted
}

// Calls reports how many tool calls have been emitted so far.
func (r *ReplyStream) Calls() int { return r.calls }

// NewReplyStream starts parsing a reply.
func NewReplyStream(cfg ReplyConfig) *ReplyStream {
	if cfg.Format == "" {
		cfg.Format = ReasoningAuto
	}
	tf := cfg.Tools
	if tf == "" {
		tf = ToolFormatNone
	}
	newID := cfg.NewID
	if newID == nil {
		newID = func() string { return NewToolCallID(tf) }
	}
	r := &ReplyStream{cfg: cfg, raw: cfg.Format == ReasoningDeepSeekLegacy}
	syn := cfg.Syntax
	switch {
	case syn.Harmony:
		r.harm = &harmonySplitter{extract: cfg.Format.extracts(), newID: newID}
		switch cfg.Continue {
		case ContinueReasoning:
			r.harm.state, r.harm.kind = hBody, kReasoning
		case ContinueContent:
			r.harm.state, r.harm.kind, r.harm.answered = hBody, kContent, true
		}
		return r
	case syn.Reasons():
		open, opening := syn.opensIn(cfg.Prompt)
		r.tags = newThinkSplitter(syn, open, cfg.Format.extracts())
		switch cfg.Continue {
		case ContinueReasoning:
			r.tags.state, r.tags.lead, opening = stThink, false, ""
		case ContinueContent:
			r.tags.state, r.tags.lead, opening = stAnswer, false, ""
		}
		r.tags.raw = r.raw
		if !cfg.Format.extracts() || r.raw {
			r.tags.prefix = opening // none: the opened tag shows in the content
		}
		if ts, ok := syntaxOf(tf); ok {
			r.tags.stops = append(r.tags.stops, ts.start)
		}
	}
	r.tools = NewToolStream(tf, newID)
	return r
}

// Answering reports whether the reply has left its reasoning (the answer,
// or a tool call, has begun), so a constraint on the answer can start.
// With the "none" format reasoning is still detected here.
func (r *ReplyStream) Answering() bool {
	switch {
	case r.harm != nil:
		return r.harm.answering()
	case r.tags != nil:
		return r.tags.state == stAnswer
	}
	return true
}

// Push consumes the next piece of generated text.
func (r *ReplyStream) Push(text string) ReplyDelta {
	return r.step(text, false)
}

// Finish ends the reply and returns everything still held.
func (r *ReplyStream) Finish() ReplyDelta {
	return r.step("", true)
}

func (r *ReplyStream) step(text string, final bool) ReplyDelta {
	d := r.split(text, final)
	for _, c := range d.Calls {
		if c.Name != "" {
			r.calls++
		}
	}
	return d
}

func (r *ReplyStream) split(text string, final bool) ReplyDelta {
	var d ReplyDelta
	if r.harm != nil {
		r.harm.push(text, final, &d)
		return d
	}
	content := text
	if r.tags != nil {
		var reasoning string
		reasoning, content = r.tags.push(text, final)
		if r.raw {
			d.Reasoning = reasoning
			content = r.tags.takeRaw()
		} else if r.cfg.Format.extracts() {
			d.Reasoning = reasoning
		}
	}
	c, calls := r.tools.Push(content)
	d.Content, d.Calls = c, calls
	if final {
		c, calls := r.tools.Finish()
		d.Content += c
		d.Calls = append(d.Calls, calls...)
	}
	return d
}

// Splitter states for tag-pair syntaxes.
const (
	stBegin  = iota // before the reply's first non-space text: a block may start
	stThink         // inside the reasoning block
	stAnswer        // after it (or there was none)
)

// thinkSplitter splits a tag-pair reply into reasoning and content.
type thinkSplitter struct {
	syn     ReasoningSyntax
	extract bool
	stops   []string // markers that also end the reasoning (kept in the content)
	state   int
	buf     string // undecided text
	ws      string // held trailing whitespace of the reasoning
	lead    bool   // drop leading whitespace (of reasoning after Start, of the answer after End)
	prefix  string // content to emit first (the opening of a block the prompt opened)
	raw     bool   // deepseek-legacy: also keep the raw text
	rawOut  string // the raw text so far, not yet taken
}

func newThinkSplitter(syn ReasoningSyntax, open, extract bool) *thinkSplitter {
	s := &thinkSplitter{syn: syn, extract: extract}
	if open {
		s.state, s.lead = stThink, true
	}
	return s
}

// push consumes text and returns the reasoning and content it decides.
// With extraction off, reasoning is still tracked (for Answering) but all
// text goes to the content, as it came.
func (s *thinkSplitter) push(text string, final bool) (reasoning, content string) {
	var rb, cb strings.Builder
	if s.prefix != "" {
		if !s.extract {
			cb.WriteString(s.prefix)
		}
		if s.raw {
			s.rawOut += s.prefix
		}
		s.prefix = ""
	}
	if !s.extract {
		cb.WriteString(text)
	}
	if s.raw {
		s.rawOut += text
	}
	s.buf += text
	for {
		switch s.state {
		case stBegin:
			t := trimLeftSpace(s.buf)
			if t == "" || (len(t) < len(s.syn.Start) && strings.HasPrefix(s.syn.Start, t)) {
				if !final {
					return rb.String(), cb.String()
				}
				s.state = stAnswer
				continue
			}
			if s.syn.Start != "" && strings.HasPrefix(t, s.syn.Start) {
				s.buf = t[len(s.syn.Start):]
				s.state, s.lead = stThink, true
				continue
			}
			s.state = stAnswer
		case stThink:
			if s.lead {
				s.buf = trimLeftSpace(s.buf)
				if s.buf == "" {
					return rb.String(), cb.String()
				}
				s.lead = false
			}
			i, n, stop := s.firstEnd()
			if i < 0 {
				keep := 0
				if !final {
					keep = partialSuffix(s.buf, s.syn.End)
					for _, m := range s.stops {
						keep = max(keep, partialSuffix(s.buf, m))
					}
				}
				s.think(&rb, s.buf[:len(s.buf)-keep])
				s.buf = s.buf[len(s.buf)-keep:]
				if final {
					s.ws = "" // an unclosed block: its trailing space is trimmed too
				}
				return rb.String(), cb.String()
			}
			s.think(&rb, s.buf[:i])
			s.ws = ""
			if stop {
				s.buf = s.buf[i:]
			} else {
				s.buf = s.buf[i+n:]
			}
			s.state, s.lead = stAnswer, true
		case stAnswer:
			if s.lead {
				s.buf = trimLeftSpace(s.buf)
				if s.buf == "" {
					return rb.String(), cb.String()
				}
				s.lead = false
			}
			out := s.dropMarkers(final)
			if s.extract {
				cb.WriteString(out)
			}
			return rb.String(), cb.String()
		}
	}
}

// takeRaw returns the raw text (deepseek-legacy's content) so far.
func (s *thinkSplitter) takeRaw() string {
	out := s.rawOut
	s.rawOut = ""
	return out
}

// firstEnd finds the earliest end of the reasoning in buf: the End marker
// (n: its length) or a stop marker (stop: true; it stays in the text).
func (s *thinkSplitter) firstEnd() (i, n int, stop bool) {
	i, n = strings.Index(s.buf, s.syn.End), len(s.syn.End)
	for _, m := range s.stops {
		if j := strings.Index(s.buf, m); j >= 0 && (i < 0 || j < i) {
			i, n, stop = j, len(m), true
		}
	}
	return i, n, stop
}

// think emits reasoning text, holding its trailing whitespace (trimmed if
// the block ends right after it).
func (s *thinkSplitter) think(rb *strings.Builder, t string) {
	t = s.ws + t
	body := trimRightSpace(t)
	s.ws = t[len(body):]
	rb.WriteString(body)
}

// dropMarkers returns the decided answer text with the syntax's wrapper
// markers removed, holding a suffix that may begin one.
func (s *thinkSplitter) dropMarkers(final bool) string {
	if len(s.syn.Drop) == 0 {
		out := s.buf
		s.buf = ""
		return out
	}
	var out strings.Builder
	for {
		at, n := -1, 0
		for _, m := range s.syn.Drop {
			if j := strings.Index(s.buf, m); j >= 0 && (at < 0 || j < at) {
				at, n = j, len(m)
			}
		}
		if at < 0 {
			break
		}
		out.WriteString(s.buf[:at])
		s.buf = s.buf[at+n:]
	}
	keep := 0
	if !final {
		for _, m := range s.syn.Drop {
			keep = max(keep, partialSuffix(s.buf, m))
		}
	}
	out.WriteString(s.buf[:len(s.buf)-keep])
	s.buf = s.buf[len(s.buf)-keep:]
	return out.String()
}
