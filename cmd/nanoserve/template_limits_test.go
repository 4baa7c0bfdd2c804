package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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

// TestServeHelperProcess runs `serve` in a child process for the tests below.
func TestServeHelperProcess(t *testing.T) {
	args := os.Getenv("NANOSERVE_SERVE_ARGS")
	if args == "" {
		t.Skip("helper process for TestServeRecursiveTemplate")
	}
	if err := runServe(strings.Split(args, "\x1f")); err != nil {
		fmt.Fprintf(os.Stderr, "nanoserve serve: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// `serve` with a template that recurses without end used to die with
// "fatal error: stack overflow" on the first chat request. It starts with a
// warning, answers that request 400 and keeps serving.
func TestServeRecursiveTemplate(t *testing.T) {
	p := chatSharedPath(t, chatQwenGGUF)
	tmpl := filepath.Join(t.TempDir(), "recursive.jinja")
	if err := os.WriteFile(tmpl, []byte(`{% macro f(x) %}{{ f(x) }}{% endmacro %}{{ f(1) }}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeHelperProcess$")
	cmd.Env = append(os.Environ(), "NANOSERVE_SERVE_ARGS="+strings.Join([]string{"--model", p, "--threads", "1", "--port", "0", "--chat-template", tmpl}, "\x1f"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	var log strings.Builder
	url := ""
	sc := bufio.NewScanner(stderr)
	for url == "" && sc.Scan() {
		line := sc.Text()
		log.WriteString(line + "\n")
		if i := strings.Index(line, "url=http://"); i >= 0 {
			url = strings.Fields(line[i+len("url="):])[0]
		}
	}
	if url == "" {
		t.Fatalf("serve did not start:\n%s", log.String())
	}
	go io.Copy(io.Discard, stderr)
	if !strings.Contains(log.String(), "chat template fails on a sample conversation") {
		t.Errorf("no load-time warning about the template in:\n%s", log.String())
	}
	body := `{"messages":[{"role":"user","content":"hi"}],"max_tokens":2}`
	for range 2 {
		resp, err := http.Post(url+"/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatalf("the server went away: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "recursion depth") {
			t.Fatalf("status %d, body %s; want 400 naming the recursion depth limit", resp.StatusCode, b)
		}
	}
	resp, err := http.Post(url+"/completions", "application/json", strings.NewReader(`{"prompt":"hi","max_tokens":2}`))
	if err != nil {
		t.Fatalf("the server went away: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("completions after the bad template: status %d", resp.StatusCode)
	}
}

// TestServeTemplateTooDeepToCompile: a model whose own chat template nests
// deeper than the compiler accepts still serves (completions; chat answers
// 400) with a warning naming the problem, while the same template passed
// with --chat-template stops serve with the limit error.
func TestServeTemplateTooDeepToCompile(t *testing.T) {
	src := strings.Repeat("{% if true %}", 400) + "x" + strings.Repeat("{% endif %}", 400)
	tmpl, err := chat.Discover(chat.Source{Embedded: src, Name: "deep"})
	if !errors.Is(err, chat.ErrTemplateLimit) {
		t.Fatalf("Discover of a 400-deep template: %v, want chat.ErrTemplateLimit", err)
	}
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, nil))
	got, err := serveTemplate(tmpl, err, false, log)
	if err != nil || got != nil {
		t.Fatalf("the model's own template: (%v, %v), want to serve without a template", got, err)
	}
	if !strings.Contains(logs.String(), "cannot be used") || !strings.Contains(logs.String(), "nest") {
		t.Errorf("no warning naming the nesting limit in:\n%s", logs.String())
	}
	if _, err := serveTemplate(nil, fmt.Errorf("wrapped: %w", chat.ErrTemplateLimit), true, log); !errors.Is(err, chat.ErrTemplateLimit) {
		t.Errorf("--chat-template past the limit: %v, want the limit error", err)
	}
}

// TestServeTemplateChatMLFallback: a model without a chat template chats
// in ChatML (as llama-server), with a warning; --chat-template naming
// nothing usable is still an error.
func TestServeTemplateChatMLFallback(t *testing.T) {
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, nil))
	got, err := serveTemplate(nil, fmt.Errorf("wrapped: %w", chat.ErrNoTemplate), false, log)
	if err != nil || got == nil {
		t.Fatalf("no template: (%v, %v), want the ChatML prompter", got, err)
	}
	text, _, err := got.Prompt([]chat.Message{{Role: "user", Content: "Hi"}})
	if want := "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"; err != nil || text != want {
		t.Errorf("prompt = %q, %v; want %q", text, err, want)
	}
	if !strings.Contains(logs.String(), "ChatML") {
		t.Errorf("no warning naming ChatML in:\n%s", logs.String())
	}
	if _, err := serveTemplate(nil, fmt.Errorf("wrapped: %w", chat.ErrNoTemplate), true, log); !errors.Is(err, chat.ErrNoTemplate) {
		t.Errorf("--chat-template without a template: %v, want ErrNoTemplate", err)
	}
}
