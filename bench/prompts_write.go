package bench

// Prompt files written rather than read: fim-eval's held-out gaps as an
// editor's /infill workload for `bench serve --prompts`.

import (
	"bytes"
	"encoding/json"
	"io"
	"os"

	"nanoserve/tokenizer"
)

// InfillPrompt is an editor's /infill request with n tokens of context
// around a gap: the last 3/4·n tokens before it as Prompt, the first n/4
// after it as Suffix (fewer where the text is shorter). No MaxTokens, so
// bench serve's --output-len applies.
func InfillPrompt(tk *tokenizer.Tokenizer, prefix, suffix string, n int) ServePrompt {
	nPre := n * 3 / 4
	pre, suf := tk.Encode(prefix, false), tk.Encode(suffix, false)
	pre, suf = pre[max(0, len(pre)-nPre):], suf[:min(len(suf), n-nPre)]
	return ServePrompt{Prompt: tk.Decode(pre), Suffix: tk.Decode(suf)}
}

// WritePrompts writes ps as a JSONL prompt file (LoadPrompts reads it),
// HTML characters as they are.
func WritePrompts(w io.Writer, ps []ServePrompt) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, p := range ps {
		if err := enc.Encode(p); err != nil {
			return err
		}
	}
	return nil
}

// WritePromptsFile writes ps to the prompt file path (WritePrompts).
func WritePromptsFile(path string, ps []ServePrompt) error {
	var b bytes.Buffer
	if err := WritePrompts(&b, ps); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}
