package main

import (
	"testing"

	"nanoserve/host"
	"nanoserve/internal/testshared"
	"nanoserve/model"
)

// TestHybridReported: inspect and the served manifest (/v1/models) report
// a hybrid model's recurrent layers and its per-sequence state, which the
// --kv-cache-memory rule takes off the budget (TestPlanKVCache).
func TestHybridReported(t *testing.T) {
	path := testshared.Path(t, "testdata/gguf-archs/qwen35/qwen35-F16.gguf")
	m, err := model.Load(path, model.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	// 3 delta-net layers × (conv window 3 × 128 channels + 4 heads × 16 × 16) floats.
	const want = 3 * (3*128 + 4*16*16) * 4
	info, err := describe(path, m, false)
	if err != nil {
		t.Fatal(err)
	}
	if info.StateBytes != want || len(info.RecurrentLayers) != 3 || info.KVBytesPerTok != 2*1*64*2 {
		t.Errorf("inspect: state %d bytes (want %d), recurrent layers %v, kv %d bytes per token", info.StateBytes, want, info.RecurrentLayers, info.KVBytesPerTok)
	}
	man, err := host.NewManifest(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if man.RecurrentStateBytes != want {
		t.Errorf("manifest: recurrent_state_bytes %d, want %d", man.RecurrentStateBytes, want)
	}
}
