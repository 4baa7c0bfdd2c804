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
// with a k-element heap and needs exps only for the k survivors; greedy is one
// arg-max pass. Without top-k every token needs one exp (the dominant cost);
// top-p then buckets the integer weights by magnitude and sorts only the one
// bucket where the cut falls. Log-probabilities cost one exp per token. Buffers are reused, so
// Sample does not allocate in steady state.
//
// StopMatcher finds stop strings in streamed text across token boundaries,
// holding back only the tail that could still begin a stop string.
package sample
