package server

// Ollama's thinking on /api/chat: the request's think (true, false, or a
// level "low" / "medium" / "high" as gpt-oss takes it) maps onto the chat
// reasoning fields (reasoning.go): false turns thinking off
// (enable_thinking false), a level is the reasoning_effort, true or absent
// leaves the template's default (thinking on for a reasoning template).
// The reply's thinking is message.thinking, beside message.content, in the
// whole answer and in each streamed line; a history message's thinking
// reaches the template as its reasoning_content.

import (
	"encoding/json"

	"nanoserve/chat"
)

// ollamaThink maps think onto rp.
func ollamaThink(raw json.RawMessage, rp *reasoningParams) *apiError {
	if isNull(raw) {
		return nil
	}
	var on bool
	if json.Unmarshal(raw, &on) == nil {
		if !on {
			rp.ChatTemplateKwargs = map[string]json.RawMessage{"enable_thinking": json.RawMessage("false")}
		}
		return nil
	}
	var level string
	if json.Unmarshal(raw, &level) == nil {
		switch level {
		case "low", "medium", "high":
			rp.ReasoningEffort = &level
			return nil
		}
	}
	return badRequest("think", "think must be true, false, \"low\", \"medium\" or \"high\", got %s", raw)
}

// replyStream is the chat reply's streaming parser.
func (o *ollamaSink) replyStream() *chat.ReplyStream {
	if o.reply == nil {
		o.reply = o.j.newReply()
	}
	return o.reply
}

// sendThinking streams what the reply parser released: a line with the
// thinking and the content it decided (none when it holds everything).
func (o *ollamaSink) sendThinking(d chat.ReplyDelta) bool {
	if d.Reasoning == "" && d.Content == "" {
		return true
	}
	return o.send(o.thinkingLine(d.Content, d.Reasoning, nil, nil))
}
