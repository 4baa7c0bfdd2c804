package tokenizer

// Text ↔ ids as `nanoserve tokenize` and `detokenize` exchange them: one
// text (or one list of ids) at a time, or JSON lines — {"text": ...} in,
// {"ids": [...]} out, and back — for scripts and the shared tokenizer
// checks, which compare whole corpora line by line against reference
// tokenizers.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// EncodeOptions say what Tokens adds to Encode: special-token parsing and
// the BOS and EOS ids, each only where the model adds it (AddBOS, AddEOS).
type EncodeOptions struct {
	ParseSpecial bool // special-token text (<s>, <|im_end|>) is the special token
	BOS, EOS     bool
}

// Tokens is Encode with BOS and EOS as o asks.
func (t *Tokenizer) Tokens(text string, o EncodeOptions) []int {
	ids := make([]int, 0, 16)
	if b, ok := t.BOS(); o.BOS && ok && t.AddBOS() {
		ids = append(ids, b)
	}
	ids = append(ids, t.Encode(text, o.ParseSpecial)...)
	if e, ok := t.EOS(); o.EOS && ok && t.AddEOS() {
		ids = append(ids, e)
	}
	return ids
}

// WriteIDs writes ids on one line, space-separated: the numbers, or with
// pieces each token's text quoted as a Go string.
func (t *Tokenizer) WriteIDs(w *bufio.Writer, ids []int, pieces bool) {
	for i, id := range ids {
		if i > 0 {
			w.WriteByte(' ')
		}
		if pieces {
			w.WriteString(strconv.Quote(t.Token(id)))
		} else {
			w.WriteString(strconv.Itoa(id))
		}
	}
	w.WriteByte('\n')
}

// ParseIDs reads token ids from fields ("[1," and "2]" are 1 and 2) and
// checks each is in the vocabulary.
func (t *Tokenizer) ParseIDs(fields []string) ([]int, error) {
	ids := make([]int, 0, len(fields))
	for _, f := range fields {
		id, err := strconv.Atoi(strings.Trim(f, "[],"))
		if err != nil {
			return nil, fmt.Errorf("bad token id %q", f)
		}
		ids = append(ids, id)
	}
	return ids, t.CheckIDs(ids)
}

// CheckIDs refuses an id outside the vocabulary.
func (t *Tokenizer) CheckIDs(ids []int) error {
	for _, id := range ids {
		if id < 0 || id >= t.Size() {
			return fmt.Errorf("token id %d outside the vocabulary (size %d)", id, t.Size())
		}
	}
	return nil
}

// EncodeJSONL reads {"text": ...} lines from r and writes one {"ids": [...]}
// line per text to w (blank lines are skipped). Errors name the line.
func (t *Tokenizer) EncodeJSONL(r io.Reader, w *bufio.Writer, o EncodeOptions) error {
	return eachLine(r, func(line []byte) error {
		var req struct {
			Text *string `json:"text"`
		}
		if err := json.Unmarshal(line, &req); err != nil {
			return err
		}
		if req.Text == nil {
			return fmt.Errorf("no \"text\" field")
		}
		b, err := json.Marshal(struct {
			IDs []int `json:"ids"`
		}{t.Tokens(*req.Text, o)})
		if err != nil {
			return err
		}
		w.Write(b)
		return w.WriteByte('\n')
	})
}

// DecodeJSONL reads {"ids": [...]} lines from r and writes one {"text": ...}
// line per list to w, HTML characters as they are ("<s>", not
// "\u003cs\u003e"). Errors name the line.
func (t *Tokenizer) DecodeJSONL(r io.Reader, w *bufio.Writer, o DecodeOptions) error {
	return eachLine(r, func(line []byte) error {
		var req struct {
			IDs []int `json:"ids"`
		}
		if err := json.Unmarshal(line, &req); err != nil {
			return err
		}
		if err := t.CheckIDs(req.IDs); err != nil {
			return err
		}
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		return enc.Encode(struct {
			Text string `json:"text"`
		}{t.DecodeWith(req.IDs, o)})
	})
}

// eachLine calls f with each non-blank line of r; f's error is returned
// as "line N: ...".
func eachLine(r io.Reader, f func(line []byte) error) error {
	in := bufio.NewReaderSize(r, 1<<16)
	for lineNo := 1; ; lineNo++ {
		line, rerr := in.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			if err := f(line); err != nil {
				return &LineError{Line: lineNo, Err: err}
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// LineError is an error on one line of a JSON-lines input.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }
