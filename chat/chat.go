// Package chat turns a conversation into the exact prompt text a chat model
// was trained on, by rendering the model's chat template.
//
// A chat model does not see "messages"; it sees one token stream in which
// each turn is wrapped in model-specific markers, e.g. Llama-3's
//
//	<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n
//
// or Qwen's ChatML "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n".
// Models ship the recipe as a Jinja template: `chat_template` in Hugging
// Face's tokenizer_config.json, or `tokenizer.chat_template` in GGUF metadata.
// The de-facto reference renderer is transformers' apply_chat_template, i.e.
// Python Jinja2 with a fixed environment; a prompt that differs by one byte
// from what that produces tokenizes differently from what the model was
// trained on. This package reproduces that environment in Go:
//
//   - Jinja semantics from chat/internal/tmpl, an interpreter written here
//     for chat templates (lexer, parser, evaluator; see its package doc),
//     with Jinja2's trim_blocks=True and lstrip_blocks=True (block tags eat
//     the newline after them and the indentation before them), the
//     loopcontrols extension and Hugging Face's {% generation %} block.
//   - Globals raise_exception(msg) (rendering fails with *RaiseError carrying
//     msg) and strftime_now(fmt) (Python strftime of Options.Now, local time
//     by default, so tests can pin the date).
//   - Filter tojson as Hugging Face defines it: json.dumps(x,
//     ensure_ascii=False, indent=None, separators=None, sort_keys=False) —
//     non-ASCII kept raw, ", " and ": " separators (",", ": " with indent),
//     keys in insertion order, Python float repr (1.0 stays "1.0").
//   - Variables: messages, tools and documents (undefined when not given, as
//     llama.cpp renders; transformers passes None, on which some templates
//     — Hermes, Command-R tool_use — fail without tools),
//     add_generation_prompt, bos_token and eos_token (always strings, "" for
//     a model without one, as llama.cpp passes them — so `bos_token + x`
//     works for every model), plus Options.Extra,
//     where callers put the other special tokens (pad_token, unk_token...,
//     see Config.Vars) and template switches such as enable_thinking.
//   - Message dicts carry role and content always, and tool_calls,
//     tool_call_id, name and Extra fields only when set, so tests such as
//     `'tool_calls' in message` behave as they do on the Python dicts. Values
//     built from JSON (json.RawMessage) keep their key order, as Python does.
//
// The parity test (TestGolden) renders every conversation in
// testdata/cases.json — system or not, multi-turn, tools, assistant tool
// calls and tool results, non-ASCII, reasoning content — through the real
// templates of Llama-3, Llama-3.2, Qwen2.5, Qwen3, SmolLM2, Mistral-v0.3 and
// the 70 of llama.cpp's collection (testdata/templates/llamacpp: Qwen3/3.5,
// DeepSeek V3–V4, Llama 3.x, Gemma 2/4, gpt-oss, Kimi, GLM, Mistral, Granite,
// Phi, SmolLM3, LFM2, Nemotron, ...) and compares byte for byte with goldens
// that testdata/render_golden.py produced with Python Jinja2 in HF's
// environment.
//
// Limits. A template is data from a model file, and a render is a program
// run: a macro that calls itself would overflow the Go stack, which is fatal
// (not a panic recover can catch), and a loop cannot be stopped from outside.
// So the interpreter counts, per render: nested macro/caller() calls
// (Limits.MaxDepth), statements plus expressions plus loop iterations
// (MaxSteps), the size of the output and of any one string (MaxOutput,
// checked before a repetition, replace, indent, join, print or tojson
// builds its result), and the bytes of strings and list slots produced
// (MaxAlloc); parsing bounds block and expression nesting. Exceeding any
// fails with an error matching ErrTemplateLimit; Template.Probe renders a
// sample conversation so that a caller can warn at load time. range() is
// capped at 100000 items as in Jinja2's sandbox.
//
// Known difference from Jinja2's ImmutableSandboxedEnvironment: list and dict
// mutators (append, pop, update...) work here, where the sandbox refuses
// them with SecurityError (the goldens count these cases apart). A printed
// generator or bound method shows no memory address.
//
// BOS. Many templates write the BOS text themselves ({{ bos_token }}), while
// the engine's tokenizer may also be configured to prepend BOS; doing both
// gives the model two BOS tokens. HF avoids this by tokenizing the rendered
// chat with add_special_tokens=False. Callers here should tokenize the
// rendered text with special-token parsing on, and prepend the BOS id only if
// the tokenizer wants one AND StartsWithBOS(text, bos) is false.
package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"nanoserve/chat/internal/tmpl"
)

// ErrNoTemplate is returned when a model ships no chat template.
var ErrNoTemplate = errors.New("chat: model has no chat template; pass --chat-template FILE")

// ErrTemplateLimit is matched (errors.Is) by a render or parse that exceeded
// one of the interpreter's limits (recursion depth, steps, output size,
// allocation, nesting): the template, not the request, is at fault.
var ErrTemplateLimit = tmpl.ErrLimit

// Limits bound the work of one render; see Options.Limits.
type Limits = tmpl.Limits

// DefaultLimits are the limits a render has when Options.Limits is zero.
var DefaultLimits = tmpl.DefaultLimits

// RaiseError is the error a template produces by calling raise_exception.
type RaiseError struct {
	Message string
}

func (e *RaiseError) Error() string { return "chat: template raised: " + e.Message }

// Message is one conversation turn as the template sees it.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// ToolCalls are the assistant's tool calls, each JSON-able, usually
	// {"id", "type": "function", "function": {"name", "arguments": {...}}}.
	// json.RawMessage elements keep their key order.
	ToolCalls  []any  `json:"tool_calls,omitempty"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	Name       string `json:"name,omitempty"`
	// Extra holds any further fields (e.g. reasoning_content), added after the
	// standard ones in sorted key order.
	Extra map[string]any `json:"-"`
}

// UnmarshalJSON reads an OpenAI/HF-style message object. tool_calls elements
// and unknown fields are kept as json.RawMessage so their key order survives;
// a null content reads as "".
func (m *Message) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("chat: message: %w", err)
	}
	*m = Message{}
	str := func(key string, dst *string) error {
		v, ok := raw[key]
		delete(raw, key)
		if !ok || string(v) == "null" {
			return nil
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return fmt.Errorf("chat: message field %q: %w", key, err)
		}
		return nil
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"role", &m.Role}, {"content", &m.Content}, {"tool_call_id", &m.ToolCallID}, {"name", &m.Name}} {
		if err := str(f.key, f.dst); err != nil {
			return err
		}
	}
	if v, ok := raw["tool_calls"]; ok {
		delete(raw, "tool_calls")
		if string(v) != "null" {
			var calls []json.RawMessage
			if err := json.Unmarshal(v, &calls); err != nil {
				return fmt.Errorf("chat: message field \"tool_calls\": %w", err)
			}
			for _, c := range calls {
				m.ToolCalls = append(m.ToolCalls, c)
			}
		}
	}
	if len(raw) > 0 {
		m.Extra = make(map[string]any, len(raw))
		for k, v := range raw {
			m.Extra[k] = v
		}
	}
	return nil
}

// Options are the non-message inputs of a render.
type Options struct {
	BOS, EOS            string // bos_token / eos_token texts ("" for a model without one)
	AddGenerationPrompt bool   // end with the opener of an assistant turn
	Tools               []any  // tool schemas (JSON-able); nil leaves tools undefined
	Documents           []any  // RAG documents (JSON-able); nil leaves documents undefined
	// Extra variables: other special tokens (see Config.Vars) and template
	// switches such as enable_thinking. Values are JSON-able.
	Extra map[string]any
	// Now is the clock for strftime_now; nil means time.Now (local time).
	Now func() time.Time
	// Limits bound the render (zero fields: DefaultLimits). A template is
	// data from a model file: a macro that calls itself, a loop that does not
	// end, or a string that doubles in a loop fails the render with an error
	// matching ErrTemplateLimit instead of exhausting the stack or memory.
	Limits Limits
}

// Template is a compiled chat template. It is safe for concurrent use.
type Template struct {
	t   *tmpl.Template
	src string
}

// ToolFormat is the tool-call format the template teaches the model
// (DetectToolFormat on its source).
func (t *Template) ToolFormat() ToolFormat { return DetectToolFormat(t.src) }

// Source is the template's text.
func (t *Template) Source() string { return t.src }

// Parse compiles a chat template once, to be rendered many times. A syntax
// error says where (line, column), in what construct, and what was expected.
func Parse(src string) (*Template, error) {
	if strings.TrimSpace(src) == "" {
		return nil, ErrNoTemplate
	}
	t, err := tmpl.Parse(src)
	if err != nil {
		return nil, fmt.Errorf("chat: parse template: %w", err)
	}
	return &Template{t: t, src: src}, nil
}

// ErrNotTemplate is wrapped by CheckSource when a file's content cannot be
// a chat template.
var ErrNotTemplate = errors.New("chat: not a chat template")

// CheckSource tells, by content, whether src can be a Jinja chat template: it
// must be UTF-8 text without NUL bytes and hold at least one tag ({{ }} or
// {% %}), since a template without tags renders the same text whatever the
// conversation. A random or binary file passed as a template fails here with
// an error saying what it is not, instead of being rendered literally.
func CheckSource(src string) error {
	switch {
	case strings.IndexByte(src, 0) >= 0:
		return fmt.Errorf("%w: it holds NUL bytes (a binary file?), not Jinja text", ErrNotTemplate)
	case !utf8.ValidString(src):
		return fmt.Errorf("%w: it is not UTF-8 text", ErrNotTemplate)
	case !strings.Contains(src, "{{") && !strings.Contains(src, "{%"):
		return fmt.Errorf("%w: it holds no Jinja tags ({{ ... }} or {%% ... %%}), so it would render the same text for every conversation", ErrNotTemplate)
	}
	return nil
}

// Render renders one conversation into prompt text.
func Render(src string, msgs []Message, opt Options) (string, error) {
	t, err := Parse(src)
	if err != nil {
		return "", err
	}
	return t.Render(msgs, opt)
}

// Render renders one conversation into prompt text.
func (t *Template) Render(msgs []Message, opt Options) (out string, err error) {
	vars := make(map[string]tmpl.Value, 12+len(opt.Extra))
	vars["bos_token"] = tmpl.String(opt.BOS)
	vars["eos_token"] = tmpl.String(opt.EOS)
	for k, v := range opt.Extra {
		val, err := toValue(v)
		if err != nil {
			return "", fmt.Errorf("chat: variable %q: %w", k, err)
		}
		vars[k] = val
	}
	list := make([]tmpl.Value, len(msgs))
	for i, m := range msgs {
		v, err := messageValue(m)
		if err != nil {
			return "", fmt.Errorf("chat: message %d: %w", i, err)
		}
		list[i] = v
	}
	vars["messages"] = tmpl.NewList(list)
	if opt.Tools != nil {
		v, err := toValue(opt.Tools)
		if err != nil {
			return "", fmt.Errorf("chat: tools: %w", err)
		}
		vars["tools"] = v
	}
	if opt.Documents != nil {
		v, err := toValue(opt.Documents)
		if err != nil {
			return "", fmt.Errorf("chat: documents: %w", err)
		}
		vars["documents"] = v
	}
	vars["add_generation_prompt"] = tmpl.Bool(opt.AddGenerationPrompt)
	vars["raise_exception"] = tmpl.NewFunc("raise_exception", func(c *tmpl.Call) (tmpl.Value, error) {
		msg := ""
		if len(c.Args) > 0 {
			msg = tmpl.Repr(c.Args[0])
			if c.Args[0].IsString() {
				msg = c.Args[0].Str()
			}
		}
		return tmpl.Undefined(), &RaiseError{Message: msg}
	})
	now := opt.Now
	if now == nil {
		now = time.Now
	}
	vars["strftime_now"] = tmpl.NewFunc("strftime_now", func(c *tmpl.Call) (tmpl.Value, error) {
		if len(c.Args) == 0 || !c.Args[0].IsString() {
			return tmpl.Undefined(), errors.New("strftime_now: expected a format string")
		}
		return tmpl.String(strftime(c.Args[0].Str(), now())), nil
	})
	out, err = t.t.Render(vars, opt.Limits)
	if err != nil {
		var raised *RaiseError
		if errors.As(err, &raised) {
			return "", raised
		}
		return "", fmt.Errorf("chat: render: %w", err)
	}
	return out, nil
}

// Probe renders a small sample conversation (a user turn, an assistant turn,
// a user turn, with the generation prompt), so a caller can warn at load time
// about a template that fails on every request, e.g. one that recurses
// without end. opt supplies the special tokens and variables.
func (t *Template) Probe(opt Options) error {
	opt.AddGenerationPrompt = true
	_, err := t.Render([]Message{{Role: "user", Content: "Hello"}, {Role: "assistant", Content: "Hi."}, {Role: "user", Content: "How are you?"}}, opt)
	return err
}

// StartsWithBOS reports whether rendered prompt text already begins with the
// BOS token's text, i.e. the template wrote BOS itself and the caller must
// not prepend another BOS id when tokenizing. It is false when bos is "".
func StartsWithBOS(rendered, bos string) bool {
	return bos != "" && strings.HasPrefix(rendered, bos)
}

// Config is what a tokenizer_config.json says about chat formatting.
type Config struct {
	Template string            // the template to use ("default" of a named list); "" if none
	Named    map[string]string // all named templates when chat_template is a list (e.g. "tool_use")
	BOS, EOS string            // bos_token / eos_token text; "" when unset
	// Vars are the other special tokens HF passes to templates: unk_token,
	// sep_token, pad_token, cls_token, mask_token (strings) and
	// additional_special_tokens (a list), each only when set. Pass them as
	// Options.Extra.
	Vars map[string]any
}

// ParseConfig reads the chat-related fields of a tokenizer_config.json:
// chat_template (a string, or a list of {name, template} whose "default" entry
// is used), and the special tokens, each either a string or an AddedToken
// object {"content": ...}. A config without a template is not an error here;
// Config.Template is then "" (see ErrNoTemplate).
func ParseConfig(tokenizerConfigJSON []byte) (*Config, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(tokenizerConfigJSON, &raw); err != nil {
		return nil, fmt.Errorf("chat: tokenizer_config.json: %w", err)
	}
	c := &Config{Vars: map[string]any{}}
	if ct, ok := raw["chat_template"]; ok && string(ct) != "null" {
		var s string
		if err := json.Unmarshal(ct, &s); err == nil {
			c.Template = s
		} else {
			var list []struct {
				Name     string `json:"name"`
				Template string `json:"template"`
			}
			if err := json.Unmarshal(ct, &list); err != nil {
				return nil, errors.New("chat: tokenizer_config.json: chat_template is neither a string nor a list of {name, template}")
			}
			c.Named = make(map[string]string, len(list))
			for _, t := range list {
				c.Named[t.Name] = t.Template
			}
			def, ok := c.Named["default"]
			if !ok {
				return nil, errors.New("chat: tokenizer_config.json: chat_template list has no \"default\" entry")
			}
			c.Template = def
		}
	}
	var err error
	if c.BOS, err = tokenText(raw, "bos_token"); err != nil {
		return nil, err
	}
	if c.EOS, err = tokenText(raw, "eos_token"); err != nil {
		return nil, err
	}
	for _, key := range []string{"unk_token", "sep_token", "pad_token", "cls_token", "mask_token"} {
		t, err := tokenText(raw, key)
		if err != nil {
			return nil, err
		}
		if t != "" {
			c.Vars[key] = t
		}
	}
	if v, ok := raw["additional_special_tokens"]; ok && string(v) != "null" {
		var list []json.RawMessage
		if err := json.Unmarshal(v, &list); err != nil {
			return nil, fmt.Errorf("chat: tokenizer_config.json: additional_special_tokens: %w", err)
		}
		if len(list) > 0 {
			texts := make([]any, 0, len(list))
			for i, item := range list {
				t, err := addedTokenText(item)
				if err != nil {
					return nil, fmt.Errorf("chat: tokenizer_config.json: additional_special_tokens[%d]: %w", i, err)
				}
				texts = append(texts, t)
			}
			c.Vars["additional_special_tokens"] = texts
		}
	}
	return c, nil
}

// ConfigTemplate is ParseConfig reduced to the template and BOS/EOS texts; it
// returns ErrNoTemplate when the config has no chat template.
func ConfigTemplate(tokenizerConfigJSON []byte) (src, bos, eos string, err error) {
	c, err := ParseConfig(tokenizerConfigJSON)
	if err != nil {
		return "", "", "", err
	}
	if c.Template == "" {
		return "", c.BOS, c.EOS, ErrNoTemplate
	}
	return c.Template, c.BOS, c.EOS, nil
}

func tokenText(raw map[string]json.RawMessage, key string) (string, error) {
	v, ok := raw[key]
	if !ok || string(v) == "null" {
		return "", nil
	}
	t, err := addedTokenText(v)
	if err != nil {
		return "", fmt.Errorf("chat: tokenizer_config.json: %s: %w", key, err)
	}
	return t, nil
}

// addedTokenText reads a special token given as "text" or {"content": "text", ...}.
func addedTokenText(v json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		return s, nil
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(v, &obj); err != nil || obj.Content == nil {
		return "", errors.New("want a string or an object with \"content\"")
	}
	return *obj.Content, nil
}
