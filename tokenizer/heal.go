package tokenizer

import (
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// Token healing support.
//
// A prompt that ends inside what the model usually sees as one token (a
// Go prompt "func main() {" whose training text almost always has " {\n"
// as one piece) makes the model continue from a token boundary it never
// saw. Token healing removes the prompt's last token (text t), prefills the
// rest, and lets the first generated token be only one whose text starts
// with t; the text shown for it is what follows t. TokensWithPrefix finds
// those tokens, Decoder.NextAfter shows only the new part.

// pieceIndex holds the ids of the generatable tokens sorted by their bytes,
// so the tokens whose text starts with a prefix form one contiguous run.
type pieceIndex struct {
	once sync.Once
	ids  []int32 // (generatable tokens) sorted by pieceStr, ties by id
}

// generatable reports whether id decodes to text a model can write: not a
// control, unknown or unused token, and not empty.
func (t *Tokenizer) generatable(id int) bool {
	switch t.types[id] {
	case TypeControl, TypeUnknown, TypeUnused:
		return false
	}
	return t.pieceStr[id] != ""
}

// sortedPieces returns the generatable ids sorted by their bytes (ties by
// id).
func (t *Tokenizer) sortedPieces() []int32 {
	type entry struct {
		s  string
		id int32
	}
	es := make([]entry, 0, len(t.pieceStr))
	for id, s := range t.pieceStr {
		if t.generatable(id) {
			es = append(es, entry{s, int32(id)})
		}
	}
	slices.SortFunc(es, func(a, b entry) int {
		if c := strings.Compare(a.s, b.s); c != 0 {
			return c
		}
		return int(a.id - b.id)
	})
	ids := make([]int32, len(es))
	for i, e := range es {
		ids[i] = e.id
	}
	return ids
}

// TokensWithPrefix returns, in ascending order, the ids of the tokens whose
// decoded bytes start with prefix (the token whose text is prefix
// included), leaving out control, unknown and unused tokens. A token's
// bytes are its piece as Decode concatenates it, before the SentencePiece
// dummy-prefix space is dropped ("▁if" is " if"). An empty prefix returns
// nil. The first call sorts the vocabulary once (O(V log V)); later calls
// cost O(log V + matches).
func (t *Tokenizer) TokensWithPrefix(prefix string) []int {
	if prefix == "" {
		return nil
	}
	ix := &t.byPiece
	ix.once.Do(func() { ix.ids = t.sortedPieces() })
	lo, _ := slices.BinarySearchFunc(ix.ids, prefix, func(id int32, p string) int {
		return strings.Compare(t.pieceStr[id], p)
	})
	var out []int
	for _, id := range ix.ids[lo:] {
		if !strings.HasPrefix(t.pieceStr[id], prefix) {
			break
		}
		out = append(out, int(id))
	}
	slices.Sort(out)
	return out
}

// Piece returns the bytes id decodes to as a string (not necessarily valid
// UTF-8), before the SentencePiece dummy-prefix space is dropped: "▁if" is
// " if", "<0x0A>" is "\n". It is "" outside the vocabulary.
func (t *Tokenizer) Piece(id int) string {
	if id < 0 || id >= len(t.pieceStr) {
		return ""
	}
	return t.pieceStr[id]
}

// NextAfter is Next for a token whose text starts with shown, text the
// caller already displays (token healing: the prompt's removed last
// token). It returns the complete text after shown; a token that does not
// start with shown is added whole, as Next would. shown counts as visible
// text, so no dummy-prefix space is dropped after it.
func (d *Decoder) NextAfter(id int, shown string) string {
	p := d.t.pieceFor(id, d.mode)
	if shown == "" || !strings.HasPrefix(string(p), shown) {
		return d.Next(id)
	}
	d.atStart = false
	p = p[len(shown):]
	if len(p) == 0 {
		return ""
	}
	if len(d.pending) == 0 && utf8.Valid(p) {
		return string(p)
	}
	d.pending = append(d.pending, p...)
	return d.drain(false)
}
