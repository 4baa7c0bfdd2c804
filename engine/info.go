package engine

// What the APIs tell of the engine's model, so they need not see package
// model (the server's layering: it sees the engine only).

import "nanoserve/model"

// ErrPooling is wrapped by Embed's error for a pooling the model cannot do.
var ErrPooling = model.ErrPooling

// ModelInfo describes the engine's model: its architecture, parameter
// count and shape (Ollama's /api/show model_info).
type ModelInfo struct {
	Arch                    string
	Params                  int64
	ContextLen, Dim, Layers int
	Heads, KVHeads          int
}

// ModelInfo describes the engine's model.
func (e *Engine) ModelInfo() ModelInfo {
	m := e.m
	return ModelInfo{Arch: m.Arch, Params: m.ParamCount(), ContextLen: m.ContextLen, Dim: m.Dim, Layers: m.Layers,
		Heads: m.Heads, KVHeads: m.KVHeads}
}

// EmbedWidth is the length of the vectors Embed returns (the model's
// hidden size).
func (e *Engine) EmbedWidth() int { return e.m.Dim }
