// Package kvcache stores the attention keys and values of every sequence
// being generated, in fixed-size blocks (a paged KV cache).
//
// A transformer layer attends from each new token to the keys and values of
// all earlier positions of its sequence. Instead of one contiguous
// (ctx, kv_dim) buffer per sequence, the cache owns a pool of blocks of
// BlockSize positions; each sequence holds a block table mapping its
// position p to block Blocks[p/BlockSize], row p%BlockSize. Blocks are
// reference counted so sequences can share a common prefix.
//
// Invariants the tests pin: a block is either free or has ref > 0; Reserve
// never hands out a block twice; Release returns exactly the blocks whose
// count drops to zero; Slot(seq, p) is a valid row for every p < capacity.
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

	ref  []int32 // (NumBlocks) sequences using each block
	free []int   // stack of free block ids
}

// Seq is one sequence's block table. Len counts positions written so far;
// the model advances it in Forward.
type Seq struct {
	Blocks []int
	Len    int
}

// New allocates a cache for layers × kvDim with capacity for
// numBlocks*blockSize positions in total.
func New(layers, kvDim, blockSize, numBlocks int) (*Cache, error) {
	if layers <= 0 || kvDim <= 0 || blockSize <= 0 || numBlocks <= 0 {
		return nil, fmt.Errorf("kvcache: invalid shape layers=%d kv_dim=%d block=%d blocks=%d", layers, kvDim, blockSize, numBlocks)
	}
	c := &Cache{Layers: layers, KVDim: kvDim, BlockSize: blockSize, NumBlocks: numBlocks,
		K: make([][]float32, layers), V: make([][]float32, layers),
		ref: make([]int32, numBlocks), free: make([]int, numBlocks)}
	rows := numBlocks * blockSize
	for l := range layers {
		c.K[l] = make([]float32, rows*kvDim)
		c.V[l] = make([]float32, rows*kvDim)
	}
	for i := range c.free {
		c.free[i] = numBlocks - 1 - i // pop order 0, 1, 2, ...
	}
	return c, nil
}

// ForTokens sizes a cache for capacity positions (rounded up to blocks).
func ForTokens(layers, kvDim, capacity int) (*Cache, error) {
	const bs = 16
	return New(layers, kvDim, bs, (capacity+bs-1)/bs)
}

// Bytes is the memory held by K and V.
func (c *Cache) Bytes() int64 { return int64(2*c.Layers*c.NumBlocks*c.BlockSize*c.KVDim) * 4 }

// FreeBlocks is the number of unused blocks.
func (c *Cache) FreeBlocks() int { return len(c.free) }

// Capacity is the number of positions s can hold without new blocks.
func (c *Cache) Capacity(s *Seq) int { return len(s.Blocks) * c.BlockSize }

// Reserve makes room for n more positions after s.Len. On failure nothing
// changes.
func (c *Cache) Reserve(s *Seq, n int) error {
	need := (s.Len+n+c.BlockSize-1)/c.BlockSize - len(s.Blocks)
	if need <= 0 {
		return nil
	}
	if need > len(c.free) {
		return fmt.Errorf("%w: need %d, have %d free of %d", ErrOutOfBlocks, need, len(c.free), c.NumBlocks)
	}
	for range need {
		b := c.free[len(c.free)-1]
		c.free = c.free[:len(c.free)-1]
		c.ref[b] = 1
		s.Blocks = append(s.Blocks, b)
	}
	return nil
}

// Release drops s's references; blocks nobody uses return to the pool.
func (c *Cache) Release(s *Seq) {
	for _, b := range s.Blocks {
		c.ref[b]--
		if c.ref[b] == 0 {
			c.free = append(c.free, b)
		}
	}
	s.Blocks, s.Len = s.Blocks[:0], 0
}

// Truncate forgets positions >= n of s (keeping its blocks), so a caller
// can rewind a sequence, e.g. to regenerate from a shared prefix.
func (c *Cache) Truncate(s *Seq, n int) {
	if n < s.Len {
		s.Len = n
	}
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
