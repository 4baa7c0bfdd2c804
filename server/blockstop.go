package server

import (
	"strings"

	"nanoserve/engine"
	"nanoserve/sample"
)

// Serving the built-in Go model (Options.BlockStop), /v1/completions and
// Ollama's /api/generate end a completion at the end of the block its
// prompt opened, as generate does (sample.BlockStop), and /infill's
// n_indent ends a middle: the text after the closing brace is neither
// streamed nor returned, the finish reason is stop, and once every choice
// has ended the generation is cancelled. Requests with an output
// constraint (which decides where the output ends) and fill-in-the-middle
// requests (which end where the suffix begins) are left as they are.

// blockStops wraps out so that the choices of j end at their prompts'
// block ends; out itself when the server does not stop at blocks.
func (s *Server) blockStops(j *job, out sink) sink {
	if !s.blockStop {
		return out
	}
	b := &blockSink{sink: out, stops: make([]*sample.BlockStop, len(j.reqs)*j.n), text: make([]strings.Builder, len(j.reqs)*j.n)}
	for i := range b.stops {
		req := j.reqs[i/j.n]
		if req.FIM || req.Budget != nil {
			continue
		}
		prompt := req.Prompt
		if req.PromptIDs != nil {
			prompt = s.tok.Decode(req.PromptIDs)
		}
		b.stops[i] = sample.NewBlockStop(prompt)
		b.live++
	}
	if b.live == 0 {
		return out
	}
	return b
}

// blockSink passes each choice's text on up to its block's end.
type blockSink struct {
	sink
	stops []*sample.BlockStop // by choice; nil: not cut
	ended []bool              // by choice, once cut (allocated then)
	text  []strings.Builder   // by choice: the text passed on
	live  int                 // choices still to be cut
}

func (b *blockSink) Delta(i int, d delta) bool {
	if b.ended != nil && b.ended[i] {
		return true // its block ended; the other choices go on
	}
	done := false
	if st := b.stops[i]; st != nil {
		d.Text, done = st.Cut(d.Text)
		b.text[i].WriteString(d.Text)
	}
	if done {
		if b.ended == nil {
			b.ended = make([]bool, len(b.stops))
		}
		b.ended[i] = true
		b.live--
	}
	return b.sink.Delta(i, d) && b.live > 0
}

// End reports the cut choices as stopped with the text passed on (their
// results hold what was generated past the cut).
func (b *blockSink) End(o *outcome) {
	for i, res := range o.Results {
		if b.ended != nil && b.ended[i] {
			r := *res
			r.Text, r.FinishReason = b.text[i].String(), engine.FinishStop
			o.Results[i] = &r
		}
	}
	if b.ended != nil && b.live == 0 {
		o.Cut = nil // the cancellation was ours, not the server's
	}
	b.sink.End(o)
}
