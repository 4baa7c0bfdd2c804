package main

import (
	"flag"
	"fmt"

	"nanoserve/chat"
)

// replyFlags are serve's flags for reading chat replies: the tool-call
// format (parsed in serve.go) and, as llama-server names them, the
// reasoning format and budget.
type replyFlags struct {
	tools     chat.ToolFormat
	reasoning chat.ReasoningFormat
	budget    *int  // nil: no cap
	noPrefill bool  // a trailing assistant message starts a new turn
	thinking  *bool // --reasoning on/off (nil: auto)
}

// reasoningFlags declares --reasoning-format and --reasoning-budget on fs;
// the returned function reads them once fs is parsed.
func reasoningFlags(fs *flag.FlagSet) func(rf *replyFlags) error {
	format := fs.String("reasoning-format", "auto", "how chat replies return a reasoning model's thinking (llama-server's names): auto or deepseek\n"+
		"(message.reasoning_content), none (left in content, tags included), deepseek-legacy (both);\n"+
		"a request's reasoning_format overrides it")
	budget := fs.Int("reasoning-budget", -1, "token budget for a reply's thinking: -1 for no cap, 0 to end it at once, N > 0 for N tokens\n"+
		"(the closing tag is then forced); a request's reasoning_budget_tokens overrides it")
	reasoning := fs.String("reasoning", "auto", "thinking in chat: on, off (enable_thinking false for the template), or auto (the template's default);\n"+
		"a request's chat_template_kwargs or reasoning_effort overrides it")
	noPrefill := fs.Bool("no-prefill-assistant", false, "a chat ending with an assistant message gets a new assistant turn instead of continuing\n"+
		"that message (llama-server's default prefill; continue_final_message still continues)")
	return func(rf *replyFlags) error {
		rf.noPrefill = *noPrefill
		switch *reasoning {
		case "on", "true", "enabled":
			on := true
			rf.thinking = &on
		case "off", "false", "disabled":
			off := false
			rf.thinking = &off
		case "auto":
		default:
			return fmt.Errorf("--reasoning must be on, off or auto, got %q", *reasoning)
		}
		f, err := chat.ParseReasoningFormat(*format)
		if err != nil {
			return fmt.Errorf("--reasoning-format: %w", err)
		}
		rf.reasoning = f
		switch b := *budget; {
		case b < -1:
			return fmt.Errorf("--reasoning-budget must be -1 (no cap) or ≥ 0, got %d", b)
		case b >= 0:
			rf.budget = &b
		}
		return nil
	}
}
