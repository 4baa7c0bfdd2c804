package sample

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// feed pushes pieces through a matcher and returns all emitted text and
// whether it stopped.
func feed(stops []string, pieces []string) (string, bool) {
	m := NewStopMatcher(stops)
	var b strings.Builder
	stopped := false
	for _, p := range pieces {
		e, s := m.Push(p)
		b.WriteString(e)
		stopped = s
	}
	b.WriteString(m.Flush())
	return b.String(), stopped
}

// expectStop is the specification: the text before the stop-string
// occurrence that ends first (ties: the one that starts first).
func expectStop(stops []string, text string) (string, bool) {
	at, end := -1, -1
	for _, s := range stops {
		if s == "" {
			continue
		}
		if j := strings.Index(text, s); j >= 0 && (at < 0 || j+len(s) < end || (j+len(s) == end && j < at)) {
			at, end = j, j+len(s)
		}
	}
	if at < 0 {
		return text, false
	}
	return text[:at], true
}

func TestStopMatcherExamples(t *testing.T) {
	cases := []struct {
		stops  []string
		pieces []string
		want   string
		stop   bool
	}{
		{[]string{"\n\n"}, []string{"Hello", "\n", "\nworld"}, "Hello", true},
		{[]string{"User:"}, []string{"Hi Us", "e", "r", ": more"}, "Hi ", true},
		{[]string{"User:"}, []string{"Hi Us", "ing"}, "Hi Using", false},
		{[]string{"abc", "b"}, []string{"xa", "bc"}, "xa", true}, // "b" completes first
		{[]string{"abcd", "c"}, []string{"abcd"}, "ab", true},
		{[]string{"b", "ab"}, []string{"xab"}, "x", true}, // same end: the longer wins
		{[]string{"aab"}, []string{"a", "a", "a", "b"}, "a", true},
		{nil, []string{"a", "b"}, "ab", false},
		{[]string{"</s>"}, []string{"end</", "s", ">", "ignored"}, "end", true},
		{[]string{"日本"}, []string{"こ日", "本語"}, "こ", true},
	}
	for _, c := range cases {
		got, stopped := feed(c.stops, c.pieces)
		if got != c.want || stopped != c.stop {
			t.Errorf("stops %q pieces %q: got %q, %v; want %q, %v", c.stops, c.pieces, got, stopped, c.want, c.stop)
		}
	}
	m := NewStopMatcher([]string{"xy", "y"})
	if e, s := m.Push("axyz"); e != "a" || !s {
		t.Errorf("Push = %q, %v", e, s)
	}
	if s, ok := m.Matched(); !ok || s != "xy" {
		t.Errorf("Matched = %q, %v", s, ok)
	}
	if e, s := m.Push("more"); e != "" || !s {
		t.Errorf("Push after stop = %q, %v", e, s)
	}
	// Held text is released as soon as it can no longer start a stop string.
	m = NewStopMatcher([]string{"STOP"})
	if e, _ := m.Push("ab ST"); e != "ab " {
		t.Errorf("held too much or too little: %q", e)
	}
	if e, _ := m.Push("x"); e != "STx" {
		t.Errorf("did not release: %q", e)
	}
}

// Property: for random texts over a small alphabet (so stop strings occur and
// nearly occur often) and random splits into pieces, the emitted text is the
// text up to the first stop string, and no stop string is ever emitted.
func TestStopMatcherRandomSplits(t *testing.T) {
	g := rand.New(rand.NewPCG(3, 4))
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "abc"[g.IntN(3)]
		}
		return string(b)
	}
	for range 20000 {
		var stops []string
		for range 1 + g.IntN(3) {
			stops = append(stops, word(1+g.IntN(4)))
		}
		text := word(g.IntN(30))
		var pieces []string
		for rest := text; rest != ""; {
			n := min(len(rest), g.IntN(5)) // empty pieces too
			pieces = append(pieces, rest[:n])
			rest = rest[n:]
		}
		got, stopped := feed(stops, pieces)
		want, wantStop := expectStop(stops, text)
		if got != want || stopped != wantStop {
			t.Fatalf("stops %q pieces %q: got %q, %v; want %q, %v", stops, pieces, got, stopped, want, wantStop)
		}
		for _, s := range stops {
			if strings.Contains(got, s) {
				t.Fatalf("emitted stop string %q in %q", s, got)
			}
		}
	}
}

func FuzzStopMatcher(f *testing.F) {
	f.Add("hello\n\nworld", "\n\n", uint64(3))
	f.Add("aaab", "aab", uint64(1))
	f.Fuzz(func(t *testing.T, text, stop string, split uint64) {
		var pieces []string
		r := newRNG(split)
		for rest := text; rest != ""; {
			n := min(len(rest), int(r.next()%6))
			pieces = append(pieces, rest[:n])
			rest = rest[n:]
		}
		got, stopped := feed([]string{stop}, pieces)
		want, wantStop := expectStop([]string{stop}, text)
		if got != want || stopped != wantStop {
			t.Fatalf("got %q, %v; want %q, %v", got, stopped, want, wantStop)
		}
	})
}
