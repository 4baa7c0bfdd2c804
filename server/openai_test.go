//go:build !race

// The official client is exercised by the normal test run; the race run
// (test.sh) skips this file so it need not build openai-go with -race.

package server

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestOpenAIClient drives the server with OpenAI's official Go client:
// a completion, a streamed chat with usage, the models list and an error.
func TestOpenAIClient(t *testing.T) {
	ts := newTestServer(t, func(o *Options) { o.APIKey = "test-key" })
	client := openai.NewClient(option.WithBaseURL(ts.url+"/v1/"), option.WithAPIKey("test-key"), option.WithMaxRetries(0))
	ctx := context.Background()

	comp, err := client.Completions.New(ctx, openai.CompletionNewParams{
		Model:       testModel,
		Prompt:      openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")},
		MaxTokens:   openai.Int(10),
		Temperature: openai.Float(0),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(comp.Choices) != 1 || comp.Choices[0].Text == "" || comp.Choices[0].FinishReason != "length" ||
		comp.Usage.CompletionTokens != 10 || comp.Usage.TotalTokens != comp.Usage.PromptTokens+10 || comp.Model != testModel {
		t.Errorf("completion: %+v", comp)
	}

	params := openai.ChatCompletionNewParams{
		Model:       "alias",
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("Tell me a story")},
		MaxTokens:   openai.Int(24),
		Temperature: openai.Float(0),
	}
	whole, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := client.Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	var text string
	chunks := 0
	for stream.Next() {
		ch := stream.Current()
		acc.AddChunk(ch)
		if len(ch.Choices) > 0 {
			text += ch.Choices[0].Delta.Content
		}
		chunks++
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if chunks < 3 || text == "" || text != whole.Choices[0].Message.Content {
		t.Errorf("streamed %q in %d chunks; whole %q", text, chunks, whole.Choices[0].Message.Content)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != text || acc.Choices[0].FinishReason != whole.Choices[0].FinishReason {
		t.Errorf("accumulated %+v", acc.Choices)
	}
	if acc.Usage.CompletionTokens != whole.Usage.CompletionTokens || acc.Usage.PromptTokens != whole.Usage.PromptTokens || acc.Usage.TotalTokens == 0 {
		t.Errorf("stream usage %+v, whole %+v", acc.Usage, whole.Usage)
	}

	models, err := client.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(models.Data) != 2 || models.Data[0].ID != testModel {
		t.Errorf("models %+v", models.Data)
	}

	_, err = client.Completions.New(ctx, openai.CompletionNewParams{
		Model: "no-such-model", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("x")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || apiErr.Code != "model_not_found" || apiErr.Param != "model" {
		t.Errorf("unknown model: %v", err)
	}
}
