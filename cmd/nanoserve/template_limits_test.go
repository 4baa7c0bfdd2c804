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

// Random bytes as --chat-template used to be rendered literally; they are
// refused at start, saying the file is not a template.
func TestChatRandomTemplateIsAnError(t *testing.T) {
	p := chatSharedPath(t, chatQwenGGUF)
	tmpl := filepath.Join(t.TempDir(), "random.jinja")
	b := make([]byte, 2048)
	for i := range b {
		b[i] = byte(i*7919 + i/3)
	}
	if err := os.WriteFile(tmpl, b, 0o644); err != nil {
		t.Fatal(err)
	}
	err := runChat([]string{"--model", p, "--threads", "1", "--chat-template", tmpl})
	if !errors.Is(err, chat.ErrNotTemplate) {
		t.Fatalf("runChat with random bytes as the template: err = %v, want chat.ErrNotTemplate", err)
	}
}
