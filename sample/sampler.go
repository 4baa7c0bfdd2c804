package sample

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// ErrNoCandidates is returned when no token can be drawn: every logit (after
// bias and penalties) is -Inf.
var ErrNoCandidates = errors.New("sample: every token has probability zero (all logits are -Inf)")

// Logprob is one token's log-probability under the model's raw distribution.
type Logprob struct {
	ID      int     `json:"id"`
	Logprob float32 `json:"logprob"`
}

// Choice is the result of one Sample call.
type Choice struct {
	ID int
	// Logprob is the chosen token's log-softmax of the unmodified logits; set
	// only when Policy.Logprobs != nil (-Inf if its raw logit was -Inf).
	Logprob float32
	// TopLogprobs holds the Policy.Logprobs most likely tokens of the raw
	// distribution, most likely first (ties: lower id first). It aliases the
	// Sampler's buffer and is valid until the next Sample call; copy to keep.
	TopLogprobs []Logprob
}

// cand is a candidate token: id, logit after bias and penalties, and integer
// weight w (0 until computed).
type cand struct {
	id int32
	v  float32
	w  uint64
}

// Sampler draws tokens for one request under a fixed Policy with its own
// random generator. It is not safe for concurrent use; use one per sequence.
// Its scratch buffers (a few vocab-sized slices, allocated on first use) are
// reused, so Sample does not allocate in steady state.
type Sampler struct {
	p     Policy // validated copy, Seed filled in
	vocab int
	seed  uint64
	rng   rng
	draws uint64

	invT       float64 // 1/T; 0 = greedy
	topK       int     // 0 = off (also when >= vocab)
	topP       float64 // 1 = off
	minW       uint64  // min_p as a weight: ⌈min_p·scale⌉; 0 = off
	scale      float64 // 2^shift, shift = 63 − bitlen(vocab)
	xmin       float64 // exponents below it give weight 0: −(shift+1)·ln2
	rep        float32 // 1 = off
	window     int     // repetition window; 0 = whole history
	pres, freq float32
	biasID     []int32   // sorted ids
	biasVal    []float32 // (len(biasID))
	nLogprobs  int       // -1 = none

	work    []float32         // (vocab) logits after bias and penalties
	cnt     []int32           // (vocab) per-token output count | winFlag; all zero between calls
	touched []int32           // ids with cnt != 0 during a call
	w       []uint64          // (vocab) weights, only without top-k
	heap    []cand            // (top_k) selection heap
	cands   []cand            // candidate scratch, up to (vocab)
	topHeap []cand            // (logprobs) selection heap for alternatives
	top     []Logprob         // (logprobs) returned alternatives
	hist    *[histBins]uint64 // top-p weight histogram, see topPCut
	histMin int               // histogram bins below it hold only tokens top-p drops
}

// errDrawOverrun reports a broken internal invariant (t < kept weight always).
var errDrawOverrun = errors.New("sample: internal error: draw ran past the kept weight")

const winFlag = 1 << 30 // cnt bit: token is inside the repetition window

var negInf32 = float32(math.Inf(-1))

// New returns a Sampler for policy p over a vocabulary of vocabSize tokens.
// It validates p (including token ids against the vocabulary). If p.Seed is
// nil it picks a random seed; Seed and Policy report it.
func New(p Policy, vocabSize int) (*Sampler, error) {
	if vocabSize <= 0 || vocabSize > math.MaxInt32 {
		return nil, fmt.Errorf("sample: vocabulary size must be in [1, %d], got %d", math.MaxInt32, vocabSize)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := p.checkVocab(vocabSize); err != nil {
		return nil, err
	}
	s := &Sampler{vocab: vocabSize, nLogprobs: -1}
	if p.Seed != nil {
		s.seed = *p.Seed
	} else {
		s.seed = rand.Uint64()
	}
	p.Version = Version
	p.Seed = &s.seed
	p.LogitBias = maps.Clone(p.LogitBias)
	p.Stop = slices.Clone(p.Stop)
	p.StopTokenIDs = slices.Clone(p.StopTokenIDs)
	if p.Logprobs != nil {
		n := *p.Logprobs
		p.Logprobs = &n
		s.nLogprobs = n
	}
	s.p = p
	s.rng = newRNG(s.seed)

	if p.Temperature > 0 {
		s.invT = 1 / float64(p.Temperature)
	}
	if p.TopK > 0 && p.TopK < vocabSize {
		s.topK = p.TopK
	}
	s.topP = float64(p.TopP)
	s.scale = math.Ldexp(1, 63-bits.Len(uint(vocabSize)))
	s.minW = uint64(math.Ceil(float64(p.MinP) * s.scale))
	// Top-p drops every token with V·w <= W − L (the weight ranked at or
	// after it is at most V·w), and W − L >= (1−top_p)·2^shift − 1 because
	// the best token weighs 2^shift: below histMin no token can be kept.
	if tau := ((1-s.topP)*s.scale*(1-0x1p-20) - 1) / float64(vocabSize); tau >= 1 {
		s.histMin = histKey(uint64(tau))
	}
	// Below xmin, e <= 2^-(shift+1)·(1+ulps) < 2^-shift: the weight is 0.
	s.xmin = -float64(64-bits.Len(uint(vocabSize))) * math.Ln2
	s.rep = p.RepetitionPenalty
	if p.RepeatLastN > 0 {
		s.window = p.RepeatLastN
	}
	s.pres, s.freq = p.PresencePenalty, p.FrequencyPenalty
	for _, id := range slices.Sorted(maps.Keys(p.LogitBias)) {
		if b := p.LogitBias[id]; b != 0 {
			s.biasID = append(s.biasID, int32(id))
			s.biasVal = append(s.biasVal, b)
		}
	}
	return s, nil
}

// Seed returns the seed of the sampler's random generator.
func (s *Sampler) Seed() uint64 { return s.seed }

// Policy returns the sampler's policy, with Seed set to the seed in use.
func (s *Sampler) Policy() Policy {
	p := s.p
	seed := s.seed
	p.Seed = &seed
	p.LogitBias = maps.Clone(p.LogitBias)
	p.Stop = slices.Clone(p.Stop)
	p.StopTokenIDs = slices.Clone(p.StopTokenIDs)
	if p.Logprobs != nil {
		n := *p.Logprobs
		p.Logprobs = &n
	}
	return p
}

// Draws returns how many uniform numbers the sampler has drawn: one per
// Sample call with temperature > 0, none when greedy. Seed and Draws together
// determine the generator's state.
func (s *Sampler) Draws() uint64 { return s.draws }

// Sample chooses the next token from logits (vocab), the model's scores for the
// next position, given history = prompt + output so far, whose first promptLen
// tokens are the prompt. logits is not modified. The steps, in this fixed
// order, define the result bit for bit (same logits, history and seed give the
// same token on every platform):
//
//  1. l = logits; l[id] += logit_bias[id]; for each distinct id in the last
//     repeat_last_n tokens of history: l[id] = l[id]/r if l[id] > 0 else
//     l[id]·r; for each id with count c > 0 in history[promptLen:]:
//     l[id] −= frequency_penalty·c, then l[id] −= presence_penalty
//     (float32 arithmetic, each operation rounded; a penalised logit above
//     MaxFloat32 saturates there).
//  2. Temperature 0: return the first index of max(l). No random number is drawn.
//  3. Candidates: the top_k largest l (ties: lower id) if top_k is on, else
//     every token. m = max l over them. Each gets an integer weight
//     w_i = ⌊exp((l_i − m)·(1/T))·2^s⌋ with the package's deterministic exp
//     (float64) and s = 63 − bitlen(vocab), so the best token weighs 2^s and
//     Σw < 2^63. Tokens with w_i = 0 (probability below 2^-s of the best's,
//     2^-46 for a 128k vocabulary) can never be drawn. W = Σ w_i, exact.
//  4. top_p < 1: L = max(1, ⌊float64(top_p)·float64(W)⌋); walking the
//     candidates by l descending (ties: lower id first), a token is kept iff
//     the weight of the tokens before it is < L.
//  5. min_p > 0: keep only tokens with w_i >= ⌈min_p·2^s⌉ (p_i >= min_p·p_max).
//  6. Draw: r = next64() >> 11 from xoshiro256** (exactly one per call);
//     t = ⌊r·W_kept / 2^53⌋ (exact 128-bit product); walk the kept tokens in
//     ascending id order and return the first whose running weight exceeds t.
//
// Integer weights make every sum exact, so top-p can find its cut from
// per-bucket totals without sorting the vocabulary, and the draw walks ids in
// ascending order (not by probability) so sampling without top-k never sorts.
func (s *Sampler) Sample(logits []float32, history []int, promptLen int) (Choice, error) {
	if len(logits) != s.vocab {
		return Choice{}, fmt.Errorf("sample: got %d logits, want the vocabulary size %d", len(logits), s.vocab)
	}
	if promptLen < 0 || promptLen > len(history) {
		return Choice{}, fmt.Errorf("sample: prompt length %d outside the history of %d tokens", promptLen, len(history))
	}
	// One vectorised pass finds the maximum and rejects NaN and +Inf (-Inf
	// is a masked token).
	m0, ok := maxValid(logits)
	if !ok {
		for i, v := range logits {
			if !(v <= math.MaxFloat32) {
				return Choice{}, fmt.Errorf("sample: logits[%d] is %v", i, v)
			}
		}
	}
	l, m := logits, m0
	if s.modifies(history, promptLen) {
		if s.work == nil {
			s.work = make([]float32, s.vocab)
		}
		copy(s.work, logits)
		for j, id := range s.biasID {
			s.work[id] += s.biasVal[j]
		}
		if err := s.penalise(history, promptLen); err != nil {
			return Choice{}, err
		}
		l = s.work
		m, _ = maxValid(l) // penalise keeps every value <= MaxFloat32
	}
	var (
		id  int
		err error
		z   float64 // Σ exp(logits − m0) for the log-probabilities, if computed
	)
	switch {
	case s.invT == 0:
		id, err = argmax(l, m)
	case s.topK > 0:
		id, err = s.sampleTopK(l)
	default:
		// At T = 1 on the raw logits, the weights and the log-softmax sum
		// exponentiate the same numbers: one pass computes both.
		fuse := s.nLogprobs >= 0 && s.invT == 1 && s.topP >= 1 && &l[0] == &logits[0]
		id, err = s.sampleFull(l, m, fuse, &z)
	}
	if err != nil {
		return Choice{}, err
	}
	ch := Choice{ID: id}
	if s.nLogprobs >= 0 {
		s.rawLogprobs(logits, m0, z, &ch)
	}
	return ch, nil
}

// modifies reports whether bias or a penalty changes any logit this call.
func (s *Sampler) modifies(history []int, promptLen int) bool {
	return len(s.biasID) > 0 ||
		(s.rep != 1 && len(history) > 0) ||
		((s.pres != 0 || s.freq != 0) && len(history) > promptLen)
}

// penalise applies the repetition, frequency and presence penalties to s.work.
// It touches only tokens present in history: cnt (vocab, zero at rest) holds
// each token's output count plus winFlag if it lies in the repetition window,
// and is reset through the touched list.
func (s *Sampler) penalise(history []int, promptLen int) error {
	if len(history) >= winFlag {
		return fmt.Errorf("sample: history of %d tokens is too long", len(history))
	}
	if s.cnt == nil {
		s.cnt = make([]int32, s.vocab)
	}
	if s.rep != 1 {
		win := history
		if s.window > 0 && len(win) > s.window {
			win = win[len(win)-s.window:]
		}
		for _, id := range win {
			if uint(id) >= uint(s.vocab) {
				return s.badHistory(id)
			}
			c := s.cnt[id]
			if c == 0 {
				s.touched = append(s.touched, int32(id))
			}
			s.cnt[id] = c | winFlag
		}
	}
	if s.pres != 0 || s.freq != 0 {
		for _, id := range history[promptLen:] {
			if uint(id) >= uint(s.vocab) {
				return s.badHistory(id)
			}
			c := s.cnt[id]
			if c == 0 {
				s.touched = append(s.touched, int32(id))
			}
			s.cnt[id] = c + 1
		}
	}
	for _, id := range s.touched {
		c := s.cnt[id]
		s.cnt[id] = 0
		v := s.work[id]
		if c&winFlag != 0 {
			if v > 0 {
				v = v / s.rep
			} else {
				v = v * s.rep
			}
		}
		if n := c &^ winFlag; n > 0 {
			v = v - float32(s.freq*float32(n))
			v = v - s.pres
		}
		s.work[id] = min(v, math.MaxFloat32) // l/r can overflow to +Inf
	}
	s.touched = s.touched[:0]
	return nil
}

func (s *Sampler) badHistory(id int) error {
	for _, t := range s.touched {
		s.cnt[t] = 0
	}
	s.touched = s.touched[:0]
	return fmt.Errorf("sample: history holds token %d, outside the vocabulary (%d tokens)", id, s.vocab)
}

// argmax returns the first index of the maximum m of l.
func argmax(l []float32, m float32) (int, error) {
	if m == negInf32 {
		return 0, ErrNoCandidates
	}
	return indexEqual(l, m), nil
}

// worse reports whether a ranks below b: lower logit, or equal logit and higher id.
func worse(a, b cand) bool { return a.v < b.v || (a.v == b.v && a.id > b.id) }

// byDesc orders by logit descending, ties by lower id.
func byDesc(a, b cand) int {
	if a.v != b.v {
		if a.v > b.v {
			return -1
		}
		return 1
	}
	return cmp.Compare(a.id, b.id)
}

func byID(a, b cand) int { return cmp.Compare(a.id, b.id) }

// selectTop returns, in heap order (worst at h[0]), the k best tokens of l
// (finite or not, -Inf excluded) using h's storage: one pass over l with a
// size-k min-heap, O(V + k·log k·log(V/k)) on typical inputs.
func selectTop(l []float32, k int, h []cand) []cand {
	h = h[:0]
	i := 0
	for ; i < len(l) && len(h) < k; i++ {
		if v := l[i]; v != negInf32 {
			h = append(h, cand{id: int32(i), v: v})
			siftUp(h, len(h)-1)
		}
	}
	if len(h) < k {
		return h
	}
	root := h[0].v
	for {
		// Ids ascend, so an equal logit ranks below the root: only > can
		// enter. indexAbove skips the (many) tokens that cannot, 8 at a time.
		if i = indexAbove(l, i, root); i == len(l) {
			return h
		}
		h[0] = cand{id: int32(i), v: l[i]}
		siftDown(h, 0)
		root = h[0].v
		i++
	}
}

func siftUp(h []cand, j int) {
	for j > 0 {
		p := (j - 1) / 2
		if !worse(h[j], h[p]) {
			return
		}
		h[j], h[p] = h[p], h[j]
		j = p
	}
}

func siftDown(h []cand, j int) {
	n := len(h)
	for {
		c := 2*j + 1
		if c >= n {
			return
		}
		if c+1 < n && worse(h[c+1], h[c]) {
			c++
		}
		if !worse(h[c], h[j]) {
			return
		}
		h[j], h[c] = h[c], h[j]
		j = c
	}
}

// weight returns w = ⌊expDet((v − m)·invT)·2^shift⌋. The core of expDet is
// repeated in weights for speed; a test pins that both agree bit for bit.
func weight(v float32, m, invT, scale float64) uint64 {
	return uint64(expDet((float64(v)-m)*invT) * scale)
}

// sampleTopK draws from the top_k best tokens.
func (s *Sampler) sampleTopK(l []float32) (int, error) {
	if s.heap == nil {
		s.heap = make([]cand, 0, s.topK)
	}
	h := selectTop(l, s.topK, s.heap)
	if len(h) == 0 {
		return 0, ErrNoCandidates
	}
	c := append(s.cands[:0], h...)
	s.cands = c
	m := c[0].v
	for _, x := range c {
		m = max(m, x.v)
	}
	var sum uint64
	for j := range c {
		c[j].w = weight(c[j].v, float64(m), s.invT, s.scale)
		sum += c[j].w
	}
	slices.SortFunc(c, byDesc)
	n := len(c)
	if s.topP < 1 {
		limit := s.topPLimit(sum)
		var before uint64
		for j, x := range c {
			if before >= limit {
				n = j
				break
			}
			before += x.w
		}
	}
	// min_p, and drop zero weights (they sort last).
	for n > 0 && (c[n-1].w == 0 || c[n-1].w < s.minW) {
		n--
	}
	c = c[:n]
	slices.SortFunc(c, byID)
	sum = 0
	for _, x := range c {
		sum += x.w
	}
	t := s.target(sum)
	var acc uint64
	for _, x := range c {
		acc += x.w
		if acc > t {
			return int(x.id), nil
		}
	}
	return 0, errDrawOverrun
}

// topPLimit returns L = max(1, ⌊float64(top_p)·float64(W)⌋): a token is kept
// by top-p iff the weight ranked before it is < L.
func (s *Sampler) topPLimit(w uint64) uint64 {
	return max(1, uint64(s.topP*float64(w)))
}

// target draws one uniform number and returns t = ⌊r·W/2^53⌋ for r the top 53
// bits of the next output: an exact integer, uniform over [0, W) up to 2^-53.
func (s *Sampler) target(w uint64) uint64 {
	r := s.rng.next() >> 11
	s.draws++
	hi, lo := bits.Mul64(r, w)
	return hi<<11 | lo>>53
}

// sampleFull draws without top-k: integer weights for the whole vocabulary,
// then top-p / min-p, then a pass in id order. Because the weights are
// integers, the weight ranked before a token does not depend on summation
// order, so top-p does not need the vocabulary sorted (see topPCut). Every
// rule leaves the kept set as {i : w[i] >= thr} (top-p zeroes the few
// tokens it drops above thr), so the draw is one vectorised walk.
//
// With fuse (T = 1, no top-p, l the raw logits) it also sets *z to
// expSum(l, m).
func (s *Sampler) sampleFull(l []float32, m float32, fuse bool, z *float64) (int, error) {
	if m == negInf32 {
		return 0, ErrNoCandidates
	}
	if s.w == nil {
		s.w = make([]uint64, s.vocab)
	}
	w := s.w
	var sum uint64
	switch {
	case s.topP < 1:
		if s.hist == nil {
			s.hist = new([histBins]uint64)
		}
		sum = weightsHist(w, l, float64(m), s.invT, s.scale, s.xmin, s.hist, s.histMin)
	case fuse:
		sum, *z = weightsExpSum(w, l, float64(m), s.scale, s.xmin)
	default:
		sum = weights(w, l, float64(m), s.invT, s.scale, s.xmin)
	}
	thr := max(s.minW, 1)
	if s.topP < 1 {
		var kept uint64
		thr, kept = s.topPCut(w, l, m, sum)
		if s.minW > thr { // min_p removes more: keep w >= minW
			thr = s.minW
			kept = sumAtLeast(w, thr)
		}
		sum = kept
	} else if thr > 1 {
		sum = sumAtLeast(w, thr)
	}
	t := s.target(sum)
	if i := drawAtLeast(w, thr, t); i < len(w) {
		return i, nil
	}
	return 0, errDrawOverrun
}

// topPCut applies top-p to the weights w (sum W) of logits l. It returns thr
// and the kept weight such that, once it has zeroed the weights of the
// dropped tokens that weigh thr or more, top-p keeps exactly the tokens with
// w[i] >= thr.
//
// A token is kept iff the weight ranked before it (logit descending, ties by
// lower id) is < L. Weights are monotone in rank, so a histogram keyed by the
// weight's leading bits (monotone in the weight, equal for equal weights)
// splits the ranking into contiguous bins; walking the bins from the heaviest
// finds the one in which the running weight reaches L. Everything heavier is
// kept, everything lighter dropped, and only that bin's tokens are sorted.
func (s *Sampler) topPCut(w []uint64, l []float32, m float32, sum uint64) (thr, kept uint64) {
	hist := s.hist // filled by weightsHist
	limit := s.topPLimit(sum)
	var before uint64
	k := histBins - 1
	for ; k > 0; k-- {
		if before+hist[k] >= limit {
			break
		}
		before += hist[k]
	}
	lo, hi := histRange(k) // k >= 1 and the bin holds weight: lo >= 1
	// The bin's tokens have logits in [a, b]: scan the logits (half the
	// bytes of w) and check the weight of each hit.
	a, b := s.logitRange(m, lo, hi)
	c := s.cands[:0]
	for i := indexBetween(l, 0, a, b); i < len(l); i = indexBetween(l, i+1, a, b) {
		if x := w[i]; x-lo < hi-lo {
			c = append(c, cand{id: int32(i), v: l[i], w: x})
		}
	}
	s.cands = c
	slices.SortFunc(c, byDesc)
	j := 0
	for ; j < len(c) && before < limit; j++ {
		before += c[j].w
	}
	for _, x := range c[j:] {
		w[x.id] = 0
	}
	return lo, before
}

// logitRange returns float32 bounds [a, b] that hold the logit of every
// token whose weight lies in [lo, hi) (lo >= 1), given the maximum m. With
// y = ln(w·2^-shift), a weight in [lo, hi) means ln(lo)−shift·ln2 <= y <
// ln(hi)−shift·ln2 up to expDet's error (~1e-16 relative), and l = m + y/invT
// up to a few float rounding errors. The bounds widen that by 1e-6 (relative
// and absolute), far more than all those errors together: a superset.
func (s *Sampler) logitRange(m float32, lo, hi uint64) (a, b float32) {
	const margin = 1e-6
	shiftLn2 := math.Log(s.scale)
	ya := math.Log(float64(lo)) - shiftLn2
	yb := math.Log(float64(hi)) - shiftLn2
	m64 := float64(m)
	la := m64 + (ya-margin*(1+math.Abs(ya)))/s.invT - margin*(1+math.Abs(m64))
	lb := m64 + (yb+margin*(1+math.Abs(yb)))/s.invT + margin*(1+math.Abs(m64))
	a = math.Nextafter32(float32(la), float32(math.Inf(-1)))
	b = math.Nextafter32(float32(lb), float32(math.Inf(1)))
	return a, b
}

// rawLogprobs fills ch.Logprob and ch.TopLogprobs from the unmodified logits.
// m is the maximum of logits, z = expSum(logits, m) if already computed, else 0.
func (s *Sampler) rawLogprobs(logits []float32, m float32, z float64, ch *Choice) {
	n := s.nLogprobs
	var h []cand
	if n > 0 {
		if s.topHeap == nil {
			s.topHeap = make([]cand, 0, n)
			s.top = make([]Logprob, 0, n)
		}
		h = selectTop(logits, n, s.topHeap)
	}
	if m == negInf32 { // raw distribution undefined; bias made a token drawable
		ch.Logprob = negInf32
		ch.TopLogprobs = s.top[:0]
		return
	}
	m64 := float64(m)
	if z == 0 {
		z = expSum(logits, m64)
	}
	logZ := m64 + math.Log(z)
	ch.Logprob = float32(float64(logits[ch.ID]) - logZ)
	if n == 0 {
		return
	}
	slices.SortFunc(h, byDesc)
	top := s.top[:0]
	for _, x := range h {
		top = append(top, Logprob{ID: int(x.id), Logprob: float32(float64(x.v) - logZ)})
	}
	s.top = top
	ch.TopLogprobs = top
}
