//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"nanoserve/chat"
)

// chatSharedPath walks up from the working directory to the folder holding
// shared/README.md and returns rel inside it; tests skip without it.
func chatSharedPath(t testing.TB, rel string) string {
	t.Helper()
	d, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		p := filepath.Join(d, "shared")
		if _, err := os.Stat(filepath.Join(p, "README.md")); err == nil {
			return filepath.Join(p, filepath.FromSlash(rel))
		}
		parent := filepath.Dir(d)
		if parent == d {
			t.Skip("shared/ test data not found")
		}
		d = parent
	}
}

const (
	chatQwenGGUF  = "testdata/gguf/qwen2/qwen2-F16.gguf"         // has tokenizer.chat_template (ChatML)
	chatLlamaGGUF = "testdata/gguf/llama_gqa/llama_gqa-F16.gguf" // no chat template; BOS <s> added by the tokenizer
)

func TestChatNoTemplateIsAClearError(t *testing.T) {
	p := chatSharedPath(t, chatLlamaGGUF)
	err := runChat([]string{"--model", p, "--threads", "1"})
	if !errors.Is(err, chat.ErrNoTemplate) {
		t.Fatalf("runChat on a model without a template: err = %v, want chat.ErrNoTemplate", err)
	}
	if !strings.Contains(err.Error(), "--chat-template") || !strings.Contains(err.Error(), "llama_gqa") {
		t.Errorf("error %q should name the model and the --chat-template flag", err)
	}
}

// --- driving the real CLI through a pseudo-terminal ---

// TestChatHelperProcess is not a test: it is the chat program that the pty
// tests start (the test binary re-executed with NANOSERVE_CHAT_ARGS set).
func TestChatHelperProcess(t *testing.T) {
	args := os.Getenv("NANOSERVE_CHAT_ARGS")
	if args == "" {
		t.Skip("helper process for the pty tests")
	}
	if err := runChat(strings.Split(args, "\x1f")); err != nil {
		fmt.Fprintf(os.Stderr, "nanoserve chat: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// chatOpenPTY opens a pseudo-terminal pair (Linux /dev/ptmx) with an 100x30 window.
func chatOpenPTY() (master, slave *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil { // unlockpt
		master.Close()
		return nil, nil, err
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN) // ptsname
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 30, Col: 100}); err != nil {
		master.Close()
		slave.Close()
		return nil, nil, err
	}
	return master, slave, nil
}

// ptyChat is a chat process on a terminal, with everything it wrote.
type ptyChat struct {
	t      *testing.T
	cmd    *exec.Cmd
	master *os.File
	mu     sync.Mutex
	out    []byte
	seen   int // expect searches from here
	more   chan struct{}
	done   chan struct{}
	err    error // the process's exit
}

func startPTYChat(t *testing.T, env []string, args ...string) *ptyChat {
	t.Helper()
	master, slave, err := chatOpenPTY()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestChatHelperProcess$")
	cmd.Env = append(os.Environ(), "NANOSERVE_CHAT_ARGS="+strings.Join(args, "\x1f"))
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	// A new session with the pty as its controlling terminal: Ctrl-C typed
	// on it becomes SIGINT for the chat process, as in a real terminal.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	p := &ptyChat{t: t, cmd: cmd, master: master, more: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			if n > 0 {
				p.mu.Lock()
				p.out = append(p.out, buf[:n]...)
				p.mu.Unlock()
				select {
				case p.more <- struct{}{}:
				default:
				}
			}
			if err != nil { // EIO once the process closed the terminal
				return
			}
		}
	}()
	go func() {
		p.err = cmd.Wait()
		close(p.done)
		select {
		case p.more <- struct{}{}:
		default:
		}
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
		master.Close()
		if t.Failed() || testing.Verbose() {
			t.Logf("terminal output:\n%q", p.output())
		}
	})
	return p
}

func (p *ptyChat) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return string(p.out)
}

// expect waits until the output after the last match matches re and
// returns the submatches.
func (p *ptyChat) expect(re string, timeout time.Duration) []string {
	p.t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.After(timeout)
	for {
		p.mu.Lock()
		rest := p.out[p.seen:]
		if loc := rx.FindSubmatchIndex(rest); loc != nil {
			var subs []string
			for i := 0; i < len(loc); i += 2 {
				if loc[i] >= 0 {
					subs = append(subs, string(rest[loc[i]:loc[i+1]]))
				} else {
					subs = append(subs, "")
				}
			}
			p.seen += loc[1]
			p.mu.Unlock()
			return subs
		}
		p.mu.Unlock()
		select {
		case <-p.more:
		case <-deadline:
			p.t.Fatalf("timed out waiting for %q; output after the last match:\n%q", re, p.output()[p.seen:])
		}
	}
}

func (p *ptyChat) send(s string) {
	p.t.Helper()
	if _, err := p.master.Write([]byte(s)); err != nil {
		p.t.Fatal(err)
	}
}

func (p *ptyChat) wait(timeout time.Duration) error {
	p.t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		p.t.Fatalf("chat did not exit within %v", timeout)
		return nil
	}
}

const chatPromptText = `>>> `

// The conversation mechanics on a real terminal (liner line editing): turns
// stream and report timings, the second turn reuses the cache, /system and
// /reset start over, /help answers, Ctrl-D at the prompt quits with status 0.
func TestChatPTYConversation(t *testing.T) {
	mp := chatSharedPath(t, chatQwenGGUF)
	p := startPTYChat(t, []string{"TERM=xterm"}, "--model", mp, "--threads", "1",
		"--temperature", "0", "--max-tokens", "6", "--verbose")
	const timings = `\[(\w+)\] prompt (\d+) tokens \((\d+) cached\).*ttft [\d.]+ ms.*decode [\d.]+ tok/s`
	p.expect(`/help for commands`, 20*time.Second)
	p.expect(chatPromptText, 5*time.Second)

	p.send("Hello there\r")
	m := p.expect(timings, 10*time.Second)
	if m[1] != "length" || m[3] != "0" {
		t.Errorf("turn 1: finish %s, cached %s; want length, 0", m[1], m[3])
	}
	turn1 := m[2]
	p.expect(chatPromptText, 5*time.Second)

	p.send("How are you?\r")
	m = p.expect(timings, 10*time.Second)
	if cached, _ := strconv.Atoi(m[3]); cached < chatAtoi(turn1) {
		t.Errorf("turn 2 reused %s cached tokens, want ≥ turn 1's prompt (%s)", m[3], turn1)
	}
	p.expect(chatPromptText, 5*time.Second)

	p.send("/system You are a pirate.\r")
	p.expect(`\[system prompt set; conversation cleared\]`, 5*time.Second)
	p.expect(chatPromptText, 5*time.Second)
	p.send("Ahoy\r")
	m = p.expect(timings, 10*time.Second)
	if m[3] != "0" || chatAtoi(m[2]) <= chatAtoi(turn1) {
		t.Errorf("after /system: prompt %s tokens (%s cached); want a longer prompt than turn 1's %s, none cached", m[2], m[3], turn1)
	}
	p.expect(chatPromptText, 5*time.Second)

	p.send("/reset\r")
	p.expect(`\[conversation cleared\]`, 5*time.Second)
	p.expect(chatPromptText, 5*time.Second)
	p.send("/help\r")
	p.expect(`/system TEXT`, 5*time.Second)
	p.expect(chatPromptText, 5*time.Second)
	p.send("/nonsense\r")
	p.expect(`unknown command /nonsense`, 5*time.Second)
	p.expect(chatPromptText, 5*time.Second)

	p.send("\x04") // Ctrl-D on an empty line
	if err := p.wait(10 * time.Second); err != nil {
		t.Errorf("Ctrl-D at the prompt: exit %v, want status 0", err)
	}
}

// Ctrl-C while a reply streams stops the reply, not the program; Ctrl-C at
// the prompt quits with status 0. Checked with liner's raw-mode prompt
// (TERM=xterm) and with its plain fallback (TERM=dumb), where Ctrl-C at the
// prompt is a SIGINT.
func TestChatPTYCtrlC(t *testing.T) {
	mp := chatSharedPath(t, chatQwenGGUF)
	for _, term := range []string{"xterm", "dumb"} {
		t.Run(term, func(t *testing.T) {
			// No --max-tokens and a long context: the reply runs until stopped.
			p := startPTYChat(t, []string{"TERM=" + term}, "--model", mp, "--threads", "1",
				"--ctx-size", "16384", "--allow-long-context", "--ignore-eos", "--seed", "1", "--verbose")
			p.expect(`/help for commands`, 20*time.Second)
			p.expect(chatPromptText, 5*time.Second)
			for turn := range 2 {
				p.send("Tell me a very long story.\r")
				p.expect(`(?s)story\.\r\n.{16}`, 10*time.Second) // the reply is streaming
				p.send("\x03")
				p.expect(`\[reply interrupted\]`, 10*time.Second)
				m := p.expect(`\[(\w+)\] prompt \d+ tokens \((\d+) cached\).* (\d+) tokens: decode`, 5*time.Second)
				if m[1] != "cancelled" {
					t.Errorf("turn %d: finish %s, want cancelled", turn, m[1])
				}
				if turn == 1 && chatAtoi(m[2]) == 0 {
					t.Errorf("turn 2 after an interrupted reply reused no cache")
				}
				p.expect(chatPromptText, 5*time.Second)
			}
			select {
			case <-p.done:
				t.Fatalf("the chat exited after Ctrl-C during a reply: %v", p.err)
			default:
			}
			p.send("\x03") // at the prompt
			if err := p.wait(10 * time.Second); err != nil {
				t.Errorf("Ctrl-C at the prompt: exit %v, want status 0", err)
			}
		})
	}
}

// Piped input (no terminal) works too, and /exit quits.
func TestChatPiped(t *testing.T) {
	mp := chatSharedPath(t, chatQwenGGUF)
	cmd := exec.Command(os.Args[0], "-test.run=^TestChatHelperProcess$")
	cmd.Env = append(os.Environ(), "NANOSERVE_CHAT_ARGS="+strings.Join([]string{"--model", mp, "--threads", "1", "--temperature", "0", "--max-tokens", "4"}, "\x1f"))
	cmd.Stdin = strings.NewReader("Hello\n/exit\nnot read\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\nstderr: %s", err, stderr.String())
	}
	if got := strings.Count(stdout.String(), chatPromptText); got != 2 {
		t.Errorf("stdout %q: %d prompts, want 2", stdout.String(), got)
	}
	if !strings.Contains(stderr.String(), "[reply cut at --max-tokens 4]") {
		t.Errorf("stderr %q", stderr.String())
	}
}

func chatAtoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(err)
	}
	return n
}
