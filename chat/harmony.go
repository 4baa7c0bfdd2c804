package chat

// gpt-oss's harmony reply format. A reply is a sequence of messages, each
//
//	[<|start|>assistant][ to=RECIPIENT]<|channel|>CHANNEL[ to=RECIPIENT][ <|constrain|>json]<|message|>BODY TERMINATOR
//
// where the first message's "<|start|>assistant" is already in the prompt,
// TERMINATOR is <|end|>, <|call|> (after a tool call) or <|return|> (end of
// the answer; the last two end generation, so they may be missing from the
// text), and CHANNEL says what the body is: analysis is reasoning, final is
// the answer, commentary without a recipient a preamble (content). A
// message to "functions.NAME" is a call of tool NAME with BODY as its JSON
// arguments; messages to other recipients (gpt-oss's built-in browser or
// python tools) are not function calls and are dropped. Text that does not
// begin a harmony message is content, to the end.

import "strings"

// harmony splitter states
const (
	hHeader = iota // reading a message header, up to <|message|>
	hBody          // inside a message body
	hRaw           // not harmony: everything is content
)

// message body kinds
const (
	kReasoning = iota
	kContent
	kCall
	kSkip
)

// maxHarmonyHeader bounds a header: text that runs this long without
// <|message|> is not a header (it becomes content).
const maxHarmonyHeader = 256

var harmonyTerminators = []string{harmonyEnd, harmonyCall, harmonyReturn, harmonyStart, museEOM, museEOT}

type harmonySplitter struct {
	extract  bool
	newID    func() string
	state    int
	buf      string
	kind     int
	name     string // the called function (kCall)
	args     string // the call's body so far (kCall)
	n        int    // calls emitted
	answered bool   // a content or call message has begun
}

func (h *harmonySplitter) answering() bool { return h.answered }

func (h *harmonySplitter) push(text string, final bool, d *ReplyDelta) {
	h.buf += text
	for {
		switch h.state {
		case hRaw:
			d.Content += h.buf
			h.buf = ""
			return
		case hHeader:
			t := trimLeftSpace(h.buf)
			if t == "" && !strings.HasPrefix(h.buf, " to=") {
				if final {
					h.buf = ""
				}
				return
			}
			if !h.headerLike(t) {
				h.state, h.answered = hRaw, true
				continue
			}
			i := strings.Index(h.buf, harmonyMessage)
			if i < 0 {
				switch {
				case final:
					h.buf = "" // a cut-off header carries nothing
				case len(h.buf) > maxHarmonyHeader:
					h.state, h.answered = hRaw, true
					continue
				}
				return
			}
			h.header(h.buf[:i], d)
			h.buf = h.buf[i+len(harmonyMessage):]
			h.state = hBody
		case hBody:
			at, n := -1, 0
			for _, m := range harmonyTerminators {
				if j := strings.Index(h.buf, m); j >= 0 && (at < 0 || j < at) {
					at, n = j, len(m)
				}
			}
			if at < 0 {
				keep := 0
				if !final {
					for _, m := range harmonyTerminators {
						keep = max(keep, partialSuffix(h.buf, m))
					}
				}
				h.body(h.buf[:len(h.buf)-keep], d)
				h.buf = h.buf[len(h.buf)-keep:]
				if final {
					h.close("", d)
				}
				return
			}
			h.body(h.buf[:at], d)
			term := h.buf[at : at+n]
			if term == harmonyStart {
				term, n = "", 0 // the next message's header: keep it
			}
			h.close(term, d)
			h.buf = h.buf[at+n:]
			h.state = hHeader
		}
	}
}

// headerLike reports whether text (leading space trimmed) begins, or may
// yet begin, a message header.
func (h *harmonySplitter) headerLike(t string) bool {
	raw := h.buf
	for _, p := range []string{harmonyStart, harmonyChannel} {
		if strings.HasPrefix(t, p) || strings.HasPrefix(p, t) {
			return true
		}
	}
	return strings.HasPrefix(raw, " to=") || strings.HasPrefix(" to=", raw)
}

// header reads a message header (the text before <|message|>).
func (h *harmonySplitter) header(hd string, d *ReplyDelta) {
	field := func(key string) string {
		i := strings.Index(hd, key)
		if i < 0 {
			return ""
		}
		v := hd[i+len(key):]
		if j := strings.IndexAny(v, " <"); j >= 0 {
			v = v[:j]
		}
		return v
	}
	channel, to := field(harmonyChannel), field("to=")
	switch {
	case strings.HasPrefix(to, "functions."):
		h.kind, h.name, h.args = kCall, strings.TrimPrefix(to, "functions."), ""
	case to == "self": // Muse Glimmer's thinking
		h.kind = kReasoning
	case to != "" && to != "assistant" && to != "user" && to != "all":
		h.kind = kSkip
	case channel == "analysis":
		h.kind = kReasoning
	default:
		h.kind = kContent
	}
	if h.kind != kReasoning {
		h.answered = true
	}
	if h.kind == kReasoning && !h.extract {
		d.Content += trimLeftSpace(hd) + harmonyMessage // none: the raw message is content
	}
}

func (h *harmonySplitter) body(t string, d *ReplyDelta) {
	switch h.kind {
	case kReasoning:
		if h.extract {
			d.Reasoning += t
		} else {
			d.Content += t
		}
	case kContent:
		d.Content += t
	case kCall:
		h.args += t
	}
}

// close ends the current message at its terminator ("" at the end of text).
func (h *harmonySplitter) close(term string, d *ReplyDelta) {
	switch h.kind {
	case kReasoning:
		if !h.extract {
			d.Content += term
		}
	case kCall:
		args := strings.TrimSpace(h.args)
		if args == "" {
			args = "{}"
		}
		d.Calls = append(d.Calls,
			ToolCallDelta{Index: h.n, ID: h.newID(), Type: "function", Name: h.name},
			ToolCallDelta{Index: h.n, Arguments: args})
		h.n++
	}
	h.kind, h.args = kSkip, ""
}
