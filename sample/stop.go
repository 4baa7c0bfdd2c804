package sample

import "strings"

// StopMatcher finds stop strings in streamed text. Feed it the decoded pieces
// of the output in order; it returns what is safe to show now. Text that could
// still become the start of a stop string is held back (at most the longest
// stop string minus one byte), so a stop string split across any number of
// pieces is caught and never emitted. On a match, the text before the match is
// emitted and the stop string and everything after it are dropped.
//
// Generation stops as soon as a stop string is complete (vLLM's streaming
// behaviour): the match is the occurrence that ends first in the text (at the
// same end, the one starting first). Invariant, pinned by a property test: for
// any split of a text into pieces, the concatenation of everything emitted
// (Push results, then Flush) equals the text before that match, or the whole
// text if no stop string occurs — independent of how the text was split.
type StopMatcher struct {
	stops   []string
	held    []byte // undecided tail
	matched int    // index into stops of the match; -1 while none
}

// NewStopMatcher returns a matcher for the given stop strings (empty strings
// are ignored; none at all makes Push pass text straight through).
func NewStopMatcher(stops []string) *StopMatcher {
	m := &StopMatcher{matched: -1}
	for _, s := range stops {
		if s != "" {
			m.stops = append(m.stops, s)
		}
	}
	return m
}

// Push adds the next piece of text and returns the text that can be emitted
// now, and whether a stop string has matched (now or earlier). After a match,
// Push returns "", true.
func (m *StopMatcher) Push(piece string) (emit string, stopped bool) {
	if m.matched >= 0 {
		return "", true
	}
	if len(m.stops) == 0 {
		return piece, false
	}
	m.held = append(m.held, piece...)
	buf := string(m.held)
	// The match that completes first (earliest end); at the same end, the
	// longest stop string, so none of it is emitted.
	at, end, which := -1, -1, -1
	for i, s := range m.stops {
		if j := strings.Index(buf, s); j >= 0 && (at < 0 || j+len(s) < end || (j+len(s) == end && j < at)) {
			at, end, which = j, j+len(s), i
		}
	}
	if at >= 0 {
		m.matched = which
		m.held = m.held[:0]
		return buf[:at], true
	}
	// Hold the longest suffix that is a proper prefix of some stop string.
	keep := 0
	for _, s := range m.stops {
		for n := min(len(s)-1, len(buf)); n > keep; n-- {
			if strings.HasSuffix(buf, s[:n]) {
				keep = n
				break
			}
		}
	}
	emit = buf[:len(buf)-keep]
	m.held = append(m.held[:0], buf[len(buf)-keep:]...)
	return emit, false
}

// Flush returns the held-back text at the end of generation ("" after a
// match) and empties the matcher's buffer.
func (m *StopMatcher) Flush() string {
	if m.matched >= 0 {
		return ""
	}
	s := string(m.held)
	m.held = m.held[:0]
	return s
}

// Matched returns the stop string that ended the text, if any.
func (m *StopMatcher) Matched() (string, bool) {
	if m.matched < 0 {
		return "", false
	}
	return m.stops[m.matched], true
}
