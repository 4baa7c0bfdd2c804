package main

// nanoserve chat: an interactive terminal chat through the model's chat
// template (package console).

import (
	"errors"
	"fmt"

	"nanoserve/chat"
	"nanoserve/console"
	"nanoserve/engine"
	"nanoserve/host"
	"nanoserve/sample"
)

func runChat(args []string) error {
	fs := newFlags("chat")
	var mf modelFlags
	var pf sample.Flags
	mf.register(fs)
	pf.RegisterFlags(fs)
	tmplPath := fs.String("chat-template", "", "chat template: a Jinja file, or a tokenizer_config.json (default: the model's own)")
	system := fs.String("system", "", "system prompt")
	verbose := fs.Bool("verbose", false, "print time to first token, prefill and decode tokens/s after each reply")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("unexpected argument %q (chat reads messages interactively)", pos[0])
	}
	if mf.model == "" && *tmplPath == "" {
		return errors.New("the built-in model is a completion model (it continues Go source and has no chat template):\n" +
			"  nanoserve generate \"func main() {\"      complete code with it\n" +
			"  nanoserve chat --model REPO:QUANT        chat with an instruction-tuned model, e.g. --model Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M")
	}
	m, err := mf.load()
	if err != nil {
		return err
	}
	defer m.Close()
	if m.Tokenizer == nil {
		return errors.New("the model has no tokenizer (pass one with --tokenizer)")
	}
	tmpl, err := host.ChatTemplate(*tmplPath, m, mf.model)
	if err != nil {
		return err
	}
	// A template that recurses or loops without end fails every turn; say so
	// now rather than after the first message.
	if err := tmpl.Template.Probe(tmpl.Options); errors.Is(err, chat.ErrTemplateLimit) {
		return fmt.Errorf("the chat template cannot render a sample conversation: %w", err)
	}
	pol, err := pf.Policy(m.Gen.Sampling)
	if err != nil {
		return err
	}
	eng, err := engine.New(m, engine.Options{CtxSize: mf.ctxSize, KVType: mf.kv})
	if err != nil {
		return err
	}
	c := console.NewChat(eng, tmpl, pol)
	c.Special = pf.Special
	defer c.Close()
	if *system != "" {
		if err := c.SetSystem(*system); err != nil {
			return err
		}
	}
	return c.Loop(*verbose)
}
