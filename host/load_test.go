package host

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"nanoserve/chat"
	"nanoserve/defaultmodel"
	"nanoserve/engine"
	"nanoserve/model"
	"nanoserve/sample"
	"nanoserve/tensor"
)

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

// TestSourceLoad: a Source loads a model by itself — the built-in model
// (recognised by its path) gets its policy with token healing and
// non-empty output, another path does not; a context past the trained
// length is refused unless LongContext.
func TestSourceLoad(t *testing.T) {
	p, err := defaultmodel.Path()
	if errors.Is(err, defaultmodel.ErrMissing) {
		t.Skip("this build has no built-in model")
	} else if err != nil {
		t.Fatal(err)
	}
	pol := sample.Defaults()
	pol.FrequencyPenalty = 0.6
	src := &Source{Model: model.Options{Threads: 1}, BuiltinPath: p, BuiltinPolicy: pol,
		KV: KVInputs{Memory: 64 << 20, MemoryFlag: "64MiB", MaxSeqs: 1}, Engine: engine.Options{MaxSeqs: 1, KVType: tensor.F16},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	me := Served{Path: p, Names: []string{"builtin"}}
	lm, err := src.Load(me)
	if err != nil {
		t.Fatal(err)
	}
	if lm.Options.Defaults == nil || lm.Options.Defaults.FrequencyPenalty != 0.6 || !lm.Options.TokenHealing || !lm.Options.NonEmpty || lm.Options.Manifest == nil {
		t.Errorf("built-in model's options: %+v", lm.Options)
	}
	if lm.Options.Template != nil {
		t.Errorf("the built-in model (a completion model) got a chat template: %v", lm.Options.Template.Source())
	}
	lm.Close()
	other := *src
	other.BuiltinPath = p + ".other"
	if lm, err = other.Load(me); err != nil {
		t.Fatal(err)
	}
	if lm.Options.Defaults != nil || lm.Options.TokenHealing {
		t.Errorf("another model got the built-in policy: %+v", lm.Options)
	}
	if lm.Options.Template == nil {
		t.Errorf("another model without a chat template got none, want the ChatML fallback")
	}
	lm.Close()
	long := *src
	long.Model.Context = 1 << 30
	if _, err := long.Load(me); err == nil || !strings.Contains(err.Error(), "--allow-long-context") {
		t.Errorf("a context past the trained length: %v", err)
	}
}
