package tokenizer

// Byte-level BPE training.
//
// TrainBPE learns a byte-level BPE vocabulary (Vocab.Model "gpt2") from
// text, the way GPT-2's vocabulary was made: cut the text into pre-tokens
// with the same pre-tokenizer the encoder will use, count each distinct
// pre-token ("word"), start every word as its bytes, and repeatedly merge
// the adjacent symbol pair that occurs most often (weighted by word
// frequency) into a new symbol, until the vocabulary is full. The merges,
// in the order learned, are the ranks the byte-level encoder applies.
//
// Determinism: ties between equally frequent pairs go to the pair whose
// (left id, right id) is smallest, and nothing depends on map iteration
// order, so the same text and options always give the same vocabulary.
//
// Cost: pair counts are kept up to date incrementally. Each merge touches
// only the words that contain the merged pair (found through a pair → words
// index), and the best pair comes from a max-heap with lazy deletion.

import (
	"container/heap"
	"errors"
	"fmt"
	"slices"
)

// TrainOptions configure TrainBPE.
type TrainOptions struct {
	VocabSize int      // total tokens including the 256 bytes and Special (≥ 256+len(Special))
	Pre       string   // pre-tokenizer name (see newPreTokenizer); "" means "dbrx"
	Special   []string // control tokens appended after the merges; Special[0] becomes BOS and EOS
	MinFreq   int      // stop merging when the best pair occurs fewer times (< 2 means 2)
}

// DefaultTrainPre is the pre-tokenizer TrainBPE uses when none is given: the
// Llama-3 split expression without ignore_merges. It keeps a leading
// punctuation or tab with the word it precedes ("\tfunc", ".Println") and
// groups digits by at most three, which suits source code.
const DefaultTrainPre = "dbrx"

// TrainBPE learns a byte-level BPE vocabulary from texts (each text is
// pre-tokenized on its own).
func TrainBPE(texts []string, opts TrainOptions) (Vocab, error) {
	if opts.Pre == "" {
		opts.Pre = DefaultTrainPre
	}
	pre, err := newPreTokenizer(opts.Pre)
	if err != nil {
		return Vocab{}, err
	}
	if opts.VocabSize < 256+len(opts.Special) {
		return Vocab{}, fmt.Errorf("tokenizer: vocabulary size %d is below 256 bytes + %d special tokens", opts.VocabSize, len(opts.Special))
	}
	minFreq := max(opts.MinFreq, 2)
	nMerges := opts.VocabSize - 256 - len(opts.Special)

	// Count words.
	counts := map[string]int{}
	for _, s := range texts {
		pre.split(s, func(w string) { counts[w]++ })
	}
	keys := make([]string, 0, len(counts))
	for w := range counts {
		keys = append(keys, w)
	}
	slices.Sort(keys)
	words := make([][]int32, len(keys)) // symbols of each word
	freq := make([]int, len(keys))
	for i, w := range keys {
		s := make([]int32, len(w))
		for j := 0; j < len(w); j++ {
			s[j] = int32(w[j])
		}
		words[i], freq[i] = s, counts[w]
	}
	counts = nil

	bytesOf := make([][]byte, 256, opts.VocabSize)
	for b := range 256 {
		bytesOf[b] = []byte{byte(b)}
	}
	pc := map[uint64]int{}        // pair -> weighted count
	where := map[uint64][]int32{} // pair -> words that (may) contain it
	key := func(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }
	for i, s := range words {
		for j := 0; j+1 < len(s); j++ {
			k := key(s[j], s[j+1])
			pc[k] += freq[i]
			if l := where[k]; len(l) == 0 || l[len(l)-1] != int32(i) {
				where[k] = append(l, int32(i))
			}
		}
	}
	h := &trainHeap{}
	for k, c := range pc {
		h.items = append(h.items, trainItem{k, c})
	}
	heap.Init(h)

	var merges []string
	stamp := make([]int, len(words)) // last merge that processed each word (+1)
	for len(merges) < nMerges && h.Len() > 0 {
		it := heap.Pop(h).(trainItem)
		if c := pc[it.pair]; c != it.count {
			if c > 0 {
				heap.Push(h, trainItem{it.pair, c})
			}
			continue
		}
		if it.count < minFreq {
			break
		}
		a, b := int32(it.pair>>32), int32(uint32(it.pair))
		z := int32(len(bytesOf))
		bytesOf = append(bytesOf, append(slices.Clip(bytesOf[a]), bytesOf[b]...))
		merges = append(merges, byteLevelEncode(bytesOf[a])+" "+byteLevelEncode(bytesOf[b]))
		changed := map[uint64]bool{}
		for _, wi := range where[it.pair] {
			if stamp[wi] == len(merges) {
				continue
			}
			stamp[wi] = len(merges)
			s := words[wi]
			found := false
			for j := 0; j+1 < len(s); j++ {
				if s[j] == a && s[j+1] == b {
					found = true
					break
				}
			}
			if !found {
				continue
			}
			f := freq[wi]
			for j := 0; j+1 < len(s); j++ {
				k := key(s[j], s[j+1])
				pc[k] -= f
				changed[k] = true
			}
			out := s[:0:0]
			for j := 0; j < len(s); j++ {
				if j+1 < len(s) && s[j] == a && s[j+1] == b {
					out = append(out, z)
					j++
				} else {
					out = append(out, s[j])
				}
			}
			words[wi] = out
			for j := 0; j+1 < len(out); j++ {
				k := key(out[j], out[j+1])
				pc[k] += f
				changed[k] = true
				if out[j] == z || out[j+1] == z {
					if l := where[k]; len(l) == 0 || l[len(l)-1] != wi {
						where[k] = append(l, wi)
					}
				}
			}
		}
		delete(where, it.pair)
		delete(pc, it.pair)
		ks := make([]uint64, 0, len(changed))
		for k := range changed {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		for _, k := range ks {
			if c := pc[k]; c > 0 {
				heap.Push(h, trainItem{k, c})
			} else {
				delete(pc, k)
			}
		}
	}

	v := Vocab{Model: "gpt2", Pre: opts.Pre}
	for _, bs := range bytesOf {
		v.Tokens = append(v.Tokens, byteLevelEncode(bs))
		v.Types = append(v.Types, TypeNormal)
	}
	v.Merges = merges
	for i, s := range opts.Special {
		if s == "" {
			return Vocab{}, errors.New("tokenizer: empty special token")
		}
		id := len(v.Tokens)
		v.Tokens = append(v.Tokens, s)
		v.Types = append(v.Types, TypeControl)
		if i == 0 {
			v.BOS, v.EOS = Some(id), Some(id)
		}
	}
	return v, nil
}

type trainItem struct {
	pair  uint64
	count int
}

// trainHeap is a max-heap by count, then smallest pair.
type trainHeap struct{ items []trainItem }

func (h *trainHeap) Len() int { return len(h.items) }
func (h *trainHeap) Less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	if a.count != b.count {
		return a.count > b.count
	}
	return a.pair < b.pair
}
func (h *trainHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *trainHeap) Push(x any)    { h.items = append(h.items, x.(trainItem)) }
func (h *trainHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}
