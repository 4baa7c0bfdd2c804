//go:build race

package tensor

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts of the nil Pool are not pinned under -race.
const raceEnabled = true
