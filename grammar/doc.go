// Package grammar constrains generation to a formal language: a GBNF
// grammar, a JSON Schema, "any JSON object", a regular expression or a
// list of choices. At every decoding step it says which vocabulary tokens
// may come next (a bitset the sampler applies before choosing), and
// Accept advances it over the chosen token. It imports nothing internal:
// the vocabulary arrives as the plain bytes each token spells.
//
// # Pipeline
//
//	GBNF text / JSON Schema / regex / choices
//	    -> Grammar   named rules of expressions over code points (ast.go)
//	    -> program   byte-level rules: alternatives of terminals (a set of
//	                 byte values) and rule references (lower.go); character
//	                 classes become UTF-8 byte sequences, repetitions helper
//	                 rules, left recursion is refused
//	    -> Constraint  program x Vocab, with the mask caches (matcher.go)
//	    -> Matcher   one request: the live stacks and the token budget
//
// # The automaton
//
// The program runs as a pushdown automaton over bytes. A configuration is
// a set of stacks; a stack frame is a position (rule, alternative, index)
// and the frame to return to. Frames are hash-consed (one node per
// (position, parent) pair), so a stack is a pointer, equal stacks are the
// same pointer, and a configuration is a small set of pointers. Before a
// byte is read every stack is expanded until its top is a terminal
// (descending into referenced rules, returning from finished ones); a
// reference in tail position replaces its frame instead of pushing one, so
// `x*` loops run in constant stack depth. Reading byte b keeps the stacks
// whose top terminal holds b and advances them; each node memoises its
// successors, so a step is a few pointer reads. Working on bytes rather
// than characters is what makes tokens that split a UTF-8 character
// (byte-fallback <0xE6>, or a byte-level BPE piece ending mid-character)
// need no special case: the automaton simply stands inside the character.
//
// # Token masks
//
// The tokens a stack allows are found by walking a trie of the vocabulary
// (vocab.go) depth first with the set of stacks: a child byte is followed
// only while some stack survives, so whole subtrees die at their first
// byte, and a token is allowed iff a stack survives its last byte. Cost:
// O(trie nodes visited x live stacks); the first walk from a string's
// interior visits nearly the whole trie (~100k nodes for Llama-2's 32k
// tokens, ~330k for Qwen3's 151k).
//
// Walks are cached twice, in the spirit of XGrammar's adaptive token mask
// cache:
//   - Per context (context-independent masks): the trie is walked from the
//     stack's top k frames (k = 1..4) placed over a sentinel that stands
//     for "whatever lies below". A token that survives above the sentinel,
//     or pops into it exactly at its last byte, is allowed in every
//     context (sure); one that pops into it with bytes left depends on the
//     context (uncertain) and is later checked byte by byte against the
//     real stack. When more than maxUncertain tokens are uncertain, k
//     grows; past maxCtx the stack walks the trie itself.
//   - Per stack: the final mask of each hash-consed stack (sure | the
//     uncertain tokens its context accepts), so a revisited configuration
//     (every character of a string, every element of an array at the same
//     depth) costs one OR of a few bitsets: O(V/64) words per live stack.
//
// Caches belong to the Constraint and are shared by its Matchers under a
// mutex; memory is bounded (maxCachedWords) by dropping the caches.
// Measured (bench_test.go, nested schema, 2-core shared VM): warm masks
// 2.9 µs/token on Llama-2 (32k) and 12 µs/token on Qwen3 (151k), against
// a 35 ms decode step of the TinyLlama-shaped Q4_K_M model; compile
// 0.5 ms; first use (compile plus every new context's walk, averaged over
// a generation) 0.14 ms/token on Llama-2 and 0.8 ms/token on Qwen3.
//
// # End of generation and the token budget
//
// End-of-generation ids are allowed exactly when some stack is empty (the
// root rule is complete). With max_tokens set, masking is budget-aware:
// every position carries the length of the shortest way to finish (a
// fixed point over the rules, one token per byte, counting only bytes that
// some token spells alone, so it is an upper bound on the tokens needed),
// and a token is allowed only if the shortest completion after it fits in
// the tokens left. By induction some token always fits (the first byte of
// the shortest completion), so a constrained request always ends with a
// complete output; NewMatcher refuses (ErrBudget) a max_tokens below the
// shortest output. Per-token completion costs are computed only for
// stacks where the budget is tighter than the largest cost their tokens
// can lead to, and then cached.
//
// # Front ends
//
// ParseGBNF reads llama.cpp's grammar format (gbnf.go), FromJSONSchema
// compiles JSON Schema (schema.go documents the supported keywords: any
// other is an error naming it, never ignored), JSONObject is any JSON
// object, FromRegex a documented regex subset, FromChoices a fixed list.
// Every front end errors with a message naming what it cannot enforce.
// Wrap (compose.go) puts any of them inside literal text, optionally
// repeated (a tool call's `<tool_call>` ... `</tool_call>` blocks); text
// it names as control tokens ([TOOL_CALLS]) is matched by token id, since
// a special token spells no bytes the trie could walk.
package grammar
