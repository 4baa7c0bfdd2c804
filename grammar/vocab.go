package grammar

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
)

// Vocab is a model vocabulary as the grammar sees it: the bytes each token
// spells, and which ids end generation. Build it once per model and share
// it; it is immutable.
type Vocab struct {
	size   int
	eog    []int32 // end-of-generation ids, allowed only where the grammar accepts
	single byteSet // bytes that some token spells alone (shortest-completion costs)
	maxLen int     // longest token, bytes

	// The token trie, flattened: node i's children are edges[first[i]:first[i+1]]
	// and the tokens ending there are toks[tokFirst[i]:tokFirst[i+1]].
	first    []int32  // (nodes+1)
	edgeByte []byte   // (edges)
	edgeTo   []int32  // (edges)
	tokFirst []int32  // (nodes+1)
	toks     []int32  // (tokens in the trie)
	tokens   [][]byte // (vocab) token bytes, for Accept

	control map[string]int32 // special (non-end) tokens by their text, for control-token terminals
}

// NewVocab builds a Vocab. tokens[id] holds the bytes id decodes to
// (byte-fallback tokens "<0xAB>" as the single byte 0xAB, SentencePiece
// "▁" as a space); special[id] marks ids that never spell text (control
// tokens, and EOS/EOG themselves); eog lists the end-of-generation ids.
// special may be nil. Empty tokens are never allowed. A special token
// that is not end-of-generation and has text (tokens[id]) can still be
// required by a grammar as a control token (Wrapper.ControlTokens), by id.
func NewVocab(tokens [][]byte, special []bool, eog []int) (*Vocab, error) {
	if len(tokens) == 0 {
		return nil, errors.New("grammar: empty vocabulary")
	}
	if special != nil && len(special) != len(tokens) {
		return nil, fmt.Errorf("grammar: %d special flags for %d tokens", len(special), len(tokens))
	}
	v := &Vocab{size: len(tokens)}
	isEOG := map[int]bool{}
	for _, id := range eog {
		if id < 0 || id >= len(tokens) {
			return nil, fmt.Errorf("grammar: end-of-generation id %d outside the vocabulary (%d)", id, len(tokens))
		}
		if !isEOG[id] {
			v.eog = append(v.eog, int32(id))
		}
		isEOG[id] = true
	}
	var ids []int32
	for id, t := range tokens {
		if special != nil && special[id] && !isEOG[id] && len(t) > 0 {
			if v.control == nil {
				v.control = map[string]int32{}
			}
			if _, dup := v.control[string(t)]; !dup {
				v.control[string(t)] = int32(id)
			}
		}
		if len(t) == 0 || isEOG[id] || (special != nil && special[id]) {
			continue
		}
		if len(t) == 1 {
			v.single.add(t[0], t[0])
		}
		v.maxLen = max(v.maxLen, len(t))
		ids = append(ids, int32(id))
	}
	slices.SortFunc(ids, func(a, b int32) int {
		if c := bytes.Compare(tokens[a], tokens[b]); c != 0 {
			return c
		}
		return int(a - b)
	})
	// Preorder over the sorted ids: a node is a run of ids sharing a prefix
	// of length d; ids of length d end there, the rest group by byte d.
	type pending struct {
		node   int32
		lo, hi int
		d      int
	}
	var build func(lo, hi, d int)
	build = func(lo, hi, d int) {
		me := int32(len(v.first))
		v.first = append(v.first, 0)
		v.tokFirst = append(v.tokFirst, int32(len(v.toks)))
		for lo < hi && len(tokens[ids[lo]]) == d {
			v.toks = append(v.toks, ids[lo])
			lo++
		}
		// children: reserve the edges contiguously, then recurse
		var kids []pending
		for i := lo; i < hi; {
			b := tokens[ids[i]][d]
			j := i
			for j < hi && tokens[ids[j]][d] == b {
				j++
			}
			kids = append(kids, pending{lo: i, hi: j, d: d + 1})
			i = j
		}
		v.first[me] = int32(len(v.edgeByte))
		for _, k := range kids {
			v.edgeByte = append(v.edgeByte, tokens[ids[k.lo]][d])
			v.edgeTo = append(v.edgeTo, 0)
		}
		e0 := v.first[me]
		for i, k := range kids {
			v.edgeTo[int(e0)+i] = int32(len(v.first))
			build(k.lo, k.hi, k.d)
		}
	}
	build(0, len(ids), 0)
	v.first = append(v.first, int32(len(v.edgeByte)))
	v.tokFirst = append(v.tokFirst, int32(len(v.toks)))
	v.tokens = make([][]byte, len(tokens))
	for id, t := range tokens {
		if !isEOG[id] && (special == nil || !special[id]) {
			v.tokens[id] = t
		}
	}
	return v, nil
}

// Size is the number of token ids.
func (v *Vocab) Size() int { return v.size }

// MaskWords is the length of a mask bitset over this vocabulary.
func (v *Vocab) MaskWords() int { return (v.size + 63) / 64 }
