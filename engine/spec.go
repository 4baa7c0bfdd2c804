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

// specState is one choice's adaptive proposal length: k doubles after a
// fully accepted proposal and drops to one past the accepted count
// otherwise; a proposal with nothing accepted also makes the sequence sit
// out `skip` decode steps, a wait that doubles with each consecutive miss
// (up to 32 steps). So a sequence whose guesses keep failing pays for one
// wasted verification row in ~32 steps, and one whose guesses land
// proposes up to K at once.
type specState struct {
	k       int // current proposal length (1..K)
	skip    int // decode steps left to sit out
	backoff int // next sit-out length after a miss
}

const specMaxBackoff = 32

// next is the proposal length for this step (0: sit out).
func (st *specState) next(K int, fixed bool) int {
	if fixed {
		return K
	}
	if st.skip > 0 {
		st.skip--
		return 0
	}
	if st.k <= 0 {
		st.k = K
	}
	return min(st.k, K)
}

// update records a verification of proposed tokens of which accepted were
// kept.
func (st *specState) update(proposed, accepted, K int) {
	switch {
	case accepted == proposed:
		st.k = min(2*st.k, K)
		st.backoff = 0
	case accepted == 0:
		st.k = 1
		st.backoff = min(max(1, 2*st.backoff), specMaxBackoff)
		st.skip = st.backoff
	default:
		st.k = accepted + 1
		st.backoff = 0
	}
}
