package chat

// Reasoning output: splitting a thinking model's reply into its reasoning
// and its answer.
//
// A reasoning ("thinking") model writes its chain of thought before the
// answer, wrapped in markers its chat template teaches it. The families
// llama.cpp's chat parsers know (common/chat*.cpp, common/parsers/) come in
// two shapes:
//
//   - A tag pair around one reasoning block at the start of the reply:
//     <think>…</think> (Qwen3/3.5, QwQ, DeepSeek R1/V3.1–V4, GLM, SmolLM3,
//     Nemotron, MiniMax-M2, Kimi-K2-Thinking, Ling, MiniCPM5, Laguna, ...),
//     [THINK]…[/THINK] (Magistral / Ministral reasoning),
//     <seed:think>…</seed:think> (Seed-OSS), <mm:think>…</mm:think>
//     (MiniMax-M3), <|START_THINKING|>…<|END_THINKING|> (Command-A / Cohere2),
//     <|open|>think<|sep|>…<|close|>think<|sep|> (Kimi K3),
//     <|channel>thought…<channel|> (Gemma 4), <|think|>…<|end|> (Solar Open),
//     <think:opensource>…</think:opensource> (Hunyuan 3) and Apriel's
//     "Here are my reasoning steps:" … [BEGIN FINAL RESPONSE]. Some answers
//     come wrapped too (<response>…</response>, <|START_TEXT|>…); those
//     wrapper markers are dropped from the content.
//   - gpt-oss's "harmony" channels: a reply is a sequence of messages
//     <|channel|>analysis<|message|>…<|end|><|start|>assistant<|channel|>final<|message|>…,
//     where analysis is reasoning, final (and commentary without a
//     recipient, a "preamble") is content, and a message addressed
//     " to=functions.NAME" is a tool call whose body is the JSON arguments;
//     Muse Glimmer's variant addresses its thinking " to=self" and its
//     answer " to=user", ending messages with <|eom|> / <|eot|>.
//
// Many templates open the reasoning block in the prompt itself: Qwen3.5,
// DeepSeek-R1 distills, Nemotron and GLM-4.7 end the generation prompt with
// "<think>\n", Command-A with <|START_THINKING|>, Kimi K3 with its think
// tag, so the model's output holds only the closing tag. The parser is
// told where it starts (ReplyConfig.Prompt: the rendered prompt, whose end
// says whether it opened a block) — the same thing llama.cpp does by
// prepending the generation prompt to the output before parsing. A prompt
// that opens and closes an empty block (Qwen3 with enable_thinking=false:
// "<think>\n\n</think>\n\n") starts the reply in the answer.
//
// A reasoning block counts only at the start of the reply (after
// whitespace): a "<think>" in the middle of an answer is content. An
// unclosed block (the reply was cut by max_tokens) is all reasoning. Space
// right inside the tags is trimmed; the answer's leading space after the
// closing tag is dropped. When tool calls are parsed, a call's start
// marker inside an unclosed block ends the reasoning there (models that
// call tools from their thinking, e.g. Qwen3-Coder), and the call parses as
// it would after the block.
//
// The reasoning formats llama-server offers (--reasoning-format and the
// per-request reasoning_format) are ReasoningFormat: none leaves the
// thinking in the content unparsed (including the tag the prompt opened),
// auto and deepseek put it in reasoning_content, deepseek-legacy does both
// (the server streams it inline in content).
//
// ReplyStream parses while the reply is generated; whatever way the text is
// cut into pieces, the accumulated output equals the one-shot ParseReply:
// text that may be the start of a marker is held until the next piece
// decides.

import (
	"fmt"
	"regexp"
	"strings"
)

// ReasoningSyntax is how a model family marks its reasoning in a reply.
// The zero value means the model does not reason (all text is content).
type ReasoningSyntax struct {
	// Name is the family's name for logs and /props ("think", "harmony", ...).
	Name string
	// Start opens the reasoning block; "" means every reply begins inside
	// it (the block has only an end marker).
	Start string
	// End closes the reasoning block.
	End string
	// Drop lists answer-wrapper markers removed from the content.
	Drop []string
	// Harmony selects gpt-oss's channel format instead of a tag pair.
	Harmony bool
}

// Reasons reports whether the syntax has a reasoning block at all.
func (s ReasoningSyntax) Reasons() bool { return s.Harmony || s.End != "" }

// Harmony markers (gpt-oss).
const (
	harmonyStart   = "<|start|>"
	harmonyChannel = "<|channel|>"
	harmonyMessage = "<|message|>"
	harmonyEnd     = "<|end|>"
	harmonyCall    = "<|call|>"
	harmonyReturn  = "<|return|>"
	museEOM        = "<|eom|>" // Muse Glimmer's harmony-like messages end with these
	museEOT        = "<|eot|>"
)

// OpenText is what a prompt appends to make the reply start inside the
// reasoning block ("" for a syntax without one).
func (s ReasoningSyntax) OpenText() string {
	switch {
	case s.Harmony && s.Name == "muse":
		return " to=self" + harmonyMessage
	case s.Harmony:
		return harmonyChannel + "analysis" + harmonyMessage
	case s.End == "" || s.Start == "":
		return ""
	}
	return s.Start + "\n"
}

// CloseText is what ends the reasoning and starts the answer (forced when
// a reasoning budget runs out).
func (s ReasoningSyntax) CloseText() string {
	switch {
	case s.Harmony && s.Name == "muse":
		return museEOM + harmonyStart + "assistant to=user" + harmonyMessage
	case s.Harmony:
		return harmonyEnd + harmonyStart + "assistant" + harmonyChannel + "final" + harmonyMessage
	}
	return s.End
}

var hunyuanTag = regexp.MustCompile(`set\s+HYTK\s*=\s*'([^']*)'`)

// DetectReasoning picks the reasoning syntax from a chat template's source,
// by the literal markers the template writes (the first family that
// matches, most specific first). A template that mentions none of them
// gets the zero ReasoningSyntax.
func DetectReasoning(src string) ReasoningSyntax {
	has := func(s ...string) bool {
		for _, x := range s {
			if !strings.Contains(src, x) {
				return false
			}
		}
		return true
	}
	switch {
	case has(harmonyChannel, harmonyMessage):
		return ReasoningSyntax{Name: "harmony", Harmony: true}
	case has("to=self"+harmonyMessage, museEOM):
		return ReasoningSyntax{Name: "muse", Harmony: true}
	case has("[THINK]", "[/THINK]"):
		return ReasoningSyntax{Name: "magistral", Start: "[THINK]", End: "[/THINK]"}
	case has("<seed:think>"):
		return ReasoningSyntax{Name: "seed-oss", Start: "<seed:think>", End: "</seed:think>"}
	case has("<mm:think>"):
		return ReasoningSyntax{Name: "minimax-m3", Start: "<mm:think>", End: "</mm:think>"}
	case has("<|START_THINKING|>"):
		return ReasoningSyntax{Name: "command-a", Start: "<|START_THINKING|>", End: "<|END_THINKING|>",
			Drop: []string{"<|START_TEXT|>", "<|END_TEXT|>"}}
	case has("<|open|>", "<|sep|>", "'think'"):
		return ReasoningSyntax{Name: "kimi-k3", Start: "<|open|>think<|sep|>", End: "<|close|>think<|sep|>",
			Drop: []string{"<|open|>response<|sep|>", "<|close|>response<|sep|>"}}
	case has("<|channel>", "<channel|>"):
		return ReasoningSyntax{Name: "gemma4", Start: "<|channel>thought", End: "<channel|>"}
	case has("[BEGIN FINAL RESPONSE]"):
		s := ReasoningSyntax{Name: "apriel", End: "[BEGIN FINAL RESPONSE]", Drop: []string{"[END FINAL RESPONSE]"}}
		if has("Here are my reasoning steps:") {
			s.Start = "Here are my reasoning steps:\n"
		}
		return s
	case has("<|begin|>", "<|think|>"):
		return ReasoningSyntax{Name: "solar-open", Start: "<|think|>", End: "<|end|>",
			Drop: []string{"<|begin|>assistant<|content|>"}}
	case has("'<think{}>'.format(HYTK)"):
		tag := ""
		if m := hunyuanTag.FindStringSubmatch(src); m != nil {
			tag = m[1]
		}
		return ReasoningSyntax{Name: "hunyuan", Start: "<think" + tag + ">", End: "</think" + tag + ">"}
	case has("</think>"):
		s := ReasoningSyntax{Name: "think", Start: "<think>", End: "</think>"}
		if has("<response>", "</response>") { // Granite 3.3
			s.Drop = []string{"<response>", "</response>"}
		}
		return s
	}
	return ReasoningSyntax{}
}

// Reasoning is the reasoning syntax the template teaches (DetectReasoning
// on its source).
func (t *Template) Reasoning() ReasoningSyntax { return DetectReasoning(t.src) }

// opensIn reports whether a rendered prompt leaves a reasoning block open
// for the model, and returns the opening text (the start marker and what
// follows it), which the "none" format shows as content. A syntax without
// a start marker is always open. For harmony nothing is ever open: the
// prompt ends at "<|start|>assistant" and the model names its channel.
func (s ReasoningSyntax) opensIn(prompt string) (open bool, opening string) {
	switch {
	case s.Harmony || s.End == "":
		return false, ""
	case s.Start == "":
		return true, ""
	}
	i := strings.LastIndex(prompt, s.Start)
	if i < 0 {
		return false, ""
	}
	tail := prompt[i:]
	if strings.TrimSpace(tail[len(s.Start):]) != "" {
		return false, "" // closed (or followed by text) in the prompt
	}
	return true, tail
}

// ReasoningFormat is how a reply's reasoning is returned to API clients,
// as llama-server's --reasoning-format names it.
type ReasoningFormat string

const (
	// ReasoningNone leaves the reasoning, tags included, in the content.
	ReasoningNone ReasoningFormat = "none"
	// ReasoningAuto is llama-server's default: the same as deepseek.
	ReasoningAuto ReasoningFormat = "auto"
	// ReasoningDeepSeek puts the reasoning in reasoning_content (message
	// and streamed deltas) and the rest in content.
	ReasoningDeepSeek ReasoningFormat = "deepseek"
	// ReasoningDeepSeekLegacy fills reasoning_content and also keeps the
	// raw text, tags included, in content (streamed: content only).
	ReasoningDeepSeekLegacy ReasoningFormat = "deepseek-legacy"
)

// ParseReasoningFormat reads a format name as --reasoning-format or a
// request's reasoning_format gives it; "" is ReasoningAuto.
func ParseReasoningFormat(s string) (ReasoningFormat, error) {
	switch f := ReasoningFormat(s); f {
	case "":
		return ReasoningAuto, nil
	case ReasoningNone, ReasoningAuto, ReasoningDeepSeek, ReasoningDeepSeekLegacy:
		return f, nil
	}
	return "", fmt.Errorf("chat: unknown reasoning format %q (none, auto, deepseek, deepseek-legacy)", s)
}

// extracts reports whether the format moves reasoning out of the content.
func (f ReasoningFormat) extracts() bool { return f != ReasoningNone }
