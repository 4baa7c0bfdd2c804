package sample

import "math/bits"

// rng is xoshiro256** 1.0 (Blackman & Vigna), seeded by expanding the 64-bit
// seed with four successive outputs of splitmix64. Both are defined entirely by
// 64-bit integer operations, so a seed yields the same stream everywhere.
type rng struct{ s [4]uint64 }

// splitmix64 advances *x and returns the next output.
func splitmix64(x *uint64) uint64 {
	*x += 0x9e3779b97f4a7c15
	z := *x
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func newRNG(seed uint64) rng {
	var r rng
	x := seed
	for i := range r.s {
		r.s[i] = splitmix64(&x)
	}
	return r
}

// next returns the next 64-bit output.
func (r *rng) next() uint64 {
	s := &r.s
	out := bits.RotateLeft64(s[1]*5, 7) * 9
	t := s[1] << 17
	s[2] ^= s[0]
	s[3] ^= s[1]
	s[1] ^= s[2]
	s[0] ^= s[3]
	s[2] ^= t
	s[3] = bits.RotateLeft64(s[3], 45)
	return out
}

// float64 returns a uniform value in [0, 1): the top 53 bits of next() times 2^-53.
func (r *rng) float64() float64 {
	return float64(r.next()>>11) * 0x1p-53
}
