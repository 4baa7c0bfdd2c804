package model

import "fmt"

// Per-layer geometry: newer architectures vary the attention and FFN shape
// from layer to layer.
//
//   - SmolLM3 drops RoPE in every fourth layer (NoRopeStep): those layers
//     attend by content alone.
//   - Gemma 4 gives its windowed layers a smaller head (HeadDimSWA; the
//     31B also other KV heads, KVHeadsSWA, and global layers whose values
//     are their keys' projection: no attn_v), rotated
//     over RopeDimSWA dims with base RopeThetaSWA) than its global ones, a
//     per-layer FFN width (FFNLengths: the shared-KV layers are double
//     wide), and lets its last SharedKVLayers layers own no KV cache: such
//     a layer computes only its queries and attends over the K/V the last
//     cache-owning layer of the same kind (windowed or global) stored.
//
// The KV cache therefore holds CacheLayers() layers (the owners, in
// order; a hybrid model's recurrent layers own none either) of rows CacheKVDim() wide (the widest owner's KVHeads·head_dim);
// a narrower layer uses the first KVHeads·LayerHeadDim(l) values of each
// row. KVBytesPerToken counts exactly that.

// LayerHeadDim is the head width of layer l.
func (c *Config) LayerHeadDim(l int) int {
	if c.HeadDimSWA > 0 && c.Windowed(l) {
		return c.HeadDimSWA
	}
	return c.HeadDim
}

// LayerRopeDim is how many dims of each head layer l rotates (0: none).
func (c *Config) LayerRopeDim(l int) int {
	if c.NoRopeStep > 0 && (l+1)%c.NoRopeStep == 0 {
		return 0
	}
	if c.RopeDimSWA > 0 && c.Windowed(l) {
		return c.RopeDimSWA
	}
	return c.RopeDim
}

// LayerHidden is the FFN inner width of layer l.
func (c *Config) LayerHidden(l int) int {
	if c.FFNLengths != nil {
		return c.FFNLengths[l]
	}
	return c.HiddenDim
}

// LayerKVHeads is the number of KV heads of layer l.
func (c *Config) LayerKVHeads(l int) int {
	if c.KVHeadsSWA > 0 && c.Windowed(l) {
		return c.KVHeadsSWA
	}
	return c.KVHeads
}

// LayerQDim and LayerKVDim are Heads and LayerKVHeads(l) times
// LayerHeadDim(l).
func (c *Config) LayerQDim(l int) int  { return c.Heads * c.LayerHeadDim(l) }
func (c *Config) LayerKVDim(l int) int { return c.LayerKVHeads(l) * c.LayerHeadDim(l) }

// CacheLayers is the number of layers that own a KV cache (OwnsKV).
func (c *Config) CacheLayers() int {
	n := 0
	for l := range c.Layers {
		if c.OwnsKV(l) {
			n++
		}
	}
	return n
}

// OwnsKV reports whether layer l writes its own K and V: an attention
// layer (not a hybrid model's recurrent one) before the last
// SharedKVLayers. The owners are numbered in order in the cache (the
// layer's kvLayer).
func (c *Config) OwnsKV(l int) bool {
	return l < c.Layers-c.SharedKVLayers && !c.recurrent(l)
}

// SharesKV reports whether layer l attends over another layer's cache (a
// shared-KV layer: neither an owner nor recurrent).
func (c *Config) SharesKV(l int) bool { return !c.OwnsKV(l) && !c.recurrent(l) }

// KVSource is the model layer whose cache attention layer l attends over:
// l itself when it owns a cache, else the last owner of the same kind
// (windowed or global) — llama.cpp's n_layer_kv_from_start − (1 or 2) for
// Gemma 3n/4 files, whose last two owners are one windowed and one global
// layer; -1 if there is none.
func (c *Config) KVSource(l int) int {
	if c.OwnsKV(l) {
		return l
	}
	for s := c.Layers - c.SharedKVLayers - 1; s >= 0; s-- {
		if c.OwnsKV(s) && c.Windowed(s) == c.Windowed(l) {
			return s
		}
	}
	return -1
}

// CacheKVDim is the width of a KV cache row: the widest owner's
// KVHeads·head_dim.
func (c *Config) CacheKVDim() int {
	return c.widest(func(l int) int {
		if c.OwnsKV(l) {
			return c.LayerKVDim(l)
		}
		return 0
	})
}

// maxQDim, maxKVDim, maxHidden and maxRopeDim are the widest layer's
// (workspace sizes; maxRopeDim: the widest rotation).
func (c *Config) maxQDim() int    { return c.widest(c.LayerQDim) }
func (c *Config) maxKVDim() int   { return c.widest(c.LayerKVDim) }
func (c *Config) maxHidden() int  { return c.widest(c.LayerHidden) }
func (c *Config) maxRopeDim() int { return c.widest(c.LayerRopeDim) }

// widest is the largest f(l) over the layers (0 without layers).
func (c *Config) widest(f func(l int) int) int {
	w := 0
	for l := range c.Layers {
		w = max(w, f(l))
	}
	return w
}

// validateLayers checks the per-layer variations.
func (c *Config) validateLayers() error {
	switch {
	case c.KVHeadsSWA < 0 || c.KVHeadsSWA > 0 && c.Heads%c.KVHeadsSWA != 0:
		return fmt.Errorf("model: %d heads is not a multiple of %d kv heads (windowed layers)", c.Heads, c.KVHeadsSWA)
	case c.NoRopeStep < 0 || c.HeadDimSWA < 0 || c.RopeDimSWA < 0 || c.PerLayerDim < 0:
		return fmt.Errorf("model: invalid per-layer settings: no-rope step %d, head dim %d / rope dim %d of windowed layers, per-layer input %d",
			c.NoRopeStep, c.HeadDimSWA, c.RopeDimSWA, c.PerLayerDim)
	case c.FFNLengths != nil && len(c.FFNLengths) != c.Layers:
		return fmt.Errorf("model: feed_forward_length has %d entries for %d layers", len(c.FFNLengths), c.Layers)
	case c.SharedKVLayers < 0 || c.SharedKVLayers >= c.Layers:
		return fmt.Errorf("model: %d shared-KV layers of %d leaves no layer owning a cache", c.SharedKVLayers, c.Layers)
	}
	for l := range c.Layers {
		hd, rd := c.LayerHeadDim(l), c.LayerRopeDim(l)
		if rd < 0 || rd > hd || rd%2 != 0 {
			return fmt.Errorf("model: layer %d: invalid rope dimension %d for head dim %d", l, rd, hd)
		}
		if c.LayerHidden(l) <= 0 {
			return fmt.Errorf("model: layer %d: invalid feed-forward length %d", l, c.LayerHidden(l))
		}
		if !c.recurrent(l) && c.KVSource(l) < 0 {
			return fmt.Errorf("model: shared-KV layer %d has no earlier %s layer owning a cache", l, map[bool]string{true: "windowed", false: "global"}[c.Windowed(l)])
		}
	}
	return nil
}

// maxHeadDim is the widest head of any layer.
func (c *Config) maxHeadDim() int { return max(c.HeadDim, c.HeadDimSWA) }
