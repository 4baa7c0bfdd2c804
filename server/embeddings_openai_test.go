//go:build !race

package server

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestEmbeddingsOpenAIClient: through the official client, a batch's
// embeddings equal each input's alone (strings and token-id arrays), are
// unit length, and usage sums the inputs' tokens; dimensions truncates
// and re-normalises.
func TestEmbeddingsOpenAIClient(t *testing.T) {
	ts := newTestServer(t, nil)
	client := openai.NewClient(option.WithBaseURL(ts.url+"/v1/"), option.WithMaxRetries(0))
	ctx := context.Background()
	texts := []string{"Once upon a time", "The cat sat on the mat.", "Hi"}

	batch, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: testModel,
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts}})
	if err != nil {
		t.Fatal(err)
	}
	if len(batch.Data) != len(texts) || batch.Model != testModel || batch.Object != "list" {
		t.Fatalf("batch response: %+v", batch)
	}
	promptTokens := int64(0)
	for i, s := range texts {
		one, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "alias",
			Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String(s)}})
		if err != nil {
			t.Fatal(err)
		}
		d := batch.Data[i]
		if d.Index != int64(i) || !slices.Equal(d.Embedding, one.Data[0].Embedding) {
			t.Errorf("input %d: batched embedding (index %d) differs from the input alone", i, d.Index)
		}
		var n float64
		for _, v := range d.Embedding {
			n += v * v
		}
		if len(d.Embedding) != ts.eng.Model().Dim || math.Abs(n-1) > 1e-5 {
			t.Errorf("input %d: %d components, |e|² = %g", i, len(d.Embedding), n)
		}
		if one.Usage.PromptTokens < 2 || one.Usage.TotalTokens != one.Usage.PromptTokens {
			t.Errorf("input %d usage %+v", i, one.Usage)
		}
		promptTokens += one.Usage.PromptTokens
	}
	if batch.Usage.PromptTokens != promptTokens || batch.Usage.TotalTokens != promptTokens {
		t.Errorf("batch usage %+v, want %d prompt tokens", batch.Usage, promptTokens)
	}

	ids := [][]int64{{1, 20, 30, 40}, {1, 50}, {7}}
	tb, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: testModel,
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokenArrays: ids}})
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range ids {
		one, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: testModel,
			Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokens: a}})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(tb.Data[i].Embedding, one.Data[0].Embedding) || one.Usage.PromptTokens != int64(len(a)) {
			t.Errorf("token input %d: batched differs from alone, or usage %+v", i, one.Usage)
		}
	}

	const d = 8
	small, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: testModel, Dimensions: openai.Int(d),
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String(texts[0])}})
	if err != nil {
		t.Fatal(err)
	}
	full := batch.Data[0].Embedding[:d]
	var fn float64
	for _, v := range full {
		fn += v * v
	}
	got := small.Data[0].Embedding
	if len(got) != d {
		t.Fatalf("dimensions %d: got %d components", d, len(got))
	}
	for j := range d {
		if math.Abs(got[j]-full[j]/math.Sqrt(fn)) > 1e-6 {
			t.Errorf("dimensions %d: component %d = %g, want %g", d, j, got[j], full[j]/math.Sqrt(fn))
		}
	}
}
