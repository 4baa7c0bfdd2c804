package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// fakeClock advances by step on every reading.
func fakeClock(step time.Duration) func() time.Time {
	t := time.Unix(1e9, 0)
	return func() time.Time { t = t.Add(step); return t }
}

// Off a terminal: a line per Every with amounts, percentage, rate and ETA
// (here 1 MiB per clock reading of 1 s, a line every 3 s), then the
// closing line; the bytes already on disk count for done, not for the
// rate.
func TestLogLines(t *testing.T) {
	var b bytes.Buffer
	m := New(&b, "downloading f", 10<<20, 2<<20, Options{Unit: Bytes, Every: 3 * time.Second, now: fakeClock(time.Second)})
	for range 8 {
		m.Write(make([]byte, 1<<20))
	}
	m.Close()
	want := []string{
		"downloading f: 5.0 MiB of 10.0 MiB (50%), 1.0 MiB/s, eta 5s",
		"downloading f: 8.0 MiB of 10.0 MiB (80%), 1.0 MiB/s, eta 2s",
		"downloading f: 10.0 MiB in 9s, 0.9 MiB/s",
	}
	if got := strings.Split(strings.TrimSpace(b.String()), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Steps with a status; on a "terminal" (a buffer here) the bar library
// draws the name, the count and 100% at the end.
func TestStepsAndBar(t *testing.T) {
	var b bytes.Buffer
	m := New(&b, "train", 4, 0, Options{Unit: Steps, Every: time.Second, now: fakeClock(time.Second)})
	m.Status("loss 2.5")
	m.Set(2)
	if got, want := strings.TrimSpace(b.String()), "train: step 2 of 4 (50%), 2.00 steps/s, eta 1s, loss 2.5"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	b.Reset()
	m = New(&b, "train", 4, 0, Options{Unit: Steps, Terminal: true})
	for i := range 4 {
		m.Set(int64(i + 1))
	}
	m.Close()
	if s := b.String(); !strings.Contains(s, "train") || !strings.Contains(s, "100%") || !strings.Contains(s, "4/4") {
		t.Errorf("bar output %q", s)
	}
}
