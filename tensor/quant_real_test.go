package tensor

// Real-data checks for the block formats: every quantized tensor in the
// llama.cpp-made GGUF fixtures must decode close to its unquantized original,
// a deliberately mis-decoded copy must not, and our reference quantizers must
// reproduce llama.cpp's bytes. The GGUF and safetensors readers here are
// minimal private ones (the real packages sit above tensor in the import
// graph).

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"nanoserve/internal/testshared"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

// qSharedDir walks up from the working directory to the folder holding
// shared/README.md.
func qSharedDir(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "shared", "README.md")); err == nil {
			return filepath.Join(d, "shared")
		}
		if filepath.Dir(d) == d {
			t.Skip("shared/ test data not found above " + wd)
		}
	}
}

type qTensor struct {
	Type DType
	Dims []int // ggml order: Dims[0] is the row length
	Data []byte
}

func (t qTensor) rows() int {
	r := 1
	for _, d := range t.Dims[1:] {
		r *= d
	}
	return r
}

func (t qTensor) numel() int { return t.rows() * t.Dims[0] }

// qReadGGUF parses a GGUF v2/v3 file far enough to list its tensors.
func qReadGGUF(path string) (map[string]qTensor, error) {
	f, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p := 0
	fail := errors.New("gguf(test): truncated")
	need := func(n int) bool { return p+n <= len(f) }
	u32 := func() uint32 { v := binary.LittleEndian.Uint32(f[p:]); p += 4; return v }
	u64 := func() uint64 { v := binary.LittleEndian.Uint64(f[p:]); p += 8; return v }
	str := func() (string, bool) {
		if !need(8) {
			return "", false
		}
		n := int(u64())
		if n < 0 || !need(n) {
			return "", false
		}
		s := string(f[p : p+n])
		p += n
		return s, true
	}
	if !need(24) || string(f[:4]) != "GGUF" {
		return nil, errors.New("gguf(test): bad magic")
	}
	p = 8
	nt, nkv := int(u64()), int(u64())
	sizes := map[uint32]int{0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
	align := 32
	var skip func(typ uint32) bool
	skip = func(typ uint32) bool {
		if n, ok := sizes[typ]; ok {
			if !need(n) {
				return false
			}
			p += n
			return true
		}
		switch typ {
		case 8:
			_, ok := str()
			return ok
		case 9:
			if !need(12) {
				return false
			}
			et, n := u32(), int(u64())
			for range n {
				if !skip(et) {
					return false
				}
			}
			return true
		}
		return false
	}
	for range nkv {
		k, ok := str()
		if !ok || !need(4) {
			return nil, fail
		}
		typ := u32()
		if k == "general.alignment" && typ == 4 && need(4) {
			align = int(binary.LittleEndian.Uint32(f[p:]))
		}
		if !skip(typ) {
			return nil, fail
		}
	}
	type info struct {
		name string
		tt   qTensor
		off  int
	}
	var infos []info
	for range nt {
		name, ok := str()
		if !ok || !need(4) {
			return nil, fail
		}
		nd := int(u32())
		if !need(8*nd + 12) {
			return nil, fail
		}
		dims := make([]int, nd)
		for i := range dims {
			dims[i] = int(u64())
		}
		typ := DType(u32())
		off := int(u64())
		infos = append(infos, info{name, qTensor{Type: typ, Dims: dims}, off})
	}
	base := (p + align - 1) / align * align
	out := map[string]qTensor{}
	for _, in := range infos {
		n := 1
		for _, d := range in.tt.Dims {
			n *= d
		}
		nb, err := in.tt.Type.RowBytes(n)
		if err != nil {
			return nil, err
		}
		if base+in.off+nb > len(f) {
			return nil, fail
		}
		in.tt.Data = f[base+in.off : base+in.off+nb]
		out[in.name] = in.tt
	}
	return out, nil
}

// qReadSafetensorsF32 returns the F32 tensors of a .safetensors file by name.
func qReadSafetensorsF32(path string) (map[string][]float32, error) {
	f, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(f) < 8 {
		return nil, errors.New("safetensors(test): truncated")
	}
	n := int(binary.LittleEndian.Uint64(f))
	if n < 0 || 8+n > len(f) {
		return nil, errors.New("safetensors(test): truncated header")
	}
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(f[8:8+n], &hdr); err != nil {
		return nil, err
	}
	data := f[8+n:]
	out := map[string][]float32{}
	for name, raw := range hdr {
		if name == "__metadata__" {
			continue
		}
		var e struct {
			Dtype   string `json:"dtype"`
			Offsets [2]int `json:"data_offsets"`
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, err
		}
		if e.Dtype != "F32" {
			continue
		}
		if e.Offsets[0] < 0 || e.Offsets[1] > len(data) || e.Offsets[0] > e.Offsets[1] {
			return nil, fmt.Errorf("safetensors(test): %s out of range", name)
		}
		b := data[e.Offsets[0]:e.Offsets[1]]
		v := make([]float32, len(b)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		out[name] = v
	}
	return out, nil
}

// hfToGGUFName maps a Llama HF weight name to llama.cpp's GGUF name.
func hfToGGUFName(hf string) string {
	r := strings.NewReplacer(
		"model.embed_tokens.", "token_embd.", "lm_head.", "output.", "model.norm.", "output_norm.",
		"model.layers.", "blk.", ".self_attn.q_proj", ".attn_q", ".self_attn.k_proj", ".attn_k",
		".self_attn.v_proj", ".attn_v", ".self_attn.o_proj", ".attn_output", ".mlp.gate_proj", ".ffn_gate",
		".mlp.up_proj", ".ffn_up", ".mlp.down_proj", ".ffn_down", ".input_layernorm", ".attn_norm",
		".post_attention_layernorm", ".ffn_norm")
	return r.Replace(hf)
}

// permuteQK reorders the rows of an HF q/k projection (rows, cols) into
// llama.cpp's layout: within each head the two rotary halves are
// interleaved (GGUF row 2i+j of a head is HF row j·hd/2+i).
func permuteQK(w []float32, rows, cols, heads int) []float32 {
	out := make([]float32, len(w))
	hd := rows / heads
	for h := range heads {
		for i := range hd / 2 {
			for j := range 2 {
				src := h*hd + j*hd/2 + i
				dst := h*hd + 2*i + j
				copy(out[dst*cols:(dst+1)*cols], w[src*cols:(src+1)*cols])
			}
		}
	}
	return out
}

var (
	llamaKOnce sync.Once
	llamaKOrig map[string][]float32
	llamaKErr  error
)

// llamaKOriginals generates the llama_k HF checkpoint with the shared
// fixturegen tool and returns its weights under GGUF names and layout.
func llamaKOriginals(t *testing.T, shared string) map[string][]float32 {
	llamaKOnce.Do(func() {
		dir := testshared.Fixture(t, "hf-llama_k")
		st, err := qReadSafetensorsF32(filepath.Join(dir, "llama_k", "model.safetensors"))
		if err != nil {
			llamaKErr = err
			return
		}
		var cfg struct {
			Heads   int `json:"num_attention_heads"`
			KVHeads int `json:"num_key_value_heads"`
			Dim     int `json:"hidden_size"`
		}
		raw, err := os.ReadFile(filepath.Join(dir, "llama_k", "config.json"))
		if err == nil {
			err = json.Unmarshal(raw, &cfg)
		}
		if err != nil {
			llamaKErr = err
			return
		}
		llamaKOrig = map[string][]float32{}
		for name, v := range st {
			g := hfToGGUFName(name)
			switch {
			case strings.HasSuffix(g, ".attn_q.weight"):
				v = permuteQK(v, len(v)/cfg.Dim, cfg.Dim, cfg.Heads)
			case strings.HasSuffix(g, ".attn_k.weight"):
				v = permuteQK(v, len(v)/cfg.Dim, cfg.Dim, cfg.KVHeads)
			}
			llamaKOrig[g] = v
		}
	})
	if llamaKErr != nil {
		t.Fatal(llamaKErr)
	}
	return llamaKOrig
}

// f16Originals decodes every tensor of an F16 GGUF to float32.
func f16Originals(t *testing.T, path string) map[string][]float32 {
	ts, err := qReadGGUF(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]float32{}
	for name, tt := range ts {
		v := make([]float32, tt.numel())
		DequantizeRow(v, tt.Type, tt.Data)
		out[name] = v
	}
	return out
}

// qRelRMSE is ‖a−b‖/‖b‖ computed in float64.
func qRelRMSE(a, b []float32) float64 {
	var e, s float64
	for i := range b {
		d := float64(a[i]) - float64(b[i])
		e += d * d
		s += float64(b[i]) * float64(b[i])
	}
	return math.Sqrt(e / s)
}

// realBound is the largest acceptable relative RMSE of a decoded real tensor
// (Gaussian weights, no importance matrix) per type: about 1.15× the worst
// value measured on the fixtures (Q8_0 0.0054, Q6_K 0.0178, Q5_K 0.0363,
// Q5_1 0.0380, Q5_0 0.0435, Q4_K 0.0718). Layout bugs give errors of order 1.
var realBound = map[DType]float64{
	Q8_0: 0.0062, Q6_K: 0.0205, Q5_K: 0.042, Q5_1: 0.044, Q5_0: 0.050, Q4_K: 0.083,
}

// breakLayout returns a copy of a quantized row set with the bytes shuffled
// the way a plausible decoder bug would read them (nibble halves swapped, or
// values reversed inside a block), for the sensitivity check.
func breakLayout(t DType, data []byte) []byte {
	b := bytes.Clone(data)
	bb := t.blockBytes()
	var lo, hi int // byte range of the packed quants inside a block
	switch t {
	case Q8_0:
		for i := 0; i+bb <= len(b); i += bb {
			q := b[i+2 : i+34]
			for j := range 16 {
				q[j], q[31-j] = q[31-j], q[j]
			}
		}
		return b
	case Q5_0:
		lo, hi = 6, 22
	case Q5_1:
		lo, hi = 8, 24
	case Q4_K:
		lo, hi = 16, 144
	case Q5_K:
		lo, hi = 48, 176
	case Q6_K:
		lo, hi = 0, 192 // ql and qh
	}
	for i := 0; i+bb <= len(b); i += bb {
		for j := i + lo; j < i+hi; j++ {
			b[j] = b[j]<<4 | b[j]>>4
		}
	}
	return b
}

type realStat struct {
	n, exact  int
	maxRel    float64
	sumRel    float64
	badBlocks int
	blocks    int
}

func TestQuantRealTensors(t *testing.T) {
	shared := qSharedDir(t)
	dir := filepath.Join(shared, "testdata", "gguf")
	type fileCase struct {
		file string
		orig func() map[string][]float32
	}
	gqa := func() map[string][]float32 {
		return f16Originals(t, filepath.Join(dir, "llama_gqa", "llama_gqa-F16.gguf"))
	}
	cases := []fileCase{
		{"llama_gqa/llama_gqa-Q8_0.gguf", gqa},
		{"llama_gqa/llama_gqa-Q4_K_M.gguf", gqa},
		{"llama_gqa/llama_gqa-Q4_K_S.gguf", gqa},
	}
	if testing.Short() {
		t.Log("-short: skipping llama_k (needs fixturegen)")
	} else {
		k := func() map[string][]float32 { return llamaKOriginals(t, shared) }
		cases = append(cases,
			fileCase{"llama_k/llama_k-Q4_K_M.gguf", k},
			fileCase{"llama_k/llama_k-Q4_K_S.gguf", k})
	}
	stats := map[DType]*realStat{}
	for _, c := range cases {
		ts, err := qReadGGUF(filepath.Join(dir, c.file))
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		orig := c.orig()
		names := make([]string, 0, len(ts))
		for name := range ts {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			tt := ts[name]
			if tt.Type == F32 || tt.Type == F16 {
				continue
			}
			o, ok := orig[name]
			if !ok || len(o) != tt.numel() {
				t.Errorf("%s %s: no original of %d elements", c.file, name, tt.numel())
				continue
			}
			bound, ok := realBound[tt.Type]
			if !ok {
				t.Errorf("%s %s: unexpected type %s", c.file, name, tt.Type)
				continue
			}
			got := make([]float32, len(o))
			DequantizeRow(got, tt.Type, tt.Data)
			rel := qRelRMSE(got, o)
			if rel > bound {
				t.Errorf("%s %s (%s): relative RMSE %.4f > %.4f", c.file, name, tt.Type, rel, bound)
			}
			DequantizeRow(got, tt.Type, breakLayout(tt.Type, tt.Data))
			if bad := qRelRMSE(got, o); bad < 10*bound {
				t.Errorf("%s %s (%s): mis-decoded layout still gives relative RMSE %.3f: the check is blind", c.file, name, tt.Type, bad)
			}
			// Re-quantize the original: llama.cpp's bytes exactly?
			mine := make([]byte, len(tt.Data))
			if err := QuantizeRow(mine, tt.Type, o); err != nil {
				t.Fatal(err)
			}
			bb := tt.Type.blockBytes()
			diff := 0
			for i := 0; i < len(mine); i += bb {
				if !bytes.Equal(mine[i:i+bb], tt.Data[i:i+bb]) {
					diff++
				}
			}
			s := stats[tt.Type]
			if s == nil {
				s = &realStat{}
				stats[tt.Type] = s
			}
			s.n++
			s.sumRel += rel
			s.maxRel = max(s.maxRel, rel)
			s.blocks += len(mine) / bb
			s.badBlocks += diff
			if diff == 0 {
				s.exact++
			} else {
				t.Errorf("%s %s (%s): re-quantized original differs from llama.cpp in %d of %d blocks", c.file, name, tt.Type, diff, len(mine)/bb)
			}
		}
	}
	var types []DType
	for ty := range stats {
		types = append(types, ty)
	}
	sort.Slice(types, func(i, j int) bool { return types[i] < types[j] })
	t.Logf("%-5s %8s %10s %10s %16s", "type", "tensors", "mean rel", "max rel", "bit-exact")
	for _, ty := range types {
		s := stats[ty]
		t.Logf("%-5s %8d %10.5f %10.5f %7d/%d (%d/%d blocks differ)", ty, s.n, s.sumRel/float64(s.n), s.maxRel, s.exact, s.n, s.badBlocks, s.blocks)
	}
}

// TestQuantQ8_0Idempotent: quantizing the decoded values of a real Q8_0
// tensor gives back its bytes.
func TestQuantQ8_0Idempotent(t *testing.T) {
	ts, err := qReadGGUF(filepath.Join(qSharedDir(t), "testdata", "gguf", "llama_gqa", "llama_gqa-Q8_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	tt := ts["blk.0.ffn_down.weight"]
	if tt.Type != Q8_0 {
		t.Fatalf("blk.0.ffn_down.weight is %s, want Q8_0", tt.Type)
	}
	v := make([]float32, tt.numel())
	DequantizeRow(v, Q8_0, tt.Data)
	b := make([]byte, len(tt.Data))
	if err := QuantizeRow(b, Q8_0, v); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, tt.Data) {
		t.Fatal("re-quantized Q8_0 differs from the file")
	}
}
