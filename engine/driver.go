package engine

import (
	"fmt"
	"slices"
	"time"

	"nanoserve/sample"
)

// The driver: the Engine's one goroutine, a thin loop of plan → Forward →
// processors, sampler and output stage → commit. Everything it decides is
// decided by the scheduler (scheduler.go), the processors (processor.go)
// and the output stage (output.go).

// choice is one sequence's generation state on the driver's side: how it
// draws and what it has produced. The scheduler carries it in seq.c.
type choice struct {
	st      *Stream
	index   int
	pol     sample.Policy
	sampler *sample.Sampler
	procs   []LogitsProcessor
	out     *output
	res     *Result
	text    []byte
	noSpec  bool      // the request turned speculation off
	spec    specState // adaptive proposal length

	start, tDecode time.Time // submit, first token
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
			case fn := <-e.idle:
				e.cmu.Lock()
				fn()
				e.cmu.Unlock()
			case <-e.quit:
				e.shutdown()
				return
			}
		}
	}
}

// whenIdle runs fn on the scheduler goroutine the next time it has nothing
// to do (no sequence running or admissible), and returns after it ran:
// tests observe a settled engine through it without sleeping or locking.
func (e *Engine) whenIdle(fn func()) {
	done := make(chan struct{})
	select {
	case e.idle <- func() { fn(); close(done) }:
		<-done
	case <-e.done:
	}
}

// shutdown ends every request with ErrClosed.
func (e *Engine) shutdown() {
	e.cmu.Lock()
	e.takeInbox()
	for _, s := range e.sch.drain() {
		e.endSeq(s, FinishError, ErrClosed)
	}
	e.snapshot()
	e.cmu.Unlock()
	e.deliver()
}

// takeInbox hands the submitted sequences to the scheduler (under cmu)
// and returns how many there were.
func (e *Engine) takeInbox() int {
	e.mu.Lock()
	in := e.inbox
	e.inbox = nil
	e.mu.Unlock()
	for _, s := range in {
		e.sch.add(s)
	}
	return len(in)
}

// endSeq ends s's choice and the choices it had yet to fork into.
func (e *Engine) endSeq(s *seq, reason string, err error) {
	e.end(s.c, reason, err)
	for _, c := range s.forks {
		e.end(c, reason, err)
	}
}

// step runs one scheduler iteration (see the package comment) and reports
// whether it did any work.
func (e *Engine) step() bool {
	e.cmu.Lock()
	in := e.takeInbox()
	p := e.sch.plan()
	worked := in > 0 || len(p.ended) > 0
	for _, x := range p.ended {
		e.endSeq(x.s, x.reason, x.err)
	}
	if len(p.seqs) > 0 {
		worked = true
		nTok, nSeq := len(p.batch.Tokens), len(p.seqs)
		t0 := time.Now()
		logits, err := e.fw.Forward(*p.batch, e.cache)
		clear(p.batch.Seq) // do not pin finished sequences
		r := stepResult{err: err}
		generated := 0
		if err == nil {
			r.rows = make([][]sampled, len(p.out))
			off := 0 // first logits row of s
			for i, s := range p.out {
				rows := logits[off*e.vocab : (off+s.rows())*e.vocab]
				off += s.rows()
				if len(s.draft) > 0 {
					x := e.verify(s, rows)
					r.rows[i] = []sampled{x}
					generated += 1 + x.accepted
					continue
				}
				r.rows[i] = e.drawAll(s, rows)
				generated += len(r.rows[i])
			}
			if e.proposer != nil && decodeOnly(p) {
				e.cost.observe(nTok, time.Since(t0).Seconds())
			}
		}
		for _, s := range e.sch.commit(p, r) {
			if err != nil {
				e.endSeq(s, FinishError, fmt.Errorf("engine: forward: %w", err))
			}
		}
		e.mu.Lock()
		e.stats.GeneratedTokens += int64(generated)
		e.stats.Steps++
		e.stats.StepTokens += int64(nTok)
		e.stats.StepSeqs += int64(nSeq)
		e.stats.LastTokens, e.stats.LastSeqs = nTok, nSeq
		e.mu.Unlock()
	}
	e.snapshot()
	e.cmu.Unlock()
	e.deliver()
	return worked
}

// decodeOnly reports whether every sequence of the step decodes (one
// token, or one and its proposals, all with logits): the steps whose time
// the speculation cost model fits (prefill chunks cost less per token).
func decodeOnly(p *plan) bool {
	if len(p.seqs) != len(p.out) {
		return false
	}
	for _, s := range p.seqs {
		if s.n != s.rows() || len(s.forks) > 0 {
			return false
		}
	}
	return true
}

// drawAll draws s's next token from its logits (vocab), and the first
// token of each choice s forks into, from copies of the same logits.
func (e *Engine) drawAll(s *seq, logits []float32) []sampled {
	out := make([]sampled, 1+len(s.forks))
	for j, c := range s.forks {
		if cap(e.scratch) < len(logits) {
			e.scratch = make([]float32, len(logits))
		}
		l := e.scratch[:len(logits)]
		copy(l, logits)
		out[1+j] = e.draw(s, c, s.tokens, l)
	}
	out[0] = e.draw(s, s.c, s.tokens, logits)
	return out
}

// verify draws s's tokens from the k+1 rows (vocab each) of a speculative
// step, in order: row j follows s.tokens and draft[:j]. It goes on while
// the draw equals the proposal and stops at the first draw that differs
// (that token is kept: it is what plain decoding would have drawn), after
// the k+1-th draw, or when the sequence ends. Each emitted token goes
// through the processors, the sampler and the output stage exactly as in
// plain decoding, one draw per emitted token, so greedy and seeded output
// equal plain decoding's (see "Speculative decoding").
func (e *Engine) verify(s *seq, logits []float32) sampled {
	c, k, T := s.c, len(s.draft), len(s.tokens)
	hist := append(s.tokens, s.draft...) // s.tokens then the proposals (s.tokens itself is unchanged)
	for j := 0; ; j++ {
		x := e.draw(s, c, hist[:T+j], logits[j*e.vocab:(j+1)*e.vocab])
		if x.done || j == k || x.token != s.draft[j] {
			x.accepted = j
			e.specStats(c, k, j)
			return x
		}
	}
}

// specStats counts one verification of k proposals of which the first a
// were accepted, and adapts c's proposal length.
func (e *Engine) specStats(c *choice, k, a int) {
	c.spec.update(k, a)
	e.specAll.update(k, a)
	e.mu.Lock()
	e.stats.SpecDrafts++
	e.stats.SpecDraftTokens += int64(k)
	e.stats.SpecAcceptedTokens += int64(a)
	for j := range a {
		e.stats.SpecAcceptedPerPos[j]++
	}
	e.mu.Unlock()
}

// propose is the scheduler's proposer hook: at most room tokens to follow
// s, fewer by the choice's adaptive k and its remaining max tokens.
func (e *Engine) propose(s *seq, room int) []int {
	c := s.c
	if c.noSpec || c.res.FinishReason != "" {
		return s.draft[:0]
	}
	k := min(room, e.spec.K)
	if !c.spec.seeded {
		// A new sequence starts from the engine's recent acceptance, not
		// from an uninformed prior: on a tiny model the prior alone would
		// not pay for a proposal, and the sequence would wait for its
		// first probe.
		c.spec.hits, c.spec.trials, c.spec.seeded = e.specAll.hits, e.specAll.trials, true
	}
	if !e.spec.Fixed {
		a, b, ok := e.cost.fit()
		k = c.spec.choose(k, len(e.sch.running), a, b, ok)
	}
	if mt := c.out.maxTokens; mt > 0 {
		k = min(k, mt-c.out.n-1) // the step draws up to k+1 tokens
	}
	if k <= 0 {
		return s.draft[:0]
	}
	d := e.proposer.Propose(s.draft, s.tokens, k)
	for i, t := range d {
		if t < 0 || t >= e.vocab {
			return d[:i] // a proposer's bad id is never fed to the model
		}
	}
	return d
}

// draw runs c's processors, sampler and output stage on logits (edited in
// place) for the token after hist (s's tokens, and in a speculative step
// the proposals accepted so far), and streams it.
func (e *Engine) draw(s *seq, c *choice, hist []int, logits []float32) sampled {
	fail := func(err error) sampled {
		e.end(c, FinishError, err)
		return sampled{done: true}
	}
	for _, p := range c.procs {
		if err := p.Process(logits); err != nil {
			return fail(fmt.Errorf("engine: logits processor: %w", err))
		}
	}
	ch, err := c.sampler.Sample(logits, hist, s.nPrompt)
	if err != nil {
		return fail(err)
	}
	for _, p := range c.procs {
		if err := p.Accept(ch.ID); err != nil {
			return fail(fmt.Errorf("engine: logits processor: %w", err))
		}
	}
	res := c.res
	if c.tDecode.IsZero() {
		now := time.Now()
		res.Usage.CachedTokens = s.cached
		res.Timings.TTFTMs = ms(now.Sub(c.start))
		prefill := now.Sub(s.tSched)
		res.Timings.PrefillMs = ms(prefill)
		if n := s.nPrompt - s.cached; prefill > 0 {
			res.Timings.PrefillTokS = float64(n) / prefill.Seconds()
		}
		c.tDecode = now
	}
	pc := c.out.accept(ch.ID, len(hist))
	if pc.stop {
		if pc.text != "" {
			e.emit(c, Token{Index: c.index, ID: ch.ID, Text: pc.text, Logprob: ch.Logprob, Stop: true})
		}
		e.end(c, FinishStop, nil)
		return sampled{token: ch.ID, done: true}
	}
	res.IDs = append(res.IDs, ch.ID)
	res.Usage.CompletionTokens = len(res.IDs)
	e.emit(c, Token{Index: c.index, ID: ch.ID, Text: pc.text, Logprob: ch.Logprob, Top: slices.Clone(ch.TopLogprobs)})
	if pc.finish != "" {
		e.end(c, pc.finish, nil)
		return sampled{token: ch.ID, done: true}
	}
	return sampled{token: ch.ID}
}

func (e *Engine) emit(c *choice, t Token) {
	c.text = append(c.text, t.Text...)
	if c.pol.Logprobs != nil {
		c.res.Logprobs = append(c.res.Logprobs, t)
	}
	c.st.push(t)
	if !c.st.dirty {
		c.st.dirty = true
		e.landed = append(e.landed, c.st)
	}
}

// end completes c's Result; it is handed to the caller after the step,
// once the scheduler has freed the sequence's blocks.
func (e *Engine) end(c *choice, reason string, err error) {
	res := c.res
	if res.FinishReason != "" {
		return // already ended
	}
	res.FinishReason, res.Err = reason, err
	res.Text = string(c.text)
	if !c.tDecode.IsZero() {
		d := time.Since(c.tDecode)
		res.Timings.DecodeMs = ms(d)
		if n := len(res.IDs) - 1; n > 0 && d > 0 {
			res.Timings.DecodeTokS = float64(n) / d.Seconds()
		}
	}
	e.ending = append(e.ending, c)
}

// deliver wakes the readers of the streams that got tokens and hands the
// results of the choices that ended to their streams (outside cmu).
func (e *Engine) deliver() {
	e.cmu.Lock()
	ending, landed := e.ending, e.landed
	e.ending, e.landed = nil, nil
	for _, st := range landed {
		st.dirty = false
	}
	e.cmu.Unlock()
	for _, st := range landed {
		st.signal()
	}
	for _, c := range ending {
		c.st.finish(c.res)
	}
}

// snapshot copies the scheduler's state into the stats (under cmu).
func (e *Engine) snapshot() {
	e.slots.update(e.sch.running)
	e.mu.Lock()
	copy(e.slotView, e.slots.view)
	e.stats.Running = len(e.sch.running)
	e.nWaiting = len(e.sch.waiting)
	e.stats.KVBlocksUsed = e.cache.UsedBlocks()
	e.stats.KVBlocksCached = e.cache.CachedBlocks()
	e.stats.StateSlotsUsed = e.cache.StateSlots() - e.cache.FreeStates()
	e.stats.Preemptions = e.sch.preemptions
	e.stats.PrefixQueryTokens = e.sch.prefixQuery
	e.stats.PrefixHitTokens = e.sch.prefixHit
	e.mu.Unlock()
}
