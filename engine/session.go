package engine

import (
	"sync/atomic"

	"nanoserve/kvcache"
)

// Session is a conversation whose KV cache persists between requests. It
// must be used by one request at a time and released with Close.
type Session struct {
	e       *Engine
	busy    atomic.Bool // a request owns it (set at submit, cleared at finish)
	closing bool        // Close came while busy: release at finish (under cmu)
	seq     kvcache.Seq // (under cmu)
	ids     []int       // tokens whose K/V are in seq: len(ids) == seq.Len (under cmu)
}

// NewSession starts an empty conversation.
func (e *Engine) NewSession() *Session { return &Session{e: e} }

// Close returns the session's cache blocks (at the end of its request, if
// one is running).
func (s *Session) Close() {
	e := s.e
	e.cmu.Lock()
	defer e.cmu.Unlock()
	if s.busy.Load() {
		s.closing = true
		return
	}
	e.sch.dropSession(s)
	e.snapshot()
}

// Reset forgets the conversation but keeps the session usable.
func (s *Session) Reset() { s.Close() }

// Tokens is the number of positions cached for the session.
func (s *Session) Tokens() int {
	s.e.cmu.Lock()
	defer s.e.cmu.Unlock()
	return len(s.ids)
}
