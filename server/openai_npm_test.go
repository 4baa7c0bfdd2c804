package server

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
)

// openaiNPMVersion is the official openai npm client the test installs.
const openaiNPMVersion = "7.59.0"

// TestOpenAINPMClient drives a live two-model server with the official
// openai npm client: models.list, chat whole and streamed (equal text,
// usage in the stream's last chunk), a completion equal to the raw
// /v1/completions answer, embeddings as the client asks for them by
// default (base64, decoded by the client) equal to encoding_format float
// and unit length, and an unknown model as the client's 404 error.
func TestOpenAINPMClient(t *testing.T) {
	dir := npmClientDir(t, "openai", openaiNPMVersion, "openai_client.mjs")
	a, b := testSpec(t, "aidreams", nil), testSpec(t, "mha", nil)
	a.Preload = true
	ts := newTestRouter(t, RouterOptions{Models: []ModelSpec{a, b}}, nil)
	if err := ts.front.Preload(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := runNode(t, dir, "openai_client.mjs", ts.url+"/v1", "aidreams")
	type usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	}
	var got struct {
		Models []string
		Chat   struct {
			Content, Finish string
			Usage           usage
		}
		ChatStream struct {
			Text, Finish string
			Chunks       int
			Usage        usage
		}
		Completion     string
		Embeddings     [][]float64
		EmbeddingFloat []float64
		Unknown        struct {
			Status  int
			Message string
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !slices.Contains(got.Models, "aidreams") || !slices.Contains(got.Models, "mha") {
		t.Errorf("models.list: %v", got.Models)
	}
	if got.Chat.Content == "" || got.Chat.Finish != "length" || got.Chat.Usage.CompletionTokens != 12 || got.Chat.Usage.PromptTokens == 0 {
		t.Errorf("chat: %+v", got.Chat)
	}
	if got.ChatStream.Text != got.Chat.Content || got.ChatStream.Finish != "length" || got.ChatStream.Chunks < 3 || got.ChatStream.Usage != got.Chat.Usage {
		t.Errorf("chat stream %+v, whole %+v", got.ChatStream, got.Chat)
	}
	if want := complete(t, ts, "aidreams", "Once upon a time"); got.Completion != want {
		t.Errorf("completion %q, /v1/completions %q", got.Completion, want)
	}
	if len(got.Embeddings) != 2 || len(got.Embeddings[0]) != 64 || len(got.EmbeddingFloat) != 64 {
		t.Fatalf("embeddings: %d of %d, float %d", len(got.Embeddings), len(got.Embeddings[0]), len(got.EmbeddingFloat))
	}
	n := 0.0
	for i, x := range got.Embeddings[0] {
		n += x * x
		if d := math.Abs(x - got.EmbeddingFloat[i]); d > 1e-6 {
			t.Errorf("embedding[%d]: base64 %v, float %v", i, x, got.EmbeddingFloat[i])
			break
		}
	}
	if math.Abs(n-1) > 1e-3 {
		t.Errorf("embedding norm² %v, want 1", n)
	}
	if slices.Equal(got.Embeddings[0], got.Embeddings[1]) {
		t.Errorf("two inputs gave the same embedding")
	}
	if got.Unknown.Status != 404 || !strings.Contains(got.Unknown.Message, "no-such-model") {
		t.Errorf("unknown model: %+v", got.Unknown)
	}
}
