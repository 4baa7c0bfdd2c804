package grammar

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
)

// inf is the cost of a position that cannot complete.
const inf = int32(1) << 29

// node is one hash-consed stack frame: the position to match next and the
// frame to return to. A stack is its top node; equal stacks are the same
// pointer, so a set of stacks is a set of pointers.
type node struct {
	pos    int32 // position; -1 for the accepting (empty) stack
	parent *node
	min    int32   // bytes (= tokens, one single-byte token each) to reach acceptance
	succ   []*node // stacks after matching the top terminal; nil until computed
	done   bool    // succ computed
	mask   *nodeMask
	mark   uint32  // dedup epoch (step)
	added  uint32  // dedup epoch (expand)
	term   byteSet // the top terminal's bytes (empty for pos < 0 and control tokens)
	tok    int32   // the top control token's id, or -1
}

// nodeMask is the cached, exact mask of one stack: which tokens it allows
// and, for the budget, how the shortest completion changes per token.
type nodeMask struct {
	allowed []uint64 // (vocab bits)
	maxCost int32    // largest shortest-completion cost after an allowed token
	// Computed on first need (a budget below maxCost):
	lists  bool
	heavy  []tokCost // allowed tokens after which the shortest completion grows, by cost descending
	reduce []tokCost // allowed tokens after which it shrinks, by cost ascending
}

type tokCost struct{ id, cost int32 }

type nodeKey struct {
	pos    int32
	parent *node
}

// Constraint is a Grammar compiled against a Vocab, with the caches the
// masks share. It is safe for concurrent use; Matchers created from it
// carry the per-request state.
type Constraint struct {
	p    *program
	v    *Vocab
	rest []int32 // (positions) minimal cost from the position to the end of its alternative
	rmin []int32 // (rules) minimal cost of the rule
	lim  Limits
	size int64 // bytes of the program and tables (without the caches)

	maxNodes int // hash-consing table bound (see maxNodes)
	maxWords int // mask cache bound, words

	mu sync.Mutex
	// mu protects the following fields and every node's succ, done, mask
	// and mark.
	nodes     map[nodeKey]*node
	accept    *node
	sentinel  *node // stands for "some parent" in context-independent walks
	boundary  *node // a local walk popped into the sentinel
	posMasks  map[ctxKey]*posMask
	epoch     uint32
	outEpoch  uint32
	cached    int // words held by node masks
	expandVis map[nodeKey]bool
	// The current operation's work (Mask, Accept, NewMatcher, the
	// compile's first masks): steps counted in step/expand, against
	// workMax; over is set once it is exceeded and the operation's partial
	// results are then never cached.
	bytes         atomic.Int64 // what Bytes reports
	work, workMax int64
	over          bool
	overNodes     bool  // over because of opNodes
	opNodes       int64 // nodes the operation created
}

// maxCachedWords bounds the memory of cached masks (32 MiB).
const maxCachedWords = 4 << 20

// maxNodes bounds the hash-consing table. Past it the table restarts:
// stacks interned before stay valid (matchers hold them), a stack interned
// again after is a new node equal to an old one, which costs duplicate
// work, never a wrong mask.
const maxNodes = 1 << 20

// ErrBudget is wrapped by errors about a max_tokens that cannot fit the
// shortest valid output.
var ErrBudget = errors.New("grammar: max_tokens too small")

// Compile builds a Constraint for g over v under the default limits.
func Compile(g *Grammar, v *Vocab) (*Constraint, error) { return defaultBudget().Compile(g, v) }

// Compile builds a Constraint for g over v within b: lowering, the
// shortest-completion costs and the masks of the initial configuration
// (so that a request's first Mask, on the engine's scheduler, is a cache
// hit rather than the most expensive walk of the generation). The
// Constraint keeps b's limits: each later Mask or Accept call may take
// Limits.Steps steps, and its caches stay within Limits.Bytes.
func (b *Budget) Compile(g *Grammar, v *Vocab) (*Constraint, error) {
	p, err := lower(g, v, b)
	if err != nil {
		return nil, err
	}
	b.stage = "compile"
	c := &Constraint{p: p, v: v, nodes: map[nodeKey]*node{}, lim: b.lim}
	if err := c.costs(b); err != nil {
		return nil, err
	}
	c.accept = &node{pos: -1, tok: -1}
	c.sentinel = &node{pos: -2, tok: -1}
	c.boundary = &node{pos: -3, tok: -1}
	c.posMasks = map[ctxKey]*posMask{}
	if c.ruleMin(p.root) >= inf {
		return nil, fmt.Errorf("grammar: root rule %q has no finite output this vocabulary can spell", p.names[p.root])
	}
	c.size = int64(len(p.pos))*(elemBytes+12) + int64(len(p.alts))*ruleBytes + int64(len(p.terms))*32
	// The caches may take what the compile left of the byte budget, within
	// the fixed bounds (past them they restart).
	spare := max(b.lim.Bytes-b.bytes, 1<<20)
	c.maxNodes = int(min(maxNodes, b.lim.Nodes, spare/2/nodeBytes))
	c.maxWords = int(min(maxCachedWords, spare/2/8))
	// The first masks, as one mask computation.
	b.stage = "first mask"
	c.begin(c.maskSteps())
	var st []*node
	c.newExpansion()
	for _, s := range p.alts[p.root] {
		st = c.expand1(s, nil, st)
	}
	for _, n := range st {
		if n.pos >= 0 && n.tok < 0 {
			c.maskOf(n)
		}
	}
	if err := c.end(); err != nil {
		return nil, err
	}
	if err := b.alloc(int64(len(c.nodes)), int64(len(c.nodes))*nodeBytes+int64(c.cached)*8); err != nil {
		return nil, err
	}
	return c, nil
}

// Bytes estimates the memory c holds now: its program and tables, its
// stacks and its cached masks (bounded by its Limits.Bytes).
// It takes no lock (the figure is updated at the end of each operation),
// so a cache can weigh its entries while they are in use.
func (c *Constraint) Bytes() int64 { return c.bytes.Load() }

// noteBytes refreshes the figure Bytes reports (c.mu held).
func (c *Constraint) noteBytes() {
	c.bytes.Store(c.size + int64(len(c.nodes))*nodeBytes + int64(c.cached)*8)
}

func (c *Constraint) maskSteps() int64 { return maskStepsFactor * c.lim.Steps }

// begin starts an operation allowed steps work steps (c.mu held).
func (c *Constraint) begin(steps int64) {
	c.work, c.workMax, c.over, c.overNodes, c.opNodes = 0, steps, false, false, 0
}

// end finishes an operation: a *LimitError if it ran out of steps or
// nodes.
func (c *Constraint) end() error {
	c.noteBytes()
	if !c.over {
		return nil
	}
	c.over = false
	stage := fmt.Sprintf("a mask computation (%d× the limit)", maskStepsFactor)
	if c.overNodes {
		return &LimitError{Limit: "nodes", Max: c.maxOpNodes(), Stage: "a mask computation"}
	}
	return &LimitError{Limit: "steps", Max: c.lim.Steps, Stage: stage}
}

// spend counts n steps of the current operation; false once exceeded.
func (c *Constraint) spend(n int) bool {
	c.work += int64(n)
	if c.work > c.workMax {
		c.over = true
	}
	return !c.over
}

// maxOpNodes bounds the stacks (and expansion marks) one operation may
// create: a quarter of Limits.Nodes, and of Limits.Bytes at nodeBytes
// each (the rest is for the caches and the matchers' states).
func (c *Constraint) maxOpNodes() int64 { return min(c.lim.Nodes, c.lim.Bytes/nodeBytes) / 4 }

// grow counts one node created by the current operation (a stack interned,
// a configuration marked while expanding): it costs expandSteps steps, and
// their number is bounded by maxOpNodes, so an operation's memory is too.
func (c *Constraint) grow() bool {
	c.opNodes++
	if c.opNodes > c.maxOpNodes() {
		c.over, c.overNodes = true, true
	}
	return c.spend(expandSteps)
}

// expandSteps is what creating a node costs in steps: a hash-table insert
// and an allocation, against a step's bitset test.
const expandSteps = 16

// costs computes rest[] (and each rule's minimum) as the least fixed
// point of rest(end) = 0, rest(i) = cost(elem i) + rest(i+1), where a
// terminal costs one token if some byte of it is a token alone, a control
// token one, and a reference its rule's cheapest alternative. Every such
// function is superior (no smaller than any argument), so Knuth's
// generalisation of Dijkstra's algorithm settles positions in increasing
// order of cost with a heap: each position is settled once and each
// reference re-examined once per settled rule, O(P log P) steps, where a
// round-robin iteration needed one pass per level of rule nesting (a
// 10k-property object chains 10k rules: 10k passes).
func (c *Constraint) costs(b *Budget) error {
	p := c.p
	c.rest = make([]int32, len(p.pos))
	c.rmin = make([]int32, len(p.alts))
	for i := range c.rest {
		c.rest[i] = inf
	}
	for r := range c.rmin {
		c.rmin[r] = inf
	}
	// users[r]: the positions that reference rule r (flattened).
	first := make([]int32, len(p.alts)+1)
	for _, e := range p.pos {
		if e.kind == kRef {
			first[e.arg+1]++
		}
	}
	for r := range p.alts {
		first[r+1] += first[r]
	}
	users := make([]int32, first[len(p.alts)])
	fill := slices.Clone(first[:len(p.alts)])
	for i, e := range p.pos {
		if e.kind == kRef {
			users[fill[e.arg]] = int32(i)
			fill[e.arg]++
		}
	}
	if err := b.alloc(0, int64(len(p.pos))*12+int64(len(p.alts))*8); err != nil {
		return err
	}
	start := func(i int32) bool { return i == 0 || p.pos[i-1].kind == kEnd }
	var h costHeap
	relax := func(i int32) {
		var r int32
		switch e := p.pos[i]; e.kind {
		case kEnd:
			r = 0
		case kTerm:
			t := p.terms[e.arg]
			if t[0]&c.v.single[0]|t[1]&c.v.single[1]|t[2]&c.v.single[2]|t[3]&c.v.single[3] == 0 {
				r = inf
			} else {
				r = sat(1 + c.rest[i+1])
			}
		case kTok:
			r = sat(1 + c.rest[i+1])
		case kRef:
			r = sat(c.rmin[e.arg] + c.rest[i+1])
		}
		if r < c.rest[i] {
			c.rest[i] = r
			h.push(costItem{r, i})
		}
	}
	for i, e := range p.pos {
		if e.kind == kEnd {
			relax(int32(i))
		}
	}
	settled := make([]bool, len(p.pos))
	for len(h) > 0 {
		it := h.pop()
		if settled[it.pos] || it.cost > c.rest[it.pos] {
			continue
		}
		settled[it.pos] = true
		if err := b.step(1); err != nil {
			return err
		}
		i := it.pos
		if start(i) {
			if r := p.posRule[i]; c.rmin[r] == inf {
				c.rmin[r] = it.cost // the first settled alternative is the cheapest
				for _, u := range users[first[r]:first[r+1]] {
					relax(u)
				}
				if err := b.step(int64(first[r+1] - first[r])); err != nil {
					return err
				}
			}
		} else {
			relax(i - 1)
		}
	}
	return nil
}

type costItem struct{ cost, pos int32 }

// costHeap is a binary min-heap by cost.
type costHeap []costItem

func (h *costHeap) push(x costItem) {
	*h = append(*h, x)
	a := *h
	for i := len(a) - 1; i > 0; {
		j := (i - 1) / 2
		if a[j].cost <= a[i].cost {
			break
		}
		a[i], a[j] = a[j], a[i]
		i = j
	}
}

func (h *costHeap) pop() costItem {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && a[l].cost < a[m].cost {
			m = l
		}
		if l+1 < n && a[l+1].cost < a[m].cost {
			m = l + 1
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}

func sat(x int32) int32 { return min(x, inf) }

func (c *Constraint) ruleMin(r int32) int32 { return c.rmin[r] }

func (c *Constraint) intern(pos int32, parent *node) *node {
	k := nodeKey{pos, parent}
	if n, ok := c.nodes[k]; ok {
		return n
	}
	if len(c.nodes) >= c.maxNodes {
		c.nodes = map[nodeKey]*node{}
	}
	c.grow()
	pm := int32(0)
	if parent != nil {
		pm = parent.min
	}
	n := &node{pos: pos, parent: parent, min: sat(c.rest[pos] + pm), tok: -1}
	switch e := c.p.pos[pos]; e.kind {
	case kTerm:
		n.term = c.p.terms[e.arg]
	case kTok:
		n.tok = e.arg
	}
	c.nodes[k] = n
	return n
}

// expand appends the stacks reachable from (pos, parent) whose top is a
// terminal (or the accepting stack), descending into rule references: one
// expansion (see newExpansion).
func (c *Constraint) expand(pos int32, parent *node, out []*node) []*node {
	c.newExpansion()
	return c.expand1(pos, parent, out)
}

// newExpansion starts a set of stacks: expand1 calls after it share the
// marks of what they visited and added (a union of expansions, such as
// the root's alternatives, is built in one pass, in time linear in what
// it visits).
func (c *Constraint) newExpansion() {
	if c.expandVis == nil || len(c.expandVis) > 1024 {
		c.expandVis = map[nodeKey]bool{} // clearing a large table costs its capacity every time
	} else {
		clear(c.expandVis)
	}
	c.outEpoch++
}

func (c *Constraint) expand1(pos int32, parent *node, out []*node) []*node {
	k := nodeKey{pos, parent}
	if c.over || c.expandVis[k] {
		return out // a nullable cycle adds nothing new
	}
	if !c.grow() {
		return out
	}
	c.expandVis[k] = true
	e := c.p.pos[pos]
	switch e.kind {
	case kEnd:
		if parent == nil {
			return c.addNode(out, c.accept)
		}
		if parent == c.sentinel {
			return c.addNode(out, c.boundary)
		}
		return c.expand1(parent.pos, parent.parent, out)
	case kTerm, kTok:
		if c.rest[pos] >= inf {
			return out
		}
		return c.addNode(out, c.intern(pos, parent))
	default:
		np := parent
		if c.p.pos[pos+1].kind != kEnd { // not a tail call: push the return frame
			np = c.intern(pos+1, parent)
		}
		for _, s := range c.p.alts[e.arg] {
			out = c.expand1(s, np, out)
		}
		return out
	}
}

// addNode appends n unless the current expansion already holds it.
func (c *Constraint) addNode(out []*node, n *node) []*node {
	if n.added == c.outEpoch {
		return out
	}
	n.added = c.outEpoch
	return append(out, n)
}

// successors returns the stacks after n's top terminal matched a byte.
func (c *Constraint) successors(n *node) []*node {
	if !n.done {
		succ := c.expand(n.pos+1, n.parent, nil)
		if c.over {
			return nil // incomplete: the operation fails, nothing is cached
		}
		n.succ, n.done = succ, true
	}
	return n.succ
}

// step advances the stack set s over byte b into dst (deduplicated).
func (c *Constraint) step(s []*node, b byte, dst []*node) []*node {
	if !c.spend(len(s)) {
		return dst
	}
	c.epoch++
	for _, n := range s {
		if !n.term.has(b) {
			continue
		}
		for _, m := range c.successors(n) {
			if m.mark != c.epoch {
				m.mark = c.epoch
				dst = append(dst, m)
			}
		}
	}
	return dst
}

// posMask is the context-independent part of the masks of every stack
// whose top is one position (XGrammar's adaptive token mask cache): the
// trie walked with the stack (pos, sentinel), where the sentinel stands for
// whatever frames lie below. A token that stays above the sentinel, or
// pops into it exactly at its last byte, is allowed whatever the context
// (sure); one that pops into it with bytes left depends on the context
// (uncertain) and is checked against the real stack.
type posMask struct {
	sure      []uint64 // (vocab bits)
	maxCost   int32    // largest cost after a sure token, relative to the context's
	uncertain []int32
	fallback  bool // too many uncertain tokens: walk each stack's own trie instead
}

// maxUncertain bounds a position's uncertain tokens; past it the position
// is context-dependent and each stack walks the trie itself.
const maxUncertain = 16384

// maxCtx is the most frames a context-independent mask looks at.
const maxCtx = 4

// ctxKey names the top k frames of a stack; root says the stack has no
// more frames below them (so the mask is exact).
type ctxKey struct {
	k    int8
	root bool
	pos  [maxCtx]int32
}

// context returns the key of n's top k frames, the local stack that
// stands for them over the sentinel, and the frame below them.
func (c *Constraint) context(n *node, k int) (ctxKey, *node, *node) {
	var key ctxKey
	var frames []*node
	x := n
	for ; x != nil && len(frames) < k; x = x.parent {
		key.pos[len(frames)] = x.pos
		frames = append(frames, x)
	}
	key.k = int8(len(frames))
	key.root = x == nil
	var local *node = c.sentinel
	if key.root {
		local = nil
	}
	for i := len(frames) - 1; i >= 0; i-- {
		local = c.intern(frames[i].pos, local)
	}
	return key, local, x
}

func (c *Constraint) posMaskOf(key ctxKey, local *node) *posMask {
	if pm, ok := c.posMasks[key]; ok {
		return pm
	}
	v := c.v
	pm := &posMask{sure: make([]uint64, v.MaskWords())}
	bufs := make([][]*node, v.maxLen+2)
	var walk func(t int32, s []*node, depth int, hit bool)
	walk = func(t int32, s []*node, depth int, hit bool) {
		if depth > 0 {
			if toks := v.toks[v.tokFirst[t]:v.tokFirst[t+1]]; len(toks) > 0 {
				if len(s) > 0 {
					cost := inf
					for _, x := range s {
						cost = min(cost, x.min)
					}
					pm.maxCost = max(pm.maxCost, cost)
					for _, id := range toks {
						pm.sure[id>>6] |= 1 << (id & 63)
					}
				} else if hit {
					pm.uncertain = append(pm.uncertain, toks...)
					if len(pm.uncertain) > maxUncertain {
						pm.fallback = true
					}
				}
			}
		}
		hit = hit || slices.Contains(s, c.boundary)
		for e := v.first[t]; e < v.first[t+1] && !pm.fallback; e++ {
			next := c.step(s, v.edgeByte[e], bufs[depth+1][:0])
			bufs[depth+1] = next
			if len(next) > 0 || hit {
				walk(v.edgeTo[e], next, depth+1, hit)
			}
		}
	}
	walk(0, []*node{local}, 0, false)
	if pm.fallback {
		pm.sure, pm.uncertain = nil, nil
	}
	if c.over {
		return pm // incomplete: not cached (the operation fails)
	}
	c.posMasks[key] = pm
	c.cached += len(pm.sure) + len(pm.uncertain)/2
	return pm
}

// maskOf returns n's cached mask: its position's sure tokens plus those
// of the uncertain ones that its real stack accepts.
func (c *Constraint) maskOf(n *node) *nodeMask {
	if n.mask != nil {
		return n.mask
	}
	pm := &posMask{fallback: true}
	var below *node
	for k := 1; k <= maxCtx; k++ {
		key, local, b := c.context(n, k)
		pm, below = c.posMaskOf(key, local), b
		if !pm.fallback || key.root {
			break
		}
	}
	if pm.fallback {
		m := &nodeMask{allowed: make([]uint64, c.v.MaskWords())}
		c.walkTrie(n, func(id, cost int32) {
			m.allowed[id>>6] |= 1 << (id & 63)
			m.maxCost = max(m.maxCost, cost)
		})
		return c.keep(n, m)
	}
	m := &nodeMask{allowed: slices.Clone(pm.sure), maxCost: pm.maxCost}
	if below != nil {
		m.maxCost = sat(m.maxCost + below.min)
	}
	var a, b []*node
	for _, id := range pm.uncertain {
		a = append(a[:0], n)
		for _, x := range c.v.tokens[id] {
			b = c.step(a, x, b[:0])
			a, b = b, a
			if len(a) == 0 {
				break
			}
		}
		if len(a) > 0 {
			m.allowed[id>>6] |= 1 << (id & 63)
			cost := inf
			for _, x := range a {
				cost = min(cost, x.min)
			}
			m.maxCost = max(m.maxCost, cost)
		}
	}
	return c.keep(n, m)
}

// keep caches m as n's mask within the memory bound.
func (c *Constraint) keep(n *node, m *nodeMask) *nodeMask {
	if c.over {
		return m // incomplete: not cached (the operation fails)
	}
	if c.cached > c.maxWords {
		for _, x := range c.nodes {
			x.mask = nil
		}
		clear(c.posMasks)
		c.cached = 0
	}
	c.cached += len(m.allowed)
	n.mask = m
	return m
}

// costLists fills m's per-token cost lists for the budget (a second trie
// walk, done only when a budget gets tight for this stack).
func (c *Constraint) costLists(n *node, m *nodeMask) {
	if m.lists {
		return
	}
	c.walkTrie(n, func(id, cost int32) {
		switch {
		case cost > n.min:
			m.heavy = append(m.heavy, tokCost{id, cost})
		case cost < n.min:
			m.reduce = append(m.reduce, tokCost{id, cost})
		}
	})
	slices.SortFunc(m.heavy, func(a, b tokCost) int { return int(b.cost - a.cost) })
	slices.SortFunc(m.reduce, func(a, b tokCost) int { return int(a.cost - b.cost) })
	if c.over {
		m.heavy, m.reduce = nil, nil
		return
	}
	m.lists = true
	c.cached += len(m.heavy) + len(m.reduce)
}

// walkTrie calls f for every token the stack n allows, with the shortest
// completion cost after it.
func (c *Constraint) walkTrie(n *node, f func(id, cost int32)) {
	v := c.v
	bufs := make([][]*node, v.maxLen+2)
	var walk func(t int32, s []*node, depth int)
	walk = func(t int32, s []*node, depth int) {
		if depth > 0 {
			if toks := v.toks[v.tokFirst[t]:v.tokFirst[t+1]]; len(toks) > 0 {
				cost := inf
				for _, x := range s {
					cost = min(cost, x.min)
				}
				for _, id := range toks {
					f(id, cost)
				}
			}
		}
		for e := v.first[t]; e < v.first[t+1]; e++ {
			next := c.step(s, v.edgeByte[e], bufs[depth+1][:0])
			bufs[depth+1] = next
			if len(next) > 0 {
				walk(v.edgeTo[e], next, depth+1)
			}
		}
	}
	walk(0, []*node{n}, 0)
}

// Matcher is the per-request automaton state: the set of live stacks and
// the token budget. Not safe for concurrent use.
type Matcher struct {
	c         *Constraint
	state     []*node
	maxTokens int // 0: unlimited
	n         int // tokens accepted
	ended     bool
	scratch   []uint64
}

// NewMatcher starts a match. maxTokens > 0 makes masking budget-aware: it
// is an error (wrapping ErrBudget) when even the shortest valid output may
// not fit, and every mask keeps a complete output within reach.
func (c *Constraint) NewMatcher(maxTokens int) (*Matcher, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.begin(c.maskSteps())
	var st []*node
	c.newExpansion()
	for _, s := range c.p.alts[c.p.root] {
		st = c.expand1(s, nil, st)
	}
	if err := c.end(); err != nil {
		return nil, err
	}
	m := &Matcher{c: c, state: st, maxTokens: maxTokens}
	if need := m.minCost(); maxTokens > 0 && int(need) > maxTokens {
		return nil, fmt.Errorf("%w: the shortest output this grammar allows may need %d tokens, max_tokens is %d", ErrBudget, need, maxTokens)
	}
	return m, nil
}

// MinTokens is the number of tokens the shortest valid output needs at
// most (one token per byte where needed): max_tokens below it is refused.
func (c *Constraint) MinTokens() int { return int(c.ruleMin(c.p.root)) }

func (m *Matcher) minCost() int32 { return minOf(m.state) }

// minOf is the shortest completion over a set of stacks.
func minOf(s []*node) int32 {
	x := inf
	for _, n := range s {
		x = min(x, n.min)
	}
	return x
}

// Accepting reports whether the text so far is a complete match.
func (m *Matcher) Accepting() bool { return slices.Contains(m.state, m.c.accept) }

// Ended reports whether an end-of-generation token was accepted.
func (m *Matcher) Ended() bool { return m.ended }

// Mask sets in dst (len Vocab.MaskWords) the bits of the tokens allowed
// next and returns how many there are. End-of-generation ids are allowed
// only where the grammar accepts; with a budget, a token is allowed only
// if the shortest completion after it still fits in the tokens left. The
// call may take the Constraint's Limits.Steps work steps; past them it
// fails with a *LimitError (and dst allows nothing).
func (m *Matcher) Mask(dst []uint64) (int, error) {
	clear(dst)
	if m.ended {
		return 0, nil
	}
	left := -1 // tokens left after this one; -1 unlimited
	if m.maxTokens > 0 {
		left = m.maxTokens - m.n - 1
		if left < 0 {
			return 0, nil
		}
	}
	c := m.c
	c.mu.Lock()
	defer c.mu.Unlock()
	c.begin(c.maskSteps())
	n := m.mask(dst, left)
	if err := c.end(); err != nil {
		clear(dst)
		return 0, err
	}
	return n, nil
}

// mask is Mask's body (c.mu held).
func (m *Matcher) mask(dst []uint64, left int) int {
	c := m.c
	for _, n := range m.state {
		if n.pos < 0 {
			for _, id := range c.v.eog {
				dst[id>>6] |= 1 << (id & 63)
			}
			continue
		}
		if n.tok >= 0 {
			// A control token: no byte walk reaches it; allowed when the
			// shortest completion after it fits.
			if cost := minOf(c.successors(n)); left < 0 || cost <= int32(left) {
				dst[n.tok>>6] |= 1 << (n.tok & 63)
			}
			continue
		}
		nm := c.maskOf(n)
		r := int32(left)
		if left < 0 || r >= nm.maxCost {
			orInto(dst, nm.allowed)
			continue
		}
		c.costLists(n, nm)
		switch {
		case r >= n.min:
			if len(m.scratch) != len(dst) {
				m.scratch = make([]uint64, len(dst))
			}
			copy(m.scratch, nm.allowed)
			for _, h := range nm.heavy {
				if h.cost <= r {
					break
				}
				m.scratch[h.id>>6] &^= 1 << (h.id & 63)
			}
			orInto(dst, m.scratch)
		default:
			for _, h := range nm.reduce {
				if h.cost > r {
					break
				}
				dst[h.id>>6] |= 1 << (h.id & 63)
			}
		}
	}
	cnt := 0
	for _, w := range dst {
		cnt += bits.OnesCount64(w)
	}
	return cnt
}

func orInto(dst, src []uint64) {
	for i, w := range src {
		dst[i] |= w
	}
}

// Accept advances the matcher over token id. It fails, leaving the state
// unchanged, when the grammar does not allow id here.
func (m *Matcher) Accept(id int) error {
	c := m.c
	if id < 0 || id >= c.v.size {
		return fmt.Errorf("grammar: token %d outside the vocabulary", id)
	}
	if m.ended {
		return errors.New("grammar: token after end of generation")
	}
	if slices.Contains(c.v.eog, int32(id)) {
		if !m.Accepting() {
			return fmt.Errorf("grammar: end-of-generation token %d before the output is complete", id)
		}
		m.ended = true
		m.n++
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.begin(c.maskSteps())
	err := m.accept(id)
	if e := c.end(); e != nil {
		return e
	}
	return err
}

// accept is Accept's body for a token that spells text or is a control
// token (c.mu held); it changes the state only on success.
func (m *Matcher) accept(id int) error {
	c := m.c
	t := c.v.tokens[id]
	if len(t) == 0 {
		// A control token advances the stacks whose top is that token.
		var s []*node
		c.epoch++
		for _, n := range m.state {
			if n.tok != int32(id) {
				continue
			}
			for _, x := range c.successors(n) {
				if x.mark != c.epoch {
					x.mark = c.epoch
					s = append(s, x)
				}
			}
		}
		if len(s) == 0 {
			return fmt.Errorf("grammar: token %d spells no text and is not a control token the grammar expects here", id)
		}
		m.state = s
		m.n++
		return nil
	}
	s := slices.Clone(m.state)
	for _, b := range t {
		s = c.step(s, b, nil)
		if len(s) == 0 {
			return fmt.Errorf("grammar: token %d (%q) is not allowed here", id, t)
		}
	}
	m.state = s
	m.n++
	return nil
}

// AcceptBytes advances over raw text (a forced prefix, tests).
func (m *Matcher) AcceptBytes(b []byte) error {
	c := m.c
	c.mu.Lock()
	defer c.mu.Unlock()
	c.begin(c.maskSteps())
	s := slices.Clone(m.state)
	for i, x := range b {
		s = c.step(s, x, nil)
		if len(s) == 0 {
			if err := c.end(); err != nil {
				return err
			}
			return fmt.Errorf("grammar: byte %d (%q) of the text is not allowed here", i, x)
		}
	}
	m.state = s
	return c.end()
}

// Remaining is the number of tokens left in the budget (-1: unlimited).
func (m *Matcher) Remaining() int {
	if m.maxTokens <= 0 {
		return -1
	}
	return m.maxTokens - m.n
}
