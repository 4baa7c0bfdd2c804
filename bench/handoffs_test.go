package bench

import (
	"testing"
	"time"

	"nanoserve/tensor"
)

// TestHandoffs: the pool counters become per-token and per-dispatch
// shares — joins out of the background workers' places (Threads-1 per
// dispatch).
func TestHandoffs(t *testing.T) {
	var tt Test
	st := tensor.PoolStats{Dispatches: 10, Wakes: 5, Joins: 10, Wait: time.Second}
	handoffs(&tt, st, 3, 5, 4)
	if tt.Dispatches != 2 || tt.PoolWaitFrac != 0.25 || tt.PoolWakeFrac != 0.5 || tt.PoolJoinFrac != 0.5 {
		t.Errorf("got %.2f dispatches/token, wait %.2f, wake %.2f, join %.2f; want 2, 0.25, 0.5, 0.5",
			tt.Dispatches, tt.PoolWaitFrac, tt.PoolWakeFrac, tt.PoolJoinFrac)
	}
}
