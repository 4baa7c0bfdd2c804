package kvcache

import (
	"errors"
	"testing"
)

func TestReserveReleaseSlots(t *testing.T) {
	c, err := New(2, 4, 4, 5) // 5 blocks of 4 positions
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Bytes(), int64(2*2*5*4*4*4); got != want {
		t.Fatalf("Bytes = %d, want %d", got, want)
	}
	var a, b Seq
	if err := c.Reserve(&a, 6); err != nil { // 2 blocks
		t.Fatal(err)
	}
	if err := c.Reserve(&b, 9); err != nil { // 3 blocks
		t.Fatal(err)
	}
	if c.FreeBlocks() != 0 {
		t.Fatalf("free = %d, want 0", c.FreeBlocks())
	}
	// Every position of both sequences maps to a distinct row.
	seen := map[int]bool{}
	for _, s := range []*Seq{&a, &b} {
		for p := 0; p < c.Capacity(s); p++ {
			r := c.Slot(s, p)
			if seen[r] || r < 0 || r >= c.NumBlocks*c.BlockSize {
				t.Fatalf("slot %d reused or out of range", r)
			}
			seen[r] = true
		}
	}
	a.Len = 6
	if err := c.Reserve(&a, 3); !errors.Is(err, ErrOutOfBlocks) {
		t.Fatalf("Reserve past capacity: err = %v, want ErrOutOfBlocks", err)
	}
	if len(a.Blocks) != 2 {
		t.Fatalf("failed Reserve changed the table: %v", a.Blocks)
	}
	if err := c.Reserve(&a, 2); err != nil { // fits in the second block
		t.Fatal(err)
	}
	c.Release(&b)
	if c.FreeBlocks() != 3 || b.Len != 0 || len(b.Blocks) != 0 {
		t.Fatalf("after Release: free %d, b %+v", c.FreeBlocks(), b)
	}
	if err := c.Reserve(&a, 3); err != nil {
		t.Fatal(err)
	}
	k, v := c.Row(1, &a, 7)
	k[0], v[0] = 1, 2
	if k2, v2 := c.Row(1, &a, 7); k2[0] != 1 || v2[0] != 2 {
		t.Fatal("Row does not address the same storage twice")
	}
}

func TestNewRejectsBadShape(t *testing.T) {
	if _, err := New(0, 4, 4, 4); err == nil {
		t.Fatal("want error for zero layers")
	}
}
