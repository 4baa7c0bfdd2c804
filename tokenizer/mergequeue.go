package tokenizer

// heapItem orders heap entries: a.before(b) puts a nearer the top.
type heapItem[T any] interface{ before(T) bool }

// mergeQueue is a binary heap used by both BPE merge loops (SentencePiece by
// score, byte-level by merge rank); entries made stale by an earlier merge
// are left in and skipped by the caller when popped.
type mergeQueue[T heapItem[T]] []T

func (h *mergeQueue[T]) push(x T) {
	*h = append(*h, x)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if !a[i].before(a[p]) {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

func (h *mergeQueue[T]) pop() T {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	for i := 0; ; {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && a[r].before(a[c]) {
			c = r
		}
		if !a[c].before(a[i]) {
			break
		}
		a[i], a[c] = a[c], a[i]
		i = c
	}
	*h = a
	return top
}

// posHeap is an indexed binary heap of positions ordered by (key>>32, pos):
// each live position holds at most one entry, which is updated in place when
// its key changes and removed when it dies, so the heap never holds more than
// n entries. (A queue that leaves stale entries in grows to about 3n, and
// with its 24-byte entries was most of the ~600 MB one 4 MB word took.)
type posHeap struct {
	key  []uint64 // (n) per position: rank<<32 | payload; the heap orders by rank, then position
	pq   []int32  // heap of positions
	slot []int32  // (n) position -> index in pq, -1 when absent
}

func (h *posHeap) less(a, b int32) bool {
	ka, kb := h.key[a]>>32, h.key[b]>>32
	if ka != kb {
		return ka < kb
	}
	return a < b
}

func (h *posHeap) swap(i, j int) {
	h.pq[i], h.pq[j] = h.pq[j], h.pq[i]
	h.slot[h.pq[i]] = int32(i)
	h.slot[h.pq[j]] = int32(j)
}

func (h *posHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(h.pq[i], h.pq[p]) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *posHeap) down(i int) {
	n := len(h.pq)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if r := c + 1; r < n && h.less(h.pq[r], h.pq[c]) {
			c = r
		}
		if !h.less(h.pq[c], h.pq[i]) {
			return
		}
		h.swap(i, c)
		i = c
	}
}

// set gives position pos the key k, or removes its entry when k is noMerge.
func (h *posHeap) set(pos int32, k uint64) {
	i := h.slot[pos]
	if k == noMerge {
		if i >= 0 {
			h.removeAt(int(i))
		}
		return
	}
	h.key[pos] = k
	if i < 0 {
		h.pq = append(h.pq, pos)
		h.slot[pos] = int32(len(h.pq) - 1)
		h.up(len(h.pq) - 1)
		return
	}
	h.up(int(i))
	h.down(int(h.slot[pos]))
}

func (h *posHeap) removeAt(i int) {
	last := len(h.pq) - 1
	pos := h.pq[i]
	if i != last {
		h.swap(i, last)
	}
	h.pq = h.pq[:last]
	h.slot[pos] = -1
	if i != last {
		h.up(i)
		h.down(int(h.slot[h.pq[i]]))
	}
}

// pop removes and returns the least position.
func (h *posHeap) pop() int32 {
	pos := h.pq[0]
	h.removeAt(0)
	return pos
}
