package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"nanoserve/kvcache"
	"nanoserve/sample"
	"nanoserve/tokenizer"
)

// seqState is one request inside the scheduler. Everything but id and the
// stream is touched only by the scheduler goroutine (waiting entries are
// handed over under Engine.mu).
type seqState struct {
	id      uint64 // arrival order
	ctx     context.Context
	pol     sample.Policy
	sampler *sample.Sampler
	stopIDs map[int]bool
	dec     *tokenizer.Decoder
	stop    *sample.StopMatcher

	tokens  []int        // prompt then generated ids; K/V exist for tokens[:kv.Len]
	nPrompt int          // prompt length (without the token healing removed)
	heal    *healing     // token healing plan; nil: none
	kv      *kvcache.Seq // &own, or the session's table
	own     kvcache.Seq
	sess    *Session

	admitted bool // admitted at least once (stats, timings)
	n        int  // tokens scheduled in the current step
	res      *Result
	text     []byte
	out      *stream

	start, tSched, tDecode time.Time // submit, first admission, first token
}

// loop is the scheduler goroutine: it steps while there is work and
// sleeps until poked otherwise. Each iteration, and every heartbeatIdle
// while it sleeps, it records a heartbeat (Heartbeat).
func (e *Engine) loop() {
	defer close(e.done)
	defer e.beat.Store(0)
	idle := time.NewTicker(heartbeatIdle)
	defer idle.Stop()
	for {
		e.beat.Store(time.Now().UnixNano())
		select {
		case <-e.quit:
			e.shutdown()
			return
		default:
		}
		if !e.step() {
			select {
			case <-e.wake:
			case <-idle.C: // beat while idle
			case <-e.quit:
				e.shutdown()
				return
			}
		}
	}
}

// shutdown ends every request with ErrClosed.
func (e *Engine) shutdown() {
	e.cmu.Lock()
	defer e.cmu.Unlock()
	for len(e.running) > 0 {
		e.finish(e.running[0], FinishError, ErrClosed)
	}
	e.mu.Lock()
	w := e.waiting
	e.waiting = nil
	e.mu.Unlock()
	for _, s := range w {
		e.finish(s, FinishError, ErrClosed)
	}
	e.snapshot()
}

// step runs one scheduler iteration (see the package comment) and reports
// whether it did any work.
func (e *Engine) step() bool {
	e.cmu.Lock()
	defer e.cmu.Unlock()
	e.changed = false
	e.reapCancelled()

	b := &e.batch
	b.Tokens, b.Pos, b.Seq, b.Output = b.Tokens[:0], b.Pos[:0], b.Seq[:0], b.Output[:0]
	budget := e.opts.MaxBatchTokens

	// Running sequences, oldest first. Each leaves one token of budget for
	// every running sequence after it.
	for i := 0; i < len(e.running); i++ {
		s := e.running[i]
		later := len(e.running) - 1 - i
		n := min(len(s.tokens)-s.kv.Len, e.opts.PrefillChunk, budget-later)
		if !e.reserve(i, n) {
			i-- // s left the running list (preempted or failed)
			continue
		}
		budget -= e.schedule(s, n)
	}

	// Admission, first come first served.
	for budget > 0 && len(e.running) < e.opts.MaxSeqs {
		e.mu.Lock()
		if len(e.waiting) == 0 {
			e.mu.Unlock()
			break
		}
		s := e.waiting[0]
		e.mu.Unlock()
		if !e.admit(s) {
			break
		}
		e.mu.Lock()
		e.waiting = e.waiting[1:] // only the scheduler removes or prepends
		e.mu.Unlock()
		e.running = append(e.running, s)
		n := min(len(s.tokens)-s.kv.Len, e.opts.PrefillChunk, budget)
		if err := e.cache.Reserve(s.kv, n); err != nil { // admit checked the blocks
			e.finish(s, FinishError, err)
			continue
		}
		budget -= e.schedule(s, n)
	}

	if len(b.Tokens) == 0 {
		e.snapshot()
		return e.changed // a request ended: the queue may move
	}
	logits, err := e.m.Forward(*b, e.cache)
	nTok := len(b.Tokens)
	clear(b.Seq) // do not pin finished sequences
	var done []*seqState
	seqs := 0
	if err != nil {
		for _, s := range e.running {
			if s.n > 0 {
				done = append(done, s)
			}
		}
		for _, s := range done {
			e.finish(s, FinishError, fmt.Errorf("engine: forward: %w", err))
		}
	} else {
		vocab := e.m.Vocab
		row := 0
		for _, s := range slices.Clone(e.running) {
			if s.n == 0 {
				continue
			}
			seqs++
			if !e.opts.NoPrefixCache {
				e.cache.Commit(s.kv, s.tokens)
			}
			if s.kv.Len == len(s.tokens) { // logits came back
				e.sampleNext(s, logits[row*vocab:(row+1)*vocab])
				row++
			}
			s.n = 0
		}
	}
	e.mu.Lock()
	e.stats.Steps++
	e.stats.StepTokens += int64(nTok)
	e.stats.StepSeqs += int64(seqs)
	e.stats.LastTokens, e.stats.LastSeqs = nTok, seqs
	e.mu.Unlock()
	e.snapshot()
	return true
}

// schedule appends s's next n uncomputed tokens to the batch, asking for
// logits when they reach its last token, and returns n.
func (e *Engine) schedule(s *seqState, n int) int {
	b := &e.batch
	p0 := s.kv.Len
	for j := range n {
		b.Tokens = append(b.Tokens, s.tokens[p0+j])
		b.Pos = append(b.Pos, p0+j)
		b.Seq = append(b.Seq, s.kv)
		b.Output = append(b.Output, j == n-1 && p0+n == len(s.tokens))
	}
	s.n = n
	return n
}

// reserve finds blocks for n more tokens of running[i]: it frees idle
// sessions' blocks first (their full blocks stay in the prefix cache), then
// preempts the newest running sequences (never an older one). It reports
// false when running[i] itself left the running list: preempted because it
// was the newest, or failed because not even the whole cache holds it.
func (e *Engine) reserve(i, n int) bool {
	s := e.running[i]
	for {
		err := e.cache.Reserve(s.kv, n)
		if err == nil {
			return true
		}
		switch {
		case e.stealSessions():
		case len(e.running)-1 > i:
			e.preempt(e.running[len(e.running)-1])
		case i > 0:
			e.preempt(s)
			return false
		default:
			e.finish(s, FinishError, err)
			return false
		}
	}
}

// admit moves the head of the queue into the cache: it attaches the
// session's history or the longest cached prefix, then checks that the
// free blocks (after freeing idle sessions' if needed) hold the rest of its
// tokens, ceil(len/BlockSize) blocks in all. On false (no room) s stays
// waiting and holds no new blocks.
func (e *Engine) admit(s *seqState) bool {
	c := e.cache
	limit := len(s.tokens) - 1 // the last token is recomputed for its logits
	cached := 0
	if sess := s.sess; sess != nil {
		delete(e.idleSess, sess)
		if sess.closing {
			e.dropSession(sess)
			sess.closing = false
		}
		if sess.seq.Len > 0 {
			keep := min(commonPrefix(sess.ids, s.tokens), limit)
			cached = c.Truncate(&sess.seq, keep)
			sess.ids = sess.ids[:cached]
		}
	}
	if s.kv.Len == 0 && !e.opts.NoPrefixCache {
		c.Release(s.kv) // a session's rewind may have left no positions
		cached = c.Match(s.kv, s.tokens, limit)
	}
	for c.BlocksFor(len(s.tokens))-len(s.kv.Blocks) > c.FreeBlocks() {
		switch {
		case e.stealSessions():
		case len(e.running) > 0: // wait for running sequences to finish
			e.unadmit(s)
			return false
		default:
			// Cannot happen (the pool holds CtxSize positions and only
			// idle sessions could pin blocks); never wait forever.
			e.dequeue(s)
			e.finish(s, FinishError, fmt.Errorf("%w: %d tokens", kvcache.ErrOutOfBlocks, len(s.tokens)))
			return false
		}
	}
	if !s.admitted {
		s.admitted = true
		s.tSched = time.Now()
		s.res.Usage.CachedTokens = cached
		e.mu.Lock()
		e.stats.PrefixQueryTokens += int64(s.nPrompt)
		e.stats.PrefixHitTokens += int64(cached)
		e.mu.Unlock()
	}
	return true
}

// unadmit undoes admit's block attachments for a request that keeps
// waiting, so a queued request pins nothing.
func (e *Engine) unadmit(s *seqState) {
	if s.sess != nil {
		if s.sess.seq.Len > 0 {
			e.idleSess[s.sess] = struct{}{}
		}
		return
	}
	e.cache.Release(s.kv)
}

// dequeue removes s from the waiting queue.
func (e *Engine) dequeue(s *seqState) {
	e.mu.Lock()
	if i := slices.Index(e.waiting, s); i >= 0 {
		e.waiting = slices.Delete(e.waiting, i, i+1)
	}
	e.mu.Unlock()
}

// preempt frees s's blocks (its full blocks stay in the prefix cache) and
// puts it back in the queue in arrival order with all its tokens, so it
// recomputes them when readmitted.
func (e *Engine) preempt(s *seqState) {
	e.removeRunning(s)
	e.cache.Release(s.kv)
	if s.sess != nil {
		s.sess.ids = nil
	}
	s.n = 0
	e.mu.Lock()
	i, _ := slices.BinarySearchFunc(e.waiting, s.id, func(w *seqState, id uint64) int {
		return cmpU64(w.id, id)
	})
	e.waiting = slices.Insert(e.waiting, i, s)
	e.stats.Preemptions++
	e.mu.Unlock()
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// stealSessions frees the blocks of idle sessions (their full blocks stay
// in the prefix cache) and reports whether there were any.
func (e *Engine) stealSessions() bool {
	if len(e.idleSess) == 0 {
		return false
	}
	for sess := range e.idleSess {
		e.dropSession(sess)
	}
	return true
}

// dropSession releases a session's blocks (under cmu).
func (e *Engine) dropSession(sess *Session) {
	e.cache.Release(&sess.seq)
	sess.ids = nil
	delete(e.idleSess, sess)
}

// reapCancelled finishes running and waiting requests whose context is
// done.
func (e *Engine) reapCancelled() {
	var gone []*seqState
	for _, s := range e.running {
		if s.ctx.Err() != nil {
			gone = append(gone, s)
		}
	}
	e.mu.Lock()
	e.waiting = slices.DeleteFunc(e.waiting, func(s *seqState) bool {
		if s.ctx.Err() != nil {
			gone = append(gone, s)
			return true
		}
		return false
	})
	e.mu.Unlock()
	for _, s := range gone {
		e.finish(s, FinishCancelled, nil)
	}
}

func (e *Engine) removeRunning(s *seqState) {
	if i := slices.Index(e.running, s); i >= 0 {
		e.running = slices.Delete(e.running, i, i+1)
	}
}

// sampleNext draws s's next token from its logits (vocab), streams it and
// ends the sequence on a stop id, a stop string, max tokens or a full
// context.
func (e *Engine) sampleNext(s *seqState, logits []float32) {
	res := s.res
	healing := s.heal != nil && len(s.tokens) == s.nPrompt // the first token extends the removed one
	if healing {
		if len(e.healBuf) != len(logits) {
			e.healBuf = make([]float32, len(logits))
		}
		logits = s.heal.mask(e.healBuf, logits)
	}
	ch, err := s.sampler.Sample(logits, s.tokens, s.nPrompt)
	if err != nil {
		e.finish(s, FinishError, err)
		return
	}
	e.mu.Lock()
	e.stats.GeneratedTokens++
	e.mu.Unlock()
	if len(res.IDs) == 0 && s.tDecode.IsZero() {
		now := time.Now()
		res.Timings.TTFTMs = ms(now.Sub(s.start))
		prefill := now.Sub(s.tSched)
		res.Timings.PrefillMs = ms(prefill)
		if n := s.nPrompt - res.Usage.CachedTokens; prefill > 0 {
			res.Timings.PrefillTokS = float64(n) / prefill.Seconds()
		}
		s.tDecode = now
	}
	if s.stopIDs[ch.ID] {
		// The stop id itself is not part of the output; release any text
		// still held back (an incomplete stop-string prefix).
		if tail := s.flush(); tail != "" {
			e.emit(s, Token{ID: ch.ID, Text: tail, Logprob: ch.Logprob, Stop: true})
		}
		e.finish(s, FinishStop, nil)
		return
	}
	res.IDs = append(res.IDs, ch.ID)
	s.tokens = append(s.tokens, ch.ID)
	res.Usage.CompletionTokens = len(res.IDs)
	pos := len(s.tokens) - 1 // position of the token just sampled
	last := (s.pol.MaxTokens > 0 && len(res.IDs) >= s.pol.MaxTokens) || pos >= e.ctx
	var text string
	if healing {
		text = s.dec.NextAfter(ch.ID, s.heal.text) // the prompt shows the removed text
	} else {
		text = s.dec.Next(ch.ID)
	}
	piece, matched := s.stop.Push(text)
	if last && !matched {
		piece += s.flush()
	}
	e.emit(s, Token{ID: ch.ID, Text: piece, Logprob: ch.Logprob, Top: slices.Clone(ch.TopLogprobs)})
	switch {
	case matched:
		e.finish(s, FinishStop, nil)
	case last:
		e.finish(s, FinishLength, nil)
	}
}

// flush releases the text the decoder and the stop matcher hold back.
func (s *seqState) flush() string {
	t, matched := s.stop.Push(s.dec.Flush())
	if matched {
		return t
	}
	return t + s.stop.Flush()
}

func (e *Engine) emit(s *seqState, t Token) {
	s.text = append(s.text, t.Text...)
	if s.pol.Logprobs != nil {
		s.res.Logprobs = append(s.res.Logprobs, t)
	}
	s.out.push(t)
}

// finish ends s: it leaves the running list, returns its blocks (a
// session keeps them for its next turn), and hands the Result over.
func (e *Engine) finish(s *seqState, reason string, err error) {
	e.changed = true
	e.removeRunning(s)
	res := s.res
	res.FinishReason, res.Err = reason, err
	res.Text = string(s.text)
	if !s.tDecode.IsZero() {
		d := time.Since(s.tDecode)
		res.Timings.DecodeMs = ms(d)
		if n := len(res.IDs) - 1; n > 0 && d > 0 {
			res.Timings.DecodeTokS = float64(n) / d.Seconds()
		}
	}
	if sess := s.sess; sess != nil {
		if s.admitted {
			sess.ids = s.tokens[:sess.seq.Len:sess.seq.Len]
		}
		if sess.closing {
			e.dropSession(sess)
			sess.closing = false
		} else if sess.seq.Len > 0 {
			e.idleSess[sess] = struct{}{}
		}
		sess.busy.Store(false)
	} else {
		e.cache.Release(s.kv)
	}
	s.out.finish(res)
}

// snapshot copies the cache occupancy into the stats (under cmu).
func (e *Engine) snapshot() {
	e.mu.Lock()
	e.stats.Running = len(e.running)
	e.stats.KVBlocksUsed = e.cache.UsedBlocks()
	e.stats.KVBlocksCached = e.cache.CachedBlocks()
	e.mu.Unlock()
}
