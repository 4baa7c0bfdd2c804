package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"nanoserve/kvcache"
	"nanoserve/model"
)

// The scheduler is a state machine with no goroutine and no model: plan
// decides what one step computes (and which sequences end or wait), the
// driver runs the Forward and samples, and commit advances the state with
// what was sampled. Tests drive it step by step with a fake forwarder
// (scheduler_test.go); the Engine's goroutine is a thin loop around it.

// seq is one sequence in the scheduler: its tokens and its place in the
// cache. c is the engine's per-sequence generation state, which the
// scheduler only carries.
type seq struct {
	id  uint64 // arrival order: first come, first served
	sub int    // 0, or the choice index of a sequence forked from id's
	ctx context.Context

	tokens  []int        // prompt then generated ids; K/V exist for tokens[:kv.Len]
	nPrompt int          // prompt tokens (without the one token healing removed)
	kv      *kvcache.Seq // &own, or the session's table
	own     kvcache.Seq
	sess    *Session
	forks   []*choice // further choices to fork off when the prompt's logits come back
	c       *choice
	cow     bool // kv may share its last partial block with a fork (copy before writing)
	// draft holds the tokens proposed for this step (speculative
	// decoding): they follow tokens[len(tokens)-1] in the batch at the
	// next positions, each with logits, and are not part of tokens until
	// the driver accepts them.
	draft []int

	progress func(PromptProgress) // Request.Progress (nil: none)
	shown    int                  // the prompt positions progress has reported (never goes back)

	admitted bool      // admitted at least once
	cached   int       // positions reused at the first admission (prefix or session)
	tSched   time.Time // first admission
	n        int       // tokens scheduled in the current step
}

// before orders sequences by arrival (a fork right after its parent).
func (a *seq) before(b *seq) bool { return a.id < b.id || a.id == b.id && a.sub < b.sub }

// scheduler holds the queues and budgets; see "One step of the scheduler"
// in the package comment. Not safe for concurrent use: the engine calls it
// under Engine.cmu.
type scheduler struct {
	cache    *kvcache.Cache
	maxBatch int // tokens per step
	maxSeqs  int // running sequences
	chunk    int // prompt tokens one sequence feeds per step
	// split: once a step completes a prompt (its logits come back) and
	// holds at least split prompt tokens, no further prompt work joins it
	// (see plan).
	split    int
	noPrefix bool
	// stateEvery (hybrid models with the prefix cache; else 0): save the
	// recurrent state at prompt positions that are multiples of it, and
	// at the prompt's last block boundary (stateStop).
	stateEvery int
	ctx        int // positions per sequence
	// propose, if set, returns the tokens to propose for decoding
	// sequence s, at most room of them (s.draft[:0] reused); see spec.go.
	propose func(s *seq, room int) []int

	waiting  []*seq // by arrival; the head is never overtaken
	running  []*seq // in admission order (oldest first)
	idleSess map[*Session]struct{}

	batch model.Batch // scratch behind plan.batch
	p     plan        // reused

	preemptions, prefixQuery, prefixHit int64 // counters
}

func newScheduler(c *kvcache.Cache, o Options) *scheduler {
	sc := &scheduler{cache: c, maxBatch: o.MaxBatchTokens, maxSeqs: o.MaxSeqs, chunk: o.PrefillChunk, split: prefillSplit,
		noPrefix: o.NoPrefixCache, ctx: o.CtxSize, idleSess: map[*Session]struct{}{}}
	if c.StateFloats() > 0 && !o.NoPrefixCache {
		bs := c.BlockSize
		sc.stateEvery = (max(o.StateSnapshotEvery, 1) + bs - 1) / bs * bs
	}
	return sc
}

// stateBoundary reports whether position p of s is where its recurrent
// state is saved (a hybrid model's prefix cache): a block boundary inside
// the prompt that is a multiple of stateEvery or the prompt's last one.
func (sc *scheduler) stateBoundary(s *seq, p int) bool {
	bs := sc.cache.BlockSize
	last := (s.nPrompt - 1) / bs * bs
	return sc.stateEvery > 0 && p > 0 && p%bs == 0 && p <= last && (p%sc.stateEvery == 0 || p == last)
}

// stateStop shortens s's next n tokens so that the step ends at the first
// state boundary it would cross (the state is saved after that step).
func (sc *scheduler) stateStop(s *seq, n int) int {
	if sc.stateEvery == 0 {
		return n
	}
	p0 := s.kv.Len
	for p := (p0/sc.cache.BlockSize + 1) * sc.cache.BlockSize; p < p0+n; p += sc.cache.BlockSize {
		if sc.stateBoundary(s, p) {
			return p - p0
		}
	}
	return n
}

// plan is one step: the batch to run and what happened while planning.
type plan struct {
	batch *model.Batch
	seqs  []*seq  // the sequences in the batch, in order; each feeds seq.n tokens
	out   []*seq  // the sequences whose logits come back, in row order
	ended []ended // sequences that left while planning (cancelled, failed); their blocks are free
}

// ended is a sequence the scheduler ended on its own.
type ended struct {
	s      *seq
	reason string
	err    error
}

// sampled is what the driver drew for one sequence.
type sampled struct {
	token    int  // the token drawn (fed back next step unless done)
	accepted int  // of the sequence's draft, the first accepted tokens come before token
	done     bool // the sequence ends here
}

// stepResult is what commit needs from a step.
type stepResult struct {
	err  error       // Forward failed: every sequence of the plan ends
	rows [][]sampled // per plan.out row: [0] the sequence, [1+i] its fork i (when it had forks)
}

// add queues a new sequence.
func (sc *scheduler) add(s *seq) { sc.enqueue(s) }

func (sc *scheduler) enqueue(s *seq) {
	i, _ := slices.BinarySearchFunc(sc.waiting, s, func(w, s *seq) int {
		switch {
		case w.before(s):
			return -1
		case s.before(w):
			return 1
		}
		return 0
	})
	sc.waiting = slices.Insert(sc.waiting, i, s)
}

// prefillSplit is the scheduler's split (see plan): prompt tokens a step
// holds before a completed prompt ends its prompt work. The step a split
// adds costs about one decode step (a pass over the weights: 7 ms on a
// 110M Q4_K_M model, where 64 prompt tokens take about 70 ms on 2
// threads), small next to 64 tokens' arithmetic; below it, short prompts
// share one step rather than pay that pass each.
const prefillSplit = 64

// plan builds the next step: it ends cancelled sequences, gives every
// running sequence its next tokens (preempting the newest when blocks run
// out) and admits waiting ones first come, first served.
//
// Prompt work (a sequence with more than one uncomputed token: a prompt,
// or a preempted sequence's recomputation) stops joining the step once a
// prompt completes in it and the step holds at least sc.split prompt
// tokens. Every token of a step lands at the same time, so packing a
// second prompt behind a completed one only delays the first one's first
// token by the second's prefill, and finishes the second no earlier: the
// second starts next step instead (first come, first served; decodes
// still ride in every step). With prompts P1..Pk arriving together, the
// i-th gets its first token after i prefills rather than after all k.
func (sc *scheduler) plan() *plan {
	p := &sc.p
	b := &sc.batch
	b.Tokens, b.Pos, b.Seq, b.Output = b.Tokens[:0], b.Pos[:0], b.Seq[:0], b.Output[:0]
	*p = plan{batch: b, seqs: p.seqs[:0], out: p.out[:0], ended: p.ended[:0]}
	sc.reap(p)
	budget := sc.maxBatch
	prompt, completed := 0, false // prompt tokens in the step; a prompt completes in it
	full := func() bool { return completed && prompt >= sc.split }
	// fed counts s's n scheduled tokens toward the split.
	fed := func(s *seq, n int) {
		if len(s.tokens)-s.kv.Len > 1 {
			prompt += n
			completed = completed || s.kv.Len+n == len(s.tokens)
		}
	}

	// Running sequences, oldest first. Each leaves one token of budget for
	// every running sequence after it, so decodes are never starved.
	for i := 0; i < len(sc.running); i++ {
		s := sc.running[i]
		if len(s.tokens)-s.kv.Len > 1 && full() {
			continue // its prompt goes on next step
		}
		if s.cow {
			sc.cache.Truncate(s.kv, s.kv.Len) // copy a shared partial block before writing into it
			s.cow = false
		}
		later := len(sc.running) - 1 - i
		n := sc.stateStop(s, min(len(s.tokens)-s.kv.Len, sc.chunk, budget-later))
		if len(s.tokens)-s.kv.Len == 1 && sc.propose != nil && len(s.forks) == 0 {
			sc.draft(s, budget-later-1)
		}
		if len(s.draft) == 0 && !sc.reserve(p, i, n) {
			i-- // s left the running list (preempted or failed)
			continue
		}
		fed(s, n)
		budget -= sc.schedule(p, s, n)
	}

	// Admission, first come first served: the head waits rather than be
	// overtaken.
	for budget > 0 && !full() && len(sc.waiting) > 0 && len(sc.running)+1+len(sc.waiting[0].forks) <= max(sc.maxSeqs, 1+len(sc.waiting[0].forks)) {
		s := sc.waiting[0]
		if !sc.admit(p, s) {
			break
		}
		sc.waiting = sc.waiting[1:]
		sc.running = append(sc.running, s)
		n := sc.stateStop(s, min(len(s.tokens)-s.kv.Len, sc.chunk, budget))
		if err := sc.cache.Reserve(s.kv, n); err != nil { // admit checked the blocks
			sc.end(p, s, FinishError, err)
			continue
		}
		fed(s, n)
		budget -= sc.schedule(p, s, n)
	}
	return p
}

// draft asks the proposer for at most room tokens to follow decoding
// sequence s this step, bounded also by the context (the last proposal's
// position must be < ctx), and reserves their blocks. A proposal is
// dropped rather than preempt anyone: when the free blocks do not hold it,
// s decodes one token as usual.
func (sc *scheduler) draft(s *seq, room int) {
	s.draft = s.draft[:0]
	room = min(room, sc.ctx-len(s.tokens))
	if room <= 0 {
		return
	}
	s.draft = sc.propose(s, room)
	if len(s.draft) > room {
		s.draft = s.draft[:room]
	}
	if len(s.draft) > 0 && sc.cache.Reserve(s.kv, 1+len(s.draft)) != nil {
		s.draft = s.draft[:0]
	}
	// A hybrid model's recurrent state cannot be rewound: keep a copy of
	// it as of the verified token, which a rejection restores (commit's
	// Truncate; the accepted tokens are then recomputed). No free state
	// slot for the copy: no proposal.
	if len(s.draft) > 0 && sc.cache.StateFloats() > 0 && !sc.cache.Snapshot(s.kv) {
		s.draft = s.draft[:0]
	}
}

// dropDraft forgets s's proposals and any K/V written for them.
func (sc *scheduler) dropDraft(s *seq) {
	if len(s.draft) == 0 {
		return
	}
	s.draft = s.draft[:0]
	if s.kv.Len > len(s.tokens) {
		sc.cache.Truncate(s.kv, len(s.tokens))
	}
	sc.cache.DropSnapshot(s.kv)
}

// rows is the number of logits rows s gets back when it is in plan.out.
func (s *seq) rows() int { return 1 + len(s.draft) }

// schedule appends s's next n uncomputed tokens to the batch, asking for
// logits when they reach its last token, and returns n. A sequence with a
// draft (n = 1) feeds its last token and the proposals, all with logits,
// and returns 1+len(draft).
func (sc *scheduler) schedule(p *plan, s *seq, n int) int {
	b := p.batch
	p0 := s.kv.Len
	if len(s.draft) > 0 {
		for j := 0; j <= len(s.draft); j++ {
			t := s.tokens[p0]
			if j > 0 {
				t = s.draft[j-1]
			}
			b.Tokens = append(b.Tokens, t)
			b.Pos = append(b.Pos, p0+j)
			b.Seq = append(b.Seq, s.kv)
			b.Output = append(b.Output, true)
		}
		s.n = 1 + len(s.draft)
		p.seqs = append(p.seqs, s)
		p.out = append(p.out, s)
		return s.n
	}
	for j := range n {
		b.Tokens = append(b.Tokens, s.tokens[p0+j])
		b.Pos = append(b.Pos, p0+j)
		b.Seq = append(b.Seq, s.kv)
		b.Output = append(b.Output, j == n-1 && p0+n == len(s.tokens))
	}
	s.n = n
	p.seqs = append(p.seqs, s)
	if p0+n == len(s.tokens) {
		p.out = append(p.out, s)
	}
	return n
}

// reserve finds blocks for n more tokens of running[i]: it frees idle
// sessions' blocks first (their full blocks stay in the prefix cache), then
// preempts the newest running sequences (never an older one). It reports
// false when running[i] itself left the running list: preempted because it
// was the newest, or failed because not even the whole cache holds it.
func (sc *scheduler) reserve(p *plan, i, n int) bool {
	s := sc.running[i]
	for {
		err := sc.cache.Reserve(s.kv, n)
		if err == nil {
			return true
		}
		switch {
		case sc.stealSessions():
		case len(sc.running)-1 > i:
			sc.preempt(sc.running[len(sc.running)-1])
		case i > 0:
			sc.preempt(s)
			return false
		default:
			sc.end(p, s, FinishError, err)
			return false
		}
	}
}

// admit moves the head of the queue into the cache: it attaches the
// session's history or the longest cached prefix, then checks that the
// free blocks (after freeing idle sessions' if needed) hold the rest of its
// tokens, ceil(len/BlockSize) blocks in all. On false (no room) s stays
// waiting and holds no new blocks.
func (sc *scheduler) admit(p *plan, s *seq) bool {
	c := sc.cache
	limit := len(s.tokens) - 1 // the last token is recomputed for its logits
	cached := 0
	if sess := s.sess; sess != nil {
		delete(sc.idleSess, sess)
		if sess.closing {
			sc.dropSession(sess)
			sess.closing = false
		}
		if sess.seq.Len > 0 {
			keep := min(commonPrefix(sess.ids, s.tokens), limit)
			cached = c.Truncate(&sess.seq, keep)
			sess.ids = sess.ids[:cached]
		}
	}
	if s.kv.Len == 0 && !sc.noPrefix {
		c.Release(s.kv) // a session's rewind may have left no positions
		cached = c.Match(s.kv, s.tokens, limit)
	}
	for c.BlocksFor(len(s.tokens))-len(s.kv.Blocks) > c.FreeBlocks() || c.NeedsState(s.kv) {
		switch {
		case sc.stealSessions():
		case len(sc.running) > 0: // wait for running sequences to finish
			sc.unadmit(s)
			return false
		default:
			// Cannot happen (the pool holds CtxSize positions and only
			// idle sessions could pin blocks); never wait forever.
			sc.end(p, s, FinishError, fmt.Errorf("%w: %d tokens", kvcache.ErrOutOfBlocks, len(s.tokens)))
			return false
		}
	}
	if !s.admitted {
		s.admitted = true
		s.tSched = time.Now()
		s.cached = cached
		sc.prefixQuery += int64(s.nPrompt)
		sc.prefixHit += int64(cached)
		if s.progress != nil {
			s.shown = cached
			s.progress(PromptProgress{Total: s.nPrompt, Cached: cached, Processed: cached})
		}
	}
	return true
}

// unadmit undoes admit's block attachments for a request that keeps
// waiting, so a queued request pins nothing.
func (sc *scheduler) unadmit(s *seq) {
	if s.sess != nil {
		if s.sess.seq.Len > 0 {
			sc.idleSess[s.sess] = struct{}{}
		}
		return
	}
	sc.cache.Release(s.kv)
}

// preempt frees s's blocks (its full blocks stay in the prefix cache) and
// puts it back in the queue in arrival order with all its tokens, so it
// recomputes every one of them when readmitted.
func (sc *scheduler) preempt(s *seq) {
	sc.removeRunning(s)
	s.draft = s.draft[:0]
	sc.cache.Release(s.kv)
	if s.sess != nil {
		s.sess.ids = nil
	}
	s.n = 0
	sc.enqueue(s)
	sc.preemptions++
}

// stealSessions frees the blocks of idle sessions (their full blocks stay
// in the prefix cache) and reports whether there were any.
func (sc *scheduler) stealSessions() bool {
	if len(sc.idleSess) == 0 {
		return false
	}
	for sess := range sc.idleSess {
		sc.dropSession(sess)
	}
	return true
}

// dropSession releases a session's blocks.
func (sc *scheduler) dropSession(sess *Session) {
	sc.cache.Release(&sess.seq)
	sess.ids = nil
	delete(sc.idleSess, sess)
}

// reap ends running and waiting sequences whose context is done: their
// blocks are free before this step's Forward.
func (sc *scheduler) reap(p *plan) {
	for _, q := range [][]*seq{slices.Clone(sc.running), slices.Clone(sc.waiting)} {
		for _, s := range q {
			if s.ctx.Err() != nil {
				sc.end(p, s, FinishCancelled, nil)
			}
		}
	}
}

// end removes s (running or waiting), frees its blocks and reports it in
// the plan.
func (sc *scheduler) end(p *plan, s *seq, reason string, err error) {
	if i := slices.Index(sc.waiting, s); i >= 0 {
		sc.waiting = slices.Delete(sc.waiting, i, i+1)
	}
	sc.finish(s)
	p.ended = append(p.ended, ended{s, reason, err})
}

// finish takes s out of the running list and returns its blocks (a
// session keeps them for its next turn).
func (sc *scheduler) finish(s *seq) {
	sc.removeRunning(s)
	sc.dropDraft(s)
	s.n = 0
	if sess := s.sess; sess != nil {
		if s.admitted {
			sess.ids = s.tokens[:sess.seq.Len:sess.seq.Len]
		}
		if sess.closing {
			sc.dropSession(sess)
			sess.closing = false
		} else if sess.seq.Len > 0 {
			sc.idleSess[sess] = struct{}{}
		}
		sess.busy.Store(false)
		return
	}
	sc.cache.Release(s.kv)
}

func (sc *scheduler) removeRunning(s *seq) {
	if i := slices.Index(sc.running, s); i >= 0 {
		sc.running = slices.Delete(sc.running, i, i+1)
	}
}

// commit advances the state after the plan's Forward: newly filled blocks
// enter the prefix cache, each sequence whose logits came back forks its
// pending choices (sharing its blocks) and takes its sampled token, or
// leaves with its blocks released when it is done. A sequence that
// speculated keeps the K/V of its accepted proposals and truncates the
// rest (blocks past them go back to the pool); only blocks full of
// accepted tokens are ever registered in the prefix cache. It returns the
// sequences that ended.
func (sc *scheduler) commit(p *plan, r stepResult) []*seq {
	var done []*seq
	if r.err != nil {
		for _, s := range p.seqs {
			sc.finish(s)
			done = append(done, s)
		}
		return done
	}
	for _, s := range p.seqs {
		if done := min(s.kv.Len, s.nPrompt); s.progress != nil && done > s.shown {
			// This step fed prompt tokens (kv.Len counts them; a preempted
			// sequence's recomputation is not reported again).
			s.shown = done
			s.progress(PromptProgress{Total: s.nPrompt, Cached: s.cached, Processed: done, Elapsed: time.Since(s.tSched)})
		}
		if !sc.noPrefix {
			sc.cache.Commit(s.kv, s.tokens)
			if sc.stateBoundary(s, s.kv.Len) {
				sc.cache.SaveState(s.kv)
			}
		}
		s.n = 0
	}
	apply := func(s *seq, x sampled) {
		if d := len(s.draft); d > 0 {
			a := min(x.accepted, d)
			sc.cache.Truncate(s.kv, s.kv.Len-d+a)
			s.tokens = append(s.tokens, s.draft[:a]...)
			s.draft = s.draft[:0]
		}
		if x.done {
			sc.finish(s)
			done = append(done, s)
			return
		}
		s.tokens = append(s.tokens, x.token)
	}
	for i, s := range p.out {
		row := r.rows[i]
		forks := s.forks
		s.forks = nil
		for j, c := range forks {
			apply(sc.fork(s, c, j+1), row[1+j])
		}
		apply(s, row[0])
	}
	return done
}

// fork starts choice c as a copy of parent, sharing its blocks (the last
// partial one is copied before either writes into it).
func (sc *scheduler) fork(parent *seq, c *choice, sub int) *seq {
	s := &seq{id: parent.id, sub: sub, ctx: parent.ctx, nPrompt: parent.nPrompt, c: c,
		tokens:   append(make([]int, 0, cap(parent.tokens)), parent.tokens...),
		admitted: true, cached: parent.cached, tSched: parent.tSched, cow: true}
	s.kv = &s.own
	sc.cache.Fork(s.kv, parent.kv)
	parent.cow = true
	i := slices.Index(sc.running, parent) + sub
	sc.running = slices.Insert(sc.running, min(i, len(sc.running)), s)
	return s
}

// drain ends everything (Close): every sequence leaves and frees its blocks.
func (sc *scheduler) drain() []*seq {
	all := append(slices.Clone(sc.running), sc.waiting...)
	sc.waiting = nil
	for _, s := range all {
		sc.finish(s)
	}
	return all
}

func commonPrefix(a, b []int) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
