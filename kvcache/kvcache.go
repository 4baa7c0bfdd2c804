// Package kvcache stores the attention keys and values of every sequence
// being generated, in fixed-size blocks (a paged KV cache), and keeps the
// full blocks of finished sequences around so a later prompt that starts
// with the same tokens reuses them (prefix caching).
//
// # Paging
//
// A transformer layer attends from each new token to the keys and values of
// all earlier positions of its sequence. Instead of one contiguous
// (ctx, kv_dim) buffer per sequence, the cache owns a pool of NumBlocks
// blocks of BlockSize positions; each sequence holds a block table mapping
// its position p to block Blocks[p/BlockSize], row p%BlockSize. A sequence
// of L positions needs ceil(L/BlockSize) blocks, so at most BlockSize-1
// rows per sequence are wasted, and the pool serves as many sequences as
// their summed block counts allow.
//
// # Ref counts and prefix caching
//
// Every block is in exactly one of three states:
//
//	used:   ref > 0, held by ref block tables (sequences sharing a prefix)
//	cached: ref = 0 but registered under a hash: its rows hold the K/V of a
//	        known token block; it sits in an LRU list and may be evicted
//	free:   ref = 0, not registered, on the free stack
//
// A block is registered once it is full and its tokens are known (Commit):
// its hash chains the parent block's hash with its own BlockSize token ids,
//
//	h_0 = H(0, tokens[0:B]),   h_i = H(h_{i-1}, tokens[i·B:(i+1)·B]),
//
// so equal hashes mean equal whole prefixes (the stored tokens and parent
// hash are compared too, so a 64-bit collision can never alias two
// prefixes). The K/V of a token depends only on the tokens before it, so a
// registered block is valid for any sequence with the same prefix: Match
// attaches the longest run of registered blocks that starts a new prompt
// (ref++, a cached block becomes used again), and the caller prefills only
// the rest. Release drops references; a block whose count reaches 0 goes to
// the LRU list if registered, else to the free stack. Reserve takes free
// blocks first and then evicts the least recently released cached block
// (forgetting its hash), so FreeBlocks counts both.
//
// Invariants the tests pin: used + cached + free = NumBlocks; a block is
// never handed out while used; registered blocks are immutable (a sequence
// only writes rows of blocks it holds alone and that are not registered:
// Match stops at a block boundary, Commit registers only blocks below
// Len/BlockSize, Truncate copies a registered partial block before it is
// rewritten); Slot(seq, p) is a valid row for every p < capacity.
//
// # Element types
//
// K and V are stored in one of three types (Type), each row encoded as the
// tensor package encodes a weight row:
//
//	F32   4 bytes a value: exact, what the 1e-4 parity tests pin
//	F16   2 bytes a value (IEEE half, round to nearest even; llama.cpp's default)
//	Q8_0  34 bytes per 32 values: a half scale d = max|x|/127 and 32 int8
//	      q = round(x/d), so x ≈ d·q (kv_dim a multiple of 32)
//
// The attention kernels read the encoded rows directly; Store encodes a
// position's K and V once when the model writes them.
package kvcache

import (
	"errors"
	"fmt"
	"strings"

	"nanoserve/tensor"
)

// ParseType reads a --kv-cache-type value: f32, f16 or q8_0.
func ParseType(s string) (tensor.DType, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "f32":
		return tensor.F32, nil
	case "f16":
		return tensor.F16, nil
	case "q8_0":
		return tensor.Q8_0, nil
	}
	return 0, fmt.Errorf("kvcache: unknown cache type %q (want f32, f16 or q8_0)", s)
}

// CheckType reports whether a cache of type t can hold rows of kvDim
// values.
func CheckType(t tensor.DType, kvDim int) error {
	switch t {
	case tensor.F32, tensor.F16:
		return nil
	case tensor.Q8_0:
		if kvDim%32 != 0 {
			return fmt.Errorf("kvcache: q8_0 needs kv_dim a multiple of 32, have %d", kvDim)
		}
		return nil
	}
	return fmt.Errorf("kvcache: %s is not a cache type (want F32, F16 or Q8_0)", t)
}

// RowBytes is the memory one row of kvDim values takes in type t (K or V
// of one position in one layer).
func RowBytes(t tensor.DType, kvDim int) int {
	n, err := t.RowBytes(kvDim)
	if err != nil {
		return 0
	}
	return n
}

// ErrOutOfBlocks is returned when the pool cannot hold more positions.
var ErrOutOfBlocks = errors.New("kvcache: out of blocks")

// Cache holds K and V for all layers in NumBlocks blocks of BlockSize rows.
type Cache struct {
	Layers, KVDim, BlockSize, NumBlocks int
	Type                                tensor.DType // F32, F16 or Q8_0
	RowBytes                            int          // bytes of one encoded row (kv_dim values)

	// RoundAs (F32 caches; zero: off) stores each row rounded as a cache
	// of that type would (encoded and decoded again): the same values an
	// F16 or Q8_0 cache holds, read by the float32 kernels — the reference
	// the parity tests hold those types' kernels to.
	RoundAs tensor.DType

	K, V   [][]float32 // F32: (layers) each (NumBlocks*BlockSize, KVDim)
	KE, VE [][]byte    // F16, Q8_0: (layers) each (NumBlocks*BlockSize, RowBytes)

	ref  []int32 // (NumBlocks) block tables holding each block
	free []int   // stack of free (unregistered, unused) block ids

	// Prefix cache: registered blocks by chained hash, with their parent
	// hash and tokens to rule out collisions.
	byHash map[uint64]int
	reg    []bool   // (NumBlocks) registered under hash[b]
	hash   []uint64 // (NumBlocks)
	parent []uint64 // (NumBlocks) hash of the previous block (0 for the first)
	toks   []int32  // (NumBlocks, BlockSize) token ids of registered blocks
	prev   []int32  // (NumBlocks+1) LRU list of cached blocks; index
	next   []int32  // NumBlocks is the sentinel (next = oldest)
	nCache int      // blocks in the LRU list

	// Recurrent states (state.go): stData holds (slots, stFloats); stFree
	// is the stack of unused slots. stFloats 0: none.
	stFloats int
	stData   []float32
	stFree   []int32
	stSaved  map[uint64]int32 // saved prefix states by the hash of the block they end (state.go)
	stLRU    []uint64         // their hashes, least recently used first
}

// Seq is one sequence's block table. Len counts positions written so far;
// the model advances it in Forward. The zero Seq is empty.
type Seq struct {
	Blocks []int
	Len    int
	hashes []uint64 // chained hash of Blocks[i] for each committed full block
	state  int32    // recurrent-state slot + 1 (state.go); 0: none
	// snap is a snapshot of the state (slot + 1; 0: none) as of position
	// snapLen (state.go).
	snap    int32
	snapLen int
}

// New allocates a float32 cache for layers × kvDim with capacity for
// numBlocks*blockSize positions in total.
func New(layers, kvDim, blockSize, numBlocks int) (*Cache, error) {
	return NewType(tensor.F32, layers, kvDim, blockSize, numBlocks)
}

// NewType is New for a cache of element type t (F32, F16 or Q8_0).
func NewType(t tensor.DType, layers, kvDim, blockSize, numBlocks int) (*Cache, error) {
	if layers <= 0 || kvDim <= 0 || blockSize <= 0 || numBlocks <= 0 {
		return nil, fmt.Errorf("kvcache: invalid shape layers=%d kv_dim=%d block=%d blocks=%d", layers, kvDim, blockSize, numBlocks)
	}
	if err := CheckType(t, kvDim); err != nil {
		return nil, err
	}
	c := &Cache{Layers: layers, KVDim: kvDim, BlockSize: blockSize, NumBlocks: numBlocks,
		Type: t, RowBytes: RowBytes(t, kvDim),
		ref: make([]int32, numBlocks), free: make([]int, numBlocks),
		byHash: map[uint64]int{}, reg: make([]bool, numBlocks), hash: make([]uint64, numBlocks),
		parent: make([]uint64, numBlocks), toks: make([]int32, numBlocks*blockSize),
		prev: make([]int32, numBlocks+1), next: make([]int32, numBlocks+1)}
	rows := numBlocks * blockSize
	if t == tensor.F32 {
		c.K, c.V = make([][]float32, layers), make([][]float32, layers)
		for l := range layers {
			c.K[l] = make([]float32, rows*kvDim)
			c.V[l] = make([]float32, rows*kvDim)
		}
	} else {
		c.KE, c.VE = make([][]byte, layers), make([][]byte, layers)
		for l := range layers {
			c.KE[l] = make([]byte, rows*c.RowBytes)
			c.VE[l] = make([]byte, rows*c.RowBytes)
		}
	}
	for i := range c.free {
		c.free[i] = numBlocks - 1 - i // pop order 0, 1, 2, ...
	}
	s := int32(numBlocks)
	c.prev[s], c.next[s] = s, s
	return c, nil
}

// DefaultBlockSize is the block size ForTokens uses.
const DefaultBlockSize = 16

// ForTokens sizes a float32 cache for capacity positions (rounded up to
// blocks).
func ForTokens(layers, kvDim, capacity int) (*Cache, error) {
	return ForTokensType(tensor.F32, layers, kvDim, capacity)
}

// ForTokensType is ForTokens for element type t.
func ForTokensType(t tensor.DType, layers, kvDim, capacity int) (*Cache, error) {
	const bs = DefaultBlockSize
	return NewType(t, layers, kvDim, bs, (capacity+bs-1)/bs)
}

// Bytes is the memory held by K and V.
func (c *Cache) Bytes() int64 {
	return int64(2*c.Layers*c.NumBlocks*c.BlockSize)*int64(c.RowBytes) + c.StateBytes()
}

// Store encodes k and v (kv_dim each) into row slot of layer l.
func (c *Cache) Store(l, slot int, k, v []float32) {
	if c.Type == tensor.F32 {
		o := slot * c.KVDim
		kr, vr := c.K[l][o:o+c.KVDim], c.V[l][o:o+c.KVDim]
		copy(kr, k[:c.KVDim])
		copy(vr, v[:c.KVDim])
		if c.RoundAs != tensor.F32 && CheckType(c.RoundAs, c.KVDim) == nil {
			enc := make([]byte, RowBytes(c.RoundAs, c.KVDim))
			for _, r := range [][]float32{kr, vr} {
				_ = tensor.QuantizeRow(enc, c.RoundAs, r)
				tensor.DequantizeRow(r, c.RoundAs, enc)
			}
		}
		return
	}
	o, rb := slot*c.RowBytes, c.RowBytes
	// The shape was checked in NewType, so QuantizeRow cannot fail.
	_ = tensor.QuantizeRow(c.KE[l][o:o+rb], c.Type, k[:c.KVDim])
	_ = tensor.QuantizeRow(c.VE[l][o:o+rb], c.Type, v[:c.KVDim])
}

// Load decodes row slot of layer l into k and v (kv_dim each): the values
// the attention reads.
func (c *Cache) Load(l, slot int, k, v []float32) {
	if c.Type == tensor.F32 {
		o := slot * c.KVDim
		copy(k[:c.KVDim], c.K[l][o:o+c.KVDim])
		copy(v[:c.KVDim], c.V[l][o:o+c.KVDim])
		return
	}
	o, rb := slot*c.RowBytes, c.RowBytes
	tensor.DequantizeRow(k[:c.KVDim], c.Type, c.KE[l][o:o+rb])
	tensor.DequantizeRow(v[:c.KVDim], c.Type, c.VE[l][o:o+rb])
}

// copyRows copies n rows of every layer from row src to row dst.
func (c *Cache) copyRows(dst, src, n int) {
	for l := range c.Layers {
		if c.Type == tensor.F32 {
			d, s, w := dst*c.KVDim, src*c.KVDim, n*c.KVDim
			copy(c.K[l][d:d+w], c.K[l][s:s+w])
			copy(c.V[l][d:d+w], c.V[l][s:s+w])
			continue
		}
		d, s, w := dst*c.RowBytes, src*c.RowBytes, n*c.RowBytes
		copy(c.KE[l][d:d+w], c.KE[l][s:s+w])
		copy(c.VE[l][d:d+w], c.VE[l][s:s+w])
	}
}

// FreeBlocks is the number of blocks Reserve can hand out: free ones plus
// cached ones (evicted on demand).
func (c *Cache) FreeBlocks() int { return len(c.free) + c.nCache }

// CachedBlocks is the number of unused blocks that still hold a registered
// prefix (evictable).
func (c *Cache) CachedBlocks() int { return c.nCache }

// UsedBlocks is the number of blocks held by at least one sequence.
func (c *Cache) UsedBlocks() int { return c.NumBlocks - c.FreeBlocks() }

// BlocksFor is the number of blocks n positions occupy: ceil(n/BlockSize).
func (c *Cache) BlocksFor(n int) int { return (n + c.BlockSize - 1) / c.BlockSize }

// Capacity is the number of positions s can hold without new blocks.
func (c *Cache) Capacity(s *Seq) int { return len(s.Blocks) * c.BlockSize }

// Reserve makes room for n more positions after s.Len: s needs
// ceil((Len+n)/BlockSize) blocks in all. On failure nothing changes.
func (c *Cache) Reserve(s *Seq, n int) error {
	need := c.BlocksFor(s.Len+n) - len(s.Blocks)
	if c.NeedsState(s) {
		return fmt.Errorf("%w: no free recurrent-state slot of %d", ErrOutOfBlocks, c.StateSlots())
	}
	if need > c.FreeBlocks() {
		return fmt.Errorf("%w: need %d, have %d free of %d", ErrOutOfBlocks, need, c.FreeBlocks(), c.NumBlocks)
	}
	if c.stFloats > 0 && s.state == 0 {
		c.takeState(s)
	}
	for range need {
		s.Blocks = append(s.Blocks, c.alloc())
	}
	return nil
}

// alloc takes a free block, else evicts the oldest cached one; the caller
// has checked FreeBlocks() > 0. The block comes back with ref 1.
func (c *Cache) alloc() int {
	var b int
	if n := len(c.free); n > 0 {
		b = c.free[n-1]
		c.free = c.free[:n-1]
	} else {
		b = int(c.next[c.NumBlocks]) // oldest cached
		c.unlink(b)
		c.unregister(b)
	}
	c.ref[b] = 1
	return b
}

// Release drops s's references; a block nobody holds becomes cached if it
// is registered, else free. The tail is released first so that, of one
// sequence, the prefix blocks are the most recently used (evicted last).
func (c *Cache) Release(s *Seq) {
	for i := len(s.Blocks) - 1; i >= 0; i-- {
		c.deref(s.Blocks[i])
	}
	s.Blocks, s.Len, s.hashes = s.Blocks[:0], 0, s.hashes[:0]
	c.DropSnapshot(s)
	c.dropState(s)
}

func (c *Cache) deref(b int) {
	c.ref[b]--
	if c.ref[b] > 0 {
		return
	}
	if c.reg[b] {
		c.pushLRU(b)
	} else {
		c.free = append(c.free, b)
	}
}

// Commit registers the full blocks of s (those below Len/BlockSize) not yet
// registered; tokens holds at least s's first Len token ids. A block whose
// prefix is already registered under another block stays private (the
// table keeps working; only the copy in the index is shared).
func (c *Cache) Commit(s *Seq, tokens []int) {
	full := min(s.Len, len(tokens)) / c.BlockSize
	for i := len(s.hashes); i < full; i++ {
		var par uint64
		if i > 0 {
			par = s.hashes[i-1]
		}
		blk := tokens[i*c.BlockSize : (i+1)*c.BlockSize]
		h := chainHash(par, blk)
		s.hashes = append(s.hashes, h)
		b := s.Blocks[i]
		if _, taken := c.byHash[h]; taken || c.reg[b] {
			continue
		}
		c.reg[b], c.hash[b], c.parent[b] = true, h, par
		for j, t := range blk {
			c.toks[b*c.BlockSize+j] = int32(t)
		}
		c.byHash[h] = b
	}
}

// Match attaches to the empty sequence s the longest run of registered
// blocks that holds tokens[0:k·BlockSize] with k·BlockSize ≤ limit, sets
// s.Len to the positions reused and returns it. Matched blocks gain a
// reference (a cached one becomes used again).
func (c *Cache) Match(s *Seq, tokens []int, limit int) int {
	if len(s.Blocks) != 0 {
		return s.Len
	}
	if c.stFloats > 0 {
		return c.matchStates(s, tokens, limit)
	}
	bs := c.BlockSize
	limit = min(limit, len(tokens))
	var par uint64
	for i := 0; (i+1)*bs <= limit; i++ {
		blk := tokens[i*bs : (i+1)*bs]
		h := chainHash(par, blk)
		b, ok := c.byHash[h]
		if !ok || c.parent[b] != par || !c.sameTokens(b, blk) {
			break
		}
		if c.ref[b] == 0 {
			c.unlink(b)
		}
		c.ref[b]++
		s.Blocks = append(s.Blocks, b)
		s.hashes = append(s.hashes, h)
		par = h
	}
	s.Len = len(s.Blocks) * bs
	return s.Len
}

func (c *Cache) sameTokens(b int, blk []int) bool {
	for j, t := range blk {
		if c.toks[b*c.BlockSize+j] != int32(t) {
			return false
		}
	}
	return true
}

// Truncate forgets positions ≥ n of s and returns the positions kept
// (min(n, Len), or less, see below). Blocks past the kept positions are
// released (registered ones stay cached). The block that will receive
// position n is rewritten next, so if it is registered or shared it is
// first copied to a private block (copy-on-write); when no block is
// available for the copy, the kept length drops to the block boundary.
func (c *Cache) Truncate(s *Seq, n int) int {
	n = max(0, min(n, s.Len))
	if c.stFloats > 0 && n < s.Len {
		// A recurrent state cannot be rewound (state.go): back to the
		// snapshot when there is one at or before n (the caller
		// recomputes the positions after it), else forget every position
		// (s keeps its zeroed slot).
		if s.snap == 0 || s.snapLen > n {
			c.forgetAll(s)
			return 0
		}
		copy(c.State(s), c.slot(s.snap))
		n = s.snapLen
	}
	c.DropSnapshot(s)
	keep := c.BlocksFor(n)
	for i := len(s.Blocks) - 1; i >= keep; i-- {
		c.deref(s.Blocks[i])
	}
	s.Blocks = s.Blocks[:keep]
	s.hashes = s.hashes[:min(len(s.hashes), n/c.BlockSize)]
	s.Len = n
	if r := n % c.BlockSize; r != 0 {
		b := s.Blocks[keep-1]
		if c.reg[b] || c.ref[b] > 1 {
			if c.FreeBlocks() == 0 {
				if c.stFloats > 0 { // the state is as of n: no shorter length is right
					c.forgetAll(s)
					return 0
				}
				c.deref(b)
				s.Blocks = s.Blocks[:keep-1]
				s.Len = (keep - 1) * c.BlockSize
				return s.Len
			}
			nb := c.alloc()
			c.copyRows(nb*c.BlockSize, b*c.BlockSize, r)
			c.deref(b)
			s.Blocks[keep-1] = nb
		}
	}
	return s.Len
}

// Fork makes dst, an empty sequence, continue from src's positions: it
// takes a reference on each of src's blocks that holds a position (not on
// blocks reserved past src.Len), so the two share their prefix (n > 1
// choices prefill a prompt once). The next write of either into a shared
// partial block must go through Truncate(s, s.Len), which copies it first
// (copy-on-write); full shared blocks are never written again.
func (c *Cache) Fork(dst, src *Seq) {
	c.Release(dst)
	if c.stFloats > 0 {
		// dst needs a state of its own, a copy of src's; without a free
		// slot it stays empty and recomputes its positions.
		if c.freeSlots() == 0 || src.state == 0 {
			return
		}
		c.takeState(dst)
		copy(c.State(dst), c.State(src))
	}
	n := c.BlocksFor(src.Len)
	for _, b := range src.Blocks[:n] {
		c.ref[b]++
	}
	dst.Blocks = append(dst.Blocks, src.Blocks[:n]...)
	dst.hashes = append(dst.hashes, src.hashes...)
	dst.Len = src.Len
}

// Slot is the row of position pos of s in every layer's K and V.
func (c *Cache) Slot(s *Seq, pos int) int {
	return s.Blocks[pos/c.BlockSize]*c.BlockSize + pos%c.BlockSize
}

// Row returns layer l's K and V rows (kv_dim) for position pos of s in a
// float32 cache (other types: Load).
func (c *Cache) Row(l int, s *Seq, pos int) (k, v []float32) {
	o := c.Slot(s, pos) * c.KVDim
	return c.K[l][o : o+c.KVDim], c.V[l][o : o+c.KVDim]
}

// Check verifies the block manager's bookkeeping: every block is exactly
// one of used (ref > 0), cached (ref 0, registered, in the LRU list once)
// or free (ref 0, unregistered, on the free stack once), and the hash index
// points at registered blocks under their own hash. It costs O(NumBlocks)
// and is meant for tests and debugging.
func (c *Cache) Check() error {
	if err := c.checkStates(); err != nil {
		return err
	}
	where := make([]byte, c.NumBlocks) // 'f' free stack, 'c' LRU list
	for _, b := range c.free {
		if b < 0 || b >= c.NumBlocks || where[b] != 0 {
			return fmt.Errorf("kvcache: block %d twice on the free stack or out of range", b)
		}
		where[b] = 'f'
	}
	n := 0
	for b := int(c.next[c.NumBlocks]); b != c.NumBlocks; b = int(c.next[b]) {
		if where[b] != 0 || n >= c.NumBlocks {
			return fmt.Errorf("kvcache: block %d twice in the LRU list or on both lists", b)
		}
		where[b] = 'c'
		n++
	}
	if n != c.nCache {
		return fmt.Errorf("kvcache: LRU list holds %d blocks, count says %d", n, c.nCache)
	}
	for b := range c.NumBlocks {
		var ok bool
		switch {
		case c.ref[b] < 0:
		case c.ref[b] > 0:
			ok = where[b] == 0
		case c.reg[b]:
			ok = where[b] == 'c'
		default:
			ok = where[b] == 'f'
		}
		if !ok {
			return fmt.Errorf("kvcache: block %d has ref %d, registered %v, listed %q", b, c.ref[b], c.reg[b], where[b])
		}
	}
	for h, b := range c.byHash {
		if !c.reg[b] || c.hash[b] != h {
			return fmt.Errorf("kvcache: index maps %x to block %d (registered %v, hash %x)", h, b, c.reg[b], c.hash[b])
		}
	}
	return nil
}

// pushLRU appends b as the most recently released cached block.
func (c *Cache) pushLRU(b int) {
	s := int32(c.NumBlocks)
	last := c.prev[s]
	c.prev[b], c.next[b] = last, s
	c.next[last], c.prev[s] = int32(b), int32(b)
	c.nCache++
}

func (c *Cache) unlink(b int) {
	p, n := c.prev[b], c.next[b]
	c.next[p], c.prev[n] = n, p
	c.nCache--
}

func (c *Cache) unregister(b int) {
	if c.reg[b] {
		if c.byHash[c.hash[b]] == b {
			delete(c.byHash, c.hash[b])
		}
		c.reg[b] = false
	}
}

// chainHash is FNV-1a (64-bit) over the parent hash and the block's token
// ids, each as little-endian bytes.
func chainHash(parent uint64, toks []int) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	for i := range 8 {
		h = (h ^ (parent >> (8 * i) & 0xff)) * prime
	}
	for _, t := range toks {
		u := uint32(t)
		for i := range 4 {
			h = (h ^ uint64(u>>(8*i)&0xff)) * prime
		}
	}
	return h
}
