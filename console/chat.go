// Package console is nanoserve's terminal side of the engine: the
// interactive chat (`nanoserve chat`) and one-shot generation
// (`nanoserve generate`), each reading from and writing to a terminal or
// pipes, with the engine doing the work.
//
// # Chat
//
// Each turn appends the user's message to the conversation, renders the
// whole conversation with the template (ending with the opener of an
// assistant turn), tokenizes it with special-token parsing on and runs it on
// one engine Session. The session keeps the K/V of everything already
// computed, and the engine reuses the longest token prefix the new prompt
// shares with it, so a turn prefills only what is new: the previous reply's
// closing markers and the new message. The reply streams to the terminal as
// it is sampled and is appended to the conversation as an assistant message.
//
// BOS: many templates write the BOS text themselves ({{ bos_token }}); the
// prompt then must not get a second BOS id from the tokenizer, so the request
// sets NoBOS when the rendered text starts with the BOS text.
//
// Ctrl-C while a reply streams cancels that reply only (the program goes
// back to the prompt); the partial reply stays in the conversation, as the
// user saw it and its K/V are already cached. Ctrl-C or Ctrl-D at the prompt
// ends the program cleanly (exit status 0).
//
// # Generate
//
// Generate runs one request and either streams its text as it lands or
// prints one JSON object (ids, text, finish reason, timings, policy,
// logprobs); a Cut function can end the output early (the built-in
// model's end of block, defaultmodel.BlockStop).
package console

import (
	"context"
	"errors"
	"fmt"
	"io"

	"nanoserve/chat"
	"nanoserve/engine"
	"nanoserve/sample"
)

// Help lists the chat's commands.
const Help = `commands:
  /system TEXT   set the system prompt (an empty TEXT removes it) and start over
  /reset         forget the conversation (keeps the system prompt)
  /exit          quit (also Ctrl-D or Ctrl-C at the prompt)
  /help          this text
Ctrl-C while a reply streams stops that reply.`

// Chat is one conversation on one engine session.
type Chat struct {
	eng     *engine.Engine
	sess    *engine.Session
	tmpl    *chat.Prompter
	policy  sample.Policy
	Special bool // control tokens as text (--special)
	system  string
	history []chat.Message // user and assistant turns (the system prompt is kept apart)
}

// NewChat starts a conversation on a new session of eng, rendered with
// tmpl and sampled with pol.
func NewChat(eng *engine.Engine, tmpl *chat.Prompter, pol sample.Policy) *Chat {
	return &Chat{eng: eng, sess: eng.NewSession(), tmpl: tmpl, policy: pol}
}

// Close releases the conversation's KV cache.
func (c *Chat) Close() { c.sess.Close() }

// reset forgets the conversation and its cache; the system prompt stays.
func (c *Chat) reset() {
	c.history = nil
	c.sess.Reset()
}

// SetSystem replaces the system prompt and starts over. The template is
// tried on it first, so one that rejects system messages fails here rather
// than on every later turn.
func (c *Chat) SetSystem(text string) error {
	if text != "" {
		msgs := []chat.Message{{Role: "system", Content: text}, {Role: "user", Content: "hi"}}
		if _, _, err := c.tmpl.Prompt(msgs); err != nil {
			return fmt.Errorf("the chat template rejects this system prompt: %w", err)
		}
	}
	c.system = text
	c.reset()
	return nil
}

// messages is the conversation as the template sees it, with extra turns
// appended.
func (c *Chat) messages(extra ...chat.Message) []chat.Message {
	var msgs []chat.Message
	if c.system != "" {
		msgs = append(msgs, chat.Message{Role: "system", Content: c.system})
	}
	msgs = append(msgs, c.history...)
	return append(msgs, extra...)
}

// request builds the engine request for the conversation plus the user's
// new message.
func (c *Chat) request(user string) (engine.Request, error) {
	text, skipBOS, err := c.tmpl.Prompt(c.messages(chat.Message{Role: "user", Content: user}))
	if err != nil {
		return engine.Request{}, err
	}
	return engine.Request{
		Prompt:       text,
		ParseSpecial: true,
		NoBOS:        skipBOS,
		Policy:       c.policy,
		Session:      c.sess,
		Special:      c.Special,
	}, nil
}

// send runs one turn: it streams the reply's text to w and, unless the turn
// failed, appends the user message and the reply (possibly partial, when
// ctx was cancelled) to the conversation. A non-nil error means the turn
// left the conversation unchanged.
func (c *Chat) send(ctx context.Context, user string, w io.Writer) (*engine.Result, error) {
	req, err := c.request(user)
	if err != nil {
		return nil, err
	}
	var res *engine.Result
	for tok, err := range c.eng.GenerateStream(ctx, req, &res) {
		if err != nil {
			if errors.Is(err, engine.ErrPromptTooLong) {
				return nil, fmt.Errorf("%w (/reset to start over)", err)
			}
			return nil, err
		}
		if _, err := io.WriteString(w, tok.Text); err != nil {
			return nil, err
		}
	}
	if res.FinishReason == engine.FinishError {
		return res, fmt.Errorf("generation failed after %d tokens: %w", len(res.IDs), res.Err)
	}
	c.history = append(c.history,
		chat.Message{Role: "user", Content: user},
		chat.Message{Role: "assistant", Content: res.Text})
	return res, nil
}
