package server

import (
	"flag"
	"fmt"

	"nanoserve/chat"
)

// ReasoningFlags are serve's flags for reasoning models, as llama-server
// names them: how a reply's thinking is returned (--reasoning-format), its
// token budget (--reasoning-budget), the template's thinking switch
// (--reasoning) and whether a trailing assistant message is continued
// (--no-prefill-assistant). RegisterReasoningFlags declares them; Apply
// checks them and fills the matching Options fields.
type ReasoningFlags struct {
	format, reasoning *string
	budget            *int
	noPrefill         *bool
}

// RegisterReasoningFlags declares the reasoning flags on fs.
func RegisterReasoningFlags(fs *flag.FlagSet) *ReasoningFlags {
	return &ReasoningFlags{
		format: fs.String("reasoning-format", "auto", "how chat replies return a reasoning model's thinking (llama-server's names): auto or deepseek\n"+
			"(message.reasoning_content), none (left in content, tags included), deepseek-legacy (both);\n"+
			"a request's reasoning_format overrides it"),
		budget: fs.Int("reasoning-budget", -1, "token budget for a reply's thinking: -1 for no cap, 0 to end it at once, N > 0 for N tokens\n"+
			"(the closing tag is then forced); a request's reasoning_budget_tokens overrides it"),
		reasoning: fs.String("reasoning", "auto", "thinking in chat: on, off (enable_thinking false for the template), or auto (the template's default);\n"+
			"a request's chat_template_kwargs or reasoning_effort overrides it"),
		noPrefill: fs.Bool("no-prefill-assistant", false, "a chat ending with an assistant message gets a new assistant turn instead of continuing\n"+
			"that message (llama-server's default prefill; continue_final_message still continues)"),
	}
}

// Apply checks the parsed flags and sets o's ReasoningFormat,
// ReasoningBudget, Thinking and NoPrefillAssistant.
func (f *ReasoningFlags) Apply(o *Options) error {
	o.NoPrefillAssistant = *f.noPrefill
	switch *f.reasoning {
	case "on", "true", "enabled":
		on := true
		o.Thinking = &on
	case "off", "false", "disabled":
		off := false
		o.Thinking = &off
	case "auto":
	default:
		return fmt.Errorf("--reasoning must be on, off or auto, got %q", *f.reasoning)
	}
	rf, err := chat.ParseReasoningFormat(*f.format)
	if err != nil {
		return fmt.Errorf("--reasoning-format: %w", err)
	}
	o.ReasoningFormat = rf
	switch b := *f.budget; {
	case b < -1:
		return fmt.Errorf("--reasoning-budget must be -1 (no cap) or ≥ 0, got %d", b)
	case b >= 0:
		o.ReasoningBudget = &b
	}
	return nil
}
