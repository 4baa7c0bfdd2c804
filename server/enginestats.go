package server

// Engine adapters: the engine's overload sentinel and its statistics as
// metrics, kept in one place.

import (
	"errors"

	"nanoserve/engine"
)

func isOverloaded(err error) bool { return errors.Is(err, engine.ErrOverloaded) }

// engineStats exports eng.Stats(): levels as gauges, cumulative counts as
// counters (with the _total suffix).
func engineStats(st engine.Stats) []gauge {
	g := func(name, help string, v int) gauge {
		return gauge{name: "nanoserve_engine_" + name, help: help, value: float64(v)}
	}
	c := func(name, help string, v int64) gauge {
		return gauge{name: "nanoserve_engine_" + name + "_total", help: help, value: float64(v), counter: true}
	}
	return []gauge{
		g("running_sequences", "Sequences in the engine's running batch.", st.Running),
		g("waiting_requests", "Requests queued for admission (new or preempted).", st.Waiting),
		g("kv_blocks_used", "KV cache blocks held by sequences or sessions.", st.KVBlocksUsed),
		g("kv_blocks_cached", "Unused KV cache blocks holding a reusable prefix.", st.KVBlocksCached),
		g("kv_blocks_total", "KV cache blocks in the pool.", st.KVBlocksTotal),
		g("kv_block_size", "Positions per KV cache block.", st.KVBlockSize),
		g("last_step_tokens", "Tokens in the latest Forward step.", st.LastTokens),
		g("last_step_sequences", "Sequences in the latest Forward step.", st.LastSeqs),
		c("requests", "Requests the engine accepted.", st.Requests),
		c("rejected", "Requests the engine refused as overloaded.", st.Rejected),
		c("prompt_tokens", "Prompt tokens of accepted requests.", st.PromptTokens),
		c("generated_tokens", "Tokens sampled (stop ids included).", st.GeneratedTokens),
		c("prefix_query_tokens", "Prompt tokens of admitted requests looked up in the prefix cache.", st.PrefixQueryTokens),
		c("prefix_hit_tokens", "Prompt tokens found in the prefix cache.", st.PrefixHitTokens),
		c("preemptions", "Sequences preempted for lack of KV blocks.", st.Preemptions),
		c("steps", "Forward steps run.", st.Steps),
		c("step_tokens", "Tokens over all Forward steps.", st.StepTokens),
		c("step_sequences", "Sequences over all Forward steps.", st.StepSeqs),
	}
}
