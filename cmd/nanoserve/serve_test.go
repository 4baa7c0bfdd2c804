package main

import (
	"strings"
	"testing"
)

// TestDefaultCacheTokens pins the server's KV cache sizing rule.
func TestDefaultCacheTokens(t *testing.T) {
	for _, c := range []struct {
		modelCtx, ctx, seqs int
		bpt                 int64
		want                int
	}{
		{256, 0, 0, 2048, 16 * 256},    // built-in model: every slot a full context
		{2048, 0, 0, 45056, 16 * 2048}, // TinyLlama F32 KV: 1.4 GiB, within the budget
		{4096, 0, 16, 1 << 20, 4096},   // 7B: budget (2048) below one context → one context
		{4096, 1024, 4, 1 << 20, 2048}, // explicit ctx and seqs: the 2 GiB budget binds
	} {
		if got := defaultCacheTokens(c.modelCtx, c.ctx, c.seqs, c.bpt); got != c.want {
			t.Errorf("defaultCacheTokens(%d, %d, %d, %d) = %d, want %d", c.modelCtx, c.ctx, c.seqs, c.bpt, got, c.want)
		}
	}
}

func TestServeToolFormatFlag(t *testing.T) {
	err := runServe([]string{"--tool-call-format", "gpt"})
	if err == nil || !strings.Contains(err.Error(), "--tool-call-format") || !strings.Contains(err.Error(), "hermes") {
		t.Errorf("bad --tool-call-format: %v", err)
	}
}
