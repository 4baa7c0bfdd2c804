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
	if len(models.Data) != 1 || models.Data[0].ID != testModel {
		t.Errorf("models %+v", models.Data)
	}

	_, err = client.Completions.New(ctx, openai.CompletionNewParams{
		Model: "no-such-model", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("x")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || apiErr.Code != "model_not_found" || apiErr.Param != "model" {
		t.Errorf("unknown model: %v", err)
	}
}

// TestOpenAIClientN reads n = 3 choices with the official client, whole and
// streamed (chat, accumulated per index), and a batch of two completion
// prompts with n = 2 (index = prompt·n + choice); each choice i equals a
// lone request with seed + i, and usage counts each prompt once.
func TestOpenAIClientN(t *testing.T) {
	ts := newTestServer(t, nil)
	client := openai.NewClient(option.WithBaseURL(ts.url+"/v1/"), option.WithMaxRetries(0))
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{
		Model:       testModel,
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Tell me a story")},
		MaxTokens:   openai.Int(16),
		Temperature: openai.Float(1.2),
		Seed:        openai.Int(7),
		N:           openai.Int(3),
	}
	whole, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if len(whole.Choices) != 3 {
		t.Fatalf("%d choices", len(whole.Choices))
	}
	for i, c := range whole.Choices {
		lone := params
		lone.N, lone.Seed = openai.Int(1), openai.Int(int64(7+i))
		one, err := client.Chat.Completions.New(ctx, lone)
		if err != nil {
			t.Fatal(err)
		}
		if c.Index != int64(i) || c.Message.Content != one.Choices[0].Message.Content {
			t.Errorf("choice %d (index %d): %q, lone seed %d: %q", i, c.Index, c.Message.Content, 7+i, one.Choices[0].Message.Content)
		}
	}
	if whole.Usage.CompletionTokens != 48 || whole.Usage.TotalTokens != whole.Usage.PromptTokens+48 {
		t.Errorf("usage %+v: want three 16-token completions over one prompt", whole.Usage)
	}
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := client.Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Choices) != 3 || acc.Usage.CompletionTokens != 48 || acc.Usage.PromptTokens != whole.Usage.PromptTokens {
		t.Fatalf("streamed: %d choices, usage %+v", len(acc.Choices), acc.Usage)
	}
	for i, c := range acc.Choices {
		if c.Index != int64(i) || c.Message.Content != whole.Choices[i].Message.Content {
			t.Errorf("streamed choice %d: %q, whole %q", c.Index, c.Message.Content, whole.Choices[i].Message.Content)
		}
	}

	prompts := []string{"Once upon a time", "The little robot"}
	comp, err := client.Completions.New(ctx, openai.CompletionNewParams{
		Model: testModel, Prompt: openai.CompletionNewParamsPromptUnion{OfArrayOfStrings: prompts},
		MaxTokens: openai.Int(8), Temperature: openai.Float(1.2), Seed: openai.Int(3), N: openai.Int(2),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(comp.Choices) != 4 || comp.Usage.CompletionTokens != 32 {
		t.Fatalf("batched completions: %d choices, usage %+v", len(comp.Choices), comp.Usage)
	}
	prompt := int64(0)
	for p, text := range prompts {
		for j := range 2 {
			one, err := client.Completions.New(ctx, openai.CompletionNewParams{
				Model: testModel, Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(text)},
				MaxTokens: openai.Int(8), Temperature: openai.Float(1.2), Seed: openai.Int(int64(3 + j)),
			})
			if err != nil {
				t.Fatal(err)
			}
			if j == 0 {
				prompt += one.Usage.PromptTokens
			}
			if c := comp.Choices[p*2+j]; c.Index != int64(p*2+j) || c.Text != one.Choices[0].Text {
				t.Errorf("prompt %d choice %d (index %d): %q, lone %q", p, j, c.Index, c.Text, one.Choices[0].Text)
			}
		}
	}
	cs := client.Completions.NewStreaming(ctx, openai.CompletionNewParams{
		Model: testModel, Prompt: openai.CompletionNewParamsPromptUnion{OfArrayOfStrings: prompts},
		MaxTokens: openai.Int(8), Temperature: openai.Float(1.2), Seed: openai.Int(3), N: openai.Int(2),
	})
	streamed := map[int64]string{}
	for cs.Next() {
		for _, c := range cs.Current().Choices {
			streamed[c.Index] += c.Text
		}
	}
	if err := cs.Err(); err != nil {
		t.Fatal(err)
	}
	for i, c := range comp.Choices {
		if streamed[int64(i)] != c.Text {
			t.Errorf("streamed batched index %d: %q, whole %q", i, streamed[int64(i)], c.Text)
		}
	}
	if comp.Usage.PromptTokens != prompt {
		t.Errorf("batched usage counts %d prompt tokens, want %d (each prompt once)", comp.Usage.PromptTokens, prompt)
	}
}
