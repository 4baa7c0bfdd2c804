package grammar

import (
	"errors"
	"fmt"
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
	first    []int32 // (nodes+1)
	edgeByte []byte  // (edges)
	edgeTo   []int32 // (edges)
	tokFirst []int32 // (nodes+1)
	toks     []int32 // (tokens in the trie)
	tokens   [][]byte // (vocab) token bytes, for Accept
}

// NewVocab builds a Vocab. tokens[id] holds the bytes id decodes to
// (byte-fallback tokens "<0xAB>" as the single byte 0xAB, SentencePiece
// "▁" as a space); special[id] marks ids that never spell text (control
// tokens, and EOS/EOG themselves); eog lists the end-of-generation ids.
// special may be nil. Empty tokens are never allowed.
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
	type tnode struct {
		kids map[byte]int32
		toks []int32
	}
	nodes := []tnode{{}}
	for id, t := range tokens {
		if len(t) == 0 || isEOG[id] || (special != nil && special[id]) {
			continue
		}
		if len(t) == 1 {
			v.single.add(t[0], t[0])
		}
		v.maxLen = max(v.maxLen, len(t))
		cur := int32(0)
		for _, b := range t {
			nx, ok := nodes[cur].kids[b]
			if !ok {
				nx = int32(len(nodes))
				nodes = append(nodes, tnode{})
				if nodes[cur].kids == nil {
					nodes[cur].kids = map[byte]int32{}
				}
				nodes[cur].kids[b] = nx
			}
			cur = nx
		}
		nodes[cur].toks = append(nodes[cur].toks, int32(id))
	}
	// Flatten in preorder with children sorted by byte.
	v.first = make([]int32, 0, len(nodes)+1)
	v.tokFirst = make([]int32, 0, len(nodes)+1)
	order := make([]int32, len(nodes)) // old index -> new index
	var stack []int32
	stack = append(stack, 0)
	var seq []int32
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		order[n] = int32(len(seq))
		seq = append(seq, n)
		for b := 255; b >= 0; b-- {
			if k, ok := nodes[n].kids[byte(b)]; ok {
				stack = append(stack, k)
			}
		}
	}
	for _, n := range seq {
		v.first = append(v.first, int32(len(v.edgeByte)))
		v.tokFirst = append(v.tokFirst, int32(len(v.toks)))
		v.toks = append(v.toks, nodes[n].toks...)
		for b := 0; b < 256; b++ {
			if k, ok := nodes[n].kids[byte(b)]; ok {
				v.edgeByte = append(v.edgeByte, byte(b))
				v.edgeTo = append(v.edgeTo, order[k])
			}
		}
	}
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
