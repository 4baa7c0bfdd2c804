package chat

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Source says where a model's chat template may come from, in plain
// values (so this package imports nothing of the model's).
type Source struct {
	Path     string // a Jinja file or a tokenizer_config.json given by the user ("": the model's own)
	Embedded string // the model file's own template (GGUF tokenizer.chat_template, a loader's find)
	ModelDir string // a Hugging Face directory to search (tokenizer_config.json, chat_template.jinja); "" for a file
	Name     string // the model's name for errors ("": "the model")
	BOS, EOS string // the tokenizer's BOS/EOS texts ("" when it has none); a config may override them
}

// Prompter is a template with the variables it renders with: the recipe
// that turns a conversation into the prompt an engine completes.
type Prompter struct {
	Template *Template
	Options  Options // BOS, EOS and Extra; AddGenerationPrompt is set by Prompt
}

// Prompt renders msgs with the generation prompt and returns the text to
// tokenize (with special-token text parsed as special tokens) and whether
// the tokenizer must skip its own BOS because the template wrote one.
func (p *Prompter) Prompt(msgs []Message) (text string, skipBOS bool, err error) {
	opts := p.Options
	opts.AddGenerationPrompt = true
	text, err = p.Template.Render(msgs, opts)
	if err != nil {
		return "", false, err
	}
	return text, StartsWithBOS(text, p.Options.BOS), nil
}

// Discover finds and parses the chat template: src.Path (a Jinja source,
// or a tokenizer_config.json carrying one), else src.Embedded, else a
// Hugging Face directory's tokenizer_config.json or chat_template.jinja.
// No template at all is ErrNoTemplate (wrapped). BOS/EOS texts are
// src's unless the config names them.
func Discover(src Source) (*Prompter, error) {
	var text string
	var cfg *Config
	readConfig := func(p string) error {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		c, err := ParseConfig(b)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		cfg, text = c, c.Template
		return nil
	}
	switch path := src.Path; {
	case path != "" && strings.HasSuffix(strings.ToLower(path), ".json"):
		if err := readConfig(path); err != nil {
			return nil, fmt.Errorf("chat template: %w", err)
		}
		if text == "" {
			return nil, fmt.Errorf("%s holds no chat_template: %w", path, ErrNoTemplate)
		}
	case path != "":
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("chat template: %w", err)
		}
		text = string(b)
		if strings.TrimSpace(text) == "" {
			return nil, fmt.Errorf("chat template %s is empty", path)
		}
	default:
		text = src.Embedded
		if dir := src.ModelDir; dir != "" {
			// Hugging Face directory: its config also names the special
			// tokens the template may use.
			if p := filepath.Join(dir, "tokenizer_config.json"); fileExists(p) {
				keep := text
				if err := readConfig(p); err != nil {
					return nil, err
				}
				if keep != "" {
					text = keep
				}
			}
			if p := filepath.Join(dir, "chat_template.jinja"); text == "" && fileExists(p) {
				b, err := os.ReadFile(p)
				if err != nil {
					return nil, err
				}
				text = string(b)
			}
		}
		if strings.TrimSpace(text) == "" {
			name := src.Name
			if name == "" {
				name = "the model"
			}
			return nil, fmt.Errorf("%s: %w", name, ErrNoTemplate)
		}
	}
	t, err := Parse(text)
	if err != nil {
		return nil, err
	}
	p := &Prompter{Template: t, Options: Options{BOS: src.BOS, EOS: src.EOS}}
	if cfg != nil {
		if cfg.BOS != "" {
			p.Options.BOS = cfg.BOS
		}
		if cfg.EOS != "" {
			p.Options.EOS = cfg.EOS
		}
		if len(cfg.Vars) > 0 {
			p.Options.Extra = cfg.Vars
		}
	}
	return p, nil
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}
