// Package progress reports how far a long job has got, the one way the
// binary does it (hub downloads for pull, serve and generate; train): on a
// terminal a bar drawn by github.com/schollz/progressbar, redrawn in place;
// anywhere else (a log file, a container's stdout, CI) a plain line every
// Options.Every and one at the end, which log collectors keep:
//
//	downloading org/repo/model-Q8_0.gguf: 12.0 MiB of 16.2 MiB (74%), 4.1 MiB/s, eta 1s
//	downloading org/repo/model-Q8_0.gguf: 16.2 MiB in 3.9s, 4.2 MiB/s
//
// The rate is the work done since the meter started (a resumed download's
// bytes already on disk do not count) over the time taken; the ETA is the
// work left at that rate.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Unit is what a meter counts.
type Unit int

const (
	Bytes Unit = iota // shown in MiB
	Steps             // shown as counts ("step 40 of 100")
)

// Options configures a Meter.
type Options struct {
	Unit     Unit
	Terminal bool          // draw a bar (the writer is a terminal; see IsTerminal)
	Every    time.Duration // least time between two log lines (0: 10 s)

	now func() time.Time // tests: the clock
}

// Meter follows one job of a known size (total < 0: unknown).
type Meter struct {
	mu     sync.Mutex
	w      io.Writer
	name   string
	o      Options
	total  int64
	base   int64 // done when the meter started
	done   int64
	status string
	start  time.Time
	last   time.Time // the last log line
	bar    *progressbar.ProgressBar
	closed bool
}

// IsTerminal reports whether w is a terminal (a character device).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// New starts a meter named name at have of total, writing to w.
func New(w io.Writer, name string, total, have int64, o Options) *Meter {
	if o.Every <= 0 {
		o.Every = 10 * time.Second
	}
	if o.now == nil {
		o.now = time.Now
	}
	m := &Meter{w: w, name: name, o: o, total: total, base: have, done: have, start: o.now()}
	m.last = m.start
	if o.Terminal {
		opts := []progressbar.Option{
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(name),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100 * time.Millisecond),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
		}
		if o.Unit == Bytes {
			opts = append(opts, progressbar.OptionShowBytes(true))
		} else {
			opts = append(opts, progressbar.OptionShowIts(), progressbar.OptionSetItsString("steps"))
		}
		m.bar = progressbar.NewOptions64(total, opts...)
		m.bar.Set64(have)
	}
	return m
}

// Write counts len(p) bytes done (a Meter is the io.Writer a download
// copies through).
func (m *Meter) Write(p []byte) (int, error) {
	m.Add(int64(len(p)))
	return len(p), nil
}

// Add counts n more units done.
func (m *Meter) Add(n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setLocked(m.done + n)
}

// Set records done units in all.
func (m *Meter) Set(done int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setLocked(done)
}

func (m *Meter) setLocked(done int64) {
	m.done = done
	if m.bar != nil {
		m.bar.Set64(done)
		return
	}
	if now := m.o.now(); now.Sub(m.last) >= m.o.Every {
		m.last = now
		fmt.Fprintln(m.w, m.lineLocked(now, false))
	}
}

// Status sets text shown after the counts (train: the loss).
func (m *Meter) Status(s string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.status = s
	if m.bar != nil {
		m.bar.Describe(m.name + " " + s)
	}
}

// Break ends the bar's line so that other output can follow on its own
// line (nothing without a bar).
func (m *Meter) Break() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bar != nil {
		fmt.Fprintln(m.w)
	}
}

// Close ends the meter: the bar's last state, or the closing line.
func (m *Meter) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	if m.bar != nil {
		if m.total >= 0 && m.done >= m.total {
			return m.bar.Finish() // prints the newline (OptionOnCompletion)
		}
		fmt.Fprintln(m.w)
		return nil
	}
	fmt.Fprintln(m.w, m.lineLocked(m.o.now(), true))
	return nil
}

// lineLocked is one log line: progress so far, or (end) the summary.
func (m *Meter) lineLocked(now time.Time, end bool) string {
	el := now.Sub(m.start)
	rate := 0.0
	if s := el.Seconds(); s > 0 {
		rate = float64(m.done-m.base) / s
	}
	s := m.name + ": "
	switch {
	case end:
		s += m.amount(m.done) + " in " + el.Round(100*time.Millisecond).String()
	case m.total >= 0 && m.o.Unit == Bytes:
		s += fmt.Sprintf("%s of %s (%.0f%%)", m.amount(m.done), m.amount(m.total), 100*float64(m.done)/float64(max(m.total, 1)))
	case m.total >= 0:
		s += fmt.Sprintf("step %d of %d (%.0f%%)", m.done, m.total, 100*float64(m.done)/float64(max(m.total, 1)))
	default:
		s += m.amount(m.done)
	}
	s += ", " + m.rate(rate)
	if !end && m.total >= 0 && rate > 0 {
		eta := time.Duration(float64(m.total-m.done) / rate * float64(time.Second))
		s += ", eta " + eta.Round(time.Second).String()
	}
	if m.status != "" {
		s += ", " + m.status
	}
	return s
}

func (m *Meter) amount(n int64) string {
	if m.o.Unit == Bytes {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d steps", n)
}

func (m *Meter) rate(r float64) string {
	if m.o.Unit == Bytes {
		return fmt.Sprintf("%.1f MiB/s", r/(1<<20))
	}
	return fmt.Sprintf("%.2f steps/s", r)
}
