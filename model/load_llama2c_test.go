package model

import (
	"encoding/binary"
	"math"
	"nanoserve/internal/testshared"
	"nanoserve/tensor"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type l2cStep struct {
	Pos        int         `json:"pos"`
	InputToken int         `json:"input_token"`
	Argmax     int         `json:"argmax"`
	Top5       [][]float64 `json:"top5"`
	Logits     []float32   `json:"logits"`
}

// l2cGolden reads one run_K.jsonl: its steps in position order.
func l2cGolden(t *testing.T, path string) []l2cStep {
	var steps []l2cStep
	for _, rec := range readJSONL(t, path) {
		var typ string
		unmarshal(t, rec["type"], &typ)
		if typ != "step" {
			continue
		}
		var s l2cStep
		s.Pos = -1
		for k, v := range rec {
			switch k {
			case "pos":
				unmarshal(t, v, &s.Pos)
			case "input_token":
				unmarshal(t, v, &s.InputToken)
			case "argmax":
				unmarshal(t, v, &s.Argmax)
			case "top5":
				unmarshal(t, v, &s.Top5)
			case "logits":
				unmarshal(t, v, &s.Logits)
			}
		}
		if s.Pos != len(steps) {
			t.Fatalf("%s: step pos %d out of order", path, s.Pos)
		}
		steps = append(steps, s)
	}
	return steps
}

// checkL2C compares logits (len(steps), vocab) with the golden steps.
func checkL2C(t *testing.T, name string, logits []float32, vocab int, steps []l2cStep) {
	t.Helper()
	const tol = 1e-4
	for _, s := range steps {
		lg := logits[s.Pos*vocab : (s.Pos+1)*vocab]
		if got := testshared.Argmax(lg); got != s.Argmax {
			t.Errorf("%s pos %d: argmax %d (%.6f), golden %d (ours %.6f)", name, s.Pos, got, lg[got], s.Argmax, lg[s.Argmax])
		}
		for r, p := range s.Top5 {
			id, want := int(p[0]), p[1]
			if d := math.Abs(float64(lg[id]) - want); d > tol {
				t.Errorf("%s pos %d rank %d id %d: logit %.7f, golden %.7f", name, s.Pos, r+1, id, lg[id], want)
			}
		}
		if s.Logits != nil {
			if len(s.Logits) != vocab {
				t.Fatalf("%s pos %d: golden has %d logits", name, s.Pos, len(s.Logits))
			}
			if d, at := maxAbsDiff(lg, s.Logits); d > tol {
				t.Errorf("%s pos %d: full logits differ by %g at id %d", name, s.Pos, d, at)
			}
		}
	}
}

// TestLlama2cGoldens reproduces llama2.c's run.c logits and greedy ids on
// the three shared checkpoints, once as one prefill batch and once as
// token-by-token decoding.
func TestLlama2cGoldens(t *testing.T) {
	for _, name := range []string{"aidreams260K", "tiny_mha", "tiny_gqa"} {
		t.Run(name, func(t *testing.T) {
			m := mustLoad(t, testshared.Path(t, "models/llama2c/"+name+".bin"), Options{Threads: 2})
			runs, _ := filepath.Glob(testshared.Path(t, "testdata/llama2c/"+name+"/run_*.jsonl"))
			if len(runs) == 0 {
				t.Fatal("no goldens")
			}
			for k, run := range runs {
				steps := l2cGolden(t, run)
				toks := make([]int, len(steps))
				for i, s := range steps {
					toks[i] = s.InputToken
				}
				checkL2C(t, filepath.Base(run)+"/prefill", runSeq(t, m, toks, 0), m.Vocab, steps)
				if k == 0 {
					checkL2C(t, filepath.Base(run)+"/decode", runSeq(t, m, toks, 1), m.Vocab, steps)
				}
			}
		})
	}
}

func TestLlama2cConfig(t *testing.T) {
	m := mustLoad(t, testshared.Path(t, "models/llama2c/tiny_gqa.bin"), Options{})
	c := m.Config
	if c.Dim != 128 || c.HiddenDim != 352 || c.Layers != 3 || c.Heads != 8 || c.KVHeads != 2 || c.Vocab != 32000 || c.Tied || c.RopeNeox || c.HeadDim != 16 {
		t.Errorf("config %+v", c)
	}
	for typ, want := range map[tensor.DType]int64{tensor.F32: 2 * 3 * 32 * 4, tensor.F16: 2 * 3 * 32 * 2, tensor.Q8_0: 2 * 3 * 34} {
		if got := m.KVBytesPerToken(typ); got != want {
			t.Errorf("KVBytesPerToken(%s) = %d, want %d", typ, got, want)
		}
	}
	// Head dim 16 is not whole Q8_0 blocks: refused with the reason.
	if _, err := m.NewCacheType(64, tensor.Q8_0); err == nil || !strings.Contains(err.Error(), "head_dim") {
		t.Errorf("q8_0 cache for head dim 16: %v", err)
	}
	m2 := mustLoad(t, testshared.Path(t, "models/llama2c/tiny_mha.bin"), Options{})
	if !m2.Tied || m2.w.output != m2.w.tokEmb {
		t.Error("tiny_mha should have a shared classifier")
	}
}

// l2cHeader builds a llama2.c file with the given header and n float32s.
func l2cFile(h [7]int32, nFloats int) []byte {
	b := make([]byte, 28+4*nFloats)
	for i, v := range h {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
	return b
}

func TestLlama2cBadInput(t *testing.T) {
	// A valid tiny file: dim 8, hidden 16, 1 layer, 2 heads, 1 kv head, vocab 10, seq 4.
	good := [7]int32{8, 16, 1, 2, 1, 10, 4}
	n := 10*8 + 8 + 8*8 + 2*4*8 + 8*8 + 8 + 3*16*8 + 8 + 4*2*2
	if _, err := parseLlama2c(l2cFile(good, n)); err != nil {
		t.Fatalf("valid file: %v", err)
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "too short"},
		{"header only", l2cFile(good, 0), "truncated"},
		{"one float short", l2cFile(good, n-1), "truncated"},
		{"zero dim", l2cFile([7]int32{0, 16, 1, 2, 1, 10, 4}, n), "invalid dim"},
		{"negative layers", l2cFile([7]int32{8, 16, -1, 2, 1, 10, 4}, n), "invalid n_layers"},
		{"zero heads", l2cFile([7]int32{8, 16, 1, 0, 1, 10, 4}, n), "invalid n_heads"},
		{"heads not dividing dim", l2cFile([7]int32{8, 16, 1, 3, 1, 10, 4}, n), "not a multiple of n_heads"},
		{"kv heads not dividing heads", l2cFile([7]int32{8, 16, 1, 4, 3, 10, 4}, n), "not a multiple of n_kv_heads"},
		{"zero vocab", l2cFile([7]int32{8, 16, 1, 2, 1, 0, 4}, n), "invalid vocab_size"},
		{"zero seq_len", l2cFile([7]int32{8, 16, 1, 2, 1, 10, 0}, n), "invalid seq_len"},
		{"huge dims", l2cFile([7]int32{1 << 20, 1 << 22, 1 << 10, 1 << 10, 1 << 10, 1 << 20, 1 << 20}, n), "truncated"},
		{"unshared classifier missing", l2cFile([7]int32{8, 16, 1, 2, 1, -10, 4}, n), "truncated"},
	}
	for _, c := range cases {
		_, err := parseLlama2c(c.data)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
	// Through Load, from a file.
	p := filepath.Join(t.TempDir(), "bad.bin")
	if err := os.WriteFile(p, l2cFile(good, n/2), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p, Options{}); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("Load truncated: %v", err)
	}
}
