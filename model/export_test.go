package model

// SetSyntheticFile sets syntheticFile (for synthetic_bench_test.go).
func SetSyntheticFile(f func(dir, shape, typ string, seed uint64) (string, error)) { syntheticFile = f }
