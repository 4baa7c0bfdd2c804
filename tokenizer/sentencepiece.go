package tokenizer

// SentencePiece BPE encoding, equal to SentencePiece 0.1.97's
// bpe::Model::Encode plus the processor's byte fallback:
//
//  1. Normalise: "▁" in front of the input (add_dummy_prefix, only where the
//     input starts), every " " becomes "▁" (escape_whitespaces), invalid
//     UTF-8 bytes become U+FFFD; with remove_extra_whitespaces, leading,
//     trailing and repeated spaces go first.
//  2. Split into symbols: a user-defined piece where one matches (longest
//     first; it is frozen and never merges), else one UTF-8 character.
//  3. Keep a max-heap of adjacent pairs whose concatenation is a mergeable
//     piece (normal, user-defined or unused), ordered by that piece's score,
//     ties to the leftmost pair. Pop the best, merge it, push the pairs the
//     merge created; a popped pair whose symbols changed since it was pushed
//     is stale (its byte length no longer matches) and skipped. This is
//     exactly "merge the best-scoring leftmost pair until none is left".
//  4. Each final symbol is looked up in the whole vocabulary. Unused pieces
//     are split back into the pair that formed them. A symbol not in the
//     vocabulary becomes its UTF-8 bytes as "<0xNN>" tokens (byte fallback)
//     or the unknown id (consecutive unknown symbols share one unknown id).

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

const spaceSymbol = "▁" // U+2581, SentencePiece's escaped space

// defaultUnkSurface is how SentencePiece decodes <unk>: U+2047 with spaces.
const defaultUnkSurface = " \u2047 "

// spOptions are SentencePiece normaliser settings a Vocab does not carry;
// only a .model file sets them.
type spOptions struct {
	removeExtraWhitespaces bool
	noEscapeWhitespaces    bool
	byteFallback           *bool  // nil: on when the vocabulary has byte tokens
	unkSurface             string // "": defaultUnkSurface
}

// spModel is a SentencePiece BPE vocabulary ready to encode.
type spModel struct {
	tokens []string
	scores []float32   // (vocab)
	types  []TokenType // (vocab)

	lookup map[string]int32 // every piece text -> id (SentencePiece PieceToId)
	merge  map[string]int32 // mergeable pieces (normal, user-defined, unused) -> id

	byteID       [256]int32 // id of "<0xNN>", -1 if absent
	unk          int        // unknown id, -1 if none
	byteFallback bool
	addPrefix    bool
	removeExtra  bool
	escape       bool
	hasUnused    bool

	user   prefixSet // user-defined pieces, frozen during merging
	pieces [][]byte  // (vocab) decoded bytes of each id

	wordSplit bool         // words can be encoded independently (canSplitWords)
	cache     *spWordCache // word -> ids, when wordSplit
}

func newSentencePiece(v *Vocab, types []TokenType, o *spOptions) (*spModel, error) {
	if o == nil {
		o = &spOptions{}
	}
	n := len(v.Tokens)
	m := &spModel{
		tokens:      v.Tokens,
		types:       types,
		lookup:      make(map[string]int32, n),
		merge:       make(map[string]int32, n),
		unk:         -1,
		addPrefix:   v.AddSpacePrefix,
		removeExtra: o.removeExtraWhitespaces,
		escape:      !o.noEscapeWhitespaces,
	}
	switch {
	case v.Scores != nil:
		m.scores = v.Scores
	case len(v.Merges) > 0:
		s, err := scoresFromMerges(v)
		if err != nil {
			return nil, err
		}
		m.scores = s
	default:
		return nil, errors.New("tokenizer: SentencePiece vocabulary has neither scores nor merges")
	}
	for i := range m.byteID {
		m.byteID[i] = -1
	}
	if v.UNK.OK {
		m.unk = v.UNK.ID
	}
	// Reserved pieces (control, unknown, byte) take precedence in lookup, as
	// in SentencePiece's PieceToId; among duplicates the first id wins.
	var user []int
	for pass := 0; pass < 2; pass++ {
		for id, s := range v.Tokens {
			ty := types[id]
			reserved := ty == TypeControl || ty == TypeUnknown || ty == TypeByte
			if reserved != (pass == 0) {
				continue
			}
			if _, dup := m.lookup[s]; !dup {
				m.lookup[s] = int32(id)
			}
			switch ty {
			case TypeUnknown:
				if m.unk < 0 {
					m.unk = id
				}
			case TypeByte:
				if b, ok := parseByteToken(s); ok && m.byteID[b] < 0 {
					m.byteID[b] = int32(id)
				}
			case TypeUserDefined:
				if s != "" {
					user = append(user, id)
				}
				fallthrough
			default: // normal, unused, undefined
				if ty == TypeUnused {
					m.hasUnused = true
				}
				if _, dup := m.merge[s]; !dup {
					m.merge[s] = int32(id)
				}
			}
		}
	}
	m.user = newPrefixSet(v.Tokens, user)
	if o.byteFallback != nil {
		m.byteFallback = *o.byteFallback
	} else {
		for _, id := range m.byteID {
			if id >= 0 {
				m.byteFallback = true
				break
			}
		}
	}
	unkSurface := o.unkSurface
	if unkSurface == "" {
		unkSurface = defaultUnkSurface
	}
	m.wordSplit = m.canSplitWords()
	m.cache = &spWordCache{}
	m.pieces = make([][]byte, n)
	for id, s := range v.Tokens {
		switch types[id] {
		case TypeControl:
			// invisible
		case TypeUnknown:
			m.pieces[id] = []byte(unkSurface)
		case TypeByte:
			if b, ok := parseByteToken(s); ok {
				m.pieces[id] = []byte{b}
			} else {
				m.pieces[id] = []byte(strings.ReplaceAll(s, spaceSymbol, " "))
			}
		default:
			m.pieces[id] = []byte(strings.ReplaceAll(s, spaceSymbol, " "))
		}
	}
	return m, nil
}

// scoresFromMerges gives a merges-only vocabulary (a Hugging Face BPE
// tokenizer.json of SentencePiece kind) scores under which score-ordered
// merging follows the merge ranks: the result of merge r scores -r. Pieces
// no merge produces score below every merge result.
func scoresFromMerges(v *Vocab) ([]float32, error) {
	ids := make(map[string]int, len(v.Tokens))
	for id, s := range v.Tokens {
		if _, dup := ids[s]; !dup {
			ids[s] = id
		}
	}
	scores := make([]float32, len(v.Tokens))
	set := make([]bool, len(v.Tokens))
	for r, mg := range v.Merges {
		a, b, ok := strings.Cut(mg, " ")
		if !ok {
			return nil, fmt.Errorf("tokenizer: merge %d %q is not \"left right\"", r, mg)
		}
		if id, ok := ids[a+b]; ok && !set[id] {
			scores[id], set[id] = -float32(r), true
		}
	}
	low := -float32(len(v.Merges)) - 1
	for id := range scores {
		if !set[id] {
			scores[id] = low
		}
	}
	return scores, nil
}

func (m *spModel) piece(id int) []byte {
	if id < 0 || id >= len(m.pieces) {
		return nil
	}
	return m.pieces[id]
}

// stripsLeadingSpace: SentencePiece drops the dummy-prefix space from the
// first decoded piece when it is an ordinary piece (not a byte, unknown or
// control token).
func (m *spModel) stripsLeadingSpace(id int) bool {
	if !m.addPrefix && !m.removeExtra {
		return false
	}
	switch m.types[id] {
	case TypeControl, TypeUnknown, TypeByte:
		return false
	}
	return true
}

// normalize returns text as SentencePiece's identity normaliser leaves it.
func (m *spModel) normalize(dst []byte, text string, first bool) []byte {
	if m.removeExtra {
		text = strings.TrimLeft(text, " ")
	}
	if text == "" {
		return dst
	}
	space := " "
	if m.escape {
		space = spaceSymbol
	}
	if first && m.addPrefix {
		dst = append(dst, space...)
	}
	prevSpace := m.removeExtra
	for i := 0; i < len(text); {
		// User-defined pieces pass through untouched.
		if !m.user.empty() {
			if _, n := m.user.match(text[i:]); n > 0 {
				dst = append(dst, text[i:i+n]...)
				i += n
				prevSpace = false
				continue
			}
		}
		c := text[i]
		switch {
		case c == ' ':
			if !(m.removeExtra && prevSpace) {
				dst = append(dst, space...)
			}
			prevSpace = m.removeExtra
			i++
			continue
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, n := utf8.DecodeRuneInString(text[i:])
			if r == utf8.RuneError && n == 1 {
				dst = append(dst, "\uFFFD"...)
			} else {
				dst = append(dst, text[i:i+n]...)
			}
			i += n
		}
		prevSpace = false
	}
	if m.removeExtra {
		for len(dst) >= len(space) && string(dst[len(dst)-len(space):]) == space {
			dst = dst[:len(dst)-len(space)]
		}
	}
	return dst
}

// spSymbol is one symbol during merging: the bytes norm[start:end].
type spSymbol struct {
	start, end int32
	prev, next int32 // neighbours, -1 at the ends
	frozen     bool
}

// spPair is a candidate merge of symbols left and right (adjacent when
// pushed) into a piece of size bytes.
type spPair struct {
	score       float32
	left, right int32
	size        int32
}

// before orders the heap: higher score first, then the leftmost pair.
func (a spPair) before(b spPair) bool {
	return a.score > b.score || (a.score == b.score && a.left < b.left)
}

// encode appends the SentencePiece ids of text.
func (m *spModel) encode(dst []int, text string, first bool) []int {
	norm := string(m.normalize(make([]byte, 0, len(text)+len(text)/4+3), text, first))
	if len(norm) == 0 {
		return dst
	}
	if !m.wordSplit {
		return m.encodeNorm(dst, norm)
	}
	// Words are independent (see wordSplit): encode each, through the cache.
	for len(norm) > 0 {
		n := wordEnd(norm)
		w := norm[:n]
		norm = norm[n:]
		if ids, ok := m.cache.get(w); ok {
			dst = append(dst, ids...)
			continue
		}
		start := len(dst)
		dst = m.encodeNorm(dst, w)
		m.cache.put(w, dst[start:])
	}
	return dst
}

// wordEnd returns the length of the first word of s: up to the next "▁"
// that follows a character other than "▁".
func wordEnd(s string) int {
	i := 0
	for strings.HasPrefix(s[i:], spaceSymbol) {
		i += len(spaceSymbol)
	}
	if j := strings.Index(s[i:], spaceSymbol); j >= 0 {
		return i + j
	}
	return len(s)
}

// canSplitWords reports whether merging never crosses a word boundary
// (wordEnd): no mergeable piece holds "▁" after another character, so no
// merge can join the end of one word to the "▁" starting the next. Then
// words can be encoded separately and cached. User-defined and unused
// pieces, and unescaped spaces, take the general path.
func (m *spModel) canSplitWords() bool {
	if !m.user.empty() || m.hasUnused || !m.escape {
		return false
	}
	if _, ok := m.merge[spaceSymbol]; !ok {
		return false
	}
	for s := range m.merge {
		t := strings.TrimLeft(s, spaceSymbol)
		if strings.Contains(t, spaceSymbol) {
			return false
		}
	}
	return true
}

// spWordCache maps a normalised word to its ids. It is bounded: once full
// it stops growing (the frequent words of a language arrive early).
type spWordCache struct {
	mu sync.RWMutex
	m  map[string][]int
}

const spWordCacheMax = 1 << 16

func (c *spWordCache) get(w string) ([]int, bool) {
	c.mu.RLock()
	ids, ok := c.m[w]
	c.mu.RUnlock()
	return ids, ok
}

func (c *spWordCache) put(w string, ids []int) {
	if len(w) > 64 {
		return
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[string][]int, 1024)
	}
	if len(c.m) < spWordCacheMax {
		c.m[strings.Clone(w)] = slices.Clone(ids)
	}
	c.mu.Unlock()
}

// encodeNorm appends the ids of normalised text norm (the general
// algorithm).
func (m *spModel) encodeNorm(dst []int, norm string) []int {
	if norm == "" {
		return dst
	}
	// Split into characters (user-defined pieces whole, frozen).
	syms := make([]spSymbol, 0, len(norm))
	for i := 0; i < len(norm); {
		n, frozen := 0, false
		if !m.user.empty() {
			if _, k := m.user.match(norm[i:]); k > 0 {
				n, frozen = k, true
			}
		}
		if n == 0 {
			n = utf8CharLen(norm[i])
			if i+n > len(norm) {
				n = len(norm) - i
			}
		}
		k := int32(len(syms))
		syms = append(syms, spSymbol{start: int32(i), end: int32(i + n), prev: k - 1, next: k + 1, frozen: frozen})
		i += n
	}
	syms[len(syms)-1].next = -1

	var revMerge map[string][2]string // unused piece -> the pair that formed it
	heap := make(mergeQueue[spPair], 0, len(syms))
	addPair := func(l, r int32) {
		if l < 0 || r < 0 || syms[l].frozen || syms[r].frozen {
			return
		}
		piece := norm[syms[l].start:syms[r].end]
		id, ok := m.merge[piece]
		if !ok {
			return
		}
		heap.push(spPair{score: m.scores[id], left: l, right: r, size: int32(len(piece))})
		if m.hasUnused && m.types[id] == TypeUnused {
			if revMerge == nil {
				revMerge = map[string][2]string{}
			}
			revMerge[piece] = [2]string{norm[syms[l].start:syms[l].end], norm[syms[r].start:syms[r].end]}
		}
	}
	for i := int32(1); i < int32(len(syms)); i++ {
		addPair(i-1, i)
	}
	for len(heap) > 0 {
		p := heap.pop()
		l, r := &syms[p.left], &syms[p.right]
		if l.end == l.start || r.end == r.start || (l.end-l.start)+(r.end-r.start) != p.size {
			continue // stale
		}
		l.end = r.end
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = p.left
		}
		r.start, r.end = 0, 0
		addPair(l.prev, p.left)
		addPair(p.left, l.next)
	}

	prevUnk := false
	for i := int32(0); i != -1; i = syms[i].next {
		s := norm[syms[i].start:syms[i].end]
		dst, prevUnk = m.emit(dst, s, revMerge, prevUnk)
	}
	return dst
}

// emit appends the ids of final symbol s.
func (m *spModel) emit(dst []int, s string, revMerge map[string][2]string, prevUnk bool) ([]int, bool) {
	id32, ok := m.lookup[s]
	id := int(id32)
	if ok && m.types[id] == TypeUnused {
		if pr, ok := revMerge[s]; ok {
			dst, prevUnk = m.emit(dst, pr[0], revMerge, prevUnk)
			return m.emit(dst, pr[1], revMerge, prevUnk)
		}
	}
	if ok && id != m.unk {
		return append(dst, id), false
	}
	if m.byteFallback {
		for i := 0; i < len(s); i++ {
			b := m.byteID[s[i]]
			switch {
			case b >= 0:
				dst = append(dst, int(b))
			case m.unk >= 0:
				dst = append(dst, m.unk)
			}
		}
		return dst, true
	}
	if m.unk >= 0 && !prevUnk {
		dst = append(dst, m.unk)
	}
	return dst, true
}

// utf8CharLen is the length of the UTF-8 sequence lead byte c starts
// (SentencePiece's OneCharLen; 1 for a stray continuation byte).
func utf8CharLen(c byte) int {
	switch {
	case c < 0xC0:
		return 1
	case c < 0xE0:
		return 2
	case c < 0xF0:
		return 3
	default:
		return 4
	}
}
