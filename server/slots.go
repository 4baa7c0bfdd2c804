package server

// GET /slots: llama-server's slot monitor, how its users watch a server —
// one object per slot (MaxSeqs of them: the engine's slot view,
// engine/slots.go) with whether it is processing, its context, and for a
// slot that has held a task the task's prompt progress, sampling
// parameters and generation progress. On by default as in llama-server;
// Options.NoSlots (serve --slots=false, llama-server's --no-slots) answers
// 501. ?model= names the model (absent: the first), as /props;
// ?fail_on_no_slot=1 answers 503 when no slot is idle (a load balancer's
// probe).
//
// llama-server's slot save/restore/erase (POST /slots/{id}) is not built:
// nanoserve's slots are a numbering of running sequences, not KV memory
// of their own (finished prompts live on in the shared prefix cache).

import (
	"net/http"

	"nanoserve/engine"
)

// slotJSON is one slot in llama-server's shape.
type slotJSON struct {
	ID           int  `json:"id"`
	NCtx         int  `json:"n_ctx"`
	Speculative  bool `json:"speculative"`
	IsProcessing bool `json:"is_processing"`
	// The slot's task (absent while the slot never held one).
	IDTask       *uint64         `json:"id_task,omitempty"`
	NPrompt      *int            `json:"n_prompt_tokens,omitempty"`
	NPromptDone  *int            `json:"n_prompt_tokens_processed,omitempty"`
	NPromptCache *int            `json:"n_prompt_tokens_cache,omitempty"`
	Params       map[string]any  `json:"params,omitempty"`
	NextToken    []nextTokenJSON `json:"next_token,omitempty"`
}

type nextTokenJSON struct {
	HasNextToken bool `json:"has_next_token"`
	HasNewLine   bool `json:"has_new_line"`
	NRemain      int  `json:"n_remain"`
	NDecoded     int  `json:"n_decoded"`
}

func (f *Front) handleSlots(w http.ResponseWriter, r *http.Request) {
	if f.native.noSlots {
		writeError(w, notSupported("this server does not serve the slots endpoint (start it without --slots=false)"))
		return
	}
	lease, e := f.modelFor(r.Context(), r.URL.Query().Get("model"))
	if e != nil {
		writeError(w, e)
		return
	}
	defer lease.Release()
	s := lease.Value()
	view := s.eng.Slots()
	if r.URL.Query().Get("fail_on_no_slot") != "" && !anyIdle(view) {
		writeError(w, &apiError{status: http.StatusServiceUnavailable, Type: "unavailable_error", Message: "no slot available", retryAfter: 1})
		return
	}
	mode := s.eng.Options().Spec.Mode
	spec := mode != "" && mode != engine.SpecOff
	out := make([]slotJSON, len(view))
	for i, sl := range view {
		out[i] = slotView(sl, s.eng.CtxSize(), spec)
	}
	writeJSON(w, http.StatusOK, out)
}

func anyIdle(view []engine.Slot) bool {
	for _, sl := range view {
		if !sl.Busy {
			return true
		}
	}
	return false
}

// slotView is one engine slot as llama-server reports it: the prompt
// tokens processed exclude the cached ones, as its n_prompt_tokens_processed.
func slotView(sl engine.Slot, ctx int, spec bool) slotJSON {
	j := slotJSON{ID: sl.ID, NCtx: ctx, Speculative: spec, IsProcessing: sl.Busy}
	if sl.Task == 0 {
		return j
	}
	done := max(sl.Processed-sl.Cached, 0)
	j.IDTask, j.NPrompt, j.NPromptDone, j.NPromptCache = &sl.Task, &sl.Prompt, &done, &sl.Cached
	p := sl.Policy
	seed := any(-1)
	if p.Seed != nil {
		seed = *p.Seed
	}
	np := -1
	if p.MaxTokens > 0 {
		np = p.MaxTokens
	}
	j.Params = map[string]any{"seed": seed, "temperature": p.Temperature, "top_k": p.TopK, "top_p": p.TopP, "min_p": p.MinP,
		"repeat_last_n": p.RepeatLastN, "repeat_penalty": p.RepetitionPenalty, "presence_penalty": p.PresencePenalty,
		"frequency_penalty": p.FrequencyPenalty, "max_tokens": np, "n_predict": np, "ignore_eos": p.IgnoreEOS}
	j.NextToken = []nextTokenJSON{{HasNextToken: sl.Busy, NRemain: sl.Remain, NDecoded: sl.Decoded}}
	return j
}
