package tokenizer

import "unicode/utf8"

// Decoder turns ids into text one id at a time, for streaming generation.
// A character spelt by several byte tokens (byte fallback, or byte-level
// BPE) is held back until it is complete, so every string Next returns is
// valid UTF-8 and never ends inside a character. The concatenation of all
// Next results and the final Flush equals Decode of the same ids.
//
// A Decoder is not safe for concurrent use; make one per sequence.
type Decoder struct {
	t       *Tokenizer
	mode    SpecialMode
	atStart bool   // no visible piece seen yet (dummy-prefix space still to drop)
	pending []byte // raw bytes of an incomplete trailing UTF-8 sequence
}

// NewDecoder returns a streaming decoder with default options.
func (t *Tokenizer) NewDecoder() *Decoder { return t.NewDecoderWith(DecodeOptions{}) }

// NewDecoderWith returns a streaming decoder with options o.
func (t *Tokenizer) NewDecoderWith(o DecodeOptions) *Decoder {
	return &Decoder{t: t, mode: o.Special, atStart: !o.Continuation}
}

// Next adds id and returns the text that became complete (possibly "").
func (d *Decoder) Next(id int) string {
	p := d.t.pieceFor(id, d.mode)
	if len(p) == 0 {
		return ""
	}
	if d.atStart {
		d.atStart = false
		if d.t.strip != nil && p[0] == ' ' && d.t.strip.stripsLeadingSpace(id) {
			p = p[1:]
		}
	}
	if len(d.pending) == 0 {
		// Fast path: the piece is whole characters.
		if d.t.pieceOK[id] && string(p) == d.t.pieceStr[id] {
			return d.t.pieceStr[id] // no allocation
		}
		if utf8.Valid(p) {
			return string(p)
		}
	}
	d.pending = append(d.pending, p...)
	return d.drain(false)
}

// Flush returns whatever is held back, each byte of an incomplete character
// as U+FFFD (call it when the sequence ends).
func (d *Decoder) Flush() string {
	return d.drain(true)
}

// drain returns the decodable prefix of pending and keeps the rest: a
// trailing sequence that is a valid start of a longer character (final:
// nothing is kept).
func (d *Decoder) drain(final bool) string {
	b := d.pending
	var out []byte
	for len(b) > 0 {
		if !final && !utf8.FullRune(b) {
			break // could still become a valid character
		}
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			out = append(out, "\uFFFD"...)
		} else {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	d.pending = append(d.pending[:0], b...)
	return string(out)
}
