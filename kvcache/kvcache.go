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
package kvcache

import (
	"errors"
	"fmt"
)

// ErrOutOfBlocks is returned when the pool cannot hold more positions.
var ErrOutOfBlocks = errors.New("kvcache: out of blocks")

// Cache holds K and V for all layers in NumBlocks blocks of BlockSize rows.
type Cache struct {
	Layers, KVDim, BlockSize, NumBlocks int

	K, V [][]float32 // (layers) each (NumBlocks*BlockSize, KVDim)

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
}

// Seq is one sequence's block table. Len counts positions written so far;
// the model advances it in Forward. The zero Seq is empty.
type Seq struct {
	Blocks []int
	Len    int
	hashes []uint64 // chained hash of Blocks[i] for each committed full block
}

// New allocates a cache for layers × kvDim with capacity for
// numBlocks*blockSize positions in total.
func New(layers, kvDim, blockSize, numBlocks int) (*Cache, error) {
	if layers <= 0 || kvDim <= 0 || blockSize <= 0 || numBlocks <= 0 {
		return nil, fmt.Errorf("kvcache: invalid shape layers=%d kv_dim=%d block=%d blocks=%d", layers, kvDim, blockSize, numBlocks)
	}
	c := &Cache{Layers: layers, KVDim: kvDim, BlockSize: blockSize, NumBlocks: numBlocks,
		K: make([][]float32, layers), V: make([][]float32, layers),
		ref: make([]int32, numBlocks), free: make([]int, numBlocks),
		byHash: map[uint64]int{}, reg: make([]bool, numBlocks), hash: make([]uint64, numBlocks),
		parent: make([]uint64, numBlocks), toks: make([]int32, numBlocks*blockSize),
		prev: make([]int32, numBlocks+1), next: make([]int32, numBlocks+1)}
	rows := numBlocks * blockSize
	for l := range layers {
		c.K[l] = make([]float32, rows*kvDim)
		c.V[l] = make([]float32, rows*kvDim)
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

// ForTokens sizes a cache for capacity positions (rounded up to blocks).
func ForTokens(layers, kvDim, capacity int) (*Cache, error) {
	const bs = DefaultBlockSize
	return New(layers, kvDim, bs, (capacity+bs-1)/bs)
}

// Bytes is the memory held by K and V.
func (c *Cache) Bytes() int64 { return int64(2*c.Layers*c.NumBlocks*c.BlockSize*c.KVDim) * 4 }

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
	if need <= 0 {
		return nil
	}
	if need > c.FreeBlocks() {
		return fmt.Errorf("%w: need %d, have %d free of %d", ErrOutOfBlocks, need, c.FreeBlocks(), c.NumBlocks)
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
				c.deref(b)
				s.Blocks = s.Blocks[:keep-1]
				s.Len = (keep - 1) * c.BlockSize
				return s.Len
			}
			nb := c.alloc()
			for l := range c.Layers {
				src, dst := b*c.BlockSize*c.KVDim, nb*c.BlockSize*c.KVDim
				copy(c.K[l][dst:dst+r*c.KVDim], c.K[l][src:src+r*c.KVDim])
				copy(c.V[l][dst:dst+r*c.KVDim], c.V[l][src:src+r*c.KVDim])
			}
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

// Row returns layer l's K and V rows (kv_dim) for position pos of s.
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
