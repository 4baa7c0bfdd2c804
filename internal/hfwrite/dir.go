package hfwrite

// The files of a written checkpoint directory: writeCheckpoint writes
// config.json and model.safetensors for every FromGGUF; SetConfig,
// DropTensors and SentencePieceTokenizer change a written directory (a
// field transformers sets that no GGUF key holds, a tensor a saved
// checkpoint lacks, the tokenizer files) for the loader's tests.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"nanoserve/safetensors"
)

// writeCheckpoint writes dir (made if missing) as a Hugging Face
// checkpoint: cfg indented as config.json, ts as model.safetensors with
// the {"format": "pt"} metadata transformers' loader expects.
func writeCheckpoint(dir string, cfg any, ts []safetensors.Tensor) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), raw, 0o644); err != nil {
		return err
	}
	return safetensors.Write(filepath.Join(dir, "model.safetensors"), ts, map[string]string{"format": "pt"})
}

// SetConfig merges fields into dir/config.json (e.g. Phi-3's longrope
// rope_scaling, which has no GGUF tensor to come from).
func SetConfig(dir string, fields map[string]any) error {
	p := filepath.Join(dir, "config.json")
	raw, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return fmt.Errorf("hfwrite: %s: %w", p, err)
	}
	for k, v := range fields {
		cfg[k] = v
	}
	if raw, err = json.MarshalIndent(cfg, "", "  "); err != nil {
		return err
	}
	return os.WriteFile(p, raw, 0o644)
}

// SentencePieceTokenizer gives dir a SentencePiece tokenizer: the
// tokenizer.model at spm, and a tokenizer_config.json saying whether BOS
// is added (as Gemma 3's and the Llama fixtures' directories carry it).
func SentencePieceTokenizer(dir, spm string, addBOS bool) error {
	data, err := os.ReadFile(spm)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.model"), data, 0o644); err != nil {
		return err
	}
	raw, err := json.Marshal(map[string]any{"add_bos_token": addBOS, "add_eos_token": false})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), raw, 0o644)
}

// DropTensors rewrites dir/model.safetensors without the tensors drop
// names (e.g. the shared-KV layers' k_proj, v_proj and k_norm, which a
// checkpoint transformers saves does not have: Gemma4TextAttention makes
// them only for layers that own their KV).
func DropTensors(dir string, drop func(name string) bool) error {
	p := filepath.Join(dir, "model.safetensors")
	f, err := safetensors.Open(p)
	if err != nil {
		return err
	}
	var keep []safetensors.Tensor
	for _, t := range f.Tensors {
		if !drop(t.Name) {
			keep = append(keep, safetensors.Tensor{Name: t.Name, DType: t.DType, Shape: t.Shape, Data: slices.Clone(t.Data)})
		}
	}
	f.Close()
	return safetensors.Write(p, keep, map[string]string{"format": "pt"})
}
