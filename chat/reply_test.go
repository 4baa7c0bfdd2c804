package chat

import (
	"fmt"
	"os"
	"reflect"
	"testing"
)

// replyCase is a scripted model output for one template family: the
// template renders the prompt (which may open the reasoning block), the
// output goes through the parser, and reasoning, content and calls are
// checked, whole and streamed.
type replyCase struct {
	name     string
	template string         // file in testdata/templates/llamacpp, without .jinja
	vars     map[string]any // template kwargs (enable_thinking, reasoning_effort...)
	syntax   string         // the detected ReasoningSyntax.Name
	format   ReasoningFormat
	tools    bool // parse tool calls in the template's format
	output   string
	want     Reply
}

const weatherCall = `{"name": "get_weather", "arguments": {"city": "Paris"}}`

var replyCases = []replyCase{
	{name: "qwen3", template: "Qwen-Qwen3-0.6B", syntax: "think",
		output: "<think>\nLet me add 2 and 2.\n</think>\n\n4",
		want:   Reply{Reasoning: "Let me add 2 and 2.", Content: "4"}},
	{name: "qwen3 thinking off", template: "Qwen-Qwen3-0.6B", vars: map[string]any{"enable_thinking": false}, syntax: "think",
		output: "4",
		want:   Reply{Content: "4"}},
	{name: "qwen3 no block", template: "Qwen-Qwen3-0.6B", syntax: "think",
		output: "Sure: <think> is a tag.",
		want:   Reply{Content: "Sure: <think> is a tag."}},
	{name: "qwen3 tool after reasoning", template: "Qwen-Qwen3-0.6B", syntax: "think", tools: true,
		output: "<think>\nI need the weather.\n</think>\n\n<tool_call>\n" + weatherCall + "\n</tool_call>",
		want:   Reply{Reasoning: "I need the weather.", Calls: []ToolCall{{ID: "id0", Name: "get_weather", Arguments: `{"city": "Paris"}`}}}},
	{name: "qwen3 tool inside reasoning", template: "Qwen-Qwen3-0.6B", syntax: "think", tools: true,
		output: "<think>\nI will call it.\n<tool_call>\n" + weatherCall + "\n</tool_call>",
		want:   Reply{Reasoning: "I will call it.", Calls: []ToolCall{{ID: "id0", Name: "get_weather", Arguments: `{"city": "Paris"}`}}}},
	{name: "qwen3 none", template: "Qwen-Qwen3-0.6B", syntax: "think", format: ReasoningNone,
		output: "<think>\nHmm.\n</think>\n\n4",
		want:   Reply{Content: "<think>\nHmm.\n</think>\n\n4"}},
	{name: "qwen3 cut in reasoning", template: "Qwen-Qwen3-0.6B", syntax: "think",
		output: "<think>\nStill thinking about </thi",
		want:   Reply{Reasoning: "Still thinking about </thi"}},
	{name: "qwen3.5 opened in prompt", template: "Qwen3.5-4B", syntax: "think",
		output: "The user wants 2+2.\n</think>\n\nThe answer is 4.",
		want:   Reply{Reasoning: "The user wants 2+2.", Content: "The answer is 4."}},
	{name: "qwen3.5 none keeps the opened tag", template: "Qwen3.5-4B", syntax: "think", format: ReasoningNone,
		output: "Hmm.\n</think>\n\n4",
		want:   Reply{Content: "<think>\nHmm.\n</think>\n\n4"}},
	{name: "qwen3.5 deepseek-legacy", template: "Qwen3.5-4B", syntax: "think", format: ReasoningDeepSeekLegacy,
		output: "Hmm.\n</think>\n\n4",
		want:   Reply{Reasoning: "Hmm.", Content: "<think>\nHmm.\n</think>\n\n4"}},
	{name: "qwen3.5 thinking off", template: "Qwen3.5-4B", vars: map[string]any{"enable_thinking": false}, syntax: "think",
		output: "4",
		want:   Reply{Content: "4"}},
	{name: "qwq", template: "Qwen-QwQ-32B", vars: map[string]any{"enable_thinking": true}, syntax: "think", tools: true,
		output: "Weather needed.\n</think>\n\n<tool_call>\n" + weatherCall + "\n</tool_call>",
		want:   Reply{Reasoning: "Weather needed.", Calls: []ToolCall{{ID: "id0", Name: "get_weather", Arguments: `{"city": "Paris"}`}}}},
	{name: "deepseek-r1 distill qwen", template: "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", vars: map[string]any{"enable_thinking": true}, syntax: "think",
		output: "Okay, so 2+2.\n</think>\n\n**4**",
		want:   Reply{Reasoning: "Okay, so 2+2.", Content: "**4**"}},
	{name: "deepseek-r1 distill llama", template: "deepseek-ai-DeepSeek-R1-Distill-Llama-8B", syntax: "think",
		output: "Okay.\n</think>\n\nFour.",
		want:   Reply{Reasoning: "Okay.", Content: "Four."}},
	{name: "llama.cpp deepseek-r1", template: "llama-cpp-deepseek-r1", syntax: "think",
		output: "Hmm\n</think>\n\nHi",
		want:   Reply{Reasoning: "Hmm", Content: "Hi"}},
	{name: "deepseek v3.1 thinking", template: "deepseek-ai-DeepSeek-V3.1", vars: map[string]any{"enable_thinking": true}, syntax: "think",
		output: "Think.</think>Answer.",
		want:   Reply{Reasoning: "Think.", Content: "Answer."}},
	{name: "deepseek v3.2 not thinking", template: "deepseek-ai-DeepSeek-V3.2", syntax: "think",
		output: "Answer.",
		want:   Reply{Content: "Answer."}},
	{name: "deepseek v4 thinking", template: "deepseek-ai-DeepSeek-V4", vars: map[string]any{"enable_thinking": true}, syntax: "think",
		output: "Think.</think>Answer.",
		want:   Reply{Reasoning: "Think.", Content: "Answer."}},
	{name: "deepseek v4 not thinking", template: "deepseek-ai-DeepSeek-V4", vars: map[string]any{"enable_thinking": false}, syntax: "think",
		output: "Answer.",
		want:   Reply{Content: "Answer."}},
	{name: "glm-4.6", template: "GLM-4.6", syntax: "think",
		output: "<think>Hmm.</think>\nAnswer.",
		want:   Reply{Reasoning: "Hmm.", Content: "Answer."}},
	{name: "glm-4.7 opened", template: "GLM-4.7-Flash", syntax: "think",
		output: "Hmm.</think>Answer.",
		want:   Reply{Reasoning: "Hmm.", Content: "Answer."}},
	{name: "smollm3", template: "HuggingFaceTB-SmolLM3-3B", syntax: "think",
		output: "<think>\nHmm.\n</think>\nAnswer.",
		want:   Reply{Reasoning: "Hmm.", Content: "Answer."}},
	{name: "smollm3 no_think", template: "HuggingFaceTB-SmolLM3-3B", vars: map[string]any{"enable_thinking": false}, syntax: "think",
		output: "Answer.",
		want:   Reply{Content: "Answer."}},
	{name: "nemotron-3-nano", template: "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", syntax: "think",
		output: "Hmm.\n</think>\nAnswer.",
		want:   Reply{Reasoning: "Hmm.", Content: "Answer."}},
	{name: "nemotron-nano-v2", template: "NVIDIA-Nemotron-Nano-v2", syntax: "think",
		output: "Hmm.\n</think>\n\nAnswer.",
		want:   Reply{Reasoning: "Hmm.", Content: "Answer."}},
	{name: "minimax-m2", template: "MiniMax-M2", syntax: "think",
		output: "Hmm.\n</think>\n\nAnswer.",
		want:   Reply{Reasoning: "Hmm.", Content: "Answer."}},
	{name: "kimi-k2-thinking", template: "Kimi-K2-Thinking", syntax: "think",
		output: "<think>Hmm.</think>Answer.",
		want:   Reply{Reasoning: "Hmm.", Content: "Answer."}},
	{name: "ling-3", template: "inclusionai-ling-3.0-flash", syntax: "think",
		output: "Hmm.</think>Answer.",
		want:   Reply{Reasoning: "Hmm.", Content: "Answer."}},
	{name: "minicpm5", template: "openbmb-MiniCPM5-1B", vars: map[string]any{"enable_thinking": true}, syntax: "think",
		output: "Hmm.\n</think>\n\nAnswer.",
		want:   Reply{Reasoning: "Hmm.", Content: "Answer."}},
	{name: "laguna", template: "poolside-Laguna-XS-2.1", vars: map[string]any{"enable_thinking": true}, syntax: "think",
		output: "Hmm.</think>Answer.",
		want:   Reply{Reasoning: "Hmm.", Content: "Answer."}},
	{name: "stepfun-3.5", template: "StepFun3.5-Flash", syntax: "think",
		output: "Hmm.\n</think>\nAnswer.",
		want:   Reply{Reasoning: "Hmm.", Content: "Answer."}},
	{name: "reka-edge", template: "Reka-Edge", vars: map[string]any{"enable_thinking": true}, syntax: "think",
		output: "Hmm.\n</think>\nAnswer.",
		want:   Reply{Reasoning: "Hmm.", Content: "Answer."}},
	{name: "bielik-3", template: "Bielik-11B-v3.0-Instruct", vars: map[string]any{"enable_thinking": true}, syntax: "think",
		output: "Hmm.\n</think>\nAnswer.",
		want:   Reply{Reasoning: "Hmm.", Content: "Answer."}},
	{name: "spark-2.5", template: "Spark2.5", syntax: "think",
		output: "Hmm.</think>Answer.",
		want:   Reply{Reasoning: "Hmm.", Content: "Answer."}},
	{name: "lfm2.5", template: "LFM2.5-8B-A1B", syntax: "think",
		output: "<think>Hmm.</think>Answer.",
		want:   Reply{Reasoning: "Hmm.", Content: "Answer."}},
	{name: "rwkv-world", template: "llama-cpp-rwkv-world", vars: map[string]any{"enable_thinking": true}, syntax: "think",
		output: "Hmm.\n</think>\nAnswer.",
		want:   Reply{Reasoning: "Hmm.", Content: "Answer."}},
	{name: "granite-3.3", template: "ibm-granite-granite-3.3-2B-Instruct", vars: map[string]any{"thinking": true}, syntax: "think",
		output: "<think>Hmm.</think><response>Answer.</response>",
		want:   Reply{Reasoning: "Hmm.", Content: "Answer."}},
	{name: "magistral", template: "mistralai-Ministral-3-14B-Reasoning-2512", syntax: "magistral",
		output: "[THINK]Let me see.[/THINK]The answer is 4.",
		want:   Reply{Reasoning: "Let me see.", Content: "The answer is 4."}},
	{name: "seed-oss", template: "ByteDance-Seed-OSS", syntax: "seed-oss",
		output: "<seed:think>Hmm.</seed:think>Answer.",
		want:   Reply{Reasoning: "Hmm.", Content: "Answer."}},
	{name: "minimax-m3", template: "MiniMax-M3", syntax: "minimax-m3",
		output: "<mm:think>Hmm.</mm:think>Answer.",
		want:   Reply{Reasoning: "Hmm.", Content: "Answer."}},
	{name: "command-a (cohere2 moe)", template: "Cohere2MoE", syntax: "command-a",
		output: "I will answer.<|END_THINKING|><|START_TEXT|>Answer.<|END_TEXT|>",
		want:   Reply{Reasoning: "I will answer.", Content: "Answer."}},
	{name: "kimi-k3", template: "Kimi-K3", syntax: "kimi-k3",
		output: "Hmm.<|close|>think<|sep|><|open|>response<|sep|>Answer.<|close|>response<|sep|>",
		want:   Reply{Reasoning: "Hmm.", Content: "Answer."}},
	{name: "gemma-4", template: "google-gemma-4-31B-it", vars: map[string]any{"enable_thinking": true}, syntax: "gemma4",
		output: "<|channel>thought\nHmm.<channel|>Answer.",
		want:   Reply{Reasoning: "Hmm.", Content: "Answer."}},
	{name: "gemma-4 thinking off", template: "google-gemma-4-31B-it", vars: map[string]any{"enable_thinking": false}, syntax: "gemma4",
		output: "Answer.",
		want:   Reply{Content: "Answer."}},
	{name: "apriel-1.6", template: "Apriel-1.6-15b-Thinker-fixed", syntax: "apriel",
		output: "1. Add.\n[BEGIN FINAL RESPONSE]\nFour.\n[END FINAL RESPONSE]",
		want:   Reply{Reasoning: "1. Add.", Content: "Four.\n"}},
	{name: "apriel-1.5", template: "unsloth-Apriel-1.5", syntax: "apriel",
		output: "Reasoning.\n[BEGIN FINAL RESPONSE]\nFour.[END FINAL RESPONSE]",
		want:   Reply{Reasoning: "Reasoning.", Content: "Four."}},
	{name: "solar-open", template: "upstage-Solar-Open-100B", syntax: "solar-open",
		output: "<|think|>Hmm.<|end|><|begin|>assistant<|content|>Answer.",
		want:   Reply{Reasoning: "Hmm.", Content: "Answer."}},
	{name: "hunyuan-3", template: "tencent-Hy3", vars: map[string]any{"reasoning_effort": "high"}, syntax: "hunyuan",
		output: "Hmm.</think:opensource>Answer.",
		want:   Reply{Reasoning: "Hmm.", Content: "Answer."}},
	{name: "hunyuan-3 no_think", template: "tencent-Hy3", syntax: "hunyuan",
		output: "Answer.",
		want:   Reply{Content: "Answer."}},
	{name: "gpt-oss", template: "openai-gpt-oss-120b", syntax: "harmony",
		output: "<|channel|>analysis<|message|>User asks 2+2.<|end|><|start|>assistant<|channel|>final<|message|>4<|return|>",
		want:   Reply{Reasoning: "User asks 2+2.", Content: "4"}},
	{name: "gpt-oss tool call", template: "openai-gpt-oss-120b", syntax: "harmony",
		output: "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>",
		want:   Reply{Reasoning: "Need weather.", Calls: []ToolCall{{ID: "id0", Name: "get_weather", Arguments: `{"city":"Paris"}`}}}},
	{name: "gpt-oss recipient in role, preamble", template: "openai-gpt-oss-120b", syntax: "harmony",
		output: "<|channel|>analysis<|message|>Plan.<|end|><|start|>assistant<|channel|>commentary<|message|>Checking.<|end|><|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{}<|call|>",
		want:   Reply{Reasoning: "Plan.", Content: "Checking.", Calls: []ToolCall{{ID: "id0", Name: "get_weather", Arguments: `{}`}}}},
	{name: "gpt-oss cut in analysis", template: "openai-gpt-oss-120b", syntax: "harmony",
		output: "<|channel|>analysis<|message|>Still <|en",
		want:   Reply{Reasoning: "Still <|en"}},
	{name: "gpt-oss none", template: "openai-gpt-oss-120b", syntax: "harmony", format: ReasoningNone,
		output: "<|channel|>analysis<|message|>Hmm.<|end|><|start|>assistant<|channel|>final<|message|>4",
		want:   Reply{Content: "<|channel|>analysis<|message|>Hmm.<|end|>4"}},
	{name: "muse-glimmer", template: "muse-glimmer", syntax: "muse",
		output: " to=self<|message|>Hmm.<|eom|><|start|>assistant to=user<|message|>Answer.<|eot|>",
		want:   Reply{Reasoning: "Hmm.", Content: "Answer."}},
	{name: "gpt-oss plain text", template: "openai-gpt-oss-120b", syntax: "harmony",
		output: "Just text.",
		want:   Reply{Content: "Just text."}},
	{name: "no reasoning (llama 3.1)", template: "meta-llama-Llama-3.1-8B-Instruct", syntax: "",
		output: "<think>not a reasoning model</think>",
		want:   Reply{Content: "<think>not a reasoning model</think>"}},
}

func (c replyCase) config(t *testing.T) ReplyConfig {
	t.Helper()
	b, err := os.ReadFile("testdata/templates/llamacpp/" + c.template + ".jinja")
	if err != nil {
		t.Fatal(err)
	}
	tp, err := Parse(string(b))
	if err != nil {
		t.Fatal(err)
	}
	prompt, err := tp.Render([]Message{{Role: "user", Content: "What is 2+2?"}}, Options{AddGenerationPrompt: true, Extra: c.vars})
	if err != nil {
		t.Fatal(err)
	}
	syn := tp.Reasoning()
	if syn.Name != c.syntax {
		t.Fatalf("detected syntax %q, want %q", syn.Name, c.syntax)
	}
	cfg := ReplyConfig{Syntax: syn, Format: c.format, Prompt: prompt}
	if c.tools {
		cfg.Tools = tp.ToolFormat()
	}
	return cfg
}

// streamReply feeds pieces through a ReplyStream and accumulates the deltas.
func streamReply(cfg ReplyConfig, pieces []string) (Reply, error) {
	s := NewReplyStream(cfg)
	var r Reply
	add := func(d ReplyDelta) error {
		r.Reasoning += d.Reasoning
		r.Content += d.Content
		for _, c := range d.Calls {
			switch {
			case c.Name != "":
				if c.Index != len(r.Calls) {
					return fmt.Errorf("call %q has index %d, want %d", c.Name, c.Index, len(r.Calls))
				}
				r.Calls = append(r.Calls, ToolCall{ID: c.ID, Name: c.Name})
			case c.Index < len(r.Calls):
				r.Calls[c.Index].Arguments += c.Arguments
			default:
				return fmt.Errorf("arguments for call %d before its name", c.Index)
			}
		}
		return nil
	}
	for _, p := range pieces {
		if err := add(s.Push(p)); err != nil {
			return r, err
		}
	}
	return r, add(s.Finish())
}

func TestReplyFamilies(t *testing.T) {
	for _, c := range replyCases {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.config(t)
			cfg.NewID = counterIDs()
			got := ParseReply(cfg, c.output)
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("prompt ends %q\noutput %q\ngot  %+v\nwant %+v", tail(cfg.Prompt, 40), c.output, got, c.want)
			}
			// Streamed = whole: every split into two pieces, and byte by byte.
			splits := [][]string{}
			for i := 0; i <= len(c.output); i++ {
				splits = append(splits, []string{c.output[:i], c.output[i:]})
			}
			var bytes []string
			for i := range len(c.output) {
				bytes = append(bytes, c.output[i:i+1])
			}
			splits = append(splits, bytes)
			for _, pieces := range splits {
				cfg.NewID = counterIDs()
				s, err := streamReply(cfg, pieces)
				if err != nil {
					t.Fatalf("pieces %q: %v", pieces, err)
				}
				if !reflect.DeepEqual(s, c.want) {
					t.Fatalf("pieces %q\ngot  %+v\nwant %+v", pieces, s, c.want)
				}
			}
		})
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// fuzzSyntaxes are the reply shapes FuzzReplyStream reads text with: a
// think pair closed or opened by the prompt (with Hermes tools, so a call
// marker can end the thinking), answer wrappers to drop, harmony, and the
// none and deepseek-legacy formats.
var fuzzSyntaxes = []ReplyConfig{
	{Syntax: ReasoningSyntax{Name: "think", Start: "<think>", End: "</think>"}, Tools: ToolFormatHermes},
	{Syntax: ReasoningSyntax{Name: "think", Start: "<think>", End: "</think>"}, Prompt: "<think>\n", Tools: ToolFormatHermes},
	{Syntax: ReasoningSyntax{Name: "kimi-k3", Start: "<|open|>think<|sep|>", End: "<|close|>think<|sep|>", Drop: []string{"<|open|>response<|sep|>", "<|close|>response<|sep|>"}}},
	{Syntax: ReasoningSyntax{Name: "harmony", Harmony: true}},
	{Syntax: ReasoningSyntax{Name: "think", Start: "<think>", End: "</think>"}, Format: ReasoningNone, Prompt: "<think>\n"},
	{Syntax: ReasoningSyntax{Name: "think", Start: "<think>", End: "</think>"}, Format: ReasoningDeepSeekLegacy, Prompt: "<think>\n"},
	{Syntax: ReasoningSyntax{Name: "apriel", End: "[BEGIN FINAL RESPONSE]", Drop: []string{"[END FINAL RESPONSE]"}}},
}

// FuzzReplyStream: whatever the text and wherever it is cut, the
// streamed reply accumulates to the one-shot parse.
//
//	go test ./chat -run '^$' -fuzz FuzzReplyStream -fuzztime 1m -parallel 1
func FuzzReplyStream(f *testing.F) {
	for _, c := range replyCases {
		f.Add(c.output, uint8(0), uint64(0x9e3779b97f4a7c15))
		f.Add(c.output, uint8(3), uint64(12345))
	}
	f.Fuzz(func(t *testing.T, text string, which uint8, cuts uint64) {
		cfg := fuzzSyntaxes[int(which)%len(fuzzSyntaxes)]
		cfg.NewID = counterIDs()
		whole := ParseReply(cfg, text)
		var pieces []string
		rest := text
		for c := cuts; len(rest) > 0; c = c*6364136223846793005 + 1442695040888963407 {
			k := min(len(rest), int(c>>60)+1) // 1..16 bytes
			pieces = append(pieces, rest[:k])
			rest = rest[k:]
		}
		cfg.NewID = counterIDs()
		got, err := streamReply(cfg, pieces)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, whole) {
			t.Fatalf("syntax %s %s, pieces %q\nstreamed %+v\nwhole    %+v", cfg.Syntax.Name, cfg.Format, pieces, got, whole)
		}
	})
}
