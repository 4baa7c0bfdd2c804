// Package train trains a small Llama-architecture language model from
// scratch: a byte-level BPE tokenizer learned from the corpus, the
// decoder-only transformer the inference engine serves, hand-written
// backward passes, AdamW, and a release gate against an n-gram baseline.
//
// # Forward
//
// Tokens x_0..x_{T-1} of each of B sequences become rows of the embedding
// matrix E (V, D). Every layer l updates the residual stream x (N=B·T, D):
//
//	h   = rmsnorm(x)·g1            r = 1/√(mean(x²)+ε), h = x·r·g1
//	qkv = h·[Wq;Wk;Wv]ᵀ            (N, QD+2·KVD); q, k rotated by RoPE (interleaved pairs)
//	S   = q_h·k_gᵀ/√hd, causal     s > t masked; g = h/(Heads/KVHeads)
//	P   = softmax(S), a_h = P·v_g  (N, QD)
//	x  += a·Woᵀ
//	h   = rmsnorm(x)·g2
//	gu  = h·[Wgate;Wup]ᵀ           (N, 2·F)
//	m   = silu(gate)⊙up            (N, F)
//	x  += m·Wdownᵀ
//
// and logits = rmsnorm(x)·gf·Woutᵀ (N, V); the loss is the mean
// cross-entropy of the next token.
//
// # Backward
//
// llm.c-style: the forward keeps every activation the backward needs
// (residual inputs, inverse RMS, normalised inputs, post-RoPE q/k, v,
// attention probabilities, gate/up pre-activations), and the backward walks
// the layers in reverse, one function per operation:
//
//	matmul  y = x·Wᵀ:   dx = dy·W,  dW += dyᵀ·x
//	rmsnorm y = x·r·g:  dg += Σ dy·x·r,  dx = r·(g⊙dy) − x·r³·Σ(g⊙dy⊙x)/D
//	RoPE    a rotation: dx = Rᵀ·dy (rotate back by the same angle)
//	softmax dS = P⊙(dP − Σ_s P·dP)
//	silu    silu(z) = z·σ(z), silu'(z) = σ(z)·(1 + z·(1−σ(z)))
//	xent    dlogits = (softmax(logits) − onehot(target))/N
//
// Everything is generic over float32 and float64. float32 is the training
// path: every product — projections, their two backward orientations, and
// attention's Q·Kᵀ, P·V and their gradients (attn_gemm.go) — runs through
// tensor.Pool.MatMul, the inference GEMM. float64 is the plain-loop
// reference the gradient check compares with finite differences (and the
// float32 gradients with it).
//
// Data, tokenizer, baseline and release: LoadCorpus splits documents into
// train and held-out by a seeded hash of their names; tokenizer.TrainBPE
// learns the vocabulary from the train split; Run trains with AdamW
// (warmup + cosine schedule, clipping, decay on matrices only), checkpoints
// exactly, and ends with the release gate (Gate): the model's held-out bits
// per byte must beat an interpolated Kneser-Ney trigram (KN3) over the same
// tokens and the last known-good model, or it is not promoted.
//
// Invariants the tests pin: analytic gradients match central finite
// differences for every parameter type; changing a future token never
// changes earlier logits; one batch can be memorised; the exported GGUF,
// served by package model through its KV cache, reproduces the training
// forward's logits within 1e-4; the same seed gives the same loss curve,
// also across a checkpoint and resume.
package train

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"nanoserve/tensor"
	"slices"
)

// Float is the element type of a model: float32 to train, float64 for the
// gradient-check reference.
type Float interface{ ~float32 | ~float64 }

// Config is the model shape.
type Config struct {
	Dim       int     `json:"dim"`
	Layers    int     `json:"layers"`
	Heads     int     `json:"heads"`
	KVHeads   int     `json:"kv_heads"`
	Hidden    int     `json:"ffn"`
	Vocab     int     `json:"vocab"`
	Ctx       int     `json:"ctx"`
	RopeTheta float64 `json:"rope_theta"`
	NormEps   float64 `json:"norm_eps"`
}

// HeadDim is Dim/Heads.
func (c Config) HeadDim() int { return c.Dim / c.Heads }

// QDim is the query width, KVDim the key/value width.
func (c Config) QDim() int  { return c.Heads * c.HeadDim() }
func (c Config) KVDim() int { return c.KVHeads * c.HeadDim() }

// Validate checks the shape.
func (c Config) Validate() error {
	switch {
	case c.Dim <= 0 || c.Layers <= 0 || c.Heads <= 0 || c.KVHeads <= 0 || c.Hidden <= 0 || c.Vocab <= 0 || c.Ctx <= 0:
		return fmt.Errorf("train: invalid shape %+v", c)
	case c.Dim%c.Heads != 0:
		return fmt.Errorf("train: dim %d is not a multiple of heads %d", c.Dim, c.Heads)
	case c.Heads%c.KVHeads != 0:
		return fmt.Errorf("train: heads %d is not a multiple of kv heads %d", c.Heads, c.KVHeads)
	case c.HeadDim()%2 != 0:
		return fmt.Errorf("train: head dim %d is odd (RoPE rotates pairs)", c.HeadDim())
	case !(c.RopeTheta > 0) || !(c.NormEps > 0):
		return errors.New("train: rope theta and norm epsilon must be positive")
	}
	return nil
}

// Tensor is one parameter tensor inside the flat parameter vector.
type Tensor struct {
	Name       string // GGUF name (token_embd.weight, blk.0.attn_q.weight, ...)
	Rows, Cols int    // vectors have Rows = 1
	Off        int    // offset in the flat vector
	Decay      bool   // weight decay applies (matrices)
}

// Size is Rows·Cols.
func (t Tensor) Size() int { return t.Rows * t.Cols }

// layerOff are the offsets of one layer's tensors in the flat vector. attn_q,
// attn_k, attn_v are adjacent (one fused (QD+2·KVD, D) matrix), and so are
// ffn_gate and ffn_up ((2·F, D)).
type layerOff struct {
	attnNorm, wqkv, wo, ffnNorm, wgu, wdown int
}

// Layout returns the parameter tensors in storage order and the total size.
func (c Config) Layout() ([]Tensor, int) {
	var ts []Tensor
	off := 0
	add := func(name string, r, cols int, decay bool) {
		ts = append(ts, Tensor{name, r, cols, off, decay})
		off += r * cols
	}
	d, qd, kvd, f := c.Dim, c.QDim(), c.KVDim(), c.Hidden
	add("token_embd.weight", c.Vocab, d, true)
	for l := range c.Layers {
		p := fmt.Sprintf("blk.%d.", l)
		add(p+"attn_norm.weight", 1, d, false)
		add(p+"attn_q.weight", qd, d, true)
		add(p+"attn_k.weight", kvd, d, true)
		add(p+"attn_v.weight", kvd, d, true)
		add(p+"attn_output.weight", d, qd, true)
		add(p+"ffn_norm.weight", 1, d, false)
		add(p+"ffn_gate.weight", f, d, true)
		add(p+"ffn_up.weight", f, d, true)
		add(p+"ffn_down.weight", d, f, true)
	}
	add("output_norm.weight", 1, d, false)
	add("output.weight", c.Vocab, d, true)
	return ts, off
}

func (c Config) offsets() (emb int, layers []layerOff, outNorm, out int) {
	ts, _ := c.Layout()
	byName := map[string]int{}
	for _, t := range ts {
		byName[t.Name] = t.Off
	}
	layers = make([]layerOff, c.Layers)
	for l := range layers {
		p := fmt.Sprintf("blk.%d.", l)
		layers[l] = layerOff{byName[p+"attn_norm.weight"], byName[p+"attn_q.weight"], byName[p+"attn_output.weight"],
			byName[p+"ffn_norm.weight"], byName[p+"ffn_gate.weight"], byName[p+"ffn_down.weight"]}
	}
	return byName["token_embd.weight"], layers, byName["output_norm.weight"], byName["output.weight"]
}

// InitParams fills a new parameter vector: matrices N(0, 0.02) (the output
// projections of each residual branch scaled by 1/√(2·Layers)), norm gains 1.
func InitParams(c Config, seed uint64) []float32 {
	ts, n := c.Layout()
	p := make([]float32, n)
	rng := rand.New(rand.NewPCG(seed, 0x6e616e6f))
	for _, t := range ts {
		w := p[t.Off : t.Off+t.Size()]
		if !t.Decay {
			for i := range w {
				w[i] = 1
			}
			continue
		}
		std := 0.02
		if hasSuffix(t.Name, "attn_output.weight") || hasSuffix(t.Name, "ffn_down.weight") {
			std /= math.Sqrt(2 * float64(c.Layers))
		}
		for i := range w {
			w[i] = float32(rng.NormFloat64() * std)
		}
	}
	return p
}

func hasSuffix(s, suf string) bool { return len(s) >= len(suf) && s[len(s)-len(suf):] == suf }

// acts holds one layer's saved activations.
type acts[T Float] struct {
	xin  []T // (N, D) residual stream entering the layer
	r1   []T // (N) inverse RMS of xin
	h1   []T // (N, D) normalised input to the QKV projection
	qkv  []T // (N, QD+2·KVD) q and k after RoPE, v
	att  []T // (B, Heads, T, T) attention probabilities
	ao   []T // (N, QD) attention output
	x2   []T // (N, D) residual stream after attention
	r2   []T // (N)
	h2   []T // (N, D)
	gu   []T // (N, 2·F) gate and up pre-activations
	m    []T // (N, F) silu(gate)⊙up
	xout []T // (N, D) residual stream leaving the layer
}

// Net runs forward and backward over batches of B sequences of T tokens.
// Buffers are allocated for the largest B·T seen and reused.
type Net[T Float] struct {
	Cfg Config
	P   []T // flat parameters
	G   []T // gradients, same layout (accumulated by Backward)

	mm      *mathOps[T]
	emb     int
	lo      []layerOff
	outNorm int
	out     int
	cos     []T // (Ctx, hd/2)
	sin     []T

	b, t   int
	tokens []int
	a      []acts[T]
	rf     []T // (N) final inverse RMS
	hf     []T // (N, D) final normalised stream
	logits []T // (N, V) logits, then probabilities after Loss
	// scratch for the backward
	dx, dh, dqkv, dao, dgu, dm, dtmp []T
	datt                             []T
	dg                               []T // (threads, D) per-worker norm-gain gradients
	es                               []T // (N, F) e^-gate scratch of the SiLU backward
	as                               []*attnScratch
	// attnBlock is the query rows per causal block of the float32
	// attention (attn_gemm.go); tests shrink it to cross block edges.
	attnBlock int
	// attnNN: S and dP through tensor.GemmNN (where its kernel exists);
	// tests run both ways.
	attnNN bool
	// only, when set (TrainOnly), are the layers whose gradients Backward
	// computes; the rest, embeddings and head included, get none, and
	// nothing is propagated below the lowest of them.
	only []bool
}

// TrainOnly restricts Backward to the gradients of the given layers' tensors
// (every other gradient stays as it was, zero after a clear): a frozen
// model's weight gradients are skipped, and so is the whole backward below
// the lowest trained layer. nil restores full gradients.
func (n *Net[T]) TrainOnly(layers []int) {
	n.only = nil
	if layers == nil {
		return
	}
	n.only = make([]bool, n.Cfg.Layers)
	for _, l := range layers {
		n.only[l] = true
	}
}

// trains reports whether Backward computes layer l's gradients (l = -1:
// the embeddings and head).
func (n *Net[T]) trains(l int) bool { return n.only == nil || l >= 0 && n.only[l] }

// NewNet makes a network over parameters p (not copied). threads is the
// worker count (goroutines for attention; the tensor pool for float32
// projections).
func NewNet[T Float](c Config, p []T, threads int) (*Net[T], error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if _, n := c.Layout(); len(p) != n {
		return nil, fmt.Errorf("train: %d parameters for a model of %d", len(p), n)
	}
	n := &Net[T]{Cfg: c, P: p, G: make([]T, len(p)), mm: newMathOps[T](threads), attnBlock: attnBlockRows, attnNN: tensor.GemmNNFast()}
	n.emb, n.lo, n.outNorm, n.out = c.offsets()
	hd := c.HeadDim()
	n.cos = make([]T, c.Ctx*hd/2)
	n.sin = make([]T, c.Ctx*hd/2)
	for pos := range c.Ctx {
		for i := range hd / 2 {
			f := math.Pow(c.RopeTheta, -float64(2*i)/float64(hd))
			s, co := math.Sincos(float64(pos) * f)
			n.cos[pos*hd/2+i], n.sin[pos*hd/2+i] = T(co), T(s)
		}
	}
	return n, nil
}

// Close releases the worker pool.
func (n *Net[T]) Close() {
	n.mm.close()
}

func grow[T Float](s []T, k int) []T {
	if cap(s) < k {
		return make([]T, k)
	}
	return s[:k]
}

func (n *Net[T]) alloc(b, t int) {
	c := n.Cfg
	N := b * t
	d, qd, kvd, f := c.Dim, c.QDim(), c.KVDim(), c.Hidden
	if len(n.a) != c.Layers {
		n.a = make([]acts[T], c.Layers)
	}
	for l := range n.a {
		a := &n.a[l]
		a.xin, a.r1, a.h1 = grow(a.xin, N*d), grow(a.r1, N), grow(a.h1, N*d)
		a.qkv, a.att, a.ao = grow(a.qkv, N*(qd+2*kvd)), grow(a.att, b*c.Heads*t*t), grow(a.ao, N*qd)
		a.x2, a.r2, a.h2 = grow(a.x2, N*d), grow(a.r2, N), grow(a.h2, N*d)
		a.gu, a.m, a.xout = grow(a.gu, N*2*f), grow(a.m, N*f), grow(a.xout, N*d)
	}
	n.rf, n.hf, n.logits = grow(n.rf, N), grow(n.hf, N*d), grow(n.logits, N*c.Vocab)
	n.b, n.t = b, t
}

// Forward runs tokens (B·T ids, B sequences of T positions 0..T-1) and
// returns the logits (B·T, V), which stay valid until the next call.
func (n *Net[T]) Forward(tokens []int, b, t int) ([]T, error) {
	c := n.Cfg
	if b <= 0 || t <= 0 || len(tokens) != b*t {
		return nil, fmt.Errorf("train: %d tokens for batch %d×%d", len(tokens), b, t)
	}
	if t > c.Ctx {
		return nil, fmt.Errorf("train: sequence length %d exceeds context %d", t, c.Ctx)
	}
	for _, id := range tokens {
		if id < 0 || id >= c.Vocab {
			return nil, fmt.Errorf("train: token id %d outside vocabulary of %d", id, c.Vocab)
		}
	}
	n.alloc(b, t)
	n.tokens = tokens
	N := b * t
	d, qd, kvd, f := c.Dim, c.QDim(), c.KVDim(), c.Hidden
	x := n.a[0].xin
	for i, id := range tokens {
		copy(x[i*d:(i+1)*d], n.P[n.emb+id*d:n.emb+(id+1)*d])
	}
	for l := range c.Layers {
		a, lo := &n.a[l], n.lo[l]
		if l > 0 {
			copy(a.xin, n.a[l-1].xout)
		}
		n.rmsnorm(a.h1, a.r1, a.xin, n.P[lo.attnNorm:lo.attnNorm+d], N, d)
		n.mm.matmul(a.qkv, n.P[lo.wqkv:lo.wqkv+(qd+2*kvd)*d], a.h1, N, qd+2*kvd, d)
		n.rope(a.qkv, b, t, false)
		n.attention(a)
		copy(a.x2, a.xin)
		n.mm.matmulAdd(a.x2, n.P[lo.wo:lo.wo+d*qd], a.ao, N, d, qd, &n.dtmp)
		n.rmsnorm(a.h2, a.r2, a.x2, n.P[lo.ffnNorm:lo.ffnNorm+d], N, d)
		n.mm.matmul(a.gu, n.P[lo.wgu:lo.wgu+2*f*d], a.h2, N, 2*f, d)
		n.mm.rows(N, func(lo, hi, _ int) {
			for i := lo; i < hi; i++ {
				g, u, m := a.gu[i*2*f:i*2*f+f], a.gu[i*2*f+f:(i+1)*2*f], a.m[i*f:(i+1)*f]
				if m32, ok := any(m).([]float32); ok {
					copy(m, g)
					tensor.SwiGLU(m32, f32(u))
					continue
				}
				for j := range f {
					m[j] = silu(g[j]) * u[j]
				}
			}
		})
		copy(a.xout, a.x2)
		n.mm.matmulAdd(a.xout, n.P[lo.wdown:lo.wdown+d*f], a.m, N, d, f, &n.dtmp)
	}
	n.rmsnorm(n.hf, n.rf, n.a[c.Layers-1].xout, n.P[n.outNorm:n.outNorm+d], N, d)
	n.mm.matmul(n.logits, n.P[n.out:n.out+c.Vocab*d], n.hf, N, c.Vocab, d)
	return n.logits, nil
}

func silu[T Float](z T) T { return z / (1 + T(math.Exp(-float64(z)))) }

// rmsnorm normalises the N rows of x, split over the workers.
func (n *Net[T]) rmsnorm(dst, rinv, x, g []T, N, d int) {
	n.mm.rows(N, func(lo, hi, _ int) {
		rmsnorm(dst, rinv, x, g, lo, hi, d, T(n.Cfg.NormEps))
	})
}

// rmsnorm normalises rows [lo, hi) of x (·, d) into dst, keeping 1/rms.
func rmsnorm[T Float](dst, rinv, x, g []T, lo, hi, d int, eps T) {
	for i := lo; i < hi; i++ {
		xi := x[i*d : (i+1)*d]
		var ss float64
		for _, v := range xi {
			ss += float64(v) * float64(v)
		}
		r := T(1 / math.Sqrt(ss/float64(d)+float64(eps)))
		rinv[i] = r
		o := dst[i*d : (i+1)*d]
		for j, v := range xi {
			o[j] = v * r * g[j]
		}
	}
}

// rope rotates (inverse: back) the q and k heads of qkv in place.
func (n *Net[T]) rope(qkv []T, b, t int, inverse bool) {
	c := n.Cfg
	hd, qd, kvd := c.HeadDim(), c.QDim(), c.KVDim()
	w := qd + 2*kvd
	half := hd / 2
	n.mm.rows(b*t, func(lo, hi, _ int) {
		n.ropeRows(qkv, lo, hi, t, w, half, inverse)
	})
}

func (n *Net[T]) ropeRows(qkv []T, lo, hi, t, w, half int, inverse bool) {
	c := n.Cfg
	hd, qd, kvd := c.HeadDim(), c.QDim(), c.KVDim()
	for i := lo; i < hi; i++ {
		pos := i % t
		cs, sn := n.cos[pos*half:(pos+1)*half], n.sin[pos*half:(pos+1)*half]
		row := qkv[i*w : i*w+qd+kvd]
		for h := 0; h < c.Heads+c.KVHeads; h++ {
			x := row[h*hd : (h+1)*hd]
			for j := range half {
				co, s := cs[j], sn[j]
				if inverse {
					s = -s
				}
				a, bb := x[2*j], x[2*j+1]
				x[2*j] = a*co - bb*s
				x[2*j+1] = a*s + bb*co
			}
		}
	}
}

// attention computes a.att and a.ao from a.qkv, causally, in parallel over
// (sequence, kv head) groups.
func (n *Net[T]) attention(a *acts[T]) {
	if n.mm.f32 {
		n.attentionF32(a)
		return
	}
	c := n.Cfg
	b, t := n.b, n.t
	hd, qd, kvd := c.HeadDim(), c.QDim(), c.KVDim()
	w := qd + 2*kvd
	rep := c.Heads / c.KVHeads
	scale := T(1 / math.Sqrt(float64(hd)))
	n.mm.parallel(b*c.KVHeads, func(job int) {
		bi, g := job/c.KVHeads, job%c.KVHeads
		for h := g * rep; h < (g+1)*rep; h++ {
			for ti := range t {
				q := a.qkv[(bi*t+ti)*w+h*hd:][:hd]
				p := a.att[((bi*c.Heads+h)*t+ti)*t:][:t]
				mx := T(math.Inf(-1))
				for s := 0; s <= ti; s++ {
					k := a.qkv[(bi*t+s)*w+qd+g*hd:][:hd]
					var dot T
					for j := range hd {
						dot += q[j] * k[j]
					}
					p[s] = dot * scale
					mx = max(mx, p[s])
				}
				var sum T
				for s := 0; s <= ti; s++ {
					p[s] = T(math.Exp(float64(p[s] - mx)))
					sum += p[s]
				}
				o := a.ao[(bi*t+ti)*qd+h*hd:][:hd]
				clear(o)
				for s := 0; s <= ti; s++ {
					p[s] /= sum
					v := a.qkv[(bi*t+s)*w+qd+kvd+g*hd:][:hd]
					for j := range hd {
						o[j] += p[s] * v[j]
					}
				}
				clear(p[ti+1:])
			}
		}
	})
}

// Loss turns the logits of the last Forward into probabilities (in place)
// and scores targets (B·T ids; a target < 0 is ignored) by cross-entropy
// (nats). w, when not nil, weighs each target (B·T weights; nil: all 1):
// Loss returns Σ wᵢ·(−log pᵢ) and Σ wᵢ over the scored targets, so the
// (weighted) mean is sum / count.
func (n *Net[T]) Loss(targets []int, w []float32) (sum, count float64) {
	V := n.Cfg.Vocab
	type part struct {
		sum, count float64
	}
	parts := make([]part, n.mm.threads)
	n.mm.rows(len(targets), func(lo, hi, wk int) {
		p := &parts[wk]
		for i := lo; i < hi; i++ {
			tg := targets[i]
			row := n.logits[i*V : (i+1)*V]
			if r32, ok := any(row).([]float32); ok {
				mx := tensor.Max(r32)
				var lt float32
				if tg >= 0 {
					lt = r32[tg] - mx
				}
				s := tensor.ExpShift(r32, mx)
				inv := 1 / s
				for j := range r32 {
					r32[j] *= inv
				}
				if tg >= 0 { // −log p = log Σ − (z_tg − max)
					wi := weight(w, i)
					p.sum += wi * (math.Log(float64(s)) - float64(lt))
					p.count += wi
				}
				continue
			}
			mx := row[0]
			for _, v := range row {
				mx = max(mx, v)
			}
			var s float64
			for j, v := range row {
				e := math.Exp(float64(v - mx))
				row[j] = T(e)
				s += e
			}
			inv := 1 / s
			for j := range row {
				row[j] = T(float64(row[j]) * inv)
			}
			if tg >= 0 {
				wi := weight(w, i)
				p.sum += -wi * math.Log(max(float64(row[tg]), 1e-30))
				p.count += wi
			}
		}
	})
	for _, p := range parts {
		sum += p.sum
		count += p.count
	}
	return sum, count
}

// weight is target i's loss weight: w[i], or 1 when w is nil.
func weight(w []float32, i int) float64 {
	if w == nil {
		return 1
	}
	return float64(w[i])
}

// Backward accumulates into G the gradient of the weighted mean loss over
// the scored targets of the last Forward+Loss: Σ wᵢ·(−log pᵢ) / norm, with
// w and norm (the count Loss returned) as Loss took and returned them.
// d/dz of −log softmax(z)[tg] is p − onehot(tg), scaled by wᵢ / norm.
func (n *Net[T]) Backward(targets []int, w []float32, norm float64) {
	c := n.Cfg
	b, t := n.b, n.t
	N := b * t
	V, d, qd, kvd, f := c.Vocab, c.Dim, c.QDim(), c.KVDim(), c.Hidden
	if norm <= 0 {
		norm = 1
	}
	dl := n.logits // becomes dlogits in place
	n.mm.rows(len(targets), func(lo, hi, _ int) {
		for i := lo; i < hi; i++ {
			tg := targets[i]
			row := dl[i*V : (i+1)*V]
			if tg < 0 {
				clear(row)
				continue
			}
			row[tg] -= 1
			inv := T(weight(w, i) / norm)
			for j := range row {
				row[j] *= inv
			}
		}
	})
	n.dx, n.dh = grow(n.dx, N*d), grow(n.dh, N*d)
	n.dqkv, n.dao = grow(n.dqkv, N*(qd+2*kvd)), grow(n.dao, N*qd)
	n.dgu, n.dm = grow(n.dgu, N*2*f), grow(n.dm, N*f)
	n.datt = grow(n.datt, n.mm.threads*t)
	n.dg = grow(n.dg, n.mm.threads*d)
	n.es = grow(n.es, N*f)

	// output projection and final norm
	if n.trains(-1) {
		n.mm.matmulBackW(n.G[n.out:n.out+V*d], dl, n.hf, N, V, d)
	}
	n.mm.matmulBackX(n.dh, dl, n.P[n.out:n.out+V*d], N, V, d)
	clear(n.dx)
	n.rmsnormBack(n.dx, n.G[n.outNorm:n.outNorm+d], n.dh, n.a[c.Layers-1].xout, n.rf, n.P[n.outNorm:n.outNorm+d], N, d)

	low := 0 // the lowest layer the gradient must reach
	if n.only != nil {
		low = slices.Index(n.only, true)
		if low < 0 {
			return
		}
	}
	for l := c.Layers - 1; l >= low; l-- {
		a, lo := &n.a[l], n.lo[l]
		tw := n.trains(l) // this layer's weight gradients
		// FFN: xout = x2 + m·Wdownᵀ
		if tw {
			n.mm.matmulBackW(n.G[lo.wdown:lo.wdown+d*f], n.dx, a.m, N, d, f)
		}
		n.mm.matmulBackX(n.dm, n.dx, n.P[lo.wdown:lo.wdown+d*f], N, d, f)
		n.mm.rows(N, func(lo, hi, _ int) {
			for i := lo; i < hi; i++ {
				g, u := a.gu[i*2*f:i*2*f+f], a.gu[i*2*f+f:(i+1)*2*f]
				dg, du := n.dgu[i*2*f:i*2*f+f], n.dgu[i*2*f+f:(i+1)*2*f]
				dm, e := n.dm[i*f:(i+1)*f], n.es[i*f:(i+1)*f]
				// e = e^−z (vectorised for float32), σ(z) = 1/(1+e)
				if e32, ok := any(e).([]float32); ok {
					for j, z := range g {
						e[j] = -z
					}
					tensor.ExpShift(e32, 0)
				} else {
					for j, z := range g {
						e[j] = T(math.Exp(-float64(z)))
					}
				}
				for j := range f {
					z := g[j]
					sg := 1 / (1 + e[j])
					du[j] = dm[j] * z * sg
					dg[j] = dm[j] * u[j] * sg * (1 + z*(1-sg))
				}
			}
		})
		if tw {
			n.mm.matmulBackW(n.G[lo.wgu:lo.wgu+2*f*d], n.dgu, a.h2, N, 2*f, d)
		}
		n.mm.matmulBackX(n.dh, n.dgu, n.P[lo.wgu:lo.wgu+2*f*d], N, 2*f, d)
		n.rmsnormBack(n.dx, n.G[lo.ffnNorm:lo.ffnNorm+d], n.dh, a.x2, a.r2, n.P[lo.ffnNorm:lo.ffnNorm+d], N, d)
		// attention: x2 = xin + ao·Woᵀ
		if tw {
			n.mm.matmulBackW(n.G[lo.wo:lo.wo+d*qd], n.dx, a.ao, N, d, qd)
		}
		n.mm.matmulBackX(n.dao, n.dx, n.P[lo.wo:lo.wo+d*qd], N, d, qd)
		n.attentionBack(a)
		n.rope(n.dqkv, b, t, true)
		if tw {
			n.mm.matmulBackW(n.G[lo.wqkv:lo.wqkv+(qd+2*kvd)*d], n.dqkv, a.h1, N, qd+2*kvd, d)
		}
		n.mm.matmulBackX(n.dh, n.dqkv, n.P[lo.wqkv:lo.wqkv+(qd+2*kvd)*d], N, qd+2*kvd, d)
		n.rmsnormBack(n.dx, n.G[lo.attnNorm:lo.attnNorm+d], n.dh, a.xin, a.r1, n.P[lo.attnNorm:lo.attnNorm+d], N, d)
	}
	if !n.trains(-1) {
		return
	}
	for i, id := range n.tokens {
		ge := n.G[n.emb+id*d : n.emb+(id+1)*d]
		for j, v := range n.dx[i*d : (i+1)*d] {
			ge[j] += v
		}
	}
}

// rmsnormBack adds to dx the gradient through y = x·r·g given dy, and to dg
// the gain's gradient, split over the workers by rows (each worker sums its
// rows' dg in its own (D) slice; the slices are added in worker order).
func (n *Net[T]) rmsnormBack(dx, dg, dy, x, rinv, g []T, N, d int) {
	clear(n.dg)
	n.mm.rows(N, func(lo, hi, w int) {
		rmsnormBack(dx, n.dg[w*d:(w+1)*d], dy, x, rinv, g, lo, hi, d)
	})
	for w := range n.mm.threads {
		for j, v := range n.dg[w*d : (w+1)*d] {
			dg[j] += v
		}
	}
}

func rmsnormBack[T Float](dx, dg, dy, x, rinv, g []T, lo, hi, d int) {
	for i := lo; i < hi; i++ {
		xi, dyi, dxi := x[i*d:(i+1)*d], dy[i*d:(i+1)*d], dx[i*d:(i+1)*d]
		r := rinv[i]
		var dot T
		for j := range d {
			dg[j] += dyi[j] * xi[j] * r
			dot += g[j] * dyi[j] * xi[j]
		}
		k := r * r * r * dot / T(d)
		for j := range d {
			dxi[j] += r*g[j]*dyi[j] - xi[j]*k
		}
	}
}

// attentionBack writes n.dqkv (pre-inverse-RoPE) from n.dao.
func (n *Net[T]) attentionBack(a *acts[T]) {
	if n.mm.f32 {
		n.attentionBackF32(a)
		return
	}
	c := n.Cfg
	b, t := n.b, n.t
	hd, qd, kvd := c.HeadDim(), c.QDim(), c.KVDim()
	w := qd + 2*kvd
	rep := c.Heads / c.KVHeads
	scale := T(1 / math.Sqrt(float64(hd)))
	clear(n.dqkv)
	n.mm.parallelW(b*c.KVHeads, func(job, worker int) {
		dp := n.datt[worker*t : (worker+1)*t]
		bi, g := job/c.KVHeads, job%c.KVHeads
		for h := g * rep; h < (g+1)*rep; h++ {
			for ti := range t {
				p := a.att[((bi*c.Heads+h)*t+ti)*t:][:t]
				do := n.dao[(bi*t+ti)*qd+h*hd:][:hd]
				var sum T
				for s := 0; s <= ti; s++ {
					v := a.qkv[(bi*t+s)*w+qd+kvd+g*hd:][:hd]
					dv := n.dqkv[(bi*t+s)*w+qd+kvd+g*hd:][:hd]
					var dot T
					for j := range hd {
						dot += do[j] * v[j]
						dv[j] += p[s] * do[j]
					}
					dp[s] = dot
					sum += p[s] * dot
				}
				q := a.qkv[(bi*t+ti)*w+h*hd:][:hd]
				dq := n.dqkv[(bi*t+ti)*w+h*hd:][:hd]
				for s := 0; s <= ti; s++ {
					ds := p[s] * (dp[s] - sum) * scale
					k := a.qkv[(bi*t+s)*w+qd+g*hd:][:hd]
					dk := n.dqkv[(bi*t+s)*w+qd+g*hd:][:hd]
					for j := range hd {
						dq[j] += ds * k[j]
						dk[j] += ds * q[j]
					}
				}
			}
		}
	})
}
