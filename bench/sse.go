package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ErrMalformedSSE is wrapped by every error of the streaming reader about
// the server's bytes (not about the connection).
var ErrMalformedSSE = errors.New("bench: malformed SSE stream")

// sseChunk is what bench serve reads out of one streamed event of the
// OpenAI completions or chat completions API, or of llama-server's native
// streams (/completion, /infill: {"content", "stop"}, the last event with
// stop: true and the token counts, and no [DONE]).
type sseChunk struct {
	text         string // the choice's new text (completions: text; chat: delta.content; native: content)
	usage        *sseUsage
	finishReason string
	final        bool // a native stream's last event (stop: true)
}

type sseUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// sseEvent is the union of the two APIs' chunk shapes, and the error
// event servers send mid-stream.
type sseEvent struct {
	Choices []struct {
		Text  *string `json:"text"`
		Delta *struct {
			Content *string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *sseUsage `json:"usage"`
	// llama-server's native stream.
	Content         *string `json:"content"`
	Stop            *bool   `json:"stop"`
	TokensPredicted int     `json:"tokens_predicted"`
	TokensEvaluated int     `json:"tokens_evaluated"`
	Error           *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// sseReader reads "data: ..." events (lines; an event ends at a blank
// line) up to "data: [DONE]". Comments (":...") and the event:, id: and
// retry: fields are skipped; a multi-line data field is joined with "\n"
// as the SSE specification says.
type sseReader struct {
	r    *bufio.Reader
	data []byte // the current event's data
	n    int    // events read (for error messages)
}

func newSSEReader(r io.Reader) *sseReader { return &sseReader{r: bufio.NewReaderSize(r, 16<<10)} }

// next returns the next event's chunk; done at "[DONE]". A stream that
// ends without "[DONE]", an event whose data is not a JSON object of the
// expected shape, and an error event are errors.
func (s *sseReader) next() (c sseChunk, done bool, err error) {
	s.data = s.data[:0]
	have := false
	for {
		line, err := s.r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A long line: gather it whole.
			full := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull {
				line, err = s.r.ReadSlice('\n')
				full = append(full, line...)
			}
			line = full
		}
		if err != nil && len(line) == 0 {
			if err == io.EOF {
				if have {
					break // the last event lacked its blank line
				}
				return c, false, fmt.Errorf("%w: the stream ended after %d events without \"data: [DONE]\"", ErrMalformedSSE, s.n)
			}
			return c, false, fmt.Errorf("bench: reading the stream: %w", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if have {
				break
			}
			continue // blank lines between events
		}
		field, value, ok := bytes.Cut(line, []byte(":"))
		if len(field) == 0 {
			continue // a comment
		}
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if have {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, value...)
			have = true
		case "event", "id", "retry":
		default:
			if !ok {
				return c, false, fmt.Errorf("%w: event %d: line %q is not a \"field: value\" line", ErrMalformedSSE, s.n+1, clip(line))
			}
			// Unknown fields are ignored, as the SSE specification says.
		}
		if err != nil { // EOF right after a line without newline
			break
		}
	}
	s.n++
	if string(s.data) == "[DONE]" {
		return c, true, nil
	}
	var ev sseEvent
	if err := json.Unmarshal(s.data, &ev); err != nil {
		return c, false, fmt.Errorf("%w: event %d: data is not a JSON chunk (%v): %q", ErrMalformedSSE, s.n, err, clip(s.data))
	}
	if ev.Error != nil {
		return c, false, fmt.Errorf("bench: the server sent an error event: %s", ev.Error.Message)
	}
	if ev.Choices == nil && ev.Usage == nil && ev.Stop != nil { // native
		if ev.Content != nil {
			c.text = *ev.Content
		}
		if *ev.Stop {
			c.final = true
			c.usage = &sseUsage{PromptTokens: ev.TokensEvaluated, CompletionTokens: ev.TokensPredicted}
		}
		return c, false, nil
	}
	if ev.Choices == nil && ev.Usage == nil {
		return c, false, fmt.Errorf("%w: event %d: a chunk without \"choices\", \"usage\" or \"stop\": %q", ErrMalformedSSE, s.n, clip(s.data))
	}
	c.usage = ev.Usage
	for _, ch := range ev.Choices {
		switch {
		case ch.Text != nil:
			c.text += *ch.Text
		case ch.Delta != nil && ch.Delta.Content != nil:
			c.text += *ch.Delta.Content
		}
		if ch.FinishReason != nil {
			c.finishReason = *ch.FinishReason
		}
	}
	return c, false, nil
}

// clip shortens b for an error message.
func clip(b []byte) string {
	if len(b) > 120 {
		return string(b[:120]) + "..."
	}
	return string(b)
}
