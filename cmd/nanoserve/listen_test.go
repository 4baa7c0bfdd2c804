package main

import (
	"errors"
	"net"
	"slices"
	"testing"
)

// TestListenAll: --host A,B listens on both addresses through one
// listener, whose Close ends Accept with net.ErrClosed.
func TestListenAll(t *testing.T) {
	if got := hostAddrs("127.0.0.1, ::1", "8080"); !slices.Equal(got, []string{"127.0.0.1:8080", "[::1]:8080"}) {
		t.Errorf("hostAddrs = %q", got)
	}
	if probe, err := net.Listen("tcp", "[::1]:0"); err != nil {
		t.Skip("IPv6 loopback is unavailable")
	} else {
		probe.Close()
	}
	ln, err := listenAll([]string{"127.0.0.1:0", "[::1]:0"})
	if err != nil {
		t.Fatal(err)
	}
	m, ok := ln.(*multiListener)
	if !ok {
		t.Fatalf("two addresses: %T, want a multiListener", ln)
	}
	for _, l := range m.lns {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		got, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if got.LocalAddr().String() != l.Addr().String() {
			t.Errorf("accepted on %v, dialled %v", got.LocalAddr(), l.Addr())
		}
		got.Close()
	}
	ln.Close()
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v", err)
	}
	if _, err := listenAll([]string{"127.0.0.1:0", "256.0.0.1:0"}); err == nil {
		t.Error("an address that cannot be bound was accepted")
	}
}
