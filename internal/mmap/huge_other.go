//go:build !linux

package mmap

import "os"

func madviseHuge([]byte) error { return nil }

var adviseFileHuge = madviseHuge

func populate([]byte, bool) error { return nil }

func dontNeed([]byte) error { return nil }

func dropFileCache(*os.File) error { return nil }

func residency([]byte) (resident, huge int64) { return 0, 0 }

func hugePagesEnabled() bool { return false }

func available() int64 { return 0 }

func cached([]byte) float64 { return 0 }
