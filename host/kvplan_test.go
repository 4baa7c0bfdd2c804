package host

import (
	"strings"
	"testing"
)

// TestPlanKVCache pins the server's KV cache memory rule.
func TestPlanKVCache(t *testing.T) {
	const GiB = 1 << 30
	for _, c := range []struct {
		name    string
		in      KVInputs
		ctx     int
		tokens  int
		warn    bool
		errPart string
	}{
		{"built-in model: every slot a full context",
			KVInputs{Memory: 2 * GiB, BytesPerToken: 2048, ModelCtx: 256, MaxSeqs: 16}, 256, 16 * 256, false, ""},
		{"the budget binds below max-seqs contexts",
			KVInputs{Memory: 2 * GiB, BytesPerToken: 1 << 20, ModelCtx: 1024, MaxSeqs: 4}, 1024, 2048, false, ""},
		{"exactly one context fits",
			KVInputs{Memory: 4096 << 20, BytesPerToken: 1 << 20, ModelCtx: 4096, MaxSeqs: 16}, 4096, 4096, false, ""},
		{"the model's context does not fit: it shrinks, with a warning",
			KVInputs{Memory: 2 * GiB, BytesPerToken: 1 << 20, ModelCtx: 4096, MaxSeqs: 16}, 2048, 2048, true, ""},
		{"an explicit --ctx that fits",
			KVInputs{Memory: 2 * GiB, BytesPerToken: 1 << 20, ModelCtx: 4096, Ctx: 1024, MaxSeqs: 16}, 1024, 2048, false, ""},
		{"an explicit --ctx that does not fit is refused with the numbers",
			KVInputs{Memory: 2 * GiB, MemoryFlag: "2GiB", BytesPerToken: 1 << 20, ModelCtx: 4096, Ctx: 4096, MaxSeqs: 16}, 0, 0, false,
			"--ctx 4096 does not fit the KV cache: one context needs 4096.0 MiB (4096 tokens × 1048576 bytes), but --kv-cache-memory 2GiB (2048.0 MiB, room for 2048 tokens"},
		{"--kv-cache-tokens overrides the memory budget",
			KVInputs{Memory: 1 << 20, BytesPerToken: 1 << 20, ModelCtx: 512, MaxSeqs: 16, Tokens: 3000}, 512, 3000, false, ""},
		{"--kv-cache-tokens below an explicit --ctx",
			KVInputs{Memory: 2 * GiB, BytesPerToken: 1, ModelCtx: 512, Ctx: 512, MaxSeqs: 16, Tokens: 100}, 0, 0, false, "--kv-cache-tokens 100"},
		{"hybrid: the recurrent states of max-seqs sequences come off the budget first",
			KVInputs{Memory: 2 * GiB, BytesPerToken: 1 << 20, StateBytes: 32 << 20, StateSlots: 32, ModelCtx: 4096, MaxSeqs: 16}, 1024, 1024, true, ""},
		{"hybrid: no room for the states themselves",
			KVInputs{Memory: 1 * GiB, MemoryFlag: "1GiB", BytesPerToken: 1 << 20, StateBytes: 32 << 20, StateSlots: 32, ModelCtx: 4096, MaxSeqs: 16}, 0, 0, false,
			"does not even hold 32 recurrent states"},
		{"too little memory for any context",
			KVInputs{Memory: 10 << 20, BytesPerToken: 1 << 20, ModelCtx: 512, MaxSeqs: 16}, 0, 0, false, "cannot hold even 16 tokens"},
	} {
		p, err := PlanKV(c.in)
		if c.errPart != "" {
			if err == nil || !strings.Contains(err.Error(), c.errPart) {
				t.Errorf("%s: err %v, want one containing %q", c.name, err, c.errPart)
			}
			continue
		}
		if err != nil || p.Ctx != c.ctx || p.CacheTokens != c.tokens || (p.Warning != "") != c.warn {
			t.Errorf("%s: got ctx %d, cache %d, warning %q, err %v; want ctx %d, cache %d, warning %v",
				c.name, p.Ctx, p.CacheTokens, p.Warning, err, c.ctx, c.tokens, c.warn)
		}
	}
}

func TestParseMemory(t *testing.T) {
	for _, c := range []struct {
		in    string
		avail int64
		want  int64
	}{
		{"4GiB", 0, 4 << 30}, {"512MiB", 0, 512 << 20}, {"1.5G", 0, 3 << 29}, {"1000000", 0, 1000000}, {"2GB", 0, 2e9},
		{"25%", 16 << 30, 4 << 30}, {"100%", 1000, 1000},
	} {
		if got, err := ParseMemory(c.in, c.avail); err != nil || got != c.want {
			t.Errorf("ParseMemory(%q, %d) = %d, %v; want %d", c.in, c.avail, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "0", "-1GiB", "lots", "0%", "150%", "25%x", "NaN", "1e30TiB"} {
		if _, err := ParseMemory(bad, 16<<30); err == nil {
			t.Errorf("ParseMemory(%q) accepted", bad)
		}
	}
	if _, err := ParseMemory("25%", 0); err == nil {
		t.Error("a share of unknown memory accepted")
	}
}
