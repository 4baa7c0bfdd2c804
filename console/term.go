package console

// The chat's terminal: lines from liner (line editing, history) or plain
// stdin, the /commands, and Ctrl-C's two meanings.

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

	"nanoserve/engine"
)

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

// Loop reads lines and runs turns until /exit, end of input or Ctrl-C at
// the prompt; verbose prints each reply's timings.
func (c *Chat) Loop(verbose bool) error {
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
				if err := c.SetSystem(arg); err != nil {
					fmt.Fprintf(os.Stderr, "error: %v\n", err)
				} else if arg == "" {
					fmt.Fprintln(os.Stderr, "[system prompt removed; conversation cleared]")
				} else {
					fmt.Fprintln(os.Stderr, "[system prompt set; conversation cleared]")
				}
			case "/help", "/?":
				fmt.Fprintln(os.Stderr, Help)
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
			PrintTimings(os.Stderr, res)
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
