package host

// The server's KV cache memory rule: one byte budget (--kv-cache-memory)
// decides how many positions the shared cache holds, and so how long a
// context fits.
//
//	budget tokens  T = (memory − states) / bytes per token   (bytes per token: 2·attention layers·kv_dim·element size)
//	states           = engine.StateSlots(max_seqs) · state bytes   (hybrid models: 2·max_seqs recurrent
//	                   states: one per running sequence, one per sequence for snapshots and saved prefixes)
//	context        C = --ctx, or the model's trained length
//	cache tokens     = min(max_seqs·C, T)             (--kv-cache-tokens overrides T)
//
// One full context must fit (the engine's floor: a request that fits the
// context can always finish). When the model's own context does not fit,
// it shrinks to T with a warning; an explicit --ctx that does not fit is
// refused with the numbers.

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// KVInputs are what the rule needs.
type KVInputs struct {
	Memory        int64 // KV cache byte budget (--kv-cache-memory)
	MemoryFlag    string
	BytesPerToken int64 // K and V of one position, all layers
	StateBytes    int64 // one sequence's recurrent state (hybrid models; 0 otherwise)
	StateSlots    int   // recurrent states the engine allocates (engine.StateSlots)
	ModelCtx      int   // the model's trained context length
	Ctx           int   // --ctx; 0: the model's
	MaxSeqs       int   // batch slots (resolved, > 0)
	Tokens        int   // --kv-cache-tokens; 0: from the memory budget
}

// KVPlan is the resolved context and cache size, and a warning to log
// ("" when nothing was adjusted).
type KVPlan struct {
	Ctx, CacheTokens int
	Warning          string
}

// minShrunkCtx is the shortest context the rule shrinks to before refusing.
const minShrunkCtx = 16

// PlanKV applies the rule (see the file comment).
func PlanKV(in KVInputs) (KVPlan, error) {
	bpt := max(in.BytesPerToken, 1)
	states := int64(in.StateSlots) * in.StateBytes
	if in.Tokens <= 0 && states >= in.Memory {
		return KVPlan{}, fmt.Errorf("--kv-cache-memory %s (%s) does not even hold %d recurrent states (%d bytes each, for %d sequences); "+
			"raise it or lower --max-seqs", in.MemoryFlag, mib(in.Memory), in.StateSlots, in.StateBytes, in.MaxSeqs)
	}
	budget := int(min((in.Memory-states)/bpt, math.MaxInt32))
	what := fmt.Sprintf("--kv-cache-memory %s (%s, room for %d tokens at %d bytes per token)", in.MemoryFlag, mib(in.Memory), budget, bpt)
	if states > 0 {
		what = fmt.Sprintf("--kv-cache-memory %s (%s less %s for %d recurrent states, room for %d tokens at %d bytes per token)",
			in.MemoryFlag, mib(in.Memory), mib(states), in.StateSlots, budget, bpt)
	}
	if in.Tokens > 0 {
		budget = in.Tokens
		what = fmt.Sprintf("--kv-cache-tokens %d", in.Tokens)
	}
	ctx := in.Ctx
	var warning string
	switch {
	case ctx > 0 && ctx > budget:
		return KVPlan{}, fmt.Errorf("--ctx %d does not fit the KV cache: one context needs %s (%d tokens × %d bytes), but %s; "+
			"lower --ctx or raise the cache size", ctx, mib(int64(ctx)*bpt), ctx, bpt, what)
	case ctx <= 0 && in.ModelCtx > budget:
		if budget < minShrunkCtx {
			return KVPlan{}, fmt.Errorf("the KV cache cannot hold even %d tokens: %s", minShrunkCtx, what)
		}
		ctx = budget
		warning = fmt.Sprintf("the model's context of %d tokens needs %s of KV cache but %s: the context shrinks to %d tokens "+
			"(raise --kv-cache-memory for more)", in.ModelCtx, mib(int64(in.ModelCtx)*bpt), what, ctx)
	case ctx <= 0:
		ctx = in.ModelCtx
	}
	return KVPlan{Ctx: ctx, CacheTokens: max(min(in.MaxSeqs*ctx, budget), ctx), Warning: warning}, nil
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// DefaultKVMemory is --kv-cache-memory's default: a quarter of the memory
// the process may use (weights, activations and the OS keep the rest).
const DefaultKVMemory = "25%"

// ParseMemory reads a byte size: "4GiB", "512MiB", "1.5G", "1000000", or
// a share of the available memory "25%". avail is that memory (0: unknown).
func ParseMemory(s string, avail int64) (int64, error) {
	t := strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(t, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || !(f > 0 && f <= 100) {
			return 0, fmt.Errorf("--kv-cache-memory %q: a share must be in (0, 100]%%", s)
		}
		if avail <= 0 {
			return 0, fmt.Errorf("--kv-cache-memory %q: the machine's memory size is unknown; give bytes (4GiB)", s)
		}
		return int64(float64(avail) * f / 100), nil
	}
	units := []struct {
		suffix string
		mult   float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40}, {"B", 1}}
	mult := 1.0
	for _, u := range units {
		if num, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(num), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || !(f > 0) || f*mult > math.MaxInt64/2 {
		return 0, fmt.Errorf("--kv-cache-memory %q: want a positive size such as 4GiB, 512MiB or 25%%", s)
	}
	return int64(f * mult), nil
}

// AvailableMemory is the memory this process may use: the machine's
// (MemTotal) or the container's cgroup limit if lower; 0 when unknown.
func AvailableMemory() int64 {
	var total int64
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				if err == nil {
					total = kb << 10
				}
			}
		}
		f.Close()
	}
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if lim, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && lim > 0 && (total == 0 || lim < total) {
			total = lim
		}
	}
	return total
}
