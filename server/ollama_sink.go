package server

// The Ollama sink: /api/generate's and /api/chat's answer as NDJSON lines
// (stream) or one JSON object, the last line with done, done_reason and
// the counts and durations (ollama.go's file comment).

import (
	"encoding/json"
	"net/http"
	"time"

	"nanoserve/chat"
	"nanoserve/engine"
)

// ollamaSink writes one Ollama generation.
type ollamaSink struct {
	frames
	s      *Server
	j      *job
	stream bool
	chat   bool              // /api/chat: message objects; else /api/generate's response
	reply  *chat.ReplyStream // chat: reads thinking out of the streamed reply (nil: none)
}

// line is one response object: a piece of text, or with done the last.
func (o *ollamaSink) line(text string, done *ollamaDone, calls []ollamaToolCall) any {
	return o.thinkingLine(text, "", done, calls)
}

// thinkingLine is line with the message's thinking (chat only).
func (o *ollamaSink) thinkingLine(text, thinking string, done *ollamaDone, calls []ollamaToolCall) any {
	if o.chat {
		resp := ollamaChatResponse{Model: o.j.model, CreatedAt: createdAt(), Message: ollamaMessage{Role: "assistant", Content: text, Thinking: thinking, ToolCalls: calls}}
		if done != nil {
			resp.Done, resp.ollamaDone = true, *done
		}
		return resp
	}
	resp := ollamaGenerateResponse{Model: o.j.model, CreatedAt: createdAt(), Response: text}
	if done != nil {
		resp.Done, resp.ollamaDone = true, *done
	}
	return resp
}

// send writes one NDJSON line and flushes it.
func (o *ollamaSink) send(v any) bool {
	if !o.failed {
		o.start("Content-Type", "application/x-ndjson")
	}
	return o.ndjson(v)
}

func (o *ollamaSink) Fail(e *apiError) { writeError(o.w, e) }

// Delta streams text as it lands; a reply parsed for tool calls is sent
// whole at the end.
func (o *ollamaSink) Delta(i int, d delta) bool {
	if !o.stream || o.j.tools.parse() || d.Text == "" {
		return true
	}
	if o.chat && o.j.reply.parses() {
		return o.sendThinking(o.replyStream().Push(d.Text))
	}
	return o.send(o.line(d.Text, nil, nil))
}

func (o *ollamaSink) End(out *outcome) {
	res := out.Results[0]
	if e, ended := out.single(); ended {
		if e == nil {
			return // the client went away
		}
		if o.started {
			o.send(ollamaError{e.Message})
		} else {
			writeError(o.w, e)
		}
		return
	}
	tools := o.j.tools.parse()
	text, thinking := "", ""
	var calls []ollamaToolCall
	if !o.stream || tools {
		text = res.Text
	}
	if o.chat && (!o.stream || tools) && o.j.reply.parses() {
		r := o.j.parseReply(res.Text)
		text, thinking = r.Content, r.Reasoning
		for _, c := range r.Calls {
			var tc ollamaToolCall
			tc.Function.Name = c.Name
			tc.Function.Arguments = json.RawMessage(c.Arguments)
			if !json.Valid(tc.Function.Arguments) {
				tc.Function.Arguments, _ = json.Marshal(c.Arguments)
			}
			calls = append(calls, tc)
		}
	}
	done := &ollamaDone{DoneReason: "stop", TotalDuration: int64(time.Since(out.Start) + out.Load), LoadDuration: int64(out.Load),
		PromptEvalCount: res.Usage.PromptTokens, EvalCount: res.Usage.CompletionTokens}
	if res.FinishReason == engine.FinishLength {
		done.DoneReason = "length"
	}
	if !out.First.IsZero() {
		done.PromptEvalDuration = int64(out.First.Sub(out.Start))
		done.EvalDuration = int64(out.Last.Sub(out.First))
	}
	if o.stream {
		if o.reply != nil {
			o.sendThinking(o.reply.Finish())
		}
		if tools && (text != "" || thinking != "" || len(calls) > 0) {
			o.send(o.thinkingLine(text, thinking, nil, calls))
		}
		o.send(o.line("", done, nil))
		return
	}
	writeJSON(o.w, http.StatusOK, o.thinkingLine(text, thinking, done, calls))
}
