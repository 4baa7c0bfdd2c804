package main

// nanoserve chat: an interactive terminal chat through the model's chat
// template.
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

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"

	"github.com/peterh/liner"

	"nanoserve/chat"
	"nanoserve/engine"
	"nanoserve/model"
	"nanoserve/sample"
)

const chatHelp = `commands:
  /system TEXT   set the system prompt (an empty TEXT removes it) and start over
  /reset         forget the conversation (keeps the system prompt)
  /exit          quit (also Ctrl-D or Ctrl-C at the prompt)
  /help          this text
Ctrl-C while a reply streams stops that reply.`

func runChat(args []string) error {
	fs := newFlags("chat")
	var mf modelFlags
	var pf policyFlags
	mf.register(fs)
	pf.register(fs)
	tmplPath := fs.String("chat-template", "", "chat template: a Jinja file, or a tokenizer_config.json (default: the model's own)")
	system := fs.String("system", "", "system prompt")
	verbose := fs.Bool("verbose", false, "print time to first token, prefill and decode tokens/s after each reply")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: nanoserve chat [flags]\n\n"+chatHelp+"\n\nflags:")
		fs.PrintDefaults()
	}
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
	tmpl, err := loadChatTemplate(*tmplPath, m, mf.model)
	if err != nil {
		return err
	}
	// A template that recurses or loops without end fails every turn; say so
	// now rather than after the first message.
	if err := tmpl.Template.Probe(tmpl.Options); errors.Is(err, chat.ErrTemplateLimit) {
		return fmt.Errorf("the chat template cannot render a sample conversation: %w", err)
	}
	pol, err := pf.policy(fs, m.Gen.Sampling)
	if err != nil {
		return err
	}
	eng, err := engine.New(m, engine.Options{CtxSize: mf.ctxSize, KVType: mf.kv})
	if err != nil {
		return err
	}
	c := newChatSession(eng, tmpl, pol)
	c.special = pf.special
	defer c.close()
	if *system != "" {
		if err := c.setSystem(*system); err != nil {
			return err
		}
	}
	return chatLoop(c, *verbose)
}

// loadChatTemplate finds the model's chat template with chat.Discover:
// the --chat-template file (a Jinja source, or a tokenizer_config.json
// carrying one), else the model's own, else a Hugging Face directory's
// files. BOS/EOS texts come from the tokenizer unless a config names them.
func loadChatTemplate(path string, m *model.Model, modelPath string) (*chat.Prompter, error) {
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

// chatSession is one conversation on one engine session.
type chatSession struct {
	eng     *engine.Engine
	sess    *engine.Session
	tmpl    *chat.Prompter
	policy  sample.Policy
	special bool // control tokens as text (--special)
	system  string
	history []chat.Message // user and assistant turns (the system prompt is kept apart)
}

func newChatSession(eng *engine.Engine, tmpl *chat.Prompter, pol sample.Policy) *chatSession {
	return &chatSession{eng: eng, sess: eng.NewSession(), tmpl: tmpl, policy: pol}
}

func (c *chatSession) close() { c.sess.Close() }

// reset forgets the conversation and its cache; the system prompt stays.
func (c *chatSession) reset() {
	c.history = nil
	c.sess.Reset()
}

// setSystem replaces the system prompt and starts over. The template is
// tried on it first, so one that rejects system messages fails here rather
// than on every later turn.
func (c *chatSession) setSystem(text string) error {
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
func (c *chatSession) messages(extra ...chat.Message) []chat.Message {
	var msgs []chat.Message
	if c.system != "" {
		msgs = append(msgs, chat.Message{Role: "system", Content: c.system})
	}
	msgs = append(msgs, c.history...)
	return append(msgs, extra...)
}

// request builds the engine request for the conversation plus the user's
// new message.
func (c *chatSession) request(user string) (engine.Request, error) {
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
		Special:      c.special,
	}, nil
}

// send runs one turn: it streams the reply's text to w and, unless the turn
// failed, appends the user message and the reply (possibly partial, when
// ctx was cancelled) to the conversation. A non-nil error means the turn
// left the conversation unchanged.
func (c *chatSession) send(ctx context.Context, user string, w io.Writer) (*engine.Result, error) {
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

// lineReader reads the user's lines: liner (line editing, history) when
// stdin and stdout are a terminal, else plain lines from stdin.
type lineReader struct {
	ln *liner.State
	br *bufio.Reader
}

var errAborted = errors.New("aborted")

func newLineReader() *lineReader {
	if _, err := liner.TerminalMode(); err == nil && isCharDevice(os.Stdout) {
		ln := liner.NewLiner()
		ln.SetCtrlCAborts(true)
		return &lineReader{ln: ln}
	}
	return &lineReader{br: bufio.NewReader(os.Stdin)}
}

func isCharDevice(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// read shows the prompt and returns one line; io.EOF at end of input,
// errAborted on Ctrl-C.
func (r *lineReader) read(prompt string) (string, error) {
	if r.ln != nil {
		line, err := r.ln.Prompt(prompt)
		switch {
		case err == nil:
			if strings.TrimSpace(line) != "" {
				r.ln.AppendHistory(line)
			}
			return line, nil
		case errors.Is(err, liner.ErrPromptAborted):
			return "", errAborted
		case errors.Is(err, liner.ErrNotTerminalOutput):
			r.ln.Close()
			r.ln, r.br = nil, bufio.NewReader(os.Stdin)
		default:
			return "", err
		}
	}
	fmt.Fprint(os.Stdout, prompt)
	line, err := r.br.ReadString('\n')
	if err != nil && (line == "" || err != io.EOF) {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// close restores the terminal.
func (r *lineReader) close() {
	if r.ln != nil {
		r.ln.Close()
	}
}

// chatLoop reads lines and runs turns until /exit, end of input or Ctrl-C at
// the prompt.
func chatLoop(c *chatSession, verbose bool) error {
	in := newLineReader()
	var closeOnce sync.Once
	closeIn := func() { closeOnce.Do(in.close) }
	defer closeIn()

	// SIGINT (Ctrl-C where the terminal turns it into a signal) cancels the
	// running reply; with no reply running it ends the program. At a liner
	// prompt Ctrl-C arrives as a key instead (errAborted).
	var mu sync.Mutex
	var cancelReply context.CancelFunc
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	defer signal.Stop(sig)
	go func() {
		for range sig {
			mu.Lock()
			cancel := cancelReply
			mu.Unlock()
			if cancel != nil {
				cancel()
				continue
			}
			closeIn()
			fmt.Fprintln(os.Stdout)
			os.Exit(0)
		}
	}()

	fmt.Fprintf(os.Stderr, "nanoserve chat: %d-token context; /help for commands, /exit or Ctrl-D to quit\n", c.eng.CtxSize())
	for {
		line, err := in.read(">>> ")
		if err == io.EOF || err == errAborted {
			fmt.Fprintln(os.Stdout)
			return nil
		}
		if err != nil {
			return err
		}
		text := strings.TrimSpace(line)
		if text == "" {
			continue
		}
		if cmd, arg, ok := chatCommand(text); ok {
			switch cmd {
			case "/exit", "/quit", "/bye":
				return nil
			case "/reset", "/clear":
				c.reset()
				fmt.Fprintln(os.Stderr, "[conversation cleared]")
			case "/system":
				if err := c.setSystem(arg); err != nil {
					fmt.Fprintf(os.Stderr, "error: %v\n", err)
				} else if arg == "" {
					fmt.Fprintln(os.Stderr, "[system prompt removed; conversation cleared]")
				} else {
					fmt.Fprintln(os.Stderr, "[system prompt set; conversation cleared]")
				}
			case "/help", "/?":
				fmt.Fprintln(os.Stderr, chatHelp)
			default:
				fmt.Fprintf(os.Stderr, "unknown command %s (/help lists them)\n", cmd)
			}
			continue
		}

		ctx, cancel := context.WithCancel(context.Background())
		mu.Lock()
		cancelReply = cancel
		mu.Unlock()
		res, err := c.send(ctx, text, os.Stdout)
		mu.Lock()
		cancelReply = nil
		mu.Unlock()
		cancel()
		if err != nil {
			fmt.Fprintf(os.Stdout, "\n")
			fmt.Fprintf(os.Stderr, "error: %v\n", err)
			continue
		}
		fmt.Fprintln(os.Stdout)
		switch res.FinishReason {
		case engine.FinishCancelled:
			fmt.Fprintln(os.Stderr, "[reply interrupted]")
		case engine.FinishLength:
			if p := c.policy.MaxTokens; p > 0 && len(res.IDs) >= p {
				fmt.Fprintf(os.Stderr, "[reply cut at --max-tokens %d]\n", p)
			} else {
				fmt.Fprintln(os.Stderr, "[context full: /reset to start over]")
			}
		}
		if verbose {
			printTimings(os.Stderr, res)
		}
	}
}

// chatCommand splits a "/command arg" line; ok is false for other text.
func chatCommand(text string) (cmd, arg string, ok bool) {
	if !strings.HasPrefix(text, "/") {
		return "", "", false
	}
	cmd, arg, _ = strings.Cut(text, " ")
	return strings.ToLower(cmd), strings.TrimSpace(arg), true
}
