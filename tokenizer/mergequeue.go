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
