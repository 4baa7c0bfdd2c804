package engine

import (
	"errors"
	"fmt"
)

// Speculative decoding (see "Speculative decoding" in the package
// comment): a proposer guesses the next k tokens of a decoding sequence,
// the step feeds the sequence's last token and the k guesses (k+1
// positions, all with logits) beside the other sequences' tokens, and the
// driver draws from the k+1 rows in order, keeping the guesses up to the
// first one the target's own draw disagrees with.

// Speculation modes (SpecOptions.Mode, --spec).
const (
	SpecOff   = "off"
	SpecNgram = "ngram"
)

// DefaultSpecK is SpecOptions.K when unset: the most tokens proposed for
// one sequence in one step.
const DefaultSpecK = 8

// MaxSpecK bounds SpecOptions.K.
const MaxSpecK = 64

// ErrSpecOptions is wrapped by every error about SpecOptions.
var ErrSpecOptions = errors.New("engine: invalid speculative decoding options")

// SpecOptions configure speculative decoding. The zero value is off.
type SpecOptions struct {
	// Mode is "" or SpecOff (no speculation), SpecNgram (prompt lookup)
	// or SpecDraft (a draft model: Proposer from NewDraft). A Proposer,
	// when set, is used whatever the mode.
	Mode string
	// K is the most tokens proposed per sequence and step (≤ 0:
	// DefaultSpecK). Unless Fixed, each sequence adapts its own k below
	// it to its acceptance and sits out after misses.
	K     int
	Fixed bool
	// NgramMin and NgramMax bound the suffix lengths prompt lookup matches
	// (≤ 0: 2 and 4); the longest suffix that occurs earlier wins.
	NgramMin, NgramMax int
	// Proposer replaces prompt lookup (tests and benchmarks: an oracle
	// replaying a known continuation).
	Proposer Proposer
}

// Proposer guesses how a sequence continues. Propose returns at most k
// token ids expected to follow tokens (prompt and generated ids so far),
// appended to dst[:0]; none means "do not speculate this step". It is
// called on the scheduler goroutine and must not block or keep tokens.
type Proposer interface {
	Propose(dst, tokens []int, k int) []int
}

// resolveSpec checks o and builds its proposer (nil: speculation off).
func resolveSpec(o *SpecOptions) (Proposer, error) {
	if o.K <= 0 {
		o.K = DefaultSpecK
	}
	if o.K > MaxSpecK {
		return nil, fmt.Errorf("%w: k %d above %d", ErrSpecOptions, o.K, MaxSpecK)
	}
	if o.NgramMin <= 0 {
		o.NgramMin = 2
	}
	if o.NgramMax <= 0 {
		o.NgramMax = max(4, o.NgramMin)
	}
	if o.NgramMin > o.NgramMax {
		return nil, fmt.Errorf("%w: n-gram min %d above max %d", ErrSpecOptions, o.NgramMin, o.NgramMax)
	}
	if o.Proposer != nil {
		return o.Proposer, nil
	}
	switch o.Mode {
	case "", SpecOff:
		return nil, nil
	case SpecNgram:
		return &Ngram{Min: o.NgramMin, Max: o.NgramMax}, nil
	case SpecDraft:
		return nil, fmt.Errorf("%w: mode draft needs a draft model (SpecOptions.Proposer from NewDraft)", ErrSpecOptions)
	}
	return nil, fmt.Errorf("%w: unknown mode %q (want off, ngram or draft)", ErrSpecOptions, o.Mode)
}

// Ngram is prompt lookup: it matches the sequence's last n tokens
// (n from Max down to Min) against the sequence's own earlier tokens,
// prompt and output, and proposes what followed the latest earlier
// occurrence. Code editing, summaries and quoting repeat their input, so
// the guess is often long and right; on free text it rarely finds a match
// and then proposes nothing (the step costs what a plain decode costs).
type Ngram struct{ Min, Max int }

// Propose implements Proposer. Cost: O(len(tokens)·n) comparisons.
func (g *Ngram) Propose(dst, tokens []int, k int) []int {
	dst = dst[:0]
	L := len(tokens)
	for n := min(g.Max, L-1); n >= g.Min && n >= 1; n-- {
		suf := tokens[L-n:]
		// Latest earlier occurrence tokens[i:i+n] == suf with i+n < L.
		for i := L - n - 1; i >= 0; i-- {
			if tokens[i] != suf[0] || !equalInts(tokens[i:i+n], suf) {
				continue
			}
			end := min(i+n+k, L)
			return append(dst, tokens[i+n:end]...)
		}
	}
	return dst
}

func equalInts(a, b []int) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Adaptive k. Verifying k proposals makes the step k tokens longer; it
// pays when the tokens it is expected to add outweigh that. The engine
// fits its step time online as t(n) = a + b·n for n batch tokens (least
// squares over recent decode steps — every sequence decoding, with or
// without proposals; prefill chunks cost less per token — stepCost), and each sequence keeps α, the
// rate at which its proposals are accepted (each proposal accepted given
// the ones before it were). With S sequences decoding in a step of time
// T = a + b·S, k proposals accepted at rate α add
//
//	E(k) − 1 = α + α² + … + α^k
//
// tokens to the step's S and cost b·k more time for all S sequences, so
// the batch's tokens per second improve iff (E(k) − 1)·T > S·b·k. The
// sequence proposes the k ≤ K with the largest gain (E(k) − 1)·T − S·b·k,
// or nothing when no k gains; then it probes with one proposal every
// specProbe decode steps so α follows the text (at most 1/specProbe of a
// token's cost lost on a model where speculation never pays). On a big
// model, where a step's time is mostly reading the weights (a ≫ b), k
// grows to K as soon as α is fair; on a tiny one, where each token costs
// its own compute (b ≫ a), only near-certain proposals are verified. A new
// sequence starts from the engine's record of recent verifications
// (Engine.specAll), so a request on a workload that speculates well does
// not first wait for a probe.

// specProbe is how many decode steps a sequence that does not speculate
// waits before it verifies one proposal anyway.
const specProbe = 16

// specState is one choice's acceptance record.
type specState struct {
	hits, trials float64 // decayed: proposals accepted, proposals examined
	idle         int     // decode steps without a verification
	seeded       bool    // started from the engine-wide record (Engine.specAll)
}

// specAlphaDecay weighs a sequence's earlier verifications.
const specAlphaDecay = 0.8

// alpha is the acceptance rate, with a prior of one hit in two trials.
func (st *specState) alpha() float64 { return (st.hits + 1) / (st.trials + 2) }

// update records a verification of proposed tokens of which the first
// accepted were kept: accepted hits, in accepted trials plus the rejected
// one, if any.
func (st *specState) update(proposed, accepted int) {
	trials := accepted
	if accepted < proposed {
		trials++
	}
	st.hits = st.hits*specAlphaDecay + float64(accepted)
	st.trials = st.trials*specAlphaDecay + float64(trials)
	st.idle = 0
}

// choose is the proposal length for a sequence with acceptance rate alpha
// among S decoding sequences, given the step-time fit (a, b; ok false:
// not fitted yet, then K), at most K.
func (st *specState) choose(K, S int, a, b float64, ok bool) int {
	if !ok || K <= 0 {
		return K
	}
	alpha := st.alpha()
	T := a + b*float64(S)
	best, bestGain := 0, 0.0
	gain, p := 0.0, 1.0
	for k := 1; k <= K; k++ {
		p *= alpha
		gain += p // E(k) − 1
		if g := gain*T - float64(S)*b*float64(k); g > bestGain {
			best, bestGain = k, g
		}
	}
	if best == 0 {
		if st.idle++; st.idle >= specProbe {
			st.idle = 0
			return 1
		}
	}
	return best
}

// stepCost fits step time = a + b·tokens by least squares over the recent
// steps (each observation's weight decays by costDecay per step). When the
// recent steps do not determine the fit (all of one size: nobody
// speculated lately) the last determined fit stands.
type stepCost struct {
	w, sn, snn, st, snt float64
	a, b                float64 // the last determined fit
	ok                  bool    // a fit was ever determined
}

const costDecay = 0.98

func (c *stepCost) observe(n int, seconds float64) {
	x := float64(n)
	c.w = c.w*costDecay + 1
	c.sn = c.sn*costDecay + x
	c.snn = c.snn*costDecay + x*x
	c.st = c.st*costDecay + seconds
	c.snt = c.snt*costDecay + x*seconds
	den := c.w*c.snn - c.sn*c.sn
	if c.w < 4 || den <= 0.01*c.w*c.w { // fewer than 4 steps, or the variance of n below 0.01
		return
	}
	b := (c.w*c.snt - c.sn*c.st) / den
	if b <= 0 {
		return
	}
	c.a, c.b, c.ok = max((c.st-b*c.sn)/c.w, 0), b, true
}

// fit returns a ≥ 0 and b > 0, or ok false while no fit was determined.
func (c *stepCost) fit() (a, b float64, ok bool) { return c.a, c.b, c.ok }
