package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"nanoserve/chat"
)

// `chat` with a template that recurses without end used to die with "fatal
// error: stack overflow" on the first turn; now it refuses at start with an
// error naming the limit.
func TestChatRecursiveTemplateIsAnError(t *testing.T) {
	p := chatSharedPath(t, chatQwenGGUF)
	tmpl := filepath.Join(t.TempDir(), "recursive.jinja")
	if err := os.WriteFile(tmpl, []byte(`{% macro f(x) %}{{ f(x) }}{% endmacro %}{{ f(1) }}`), 0o644); err != nil {
		t.Fatal(err)
	}
	err := runChat([]string{"--model", p, "--threads", "1", "--chat-template", tmpl})
	if !errors.Is(err, chat.ErrTemplateLimit) {
		t.Fatalf("runChat with a recursive template: err = %v, want chat.ErrTemplateLimit", err)
	}
}
