//go:build !unix

package bench

func maxRSS() int64 { return 0 }
