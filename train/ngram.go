package train

import "math"

// KN3 is an interpolated Kneser-Ney trigram model over token ids, the named
// baseline of the release gate. With absolute discount D,
//
//	P3(w|u,v) = max(c(uvw)−D, 0)/c(uv·) + D·N1+(uv·)/c(uv·) · P2(w|v)
//	P2(w|v)   = max(N1+(·vw)−D, 0)/N1+(·v·) + D·N1+(v·)/N1+(·v·) · P1(w)
//	P1(w)     = max(N1+(·w)−D, 0)/N1+(··) + D·|{w: N1+(·w)>0}|/N1+(··) · 1/V
//
// where lower orders use continuation counts N1+(·x) (the number of
// distinct left contexts x follows), the Kneser-Ney idea. A context never
// seen falls through to the next order.
type KN3 struct {
	V int
	D float64

	tri      map[uint64]int32 // c(uvw)
	bi       map[uint64]int32 // c(uv·) as a trigram context
	biTypes  map[uint64]int32 // N1+(uv·)
	cont2    map[uint64]int32 // N1+(·vw)
	cont2Ctx map[int32]int32  // N1+(·v·) = Σ_w N1+(·vw)
	cont2Typ map[int32]int32  // N1+(v·) distinct w with N1+(·vw)>0
	cont1    []int32          // N1+(·w)
	cont1Sum float64          // N1+(··)
	cont1Typ float64
}

func k2(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }
func k3(a, b, c int32) uint64 {
	return uint64(uint32(a))<<42 | uint64(uint32(b))<<21 | uint64(uint32(c))
}

// NewKN3 counts the token stream (ids < v < 2^21).
func NewKN3(toks []int32, v int) *KN3 {
	m := &KN3{V: v, D: 0.75, tri: map[uint64]int32{}, bi: map[uint64]int32{}, biTypes: map[uint64]int32{},
		cont2: map[uint64]int32{}, cont2Ctx: map[int32]int32{}, cont2Typ: map[int32]int32{}, cont1: make([]int32, v)}
	bigramSeen := map[uint64]bool{}
	for i := 2; i < len(toks); i++ {
		u, vv, w := toks[i-2], toks[i-1], toks[i]
		k := k3(u, vv, w)
		if m.tri[k] == 0 {
			m.biTypes[k2(u, vv)]++
			// a new left context u for the bigram (v, w)
			if m.cont2[k2(vv, w)] == 0 {
				m.cont2Typ[vv]++
			}
			m.cont2[k2(vv, w)]++
			m.cont2Ctx[vv]++
		}
		m.tri[k]++
		m.bi[k2(u, vv)]++
	}
	for i := 1; i < len(toks); i++ {
		k := k2(toks[i-1], toks[i])
		if !bigramSeen[k] {
			bigramSeen[k] = true
			m.cont1[toks[i]]++
			m.cont1Sum++
		}
	}
	for _, c := range m.cont1 {
		if c > 0 {
			m.cont1Typ++
		}
	}
	return m
}

// Prob returns P(w | u, v); u < 0 means only v is known, v < 0 no context.
func (m *KN3) Prob(u, v, w int32) float64 {
	d := m.D
	var p1 float64
	if m.cont1Sum > 0 {
		p1 = math.Max(float64(m.cont1[w])-d, 0)/m.cont1Sum + d*m.cont1Typ/m.cont1Sum/float64(m.V)
	} else {
		p1 = 1 / float64(m.V)
	}
	if v < 0 {
		return p1
	}
	p := p1
	if ctx := m.cont2Ctx[v]; ctx > 0 {
		p = math.Max(float64(m.cont2[k2(v, w)])-d, 0)/float64(ctx) + d*float64(m.cont2Typ[v])/float64(ctx)*p1
	}
	if u < 0 {
		return p
	}
	if c := m.bi[k2(u, v)]; c > 0 {
		p = math.Max(float64(m.tri[k3(u, v, w)])-d, 0)/float64(c) + d*float64(m.biTypes[k2(u, v)])/float64(c)*p
	}
	return p
}
