package defaultmodel

import (
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"nanoserve/gguf"
	"nanoserve/kvcache"
	"nanoserve/model"
	"nanoserve/train"
)

var update = flag.Bool("update", false, "rewrite testdata/heldout.json from $(go env GOROOT)/src and the shipped model")

// heldOutSlice is testdata/heldout.json: a fixed slice of the documents the
// training run held out, and the shipped model's bits per byte on it.
type heldOutSlice struct {
	Note        string  `json:"note"`
	Command     string  `json:"command"`
	GoVersion   string  `json:"go_version"`
	Tokens      int     `json:"tokens"`
	Bytes       int     `json:"target_bytes"`
	BitsPerByte float64 `json:"bits_per_byte"`
	Docs        []struct {
		Name string `json:"name"`
		Text string `json:"text"`
	} `json:"docs"`
}

const heldOutFile = "testdata/heldout.json"

// sliceBytes is the size of the shipped slice: enough for a stable figure
// (~40K tokens), small enough to evaluate in seconds.
const sliceBytes = 120 << 10

// bitsPerByte evaluates m on docs the way training's held-out evaluation
// does (train/run.go evaluator.eval): documents tokenized and joined with
// the end-of-text id, cut into windows of the context length, each window's
// next-token loss summed, divided by ln 2 and by the bytes of the targets
// (train.TokenBytes).
func bitsPerByte(t *testing.T, m *model.Model, docs []train.Doc) (bpb float64, ntok, nbytes int) {
	eos, ok := m.Tokenizer.EOS()
	if !ok {
		t.Fatal("the model's tokenizer has no end-of-text id")
	}
	toks := train.Tokens(m.Tokenizer, docs, eos)
	tbytes := train.TokenBytes(*m.Tokenizer.Vocab())
	T := m.ContextLen
	c, err := m.NewCache(0)
	if err != nil {
		t.Fatal(err)
	}
	var nats float64
	for s := 0; s+1 < len(toks); s += T {
		n := min(T, len(toks)-1-s)
		seq := &kvcache.Seq{}
		if err := c.Reserve(seq, n); err != nil {
			t.Fatal(err)
		}
		b := model.Batch{}
		for i := range n {
			b.Tokens, b.Pos, b.Seq, b.Output = append(b.Tokens, int(toks[s+i])), append(b.Pos, i), append(b.Seq, seq), append(b.Output, true)
		}
		lg, err := m.Forward(b, c)
		if err != nil {
			t.Fatal(err)
		}
		V := len(lg) / n
		for i := range n {
			row := lg[i*V : (i+1)*V]
			mx := row[0]
			for _, v := range row {
				mx = max(mx, v)
			}
			var z float64
			for _, v := range row {
				z += math.Exp(float64(v - mx))
			}
			tg := int(toks[s+i+1])
			nats += math.Log(z) - float64(row[tg]-mx)
			nbytes += tbytes[tg]
			ntok++
		}
		c.Release(seq)
	}
	return nats / math.Ln2 / float64(nbytes), ntok, nbytes
}

// TestHeldOutBitsPerByte re-evaluates the shipped model on a fixed slice of
// its held-out files (testdata/heldout.json) and compares with the bits per
// byte recorded there, instead of trusting the figure the training run
// wrote into the GGUF. The recorded figure was measured post hoc on the
// shipped weights (see the file's note and command).
func TestHeldOutBitsPerByte(t *testing.T) {
	p, err := Path()
	if errors.Is(err, ErrMissing) {
		t.Skip("this build has no built-in model")
	}
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Load(p, model.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if *update {
		writeHeldOutSlice(t, m, p)
	}
	b, err := os.ReadFile(heldOutFile)
	if err != nil {
		t.Fatal(err)
	}
	var hs heldOutSlice
	if err := json.Unmarshal(b, &hs); err != nil {
		t.Fatal(err)
	}
	docs := make([]train.Doc, len(hs.Docs))
	for i, d := range hs.Docs {
		docs[i] = train.Doc{Name: d.Name, Text: d.Text}
	}
	bpb, ntok, nbytes := bitsPerByte(t, m, docs)
	t.Logf("%d documents, %d tokens, %d target bytes: %.4f bits/byte (recorded %.4f)", len(docs), ntok, nbytes, bpb, hs.BitsPerByte)
	if ntok != hs.Tokens || nbytes != hs.Bytes {
		t.Errorf("slice tokenizes to %d tokens / %d bytes, recorded %d / %d", ntok, nbytes, hs.Tokens, hs.Bytes)
	}
	// Float32 kernels differ slightly across CPUs (FMA, SIMD width); the
	// figure is a mean over ~10^5 bytes, so 0.002 bits/byte is generous for
	// that and far below what a broken kernel or weight file changes.
	if math.Abs(bpb-hs.BitsPerByte) > 0.002 {
		t.Errorf("held-out slice: %.4f bits/byte, recorded %.4f", bpb, hs.BitsPerByte)
	}
}

// writeHeldOutSlice rebuilds testdata/heldout.json: the training run's
// held-out split of $(go env GOROOT)/src (same extension, fraction and seed
// as the README's command), its first documents by name up to sliceBytes,
// and the shipped model's bits per byte on them.
func writeHeldOutSlice(t *testing.T, m *model.Model, path string) {
	src := filepath.Join(runtime.GOROOT(), "src")
	c, err := train.LoadCorpus([]string{src}, []string{".go"}, 0.05, 1)
	if err != nil {
		t.Fatal(err)
	}
	// The split hashes each file's path, so it is the training run's only
	// on the very corpus it read: check the manifest's hash.
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := f.String("nanoserve.train.corpus_sha256")
	f.Close()
	if err != nil || want != c.SHA256 {
		t.Fatalf("%s is not the training corpus (sha256 %s, the model's manifest says %q, %v)", src, c.SHA256, want, err)
	}
	var hs heldOutSlice
	var docs []train.Doc
	size := 0
	for _, d := range c.HeldOut {
		if size+len(d.Text) > sliceBytes {
			continue
		}
		size += len(d.Text)
		docs = append(docs, d)
		hs.Docs = append(hs.Docs, struct {
			Name string `json:"name"`
			Text string `json:"text"`
		}{strings.TrimPrefix(filepath.ToSlash(d.Name), filepath.ToSlash(runtime.GOROOT())+"/"), d.Text})
	}
	hs.BitsPerByte, hs.Tokens, hs.Bytes = bitsPerByte(t, m, docs)
	hs.GoVersion = runtime.Version()
	hs.Command = "go test ./defaultmodel -run TestHeldOutBitsPerByte -update"
	hs.Note = "Documents from the held-out split of the shipped model's training corpus ($(go env GOROOT)/src, *.go, " +
		"held-out fraction 0.05, seed 1: train.LoadCorpus), taken in name order up to the size budget. bits_per_byte " +
		"was measured post hoc on the shipped weights (model/nanoserve-go.gguf) with this test's evaluation, which " +
		"follows training's (windows of the context length, loss over target bytes), not at training time."
	out, err := json.MarshalIndent(hs, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(heldOutFile, append(out, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}
