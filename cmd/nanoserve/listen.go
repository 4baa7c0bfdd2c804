package main

// serve --host A,B: llama-server listens on every address of a comma list
// (127.0.0.1,::1: both loopbacks). listenAll binds each and merges them
// into one net.Listener, so the server, its drain and its shutdown see one
// listener whatever the number of addresses.

import (
	"errors"
	"net"
	"strings"
	"sync"
)

// hostAddrs are the listen addresses of a --host list and a port.
func hostAddrs(hosts, port string) []string {
	var out []string
	for h := range strings.SplitSeq(hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, net.JoinHostPort(strings.Trim(h, "[]"), port))
		}
	}
	if len(out) == 0 {
		out = append(out, net.JoinHostPort("", port))
	}
	return out
}

// listenAll binds every address (all or none: a failure closes the ones
// bound) and returns one listener over them.
func listenAll(addrs []string) (net.Listener, error) {
	var lns []net.Listener
	for _, a := range addrs {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, err
		}
		lns = append(lns, ln)
	}
	if len(lns) == 1 {
		return lns[0], nil
	}
	m := &multiListener{lns: lns, conns: make(chan accepted), done: make(chan struct{})}
	for _, ln := range lns {
		go m.run(ln)
	}
	return m, nil
}

// multiListener accepts on several listeners; Addr is the first one's.
type multiListener struct {
	lns   []net.Listener
	conns chan accepted
	done  chan struct{}
	once  sync.Once
}

type accepted struct {
	c   net.Conn
	err error
}

// run hands ln's connections (and its final error) to Accept until the
// listener is closed.
func (m *multiListener) run(ln net.Listener) {
	for {
		c, err := ln.Accept()
		select {
		case m.conns <- accepted{c, err}:
		case <-m.done:
			if c != nil {
				c.Close()
			}
			return
		}
		if err != nil {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				return // closed or broken: its error was handed on
			}
		}
	}
}

func (m *multiListener) Accept() (net.Conn, error) {
	select {
	case a := <-m.conns:
		return a.c, a.err
	case <-m.done:
		return nil, net.ErrClosed
	}
}

func (m *multiListener) Close() error {
	var err error
	m.once.Do(func() {
		close(m.done)
		for _, ln := range m.lns {
			err = errors.Join(err, ln.Close())
		}
	})
	return err
}

func (m *multiListener) Addr() net.Addr { return m.lns[0].Addr() }
