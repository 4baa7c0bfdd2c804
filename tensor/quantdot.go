package tensor

// dotQFast is DotQ(wt, w, a, off) — the weight row w against activations
// a[off : off+n] — using the AVX2 kernels of quantdot_amd64.s for the
// types that have one (Q8_0, Q4_K, Q6_K) and the reference otherwise.
func dotQFast(wt DType, w []byte, a *QuantizedActs, off int) float32 {
	if hasAVX2 {
		switch wt {
		case Q8_0:
			nb := len(w) / 34
			if nb == 0 {
				return 0
			}
			q, d := a.Q[off:off+32*nb], a.D[off/32:off/32+nb]
			_ = w[34*nb-1]
			return dotQ8_0AVX2(&w[0], &q[0], &d[0], nb)
		case Q4_K, Q6_K:
			bb := wt.BlockBytes()
			nb := len(w) / bb
			if nb == 0 {
				return 0
			}
			q, d, bs := a.Q[off:off+256*nb], a.D[off/256:off/256+nb], a.BSums[off/16:off/16+16*nb]
			_ = w[bb*nb-1]
			if wt == Q4_K {
				return dotQ4_KAVX2(&w[0], &q[0], &d[0], &bs[0], nb)
			}
			return dotQ6_KAVX2(&w[0], &q[0], &d[0], &bs[0], nb)
		}
	}
	return DotQ(wt, w, a, off)
}
