package tensor

import "fmt"

// Matrix products that share their input, in one hand-off. A decode step
// multiplies the same normalised token by q, k and v (when they were not
// fused into one matrix at load: their types differ, as in Q4_K_M files
// whose attn_v is Q6_K on some layers) and by the FFN's gate and up. Each
// MatMul is one dispatch to the pool — publish, wake, barrier — which at
// small shapes (a 110M model: products of tens of microseconds) is a
// visible share of a step; MatMulShared hands the workers one job whose
// chunks run over all the matrices' rows, and quantizes the input once.
//
// Every row is computed by the same kernel over the same chunk of rows as
// MatMul would compute it, so the results are bit-identical to separate
// MatMul calls (TestMatMulShared).

// maxShared is the most matrices one MatMulShared dispatch takes.
const maxShared = 3

// MatMulShared computes dsts[i] = x · ws[i]ᵀ for every i, as MatMul(dsts[i],
// ws[i], x, n) would. For one token (n == 1) and at most three matrices of
// the same width whose types take the same activations (all float, or all
// quantized with one activation format), the products run as one job on
// the pool; otherwise one MatMul after another.
func (p *Pool) MatMulShared(x []float32, n int, ws []*Mat, dsts [][]float32) {
	if len(ws) != len(dsts) {
		panic(fmt.Sprintf("tensor: MatMulShared of %d matrices into %d outputs", len(ws), len(dsts)))
	}
	if p == nil || p.n == 1 || n != 1 || len(ws) < 2 || len(ws) > maxShared || !shareable(ws) {
		for i, w := range ws {
			p.MatMul(dsts[i], w, x, n)
		}
		return
	}
	for i, w := range ws {
		if len(x) < w.Cols || len(dsts[i]) < w.Rows {
			panic(fmt.Sprintf("tensor: MatMul of (%d, %d) weights by 1 token needs x %d and dst %d floats, have %d and %d",
				w.Rows, w.Cols, w.Cols, w.Rows, len(x), len(dsts[i])))
		}
	}
	p.pool.matMulShared(x, ws, dsts)
}

// shareable reports whether ws can run as one job: the same width, and
// all float or all quantized with the same activation format.
func shareable(ws []*Mat) bool {
	f0, q0 := actsFormat(ws[0].Type)
	for _, w := range ws {
		if w.Cols != ws[0].Cols || w.Rows == 0 {
			return false
		}
		f, q := actsFormat(w.Type)
		switch {
		case isFloat(ws[0].Type):
			if !isFloat(w.Type) {
				return false
			}
		case !q0 || !q || f != f0:
			return false
		}
	}
	return true
}

// sharedJob is the task behind MatMulShared: matrix i's chunks are the
// claim indexes [starts[i], starts[i+1]), dealt to the workers' regions
// as one sequence (claims.go). One lives in each pool.
type sharedJob struct {
	s      *pool
	jobs   [maxShared]matJob
	starts [maxShared + 1]int
	nj     int
}

func (s *pool) matMulShared(x []float32, ws []*Mat, dsts [][]float32) {
	sj := &s.sh
	sj.s, sj.nj = s, len(ws)
	quant := false
	if _, ok := actsFormat(ws[0].Type); ok {
		quant = quantizeActs(&s.acts, ws[0].Type, x[:ws[0].Cols]) == nil
		if !quant {
			for i, w := range ws {
				s.matMul(dsts[i], w, x, 1)
			}
			return
		}
	}
	for i, w := range ws {
		j := &sj.jobs[i]
		j.s, j.phase, j.dst, j.w, j.x, j.n = s, phaseMatVec, dsts[i], w, x, 1
		j.quant, j.x4, j.x8, j.kx8, j.q4 = quant, false, false, false, nil
		if quant && useQ4x8(w) {
			j.q4 = w.q4x8()
			s.acts.q4Bias(w.Type)
		}
		j.chunk = decodeChunk(w, s.n) // as matMul's for one token
		sj.starts[i+1] = sj.starts[i] + (w.Rows+j.chunk-1)/j.chunk
	}
	s.cl.reset(s.n, sj.starts[sj.nj], 1)
	s.run(sj)
	for i := range sj.nj {
		j := &sj.jobs[i]
		j.dst, j.x, j.w, j.q4 = nil, nil, nil, nil
	}
}

func (sj *sharedJob) run(worker int) {
	sc := &sj.s.scratch[worker]
	for r := worker; ; {
		c, _, ok := sj.s.cl.claim(&r) // one index a claim (reset's most = 1)
		if !ok {
			return
		}
		i := 0
		for c >= sj.starts[i+1] {
			i++
		}
		j := &sj.jobs[i]
		lo := (c - sj.starts[i]) * j.chunk
		j.matVec(sc, lo, min(lo+j.chunk, j.w.Rows))
	}
}
