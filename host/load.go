package host

// Loading a served model from its Source: open the model (model.Load), pick
// its chat template (the --chat-template file or the model's own) and, for
// the built-in model, its completion policy; open the draft model; then
// Assemble. A Source is data — the command line's choices — so the model
// table loads a model on first use without calling back into cmd.

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"nanoserve/chat"
	"nanoserve/engine"
	"nanoserve/model"
	"nanoserve/sample"
)

// Source is how every served model is opened and served: the settings the
// models share (each model's path and names are a Served).
type Source struct {
	Model        model.Options // tokenizer override, threads, context, copy weights
	LongContext  bool          // a Model.Context past the trained length is a warning, not an error
	ChatTemplate string        // a Jinja file or tokenizer_config.json ("": each model's own)
	ToolFormat   chat.ToolFormat
	// BuiltinPath is the built-in model's file ("": none); served, it gets
	// BuiltinPolicy as its defaults, with token healing and non-empty
	// output.
	BuiltinPath   string
	BuiltinPolicy sample.Policy
	KV            KVInputs // each model's share of the KV budget (its sizes are filled in)
	Engine        engine.Options
	Draft         Draft
	Log           *slog.Logger // nil: slog.Default()
}

// Draft is speculative decoding's choice (engine.SpecOptions' Mode, K and
// Fixed) and the draft model's path for engine.SpecDraft.
type Draft struct {
	Mode  string
	K     int
	Fixed bool
	Path  string
}

// Spec is the table's entry for the served model me: loaded by Load,
// described by Describe.
func (s *Source) Spec(me Served) Spec {
	return Spec{Names: me.Names, Aliases: me.Aliases, Tags: me.Tags, Preload: me.Named,
		Load:     func() (*Loaded, error) { return s.Load(me) },
		Describe: func() (*Manifest, error) { return s.Describe(me) }}
}

// Load opens the served model me and starts its engine.
func (s *Source) Load(me Served) (*Loaded, error) {
	log := s.log().With("model", me.Names[0])
	m, err := s.open(me.Path, log)
	if err != nil {
		return nil, err
	}
	opts := ModelOptions{ToolFormat: s.ToolFormat}
	builtin := s.BuiltinPath != "" && me.Path == s.BuiltinPath
	if builtin {
		d := s.BuiltinPolicy
		opts.Defaults, opts.TokenHealing, opts.NonEmpty = &d, true, true
	}
	if m.Tokenizer != nil {
		tmpl, err := ChatTemplate(s.ChatTemplate, m, me.Path)
		if builtin && s.ChatTemplate == "" && errors.Is(err, chat.ErrNoTemplate) {
			// The built-in model is a completion model: no ChatML
			// fallback (chat answers 400, the chat page continues its
			// text).
			tmpl = nil
		} else if tmpl, err = serveTemplate(tmpl, err, s.ChatTemplate != "", log); err != nil {
			m.Close()
			return nil, fmt.Errorf("%s: %w", me.Names[0], err)
		}
		if tmpl != nil {
			opts.Template, opts.TemplateOptions = tmpl.Template, tmpl.Options
		}
	}
	return Assemble(Parts{Name: me.Names[0], Model: m, Options: opts, KV: s.KV, Engine: s.Engine, Log: s.Log,
		Spec: func(cacheTokens int) (engine.SpecOptions, func(), error) { return s.draft(m, cacheTokens) }})
}

// Describe is the manifest of a model not loaded yet: the model is opened
// (memory-mapped) and closed again.
func (s *Source) Describe(me Served) (*Manifest, error) {
	m, err := s.open(me.Path, s.log().With("model", me.Names[0]))
	if err != nil {
		return nil, err
	}
	defer m.Close()
	if m.Tokenizer == nil {
		return nil, errors.New("the model has no tokenizer")
	}
	var tmpl *chat.Template
	if p, err := ChatTemplate(s.ChatTemplate, m, me.Path); err == nil {
		tmpl = p.Template
	}
	return NewManifest(m, tmpl)
}

func (s *Source) log() *slog.Logger {
	if s.Log == nil {
		return slog.Default()
	}
	return s.Log
}

// open loads the model at path and checks the KV cache type and the
// context length against it.
func (s *Source) open(path string, log *slog.Logger) (*model.Model, error) {
	m, err := model.Load(path, s.Model)
	if err != nil {
		return nil, err
	}
	if err := m.CheckKVType(s.Engine.KVType); err != nil {
		m.Close()
		return nil, fmt.Errorf("--kv-cache-type %s: %w", strings.ToLower(s.Engine.KVType.String()), err)
	}
	if ctx := s.Model.Context; ctx > m.ContextLen {
		if !s.LongContext {
			m.Close()
			return nil, fmt.Errorf("--ctx %d exceeds the %d positions the model was trained for; pass --allow-long-context to run past it (attention beyond the trained positions degrades)", ctx, m.ContextLen)
		}
		log.Warn(fmt.Sprintf("--ctx %d exceeds the %d positions the model was trained for; expect degraded output past them", ctx, m.ContextLen))
	}
	return m, nil
}

// draft is the engine's speculation options for target m (loading the
// draft model, released by the returned func).
func (s *Source) draft(m *model.Model, cacheTokens int) (engine.SpecOptions, func(), error) {
	d := s.Draft
	o := engine.SpecOptions{Mode: d.Mode, K: d.K, Fixed: d.Fixed}
	none := func() {}
	if d.Mode != engine.SpecDraft {
		return o, none, nil
	}
	dm, err := model.Load(d.Path, model.Options{Tokenizer: s.Model.Tokenizer, Threads: s.Model.Threads, CopyWeights: s.Model.CopyWeights, MapWeights: s.Model.MapWeights})
	if err != nil {
		return o, none, fmt.Errorf("--draft-model: %w", err)
	}
	p, err := engine.NewDraft(dm, m, cacheTokens)
	if err != nil {
		dm.Close()
		return o, none, fmt.Errorf("--draft-model %s: %w", d.Path, err)
	}
	o.Proposer = p
	return o, func() { dm.Close() }, nil
}

// ChatTemplate finds the model's chat template with chat.Discover: the
// file at path (a Jinja source, or a tokenizer_config.json carrying one),
// else the model's own, else a Hugging Face directory's files. BOS/EOS
// texts come from the tokenizer unless a config names them.
func ChatTemplate(path string, m *model.Model, modelPath string) (*chat.Prompter, error) {
	src := chat.Source{Path: path, Embedded: m.Gen.ChatTemplate, Name: modelPath}
	if modelPath == "" {
		src.Name = "the built-in model"
	}
	if fi, err := os.Stat(modelPath); err == nil && fi.IsDir() {
		src.ModelDir = modelPath
	}
	if id, ok := m.Tokenizer.BOS(); ok {
		src.BOS = m.Tokenizer.Token(id)
	}
	if id, ok := m.Tokenizer.EOS(); ok {
		src.EOS = m.Tokenizer.Token(id)
	}
	return chat.Discover(src)
}

// serveTemplate decides what a server does with the chat template it
// found: a template that loads is used even if it fails on a sample
// conversation (a warning; each chat request then gets a 400); a model
// without a template chats in ChatML (a warning, as llama-server falls
// back to it); a model whose own template nests too deep to compile still
// serves completions (a warning; chat answers 400). A template the
// user named with --chat-template (explicit) that cannot be used is an
// error. It returns the template to use, nil for none.
func serveTemplate(tmpl *chat.Prompter, err error, explicit bool, log *slog.Logger) (*chat.Prompter, error) {
	switch {
	case err == nil:
		if err := tmpl.Template.Probe(tmpl.Options); err != nil {
			log.Warn("the chat template fails on a sample conversation; /v1/chat/completions will answer 400", "err", err)
		}
		return tmpl, nil
	case errors.Is(err, chat.ErrNoTemplate) && !explicit:
		// As llama-server: a model without a template chats in ChatML.
		log.Warn("the model has no chat template: chat uses ChatML (pass --chat-template for the model's own layout)")
		return chat.ChatML("", "")
	case errors.Is(err, chat.ErrTemplateLimit) && !explicit:
		log.Warn("the model's chat template cannot be used: /v1/chat/completions will answer 400 (pass --chat-template)", "err", err)
		return nil, nil
	}
	return nil, err
}
