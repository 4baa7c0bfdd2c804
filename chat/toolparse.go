package chat

// Parsing tool calls out of generated text.
//
// Every supported format is a "marker" format: ordinary content, then a
// start marker, then the call(s) as JSON, then an end marker (Hermes'
// "</tool_call>") or the end of the text (Mistral's "[TOOL_CALLS]", Llama's
// "<|python_tag|>"). Llama and (marker-less) Mistral also have a "bare"
// form: the reply is nothing but the call JSON ({"name":..., "parameters":
// ...} or [{...}]). The rules, shared by the one-shot and the streaming
// parser so both always agree:
//
//   - A reply whose first non-space text begins a bare form is parsed as a
//     whole; it is calls only if all of it is calls, else the marker rules
//     apply to it.
//   - A block with an end marker closes at the first marker after which
//     its JSON is complete (an argument string may hold the marker text).
//   - A marker block is calls only if its JSON parses as one or more calls
//     (objects with a string "name" and an "arguments" or "parameters"
//     object, or arrays of them; several separated by spaces or ";").
//     Otherwise the block, markers included, stays content — a malformed
//     call is never lost and never half-emitted.
//   - Content is the text outside call blocks; ASCII whitespace touching a
//     call (before or after it) is dropped, everything else kept byte for
//     byte. A reply with calls and no other text has content "".
//
// Ids come from the caller's newID, called once per call in order.

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
)

// toolSyntax is the text shape of one format.
type toolSyntax struct {
	start, end string   // markers around a call block; end "" runs to the end of the text
	bare       []string // prefixes that start a reply made only of call JSON
}

func syntaxOf(f ToolFormat) (toolSyntax, bool) {
	switch f {
	case ToolFormatHermes:
		return toolSyntax{start: "<tool_call>", end: "</tool_call>"}, true
	case ToolFormatLlama3:
		return toolSyntax{start: "<|python_tag|>", bare: []string{"{", "[{"}}, true
	case ToolFormatMistral:
		return toolSyntax{start: "[TOOL_CALLS]", bare: []string{"[{"}}, true
	}
	return toolSyntax{}, false
}

// ParseToolCalls splits a complete reply into content and tool calls in
// format f (ToolFormatNone or an unknown format: all content). newID names
// each call (nil: NewToolCallID(f)).
func ParseToolCalls(f ToolFormat, text string, newID func() string) (content string, calls []ToolCall) {
	if newID == nil {
		newID = func() string { return NewToolCallID(f) }
	}
	if f == ToolFormatGeneric {
		if content, calls, ok := parseGeneric(text); ok {
			return content, nameCalls(calls, newID)
		}
		return text, nil
	}
	syn, ok := syntaxOf(f)
	if !ok {
		return text, nil
	}
	rest := trimLeftSpace(text)
	for _, b := range syn.bare {
		if strings.HasPrefix(rest, b) {
			if cs, ok := parseCallSeq(rest); ok {
				return "", nameCalls(cs, newID)
			}
			break
		}
	}
	// Marker rules: pieces alternate content and call groups.
	type piece struct {
		text  string
		calls []ToolCall
	}
	var pieces []piece
	var cur strings.Builder
	flush := func(cs []ToolCall) {
		pieces = append(pieces, piece{text: cur.String()}, piece{calls: cs})
		cur.Reset()
	}
	rest = text
	for {
		i := strings.Index(rest, syn.start)
		if i < 0 {
			cur.WriteString(rest)
			break
		}
		cur.WriteString(rest[:i])
		after := rest[i+len(syn.start):]
		if syn.end == "" {
			if cs, ok := parseCallSeq(after); ok {
				flush(cs)
			} else {
				cur.WriteString(syn.start + after)
			}
			break
		}
		j, cs := blockEnd(after, syn.end)
		if j < 0 {
			cur.WriteString(syn.start + after)
			break
		}
		body := after[:j]
		if cs != nil {
			flush(cs)
		} else {
			cur.WriteString(syn.start + body + syn.end)
		}
		rest = after[j+len(syn.end):]
	}
	pieces = append(pieces, piece{text: cur.String()})
	var out strings.Builder
	for i, p := range pieces {
		if p.calls != nil {
			calls = append(calls, nameCalls(p.calls, newID)...)
			continue
		}
		t := p.text
		if i > 0 { // follows a call group
			t = trimLeftSpace(t)
		}
		if i+1 < len(pieces) { // precedes a call group
			t = trimRightSpace(t)
		}
		out.WriteString(t)
	}
	return out.String(), calls
}

// blockEnd finds where a call block whose text (after the start marker)
// is s ends: at the first end marker whose body parses as calls, or the
// first whose body can no longer become JSON (the block is then content).
// A body that is unfinished JSON — the marker text sits inside a string,
// e.g. an argument holding "</tool_call>" — reads on to the next marker.
// j < 0: no decisive marker yet.
func blockEnd(s, end string) (j int, calls []ToolCall) {
	for from := 0; ; {
		k := strings.Index(s[from:], end)
		if k < 0 {
			return -1, nil
		}
		j = from + k
		if cs, ok := parseCallSeq(s[:j]); ok {
			return j, cs
		}
		if !unfinishedJSON(s[:j]) {
			return j, nil
		}
		from = j + len(end)
	}
}

// unfinishedJSON reports whether s is JSON values (separated as
// parseCallSeq allows) of which the last is cut short, i.e. more text
// could complete it.
func unfinishedJSON(s string) bool {
	for {
		i := 0
		for i < len(s) && (isSpace(s[i]) || s[i] == ';') {
			i++
		}
		if i == len(s) {
			return false
		}
		s = s[i:]
		dec := json.NewDecoder(strings.NewReader(s))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err == io.ErrUnexpectedEOF
		}
		s = s[dec.InputOffset():]
	}
}

func nameCalls(cs []ToolCall, newID func() string) []ToolCall {
	for i := range cs {
		cs[i].ID = newID()
	}
	return cs
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func trimLeftSpace(s string) string {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return s[i:]
}

func trimRightSpace(s string) string {
	i := len(s)
	for i > 0 && isSpace(s[i-1]) {
		i--
	}
	return s[:i]
}

// parseCallSeq reads one or more calls: JSON call objects or arrays of
// them, separated by whitespace or ";", and nothing else. ok is false
// unless the whole text is calls (at least one).
func parseCallSeq(s string) (calls []ToolCall, ok bool) {
	dec := json.NewDecoder(strings.NewReader(s))
	for {
		// Skip separators between values.
		rest := s[dec.InputOffset():]
		skip := 0
		for skip < len(rest) && (isSpace(rest[skip]) || (rest[skip] == ';' && len(calls) > 0)) {
			skip++
		}
		if skip == len(rest) {
			return calls, len(calls) > 0
		}
		if skip > 0 {
			s = rest[skip:]
			dec = json.NewDecoder(strings.NewReader(s))
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, false
		}
		switch raw[0] {
		case '{':
			c, ok := parseCall(raw)
			if !ok {
				return nil, false
			}
			calls = append(calls, c)
		case '[':
			var items []json.RawMessage
			if json.Unmarshal(raw, &items) != nil || len(items) == 0 {
				return nil, false
			}
			for _, it := range items {
				c, ok := parseCall(it)
				if !ok {
					return nil, false
				}
				calls = append(calls, c)
			}
		default:
			return nil, false
		}
	}
}

// parseCall reads {"name": "...", "arguments" | "parameters": {...}}.
// Arguments given as a string holding a JSON object are accepted (some
// models double-encode); absent arguments are {}.
func parseCall(raw json.RawMessage) (ToolCall, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return ToolCall{}, false
	}
	var name string
	if json.Unmarshal(obj["name"], &name) != nil || name == "" {
		return ToolCall{}, false
	}
	args, ok := obj["arguments"]
	if !ok {
		args, ok = obj["parameters"]
	}
	if !ok {
		return ToolCall{Name: name, Arguments: "{}"}, true
	}
	args = bytes.TrimSpace(args)
	if len(args) > 0 && args[0] == '"' {
		var inner string
		if json.Unmarshal(args, &inner) != nil {
			return ToolCall{}, false
		}
		args = bytes.TrimSpace([]byte(inner))
		if !json.Valid(args) {
			return ToolCall{}, false
		}
	}
	if len(args) == 0 || args[0] != '{' {
		return ToolCall{}, false
	}
	return ToolCall{Name: name, Arguments: string(args)}, true
}

// ToolCallDelta is one piece of a streamed call, shaped like OpenAI's
// choices[].delta.tool_calls[] element: the first delta of a call carries
// Index, ID, Type "function", Name and empty Arguments; later ones carry
// Index and a fragment of Arguments.
type ToolCallDelta struct {
	Index     int
	ID        string
	Type      string
	Name      string
	Arguments string
}

// ToolStream parses a reply as it is generated. Push each piece of text;
// it returns the content that is safe to show and any completed calls as
// deltas. Text that may be the start of a call marker, and whitespace that
// may touch a call, are held back until the following text decides; a
// call's block is held until it is complete, then emitted whole (name
// first, then arguments). Finish flushes the rest. The concatenated
// content and the accumulated deltas equal ParseToolCalls on the whole
// text with the same newID sequence.
type ToolStream struct {
	syn     toolSyntax
	on      bool
	generic bool // ToolFormatGeneric: the whole reply is held to the end
	newID   func() string
	buf     string // unconsumed text
	started bool   // the first non-space text has been seen
	bare    bool   // the reply began as bare call JSON: held to the end
	inCall  bool   // buf is inside a call block (after the start marker)
	ws      string // held trailing whitespace of the content so far
	after   bool   // the last thing emitted was a call: drop leading whitespace
	n       int    // calls emitted
}

// NewToolStream starts a streaming parse in format f (ToolFormatNone: all
// text is content, passed through as it comes). newID: as ParseToolCalls.
func NewToolStream(f ToolFormat, newID func() string) *ToolStream {
	syn, ok := syntaxOf(f)
	if newID == nil {
		newID = func() string { return NewToolCallID(f) }
	}
	g := f == ToolFormatGeneric
	return &ToolStream{syn: syn, on: ok || g, generic: g, newID: newID}
}

// Calls reports how many calls have been emitted so far.
func (s *ToolStream) Calls() int { return s.n }

// Push consumes the next piece of generated text.
func (s *ToolStream) Push(text string) (content string, deltas []ToolCallDelta) {
	if !s.on {
		return text, nil
	}
	var out strings.Builder
	s.buf += text
	if s.generic {
		return "", nil
	}
	if !s.started {
		t := trimLeftSpace(s.buf)
		if t == "" {
			return "", nil
		}
		for _, b := range s.syn.bare {
			if len(t) < len(b) && strings.HasPrefix(b, t) {
				return "", nil // may still become a bare call
			}
			if strings.HasPrefix(t, b) {
				s.bare = true
			}
		}
		s.started = true
	}
	if s.bare {
		return "", nil
	}
	deltas = s.scan(&out, deltas)
	return out.String(), deltas
}

// Finish ends the reply and returns everything still held.
func (s *ToolStream) Finish() (content string, deltas []ToolCallDelta) {
	if !s.on {
		return "", nil
	}
	if s.generic {
		text := s.buf
		s.buf = ""
		content, calls := ParseToolCalls(ToolFormatGeneric, text, func() string { return "" })
		return content, s.emitCalls(calls, nil)
	}
	var out strings.Builder
	if s.bare {
		if cs, ok := parseCallSeq(trimLeftSpace(s.buf)); ok {
			s.buf = ""
			return "", s.emitCalls(cs, nil)
		}
		s.bare = false // not calls after all: the marker rules read it
		deltas = s.scan(&out, deltas)
	}
	switch {
	case s.inCall && s.syn.end == "":
		if cs, ok := parseCallSeq(s.buf); ok {
			deltas = s.emitCalls(cs, deltas)
		} else {
			s.content(&out, s.syn.start+s.buf)
		}
	case s.inCall:
		s.content(&out, s.syn.start+s.buf)
	default:
		s.content(&out, s.buf)
	}
	s.buf, s.inCall = "", false
	out.WriteString(s.ws) // nothing follows: trailing whitespace is content
	s.ws = ""
	return out.String(), deltas
}

// scan consumes buf as far as it is decided.
func (s *ToolStream) scan(out *strings.Builder, deltas []ToolCallDelta) []ToolCallDelta {
	for {
		if !s.inCall {
			i := strings.Index(s.buf, s.syn.start)
			if i < 0 {
				k := partialSuffix(s.buf, s.syn.start)
				s.content(out, s.buf[:len(s.buf)-k])
				s.buf = s.buf[len(s.buf)-k:]
				return deltas
			}
			s.content(out, s.buf[:i])
			s.buf = s.buf[i+len(s.syn.start):]
			s.inCall = true
		}
		if s.syn.end == "" {
			return deltas // the block runs to the end of the reply
		}
		j, cs := blockEnd(s.buf, s.syn.end)
		if j < 0 {
			return deltas
		}
		body := s.buf[:j]
		s.buf = s.buf[j+len(s.syn.end):]
		s.inCall = false
		if cs != nil {
			deltas = s.emitCalls(cs, deltas)
		} else {
			s.content(out, s.syn.start+body+s.syn.end)
		}
	}
}

// content emits text outside calls, holding its trailing whitespace.
func (s *ToolStream) content(out *strings.Builder, t string) {
	if s.after {
		t = trimLeftSpace(t)
		if t == "" {
			return
		}
		s.after = false
	}
	t = s.ws + t
	body := trimRightSpace(t)
	s.ws = t[len(body):]
	out.WriteString(body)
}

func (s *ToolStream) emitCalls(cs []ToolCall, deltas []ToolCallDelta) []ToolCallDelta {
	s.ws, s.after = "", true
	for _, c := range cs {
		deltas = append(deltas,
			ToolCallDelta{Index: s.n, ID: s.newID(), Type: "function", Name: c.Name},
			ToolCallDelta{Index: s.n, Arguments: c.Arguments})
		s.n++
	}
	return deltas
}

// partialSuffix is the length of the longest suffix of s that is a proper
// prefix of marker (text that may yet become the marker).
func partialSuffix(s, marker string) int {
	for k := min(len(s), len(marker)-1); k > 0; k-- {
		if strings.HasSuffix(s, marker[:k]) {
			return k
		}
	}
	return 0
}
