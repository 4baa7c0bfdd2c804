// Package sample turns a model's next-token scores (logits) into a token.
//
// A language model ends each decode step with a vector of logits l (vocab):
// unnormalised log-probabilities. The softmax p_i = exp(l_i) / Σ_j exp(l_j)
// is the model's distribution over the next token. Sampling reshapes it and
// draws from it:
//
//   - logit_bias adds a fixed value to chosen tokens' logits;
//   - the repetition penalty (CTRL, Keskar et al. 2019) makes tokens already
//     seen in the prompt and output less likely: l/r for l > 0, l·r for l <= 0
//     (dividing a negative logit would raise it);
//   - frequency and presence penalties (OpenAI) subtract c·α_freq + [c>0]·α_pres
//     for a token generated c times so far;
//   - temperature T rescales: p ∝ exp(l/T). T → 0 concentrates all mass on
//     the arg-max (so T = 0 is defined as greedy decoding), T > 1 flattens;
//   - top-k keeps the k most likely tokens; top-p (nucleus, Holtzman et al.
//     2019) keeps the most-likely-first prefix whose mass reaches p; min-p
//     keeps tokens with p_i >= min_p·p_max. The kept tokens are renormalised;
//   - a uniform u in [0, 1) picks the token where the cumulative kept mass
//     first exceeds u.
//
// Policy is the serialisable, validated description of all of this plus the
// stopping rules (stop strings, stop token ids, max_tokens, ignore_eos) and the
// request for log-probabilities. Sampler executes a Policy for one request.
// Its order of operations is vLLM's (bias and penalties → temperature →
// top-k → top-p → min-p → draw) and is spelled out exactly on Sampler.Sample.
//
// Reproducibility. Every request has a 64-bit seed (chosen at random and
// reported when the policy does not give one). The generator is xoshiro256**
// seeded through splitmix64; exactly one 64-bit output (its top 53 bits) is
// used per non-greedy token and none when greedy. Probabilities become exact
// integer weights through a fixed sequence of float operations — including
// exp, which the package implements itself (expDet) because math.Exp and
// compiler-fused multiply-adds may differ in the last bit between platforms —
// and everything after that (top-p cut, draw) is integer arithmetic. So the same logits, history and seed give the same token
// everywhere; a committed golden (testdata/golden.json) catches any change.
//
// Cost on a 128k vocabulary: bias and penalties touch only the tokens in the
// history (a count per token, reset through a touched list); top-k is one pass
// with a k-element heap whose scan skips, 8 logits at a time, everything not
// above the heap's minimum, and needs exps only for the k survivors; greedy
// is one vectorised max pass and a search for its first index. Without top-k
// every token needs one exp, the dominant cost. On amd64 with AVX2 the
// vocabulary-wide loops (vec_amd64.s) run expDet's exact operation sequence
// four float64 lanes at a time: IEEE-754 rounds each lane of VMULPD/VADDPD
// exactly as the scalar operation, the code uses no FMA, integer sums do not
// depend on order, and float sums use the same lanes and reduction as the Go
// version, so the assembly and the pure-Go kernels (vec.go) return the same
// bits; tests compare them on millions of inputs and run the golden through
// both. Top-p histograms the integer weights by their leading bits in the same
// pass (skipping weights too small to be kept), finds the bin where the cut
// falls and sorts only that bin's tokens. Log-probabilities cost one more exp
// pass, shared with the weights at temperature 1. Buffers are reused, so Sample
// does not allocate in steady state.
//
// StopMatcher finds stop strings in streamed text across token boundaries,
// holding back only the tail that could still begin a stop string.
package sample
