package tokenizer

// Byte-level BPE (GPT-2, Llama-3, Qwen, SmolLM).
//
// Text is first cut into pre-tokens by a hand-written matcher that behaves
// like the model's split regex (pretok.go). Each pre-token is then encoded as
// bytes: the vocabulary stores every byte 0..255 as one token, and BPE
// repeatedly merges the adjacent pair of symbols (a, b) whose merge rule
// "a b" has the lowest rank, leftmost pair first on ties, until no adjacent
// pair has a rule. Because every token is a byte string and the initial
// symbols are single bytes, concatenating the pieces of the ids gives back
// exactly the bytes that were encoded: decode(encode(s)) == s for any input
// (after the optional NFC normalisation).
//
// Vocabularies store byte-level tokens in GPT-2's printable alphabet: each
// byte maps to one code point (printable Latin-1 bytes to themselves, the
// others to U+0100 + n in order), so " hello" is stored as "Ġhello". The
// model works on raw bytes internally: tokens are unmapped once at load.
//
// Gemma 4's tokenizer (GGUF tokenizer.ggml.model "gemma4") is the same
// merge algorithm over a SentencePiece-style vocabulary: tokens are plain
// UTF-8 with "▁" for a space, and bytes without a token of their own are
// spelt with "<0xNN>" byte tokens. llama.cpp runs it as its BPE tokenizer
// without the byte mapping (rawText here): spaces become "▁", the text is
// cut into lines and runs of newlines (a run that is itself a token is
// emitted whole), each piece starts as one symbol per UTF-8 character, the
// ranked merges apply, and a character that is no token becomes the byte
// tokens of its UTF-8 bytes. Invalid UTF-8 bytes are first replaced by
// U+FFFD, one per byte, as llama.cpp's decoder does.

import (
	"errors"
	"fmt"
	"hash/maphash"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"unicode/utf8"
)

// byteToRune maps a byte to its GPT-2 printable code point; runeToByte is
// its inverse over the 256 code points used (-1 elsewhere).
var (
	byteToRune [256]rune
	runeToByte [324]int16 // code points 0..323 cover the whole alphabet
)

func init() {
	for i := range runeToByte {
		runeToByte[i] = -1
	}
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = rune(256 + n)
			n++
		}
		runeToByte[byteToRune[b]] = int16(b)
	}
}

// byteLevelDecode unmaps a token stored in GPT-2's alphabet to its bytes,
// appending to dst. ok is false if the text holds a code point outside the
// alphabet; those characters are then copied as UTF-8.
func byteLevelDecode(dst []byte, tok string) ([]byte, bool) {
	ok := true
	for _, r := range tok {
		if r >= 0 && int(r) < len(runeToByte) && runeToByte[r] >= 0 {
			dst = append(dst, byte(runeToByte[r]))
		} else {
			ok = false
			dst = utf8.AppendRune(dst, r)
		}
	}
	return dst, ok
}

// byteLevelEncode maps raw bytes to GPT-2's alphabet (the form vocabularies
// store).
func byteLevelEncode(b []byte) string {
	var sb strings.Builder
	for _, c := range b {
		sb.WriteRune(byteToRune[c])
	}
	return sb.String()
}

// byteLevel is the byte-level BPE model.
type byteLevel struct {
	pre          *preTokenizer
	nfc          bool
	ignoreMerges bool
	rawText      bool     // Gemma 4: tokens are UTF-8 text with "▁" spaces, byteID holds "<0xNN>" tokens
	pieces       [][]byte // (vocab) rawText only: the bytes each token decodes to
	unk          int32    // id for a byte with no token (never in sane vocabularies), -1: drop it

	byteID   [256]int32 // id of the single-byte token, -1 if missing
	allBytes bool       // every byte has a token or maps to unk: no input byte is dropped
	ids      tokenTable // raw bytes -> id, normal tokens only
	merges   pairTable  // pairKey(a, b) -> rank<<32 | merged id
	raw      []byte     // bytes of all tokens, back to back
	off      []int32    // (vocab+1) token id's bytes are raw[off[id]:off[id+1]]

	cache wordCache
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// newByteLevel builds a byte-level BPE model (GPT-2, Llama-3, Qwen) from v,
// or with rawText the Gemma 4 model (v.Pre is then ignored).
func newByteLevel(v *Vocab, rawText bool) (model, error) {
	preName := v.Pre
	if rawText {
		preName = "gemma4"
	}
	pre, err := newPreTokenizerRules(preName, v.LlamaCppRules)
	if err != nil {
		return nil, err
	}
	m := &byteLevel{
		pre:          pre,
		ignoreMerges: v.IgnoreMerges || pre.ignoreMerges, // llama.cpp turns it on for Llama-3 GGUFs
		rawText:      rawText,
		unk:          -1,
	}
	if rawText {
		m.pieces = make([][]byte, len(v.Tokens))
	}
	switch v.Normalizer {
	case "":
	case "NFC":
		m.nfc = true
	default:
		return nil, fmt.Errorf("tokenizer: unsupported normalizer %q for byte-level BPE", v.Normalizer)
	}
	if v.UNK.OK && v.UNK.ID >= 0 && v.UNK.ID < len(v.Tokens) {
		m.unk = int32(v.UNK.ID)
	}
	if len(v.Tokens) >= 1<<31-1 {
		return nil, fmt.Errorf("tokenizer: vocabulary too large (%d tokens)", len(v.Tokens))
	}
	// Unmap every token into one arena: raw[off[id]:off[id+1]] are the
	// bytes of id. Control and user-defined tokens are stored as plain text.
	off := make([]int32, len(v.Tokens)+1)
	raw := make([]byte, 0, len(v.Tokens)*8)
	usable := make([]bool, len(v.Tokens)) // normal tokens BPE can produce
	for id, tok := range v.Tokens {
		typ := TypeNormal
		if v.Types != nil && id < len(v.Types) {
			typ = v.Types[id]
		}
		n0 := len(raw)
		switch {
		case rawText:
			raw = append(raw, tok...) // control and user-defined tokens decode to this text (below)
			switch typ {
			case TypeControl, TypeUserDefined, TypeUnknown:
			case TypeByte:
				if b, ok := parseByteToken(tok); ok {
					m.pieces[id] = []byte{b}
				}
			default:
				m.pieces[id] = []byte(strings.ReplaceAll(tok, "▁", " "))
				usable[id] = len(raw) > n0 && typ != TypeUnused
			}
		case typ == TypeControl || typ == TypeUserDefined:
			raw = append(raw, tok...)
		default:
			var ok bool
			raw, ok = byteLevelDecode(raw, tok)
			usable[id] = ok && len(raw) > n0 && typ != TypeUnused
		}
		if len(raw) >= 1<<31-1 {
			return nil, errors.New("tokenizer: vocabulary text too large")
		}
		off[id+1] = int32(len(raw))
	}
	m.raw, m.off = raw, off
	for id, p := range m.pieces {
		if p == nil {
			m.pieces[id] = raw[off[id]:off[id+1]:off[id+1]]
		}
	}
	nUsable := 0
	for _, u := range usable {
		if u {
			nUsable++
		}
	}
	m.ids = newTokenTable(nUsable, raw, off)
	for id := range v.Tokens {
		if usable[id] && !m.ids.insertIfAbsent(int32(id)) {
			usable[id] = false // same bytes as a lower id, which wins
		}
	}
	m.allBytes = true
	for b := range m.byteID {
		m.byteID[b] = -1
		if rawText {
			continue
		}
		if id, ok := m.ids.find([]byte{byte(b)}); ok {
			m.byteID[b] = id
		} else if m.unk < 0 {
			m.allBytes = false // this byte is dropped from the input
		}
	}
	if rawText {
		for id, tok := range v.Tokens {
			if b, ok := parseByteToken(tok); ok && (v.Types == nil || v.Types[id] == TypeByte) && m.byteID[b] < 0 {
				m.byteID[b] = int32(id)
			}
		}
		for _, id := range m.byteID {
			if id < 0 && m.unk < 0 {
				m.allBytes = false
			}
		}
	}
	// Merges. Vocabularies list merges in the order of the tokens they
	// make, so the merged id is first guessed as the previous one or the
	// next and checked against the arena; the table is the fallback. Walking
	// forwards, a repeated rule keeps its first (lowest) rank.
	m.merges = newPairTable(len(v.Merges))
	var mb mergeBatch
	prevC := int32(-1)
	for base := 0; base < len(v.Merges); base += len(mb.span) {
		n := min(len(mb.span), len(v.Merges)-base)
		if err := mb.load(v.Merges[base:base+n], rawText); err != nil {
			return nil, fmt.Errorf("tokenizer: merge %d: %w", base, err)
		}
		mb.warm(&m.ids)
		for j := 0; j < n; j++ {
			sp := mb.span[j]
			if sp[0] < 0 {
				continue // holds a character outside the byte alphabet
			}
			ab := mb.buf[sp[0]:sp[2]]
			a, okA := m.ids.findHash(ab[:sp[1]-sp[0]], mb.ha[j])
			b, okB := m.ids.findHash(ab[sp[1]-sp[0]:], mb.hb[j])
			if !okA || !okB {
				continue // rule over tokens not in the vocabulary: never applies
			}
			c := int32(-1)
			switch {
			case prevC >= 0 && m.isToken(prevC, ab, usable):
				c = prevC
			case prevC+1 < int32(len(v.Tokens)) && m.isToken(prevC+1, ab, usable):
				c = prevC + 1
			default:
				id, ok := m.ids.find(ab)
				if !ok {
					continue
				}
				c = id
			}
			prevC = c
			mb.keys = append(mb.keys, pairKey(a, b))
			mb.vals = append(mb.vals, uint64(base+j)<<32|uint64(uint32(c)))
		}
		m.merges.insertBatch(mb.keys, mb.vals)
		mb.keys, mb.vals = mb.keys[:0], mb.vals[:0]
	}
	m.cache.init()
	return m, nil
}

// mergeBatch decodes merge rules a batch at a time so that the table
// lookups of a whole batch can be started together: the vocabulary tables
// are far larger than the CPU caches, and a lookup is mostly waiting for
// memory.
type mergeBatch struct {
	buf    []byte     // decoded rules back to back
	span   [64][3]int // start of left, start of right, end in buf; start -1 if unusable
	ha, hb [64]uint64 // hashes of left and right
	n      int
	keys   []uint64 // resolved rules: pairKey(left, right)
	vals   []uint64 // and rank<<32 | merged id
}

// load decodes rules "left right" into the batch (rawText: the sides are
// plain text, split at the first space after the first byte, as llama.cpp
// does).
func (mb *mergeBatch) load(rules []string, rawText bool) error {
	mb.buf, mb.n = mb.buf[:0], len(rules)
	for j, r := range rules {
		sp := strings.IndexByte(r, ' ')
		if rawText && len(r) > 1 {
			if sp = strings.IndexByte(r[1:], ' '); sp >= 0 {
				sp++
			}
		}
		if sp < 0 {
			return fmt.Errorf("%q is not \"left right\"", r)
		}
		start := len(mb.buf)
		okA, okB := true, true
		if rawText {
			mb.buf = append(mb.buf, r[:sp]...)
		} else {
			mb.buf, okA = byteLevelDecode(mb.buf, r[:sp])
		}
		mid := len(mb.buf)
		if rawText {
			mb.buf = append(mb.buf, r[sp+1:]...)
		} else {
			mb.buf, okB = byteLevelDecode(mb.buf, r[sp+1:])
		}
		mb.span[j] = [3]int{start, mid, len(mb.buf)}
		if !okA || !okB {
			mb.span[j][0] = -1
		}
	}
	return nil
}

// warm hashes both sides of every rule and touches the table slots and
// arena bytes the lookups will read, with no dependency between rules, so
// the memory accesses overlap.
func (mb *mergeBatch) warm(t *tokenTable) {
	var sink uint64
	mask := uint64(len(t.slots) - 1)
	for j := 0; j < mb.n; j++ {
		sp := mb.span[j]
		if sp[0] < 0 {
			continue
		}
		mb.ha[j] = maphash.Bytes(t.seed, mb.buf[sp[0]:sp[1]])
		mb.hb[j] = maphash.Bytes(t.seed, mb.buf[sp[1]:sp[2]])
		sink += t.slots[mb.ha[j]&mask] + t.slots[mb.hb[j]&mask]
	}
	for j := 0; j < mb.n; j++ {
		if mb.span[j][0] < 0 {
			continue
		}
		for _, h := range [2]uint64{mb.ha[j], mb.hb[j]} {
			if s := t.slots[h&mask]; s != 0 {
				sink += uint64(t.off[uint32(s)-1])
			}
		}
	}
	for j := 0; j < mb.n; j++ {
		if mb.span[j][0] < 0 {
			continue
		}
		for _, h := range [2]uint64{mb.ha[j], mb.hb[j]} {
			if s := t.slots[h&mask]; s != 0 {
				if o := t.off[uint32(s)-1]; int(o) < len(t.raw) {
					sink += uint64(t.raw[o])
				}
			}
		}
	}
	runtime.KeepAlive(sink)
}

// isToken reports whether id is the usable token whose bytes are b.
func (m *byteLevel) isToken(id int32, b []byte, usable []bool) bool {
	return usable[id] && int(m.off[id+1]-m.off[id]) == len(b) && string(m.raw[m.off[id]:m.off[id+1]]) == string(b)
}

// tokenTable is an open-addressing hash table from token bytes to ids,
// whose keys live in the model's arena (raw, off). Each slot packs the
// high 32 bits of the key's hash with id+1 (0: empty), so a probe rarely
// needs to look at the arena.
type tokenTable struct {
	slots []uint64 // len is a power of two, at most half full
	seed  maphash.Seed
	raw   []byte
	off   []int32
}

func newTokenTable(n int, raw []byte, off []int32) tokenTable {
	size := 16
	for size < 2*n {
		size *= 2
	}
	return tokenTable{slots: make([]uint64, size), seed: maphash.MakeSeed(), raw: raw, off: off}
}

func (t *tokenTable) key(id int32) []byte { return t.raw[t.off[id]:t.off[id+1]] }

// find returns the id whose bytes are b.
func (t *tokenTable) find(b []byte) (int32, bool) {
	if len(t.slots) == 0 {
		return 0, false
	}
	return t.findHash(b, maphash.Bytes(t.seed, b))
}

// findHash is find given b's hash.
func (t *tokenTable) findHash(b []byte, h uint64) (int32, bool) {
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			return 0, false
		}
		if s>>32 == h>>32 {
			if id := int32(uint32(s)) - 1; string(t.key(id)) == string(b) {
				return id, true
			}
		}
	}
}

// findStringHash is find for a string key whose hash is h.
func (t *tokenTable) findStringHash(w string, h uint64) (int32, bool) {
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			return 0, false
		}
		if s>>32 == h>>32 {
			if id := int32(uint32(s)) - 1; string(t.key(id)) == w {
				return id, true
			}
		}
	}
}

// insertIfAbsent adds id under its bytes; false if those bytes are taken.
func (t *tokenTable) insertIfAbsent(id int32) bool {
	b := t.key(id)
	h := maphash.Bytes(t.seed, b)
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			t.slots[i] = h>>32<<32 | uint64(uint32(id+1))
			return true
		}
		if s>>32 == h>>32 && string(t.key(int32(uint32(s))-1)) == string(b) {
			return false
		}
	}
}

// pairTable is an open-addressing hash table from pair keys to
// rank<<32|merged id (noMerge when absent), probed linearly from a
// Fibonacci hash: one probe usually touches one cache line, and it holds
// no pointers for the garbage collector to scan.
type pairTable struct {
	slots []pairSlot // len is a power of two, at most 2/3 full
	shift uint
}

type pairSlot struct{ key, val uint64 }

const emptyKey = ^uint64(0) // pairKey(-1, -1): never a real pair

func newPairTable(n int) pairTable {
	size, shift := 16, uint(64-4)
	for size < n+n/2+1 { // load factor at most 2/3
		size *= 2
		shift--
	}
	t := pairTable{slots: make([]pairSlot, size), shift: shift}
	for i := range t.slots {
		t.slots[i].key = emptyKey
	}
	return t
}

func (t *pairTable) home(k uint64) uint64 { return (k * 0x9E3779B97F4A7C15) >> t.shift }

func (t *pairTable) get(k uint64) uint64 {
	mask := uint64(len(t.slots) - 1)
	for i := t.home(k); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.key == k {
			return s.val
		}
		if s.key == emptyKey {
			return noMerge
		}
	}
}

// insertBatch inserts keys[i] -> vals[i] in order (first wins), touching
// all home slots first so that their cache misses overlap.
func (t *pairTable) insertBatch(keys, vals []uint64) {
	var sink uint64
	for _, k := range keys {
		sink += t.slots[t.home(k)].key
	}
	runtime.KeepAlive(sink)
	for i, k := range keys {
		t.insertIfAbsent(k, vals[i])
	}
}

func (t *pairTable) insertIfAbsent(k, v uint64) {
	mask := uint64(len(t.slots) - 1)
	for i := t.home(k); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.key == k {
			return
		}
		if s.key == emptyKey {
			s.key, s.val = k, v
			return
		}
	}
}

// piece returns the bytes token id decodes to.
func (m *byteLevel) piece(id int) []byte {
	if id < 0 || id+1 >= len(m.off) {
		return nil
	}
	if m.rawText {
		return m.pieces[id]
	}
	a, b := m.off[id], m.off[id+1]
	return m.raw[a:b:b]
}

// encode appends the ids of text (which holds no special tokens).
func (m *byteLevel) encode(dst []int, text string, first bool) []int {
	if m.nfc {
		text = normalizeNFC(text)
	}
	if m.rawText {
		text = strings.ReplaceAll(replaceInvalidUTF8(text), " ", "▁")
	}
	var scratch bpeScratch
	m.pre.split(text, func(w string) {
		dst = m.encodeWord(dst, w, &scratch)
	})
	return dst
}

// maxCachedWord bounds the pre-tokens kept in the word cache (bytes).
const maxCachedWord = 48

// encodeWord appends the ids of one pre-token.
func (m *byteLevel) encodeWord(dst []int, w string, s *bpeScratch) []int {
	if len(w) == 1 && !m.rawText {
		return m.appendSym(dst, m.byteID[w[0]])
	}
	cacheable := len(w) <= maxCachedWord
	var h uint64
	if cacheable || m.ignoreMerges {
		h = maphash.String(m.ids.seed, w)
	}
	syms, hit := []int32(nil), false
	if cacheable {
		syms, hit = m.cache.get(w, h)
	}
	if !hit {
		if id, ok := m.wholeWord(w, h); ok {
			syms = append(s.sym[:0], id)
		} else {
			syms = m.bpe(w, s)
		}
		if cacheable {
			m.cache.put(w, h, syms)
		}
	}
	for _, id := range syms {
		if id <= unknownChar {
			// rawText: a character with no token, as its byte tokens.
			off := int(unknownChar - id)
			for _, c := range []byte(w[off : off+utf8LeadLen(w, off)]) {
				dst = m.appendSym(dst, m.byteID[c])
			}
			continue
		}
		dst = m.appendSym(dst, id)
	}
	return dst
}

// unknownChar - off is the symbol of a character at byte off of its word
// that has no token (rawText only); such a symbol takes part in no merge.
const unknownChar = -2

// utf8LeadLen is the length llama.cpp gives the character at s[i]: by its
// lead byte, cut at the end of s.
func utf8LeadLen(s string, i int) int {
	n := 1
	switch c := s[i]; {
	case c >= 0xF0:
		n = 4
	case c >= 0xE0:
		n = 3
	case c >= 0xC0:
		n = 2
	}
	return min(n, len(s)-i)
}

// initSymbols appends the initial symbols of w to sym: its bytes, or with
// rawText its characters (unknownChar-offset for one with no token).
func (m *byteLevel) initSymbols(w string, sym []int32) []int32 {
	if !m.rawText {
		for i := 0; i < len(w); i++ {
			sym = append(sym, m.byteID[w[i]])
		}
		return sym
	}
	for i := 0; i < len(w); {
		n := utf8LeadLen(w, i)
		id, ok := m.ids.findStringHash(w[i:i+n], maphash.String(m.ids.seed, w[i:i+n]))
		if !ok {
			id = unknownChar - int32(i)
		}
		sym = append(sym, id)
		i += n
	}
	return sym
}

// replaceInvalidUTF8 returns s with each byte that does not start a valid
// UTF-8 sequence replaced by U+FFFD.
func replaceInvalidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && w == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+w])
		}
		i += w
	}
	return b.String()
}

// wholeWord returns the id of w itself under ignore_merges (Llama-3: a
// pre-token that is a token is emitted whole, even if merges would not
// build it).
func (m *byteLevel) wholeWord(w string, h uint64) (int32, bool) {
	if m.rawText && strings.Trim(w, "\n") == "" {
		// Gemma 4: a run of newlines that is a token (llama.cpp's fix).
		return m.ids.findStringHash(w, maphash.String(m.ids.seed, w))
	}
	if !m.ignoreMerges {
		return 0, false
	}
	return m.ids.findStringHash(w, h)
}

func (m *byteLevel) appendSym(dst []int, id int32) []int {
	if id < 0 {
		if m.unk < 0 {
			return dst
		}
		id = m.unk
	}
	return append(dst, int(id))
}

// bpeScratch holds reusable buffers of one encode call.
type bpeScratch struct {
	sym  []int32  // (n) current symbols
	rank []uint64 // (n) rank<<32|merged of pair (sym[i], sym[i+1]); noMerge if none
	next []int32  // (n) linked list, heap path
	prev []int32
	pq   []int32 // heap of positions (heap path; rank holds the keys)
	slot []int32 // (n) position -> index in pq
}

const noMerge = ^uint64(0)

// smallWord is the size up to which the quadratic scan beats the heap.
const smallWord = 64

// bpe returns the symbol ids of w after all merges. The result aliases s.
func (m *byteLevel) bpe(w string, s *bpeScratch) []int32 {
	if len(w) > smallWord {
		return m.bpeHeap(w, s)
	}
	return m.bpeScan(w, s)
}

// bpeScan is the merge loop for short pre-tokens: rank[i] caches the rule
// of pair (sym[i], sym[i+1]), a linear scan finds the best, and only the two
// pairs next to a merge are looked up again.
func (m *byteLevel) bpeScan(w string, s *bpeScratch) []int32 {
	sym := m.initSymbols(w, s.sym[:0])
	rank := s.rank[:0]
	for i := 0; i+1 < len(sym); i++ {
		rank = append(rank, m.pairRank(sym[i], sym[i+1]))
	}
	for len(sym) > 1 {
		best := 0
		for i := 1; i < len(rank); i++ {
			if rank[i] < rank[best] {
				best = i
			}
		}
		if rank[best] == noMerge {
			break
		}
		sym[best] = int32(uint32(rank[best]))
		copy(sym[best+1:], sym[best+2:])
		sym = sym[:len(sym)-1]
		copy(rank[best:], rank[best+1:])
		rank = rank[:len(rank)-1]
		if best > 0 {
			rank[best-1] = m.pairRank(sym[best-1], sym[best])
		}
		if best < len(rank) {
			rank[best] = m.pairRank(sym[best], sym[best+1])
		}
	}
	s.sym, s.rank = sym, rank
	return sym
}

func (m *byteLevel) pairRank(a, b int32) uint64 {
	if a < 0 || b < 0 {
		return noMerge
	}
	return m.merges.get(pairKey(a, b))
}

// bpeHeap is the O(n log n) merge loop for long pre-tokens: symbols form a
// linked list over positions, and an indexed heap holds, for each live
// position i, the rule of pair (sym[i], sym[next[i]]), kept up to date as
// merges change the neighbours. The heap orders by (rank, position), the
// order of the quadratic scan, so both give the same ids. Memory is a fixed
// 28 bytes per input byte (a 4 MB word: 112 MB, freed after the call).
func (m *byteLevel) bpeHeap(w string, s *bpeScratch) []int32 {
	s.sym = m.initSymbols(w, s.sym[:0])
	n := len(s.sym)
	s.next = growInt32(s.next, n)
	s.prev = growInt32(s.prev, n)
	s.slot = growInt32(s.slot, n)
	if cap(s.rank) < n {
		s.rank = make([]uint64, n)
	}
	if cap(s.pq) < n {
		s.pq = make([]int32, 0, n)
	}
	sym, next, prev := s.sym[:n], s.next[:n], s.prev[:n]
	h := posHeap{key: s.rank[:n], pq: s.pq[:0], slot: s.slot[:n]}
	for i := 0; i < n; i++ {
		next[i] = int32(i + 1)
		prev[i] = int32(i - 1)
		h.slot[i] = -1
	}
	next[n-1] = -1
	for i := 0; i+1 < n; i++ {
		h.set(int32(i), m.pairRank(sym[i], sym[i+1]))
	}
	for len(h.pq) > 0 {
		i := h.pop()
		j := next[i]
		sym[i] = int32(uint32(h.key[i]))
		h.set(j, noMerge) // j joins i
		nj := next[j]
		next[i] = nj
		if nj >= 0 {
			prev[nj] = i
			h.set(i, m.pairRank(sym[i], sym[nj]))
		}
		if p := prev[i]; p >= 0 {
			h.set(p, m.pairRank(sym[p], sym[i]))
		}
	}
	s.pq = h.pq
	out := sym[:0]
	for i := int32(0); i >= 0; i = next[i] {
		out = append(out, sym[i]) // i only grows, so this compacts in place
	}
	return out
}

func growInt32(b []int32, n int) []int32 {
	if cap(b) < n {
		return make([]int32, n)
	}
	return b[:n]
}

// wordCache remembers the ids of recently seen pre-tokens. It is a
// direct-mapped table of immutable entries behind atomic pointers: lookups
// take no lock, a colliding insert simply replaces the older entry, and its
// size is fixed, so it is bounded and safe for concurrent use.
type wordCache struct {
	slots []atomic.Pointer[cacheEntry] // (wordCacheSize)
}

type cacheEntry struct {
	word string
	ids  []int32
}

const wordCacheSize = 1 << 16

func (c *wordCache) init() { c.slots = make([]atomic.Pointer[cacheEntry], wordCacheSize) }

// get returns the ids of w, whose hash is h.
func (c *wordCache) get(w string, h uint64) ([]int32, bool) {
	if e := c.slots[h&(wordCacheSize-1)].Load(); e != nil && e.word == w {
		return e.ids, true
	}
	return nil, false
}

// put stores a copy of w and ids under hash h.
func (c *wordCache) put(w string, h uint64, ids []int32) {
	e := &cacheEntry{word: strings.Clone(w), ids: slices.Clone(ids)} // w may point into a large input
	c.slots[h&(wordCacheSize-1)].Store(e)
}
