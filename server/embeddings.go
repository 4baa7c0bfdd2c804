package server

// POST /v1/embeddings in OpenAI's shape:
//
//	{"model", "input", "encoding_format", "dimensions"} →
//	{"object":"list", "data":[{"object":"embedding","index":i,"embedding":...}], "model", "usage"}
//
// input is a string, an array of strings, an array of token ids or an array
// of token-id arrays (each one embedding, data[i] for input i), or one of
// llama-server's forms: ids and strings mixed in one input, "" (BOS alone;
// native_prompt.go). An embedding
// is the model's pooled final hidden state (the final norm's output, before
// the LM head), L2-normalised: the GGUF's {arch}.pooling_type chooses the
// pooling (mean, cls or last); without it, last token (a causal model's only
// state that has seen the whole input). encoding_format "float" (default)
// sends numbers, "base64" the little-endian float32 bytes in base64.
// dimensions d keeps the first d components and re-normalises them to unit
// length, as OpenAI's text-embedding-3 models do; more than the model's width
// is a 400; at most 2048 inputs per request. usage has prompt_tokens = total_tokens = the inputs' tokens.

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"net/http"

	"nanoserve/engine"
)

// maxEmbeddingInputs caps the inputs of one request, as OpenAI does.
const maxEmbeddingInputs = 2048

type embeddingRequest struct {
	unsupportedParams
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat *string         `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
}

type embeddingData struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"` // []float32, or a base64 string
}

type embeddingUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

type embeddingResponse struct {
	Object string          `json:"object"`
	Data   []embeddingData `json:"data"`
	Model  string          `json:"model"`
	Usage  embeddingUsage  `json:"usage"`
}

func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request, er *embeddingRequest) {
	resp, e := s.embeddings(r.Context(), er)
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// embeddings answers a decoded embeddings request (also Ollama's
// /api/embed).
func (s *Server) embeddings(ctx context.Context, er *embeddingRequest) (*embeddingResponse, *apiError) {
	name, e := s.resolveModel(er.Model)
	if e != nil {
		return nil, e
	}
	b64 := false
	if f := er.EncodingFormat; f != nil {
		switch *f {
		case "float":
		case "base64":
			b64 = true
		default:
			return nil, badRequest("encoding_format", "encoding_format must be \"float\" or \"base64\", got %q", *f)
		}
	}
	width := s.eng.EmbedWidth()
	dims := width
	if d := er.Dimensions; d != nil {
		if *d < 1 || *d > width {
			return nil, badRequest("dimensions", "dimensions must be between 1 and the model's embedding width %d, got %d", width, *d)
		}
		dims = *d
	}
	if isNull(er.Input) {
		return nil, badRequest("input", "input is required")
	}
	prompts, e := s.llamaPrompts(er.Input, "input") // OpenAI's forms and llama-server's (native_prompt.go)
	if e != nil {
		return nil, e
	}
	if len(prompts) > maxEmbeddingInputs {
		return nil, badRequest("input", "input has %d items; at most %d per request", len(prompts), maxEmbeddingInputs)
	}
	reqs := make([]engine.Request, len(prompts))
	for i, p := range prompts {
		reqs[i] = engine.Request{Prompt: p.text, PromptIDs: p.ids, ParseSpecial: true}
	}
	embs, ntok, err := s.eng.Embed(reqs)
	if err != nil {
		if errors.Is(err, engine.ErrPooling) {
			return nil, badRequest("model", "the model %q cannot embed: %v", name, err)
		}
		e := s.startError(ctx, err, &job{})
		if e.Param != nil && *e.Param == "prompt" {
			e.Param = strp("input")
		}
		return nil, e
	}
	resp := embeddingResponse{Object: "list", Model: name, Data: make([]embeddingData, len(embs))}
	for i, v := range embs {
		v = truncateUnit(v, dims)
		d := embeddingData{Object: "embedding", Index: i, Embedding: v}
		if b64 {
			buf := make([]byte, 4*len(v))
			for j, x := range v {
				binary.LittleEndian.PutUint32(buf[4*j:], math.Float32bits(x))
			}
			d.Embedding = base64.StdEncoding.EncodeToString(buf)
		}
		resp.Data[i] = d
		resp.Usage.PromptTokens += ntok[i]
	}
	resp.Usage.TotalTokens = resp.Usage.PromptTokens
	s.lc.embedded(resp.Usage.PromptTokens, len(embs))
	return &resp, nil
}

// truncateUnit keeps v's first d components and rescales them to unit L2
// norm (v itself when d is its length: already unit).
func truncateUnit(v []float32, d int) []float32 {
	if d == len(v) {
		return v
	}
	v = v[:d]
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	if ss == 0 {
		return v
	}
	inv := 1 / math.Sqrt(ss)
	out := make([]float32, d)
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out
}
