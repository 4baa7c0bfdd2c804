package console

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"nanoserve/chat"
	"nanoserve/engine"
	"nanoserve/host"
	"nanoserve/internal/testshared"
	"nanoserve/model"
	"nanoserve/sample"
)

const (
	chatQwenGGUF  = "testdata/gguf/qwen2/qwen2-F16.gguf"         // has tokenizer.chat_template (ChatML)
	chatLlamaGGUF = "testdata/gguf/llama_gqa/llama_gqa-F16.gguf" // no chat template; BOS <s> added by the tokenizer
)

func chatLoadModel(t testing.TB, rel string) (*model.Model, string) {
	t.Helper()
	p := testshared.Path(t, rel)
	m, err := model.Load(p, model.Options{Threads: 1})
	if err != nil {
		t.Fatalf("Load(%s): %v", p, err)
	}
	t.Cleanup(func() { m.Close() })
	return m, p
}

func chatNewSession(t testing.TB, m *model.Model, path, tmplFile string, pol sample.Policy) *Chat {
	t.Helper()
	tmpl, err := host.ChatTemplate(tmplFile, m, path)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(m, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := NewChat(eng, tmpl, pol)
	t.Cleanup(c.Close)
	return c
}

func chatGreedy(n int) sample.Policy {
	p := sample.Greedy()
	p.MaxTokens = n
	return p
}

// A template that writes the BOS text itself must not get a second BOS id;
// one that does not gets the tokenizer's BOS once.
func TestChatBOSOnce(t *testing.T) {
	m, path := chatLoadModel(t, chatLlamaGGUF)
	bos, ok := m.Tokenizer.BOS()
	if !ok || !m.Tokenizer.AddBOS() {
		t.Fatal("llama_gqa should have a BOS the tokenizer adds")
	}
	dir := t.TempDir()
	withBOS := filepath.Join(dir, "with_bos.jinja")
	os.WriteFile(withBOS, []byte("{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}[assistant] {% endif %}"), 0o644)
	withoutBOS := filepath.Join(dir, "without_bos.jinja")
	os.WriteFile(withoutBOS, []byte("{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}[assistant] {% endif %}"), 0o644)
	config := filepath.Join(dir, "tokenizer_config.json")
	os.WriteFile(config, []byte(`{"bos_token": {"content": "<s>"}, "eos_token": "</s>", "chat_template": "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}"}`), 0o644)

	for _, file := range []string{withBOS, withoutBOS, config} {
		c := chatNewSession(t, m, path, file, chatGreedy(1))
		req, err := c.request("Hello there")
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(file), err)
		}
		ids, err := c.eng.Encode(&req)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, id := range ids {
			if id == bos {
				n++
			}
		}
		if n != 1 || ids[0] != bos {
			t.Errorf("%s: prompt %q tokenized to %v: want exactly one BOS (%d) first", filepath.Base(file), req.Prompt, ids, bos)
		}
		if file == withoutBOS && req.NoBOS || file != withoutBOS && !req.NoBOS {
			t.Errorf("%s: NoBOS = %v", filepath.Base(file), req.NoBOS)
		}
	}

	if _, err := host.ChatTemplate(filepath.Join(dir, "missing.jinja"), m, path); err == nil {
		t.Error("a missing --chat-template file should be an error")
	}
	os.WriteFile(filepath.Join(dir, "none.json"), []byte(`{"bos_token": "<s>"}`), 0o644)
	if _, err := host.ChatTemplate(filepath.Join(dir, "none.json"), m, path); !errors.Is(err, chat.ErrNoTemplate) {
		t.Errorf("a tokenizer_config.json without chat_template: err = %v, want ErrNoTemplate", err)
	}
}

// The second turn reuses the first turn's K/V (prompt and reply) and gives
// the same tokens as a fresh run of its whole prompt.
func TestChatSecondTurnReusesCache(t *testing.T) {
	m, path := chatLoadModel(t, chatQwenGGUF)
	c := chatNewSession(t, m, path, "", chatGreedy(6))
	var out bytes.Buffer
	res1, err := c.send(context.Background(), "Hello, who are you?", &out)
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != res1.Text || res1.Usage.CachedTokens != 0 {
		t.Fatalf("turn 1: streamed %q, result %q, cached %d", out.String(), res1.Text, res1.Usage.CachedTokens)
	}
	if !strings.Contains(c.eng.Model().Tokenizer.Decode(res1.PromptIDs), "<|im_start|>assistant\n") {
		t.Fatalf("turn 1 prompt %v does not end with the ChatML assistant opener", res1.PromptIDs)
	}
	res2, err := c.send(context.Background(), "And what can you do?", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if res2.Usage.CachedTokens < len(res1.PromptIDs) {
		t.Errorf("turn 2 reused %d cached tokens, want at least turn 1's prompt (%d)", res2.Usage.CachedTokens, len(res1.PromptIDs))
	}
	if !slices.Equal(res2.PromptIDs[:len(res1.PromptIDs)], res1.PromptIDs) {
		t.Errorf("turn 2's prompt does not extend turn 1's")
	}
	if len(c.history) != 4 || c.history[1].Content != res1.Text || c.history[3].Role != "assistant" {
		t.Errorf("history = %+v", c.history)
	}

	eng2, err := engine.New(m, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := eng2.Generate(context.Background(), engine.Request{PromptIDs: res2.PromptIDs, Policy: chatGreedy(6)})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fresh.IDs, res2.IDs) {
		t.Errorf("turn 2 with cache: %v, fresh run of the full prompt: %v", res2.IDs, fresh.IDs)
	}

	// /reset forgets the conversation and the cache.
	c.reset()
	res3, err := c.send(context.Background(), "Hello, who are you?", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if res3.Usage.CachedTokens != 0 || !slices.Equal(res3.IDs, res1.IDs) {
		t.Errorf("after reset: cached %d, ids %v; want 0 and turn 1's %v", res3.Usage.CachedTokens, res3.IDs, res1.IDs)
	}

	// /system replaces the system prompt and starts over.
	if err := c.SetSystem("You are terse."); err != nil {
		t.Fatal(err)
	}
	req, err := c.request("Hi")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.history) != 0 || !strings.HasPrefix(req.Prompt, "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi") {
		t.Errorf("after /system: history %d, prompt %q", len(c.history), req.Prompt)
	}
}

// A cancelled reply keeps what was streamed, in the result and in history.
func TestChatCancelKeepsPartialReply(t *testing.T) {
	m, path := chatLoadModel(t, chatQwenGGUF)
	c := chatNewSession(t, m, path, "", chatGreedy(0))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &chatCancelAfter{n: 3, cancel: cancel}
	res, err := c.send(ctx, "Tell me a long story.", w)
	if err != nil {
		t.Fatal(err)
	}
	if res.FinishReason != engine.FinishCancelled {
		t.Fatalf("finish %q, want cancelled", res.FinishReason)
	}
	if res.Text != w.buf.String() || len(c.history) != 2 || c.history[1].Content != res.Text {
		t.Errorf("streamed %q, result %q, history %+v", w.buf.String(), res.Text, c.history)
	}
}

type chatCancelAfter struct {
	n      int
	cancel context.CancelFunc
	buf    bytes.Buffer
}

func (w *chatCancelAfter) Write(p []byte) (int, error) {
	if w.n--; w.n <= 0 {
		w.cancel()
	}
	return w.buf.Write(p)
}
