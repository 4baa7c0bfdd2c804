// The types a caller of the engine handles: finish reasons, the errors
// Submit returns, and Request, Token, Usage, Timings, Result and Stats.

package engine

import (
	"errors"
	"fmt"
	"time"

	"nanoserve/sample"
)

// Finish reasons.
const (
	FinishStop      = "stop"      // end-of-generation token or stop string/id
	FinishLength    = "length"    // max tokens or context limit
	FinishCancelled = "cancelled" // the context was cancelled
	FinishError     = "error"     // the model failed mid-generation
)

// DefaultMaxSeqs is Options.MaxSeqs when unset: sequences batched at once.
const DefaultMaxSeqs = 16

// MaxN is the most choices one request may ask for.
const MaxN = 16

var (
	// ErrPromptTooLong is wrapped by every *PromptTooLongError.
	ErrPromptTooLong = errors.New("engine: prompt too long")
	// ErrOverloaded is returned at once when Options.MaxQueue requests are
	// already waiting (an HTTP server answers 429 or 503).
	ErrOverloaded = errors.New("engine: overloaded, too many waiting requests")
	// ErrClosed is returned for requests after Close, and is the Result.Err
	// of requests Close interrupted.
	ErrClosed = errors.New("engine: closed")
	// ErrSessionBusy is returned when a Session is used by two requests at
	// once.
	ErrSessionBusy = errors.New("engine: session is in use by another request")
)

// PromptTooLongError is returned by Submit when a prompt cannot fit: it
// has Tokens tokens and at most Limit fit (the context length, or the
// whole KV cache when that is smaller). errors.Is(err, ErrPromptTooLong).
type PromptTooLongError struct {
	Tokens, Limit int
	Cache         bool // Limit is the KV cache's capacity, not the context length
}

func (e *PromptTooLongError) Error() string {
	if e.Cache {
		return fmt.Sprintf("engine: prompt too long: prompt of %d tokens exceeds the KV cache's %d positions", e.Tokens, e.Limit)
	}
	return fmt.Sprintf("engine: prompt too long: prompt of %d tokens exceeds context length %d", e.Tokens, e.Limit)
}

func (e *PromptTooLongError) Unwrap() error { return ErrPromptTooLong }

// RequestError is returned by Submit for a request that is invalid in
// itself (bad token ids, an empty prompt, a bad N); Field names the part.
type RequestError struct {
	Field, Msg string
}

func (e *RequestError) Error() string { return "engine: " + e.Msg }

// Request is one generation.
type Request struct {
	Prompt       string // text to complete
	PromptIDs    []int  // if non-nil, used instead of Prompt (no BOS added)
	ParseSpecial bool   // treat special-token text in Prompt as special tokens (chat-template output)
	NoBOS        bool   // do not add BOS even if the tokenizer asks for it (the template wrote it)
	Policy       sample.Policy
	Session      *Session // reuse and extend a conversation's KV cache; nil: a fresh sequence
	// TokenHealing: back up over the prompt's last token and let the first
	// generated token be any token whose text extends it (see "Token
	// healing" in the package comment). Off: the prompt is used as is.
	TokenHealing bool
	// N is the number of choices (≤ 1: one; at most MaxN; not with a
	// Session): the prompt is prefilled once and forked (see "n > 1").
	N int
	// Processors, if set, is called once per sequence (once per choice)
	// and returns that sequence's logits processors, which run in order
	// after the engine's own (token healing). See "Logits processors".
	Processors func() []LogitsProcessor
	// Budget, if set, is told by Submit, once the prompt is tokenized and
	// before anything is queued, how many tokens the output may take:
	// Policy.MaxTokens capped by the context left after the prompt. An
	// error refuses the request (a grammar whose shortest output cannot
	// fit; return a *RequestError to name the field).
	Budget func(tokens int) error
	// NoSpeculation turns speculative decoding off for this request (the
	// output is the same either way; this only changes how it is computed).
	NoSpeculation bool
	// Special renders control tokens (end-of-generation ids kept by
	// IgnoreEOS, FIM markers, ...) as their text in the output, as
	// llama.cpp's --special; off, they are never text. See "Control tokens".
	Special bool
	// NonEmpty masks the end-of-generation tokens until the output has
	// visible (non-space) text, so a completion is never empty (token
	// healing's re-drawn prompt text does not count). A completion model's
	// CLI and server set it: an end right after the prompt shows nothing.
	NonEmpty bool
	// FIM says the prompt is a fill-in-the-middle layout (prefix, suffix,
	// middle markers): the model may end the middle with the FIM pad or
	// file separator. Off (left to right), every FIM marker is masked from
	// sampling. See "Control tokens".
	FIM bool
	// Progress, if set, is told how the prompt's prefill goes: once when
	// the sequence is first admitted (Processed = Cached: the positions
	// the cache already held) and after each step that fed it prompt
	// tokens, the last with Processed = Total. It runs on the engine's
	// scheduler goroutine: it must return at once (never block).
	Progress func(PromptProgress)
}

// PromptProgress is how far a request's prompt has been processed:
// Total prompt tokens, of which Cached came from the cache and Processed
// (Cached included) have K/V; Elapsed since the first admission.
type PromptProgress struct {
	Total, Cached, Processed int
	Elapsed                  time.Duration
}

// Token is one generated token as it lands.
type Token struct {
	Index int // the choice it belongs to (0 unless Request.N > 1)
	ID    int
	Text  string // decoded text safe to show now (complete UTF-8, stop strings held back); may be ""
	// Logprob of ID under the processed distribution and the top
	// alternatives (when the policy asks for logprobs).
	Logprob float32
	Top     []sample.Logprob
	// Stop marks the end-of-generation (or stop) id that ended generation:
	// it is not part of Result.IDs, and its Text is text held back until
	// the end. It is yielded only when that text is not empty.
	Stop bool
}

// Usage counts tokens.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	CachedTokens     int `json:"cached_tokens"` // prompt tokens reused from the session's or the prefix cache
}

// Timings are wall-clock measurements of one request.
type Timings struct {
	PrefillMs   float64 `json:"prefill_ms"`    // prompt forward passes
	TTFTMs      float64 `json:"ttft_ms"`       // request start to first token sampled
	DecodeMs    float64 `json:"decode_ms"`     // after the first token: decode steps
	PrefillTokS float64 `json:"prefill_tok_s"` // prefilled tokens / prefill time
	DecodeTokS  float64 `json:"decode_tok_s"`  // tokens after the first / decode time
}

// Result is a finished generation (one choice).
type Result struct {
	Index     int   // the choice
	PromptIDs []int // the prompt as tokenized (token healing's removed token included)
	IDs       []int // generated ids (an end-of-generation id that stopped it is not included)
	Text      string
	// Healed is the text of the prompt token that token healing removed
	// ("" when it did not heal). The first generated token starts with it,
	// and Text omits it: prompt + Text is what the model wrote.
	Healed       string
	FinishReason string
	Err          error // why FinishReason is "error"
	Logprobs     []Token
	Seed         uint64 // the seed the sampler used
	Usage        Usage
	Timings      Timings
}

// Stats is a snapshot of the engine for metrics. Counters are cumulative
// since New.
type Stats struct {
	Running int `json:"running"` // sequences in the batch
	Waiting int `json:"waiting"` // queued requests (new or preempted)

	KVBlocksUsed   int `json:"kv_blocks_used"`   // held by sequences or sessions
	KVBlocksCached int `json:"kv_blocks_cached"` // unused but holding a reusable prefix (evictable)
	KVBlocksTotal  int `json:"kv_blocks_total"`
	KVBlockSize    int `json:"kv_block_size"` // positions per block
	// Hybrid models: recurrent-state slots (one per sequence holding a
	// state, StateBytes each, inside the KV cache's memory); 0 otherwise.
	StateSlotsUsed  int   `json:"state_slots_used,omitempty"`
	StateSlotsTotal int   `json:"state_slots_total,omitempty"`
	StateBytes      int64 `json:"state_bytes,omitempty"` // of one slot

	Requests          int64 `json:"requests"`            // accepted requests
	Rejected          int64 `json:"rejected"`            // ErrOverloaded answers
	PromptTokens      int64 `json:"prompt_tokens"`       // of accepted requests
	GeneratedTokens   int64 `json:"generated_tokens"`    // sampled tokens (stop ids included)
	PrefixQueryTokens int64 `json:"prefix_query_tokens"` // prompt tokens of admitted requests
	PrefixHitTokens   int64 `json:"prefix_hit_tokens"`   // of those, found in the cache (prefix or session)
	Preemptions       int64 `json:"preemptions"`

	Steps      int64 `json:"steps"`       // Forward calls
	StepTokens int64 `json:"step_tokens"` // tokens over all steps (mean batch = StepTokens/Steps)
	StepSeqs   int64 `json:"step_seqs"`   // sequences over all steps
	LastTokens int   `json:"last_tokens"` // tokens in the latest step
	LastSeqs   int   `json:"last_seqs"`   // sequences in the latest step

	// Speculative decoding (zero when off): verification steps of one
	// sequence with at least one proposal, proposed tokens, accepted
	// proposals, and accepted proposals by position in the draft (len K).
	SpecDrafts         int64   `json:"spec_drafts"`
	SpecDraftTokens    int64   `json:"spec_draft_tokens"`
	SpecAcceptedTokens int64   `json:"spec_accepted_tokens"`
	SpecAcceptedPerPos []int64 `json:"spec_accepted_per_pos,omitempty"`
}
