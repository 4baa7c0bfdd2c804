package gguf

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"nanoserve/internal/testshared"
	"nanoserve/tensor"
)

func shippedFiles(t testing.TB) []string {
	files, _ := filepath.Glob(filepath.Join(testshared.Dir(t), "testdata", "gguf", "*", "*.gguf"))
	if len(files) == 0 {
		t.Fatal("no GGUF files in shared/testdata/gguf")
	}
	return files
}

// expected facts about the shipped files: tensor count, vocabulary size,
// architecture, context length.
var shipped = map[string]struct {
	arch              string
	tensors, vocab    int
	ctx, fileType     uint64
	embd, layers, ffn uint64
}{
	"gpt2-F16.gguf":         {"gpt2", 28, 50257, 256, 1, 128, 2, 512},
	"llama_gqa-F16.gguf":    {"llama", 30, 32000, 512, 1, 128, 3, 352},
	"llama_gqa-Q8_0.gguf":   {"llama", 30, 32000, 512, 7, 128, 3, 352},
	"llama_gqa-Q4_K_M.gguf": {"llama", 30, 32000, 512, 15, 128, 3, 352},
	"llama_gqa-Q4_K_S.gguf": {"llama", 30, 32000, 512, 14, 128, 3, 352},
	"llama_k-Q4_K_M.gguf":   {"llama", 21, 32000, 512, 15, 256, 2, 768},
	"llama_k-Q4_K_S.gguf":   {"llama", 21, 32000, 512, 14, 256, 2, 768},
	"qwen2-F16.gguf":        {"qwen2", 26, 151669, 512, 1, 64, 2, 160},
}

func TestShippedFiles(t *testing.T) {
	for _, path := range shippedFiles(t) {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			want, ok := shipped[name]
			if !ok {
				t.Skipf("no expectations for %s", name)
			}
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if f.Version != 3 || f.Alignment != 32 || f.DataOffset%32 != 0 {
				t.Errorf("version %d alignment %d data offset %d", f.Version, f.Alignment, f.DataOffset)
			}
			if f.Arch() != want.arch {
				t.Errorf("arch %q, want %q", f.Arch(), want.arch)
			}
			if len(f.Tensors) != want.tensors {
				t.Errorf("%d tensors, want %d", len(f.Tensors), want.tensors)
			}
			for _, c := range []struct {
				suffix string
				want   uint64
			}{{"context_length", want.ctx}, {"embedding_length", want.embd}, {"block_count", want.layers}, {"feed_forward_length", want.ffn}} {
				if got, err := f.ArchUint(c.suffix); err != nil || got != c.want {
					t.Errorf("%s = %d, %v; want %d", c.suffix, got, err, c.want)
				}
			}
			if ft, err := f.Uint("general.file_type"); err != nil || ft != want.fileType {
				t.Errorf("general.file_type = %d, %v; want %d", ft, err, want.fileType)
			}
			toks, err := f.Strings("tokenizer.ggml.tokens")
			if err != nil || len(toks) != want.vocab {
				t.Errorf("tokens: %d, %v; want %d", len(toks), err, want.vocab)
			}
			if types, err := f.Int32s("tokenizer.ggml.token_type"); err != nil || len(types) != want.vocab {
				t.Errorf("token_type: %d, %v", len(types), err)
			}
			if want.arch == "llama" {
				if toks[1] != "<s>" || toks[2] != "</s>" {
					t.Errorf("tokens[1:3] = %q", toks[1:3])
				}
				if sc, err := f.Float32s("tokenizer.ggml.scores"); err != nil || len(sc) != want.vocab {
					t.Errorf("scores: %d, %v", len(sc), err)
				}
				if eps, err := f.ArchFloat("attention.layer_norm_rms_epsilon"); err != nil || float32(eps) != 1e-5 {
					t.Errorf("rms eps %v, %v", eps, err)
				}
				if bos, err := f.Bool("tokenizer.ggml.add_bos_token"); err != nil || !bos {
					t.Errorf("add_bos_token %v, %v", bos, err)
				}
			}
			emb, ok := f.Tensor("token_embd.weight")
			if !ok {
				t.Fatal("no token_embd.weight")
			}
			if emb.Cols() != int(want.embd) || emb.Rows() != want.vocab || len(emb.Dims) != 2 {
				t.Errorf("token_embd dims %v", emb.Dims)
			}
			var end int64
			for i := range f.Tensors {
				ti := &f.Tensors[i]
				rb, err := ti.Type.RowBytes(ti.Cols())
				if err != nil || len(ti.Data) != rb*ti.Rows() {
					t.Errorf("%s: %d data bytes, %s %v: %v", ti.Name, len(ti.Data), ti.Type, ti.Dims, err)
				}
				end = max(end, f.DataOffset+int64(ti.Offset)+int64(len(ti.Data)))
			}
			if fi, _ := os.Stat(path); fi.Size() != end {
				t.Errorf("data ends at %d, file is %d bytes", end, fi.Size())
			}
		})
	}
}

// TestTensorTypes checks every tensor's type in the llama_k files against
// the list shipped beside them.
func TestTensorTypes(t *testing.T) {
	dir := filepath.Join(testshared.Dir(t), "testdata", "gguf", "llama_k")
	lf, err := os.Open(filepath.Join(dir, "tensor_types.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	seen := map[tensor.DType]bool{}
	checked := 0
	sc := bufio.NewScanner(lf)
	for sc.Scan() {
		file, list, ok := strings.Cut(sc.Text(), ": ")
		if !ok {
			continue
		}
		file, _, _ = strings.Cut(file, " ")
		f, err := Open(filepath.Join(dir, file))
		if os.IsNotExist(err) || (err != nil && strings.Contains(err.Error(), "no such file")) {
			continue // F16 and Q8_0 are listed but not shipped
		}
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, ti := range f.Tensors {
			got = append(got, strings.TrimSuffix(ti.Name, ".weight")+" "+ti.Type.String())
			seen[ti.Type] = true
		}
		sort.Strings(got)
		if g := strings.Join(got, ", "); g != list {
			t.Errorf("%s:\n got  %s\n want %s", file, g, list)
		}
		f.Close()
		checked++
	}
	if checked != 2 {
		t.Errorf("checked %d files, want the 2 shipped ones", checked)
	}
	for _, typ := range []tensor.DType{tensor.F32, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K} {
		if !seen[typ] {
			t.Errorf("no %s tensor seen", typ)
		}
	}
}

// rewrite copies every KV and tensor of f into a Writer.
func rewrite(t testing.TB, f *File) *Writer {
	t.Helper()
	w := NewWriter()
	if err := w.AddFile(f); err != nil {
		t.Fatal(err)
	}
	return w
}

// TestRewriteShipped re-writes each shipped file from its parsed form and
// expects the very same bytes: metadata types, ordering, offsets and
// padding all survive.
func TestRewriteShipped(t *testing.T) {
	for _, path := range shippedFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			h := sha256.New()
			n, err := rewrite(t, f).WriteTo(h)
			if err != nil {
				t.Fatal(err)
			}
			orig, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if n != int64(len(orig)) || !bytes.Equal(h.Sum(nil), sha256Sum(orig)) {
				t.Errorf("rewritten file differs: %d bytes vs %d", n, len(orig))
			}
		})
	}
}

func sha256Sum(b []byte) []byte { s := sha256.Sum256(b); return s[:] }

// BenchmarkParseHeader parses the header (metadata and tensor infos) of
// the largest shipped file, already mapped.
func BenchmarkParseHeader(b *testing.B) {
	files := shippedFiles(b)
	var big string
	var size int64
	for _, p := range files {
		if fi, err := os.Stat(p); err == nil && fi.Size() > size {
			big, size = p, fi.Size()
		}
	}
	f, err := Open(big)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	data := f.m.Bytes()
	b.SetBytes(f.DataOffset)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpen maps and parses the largest shipped file.
func BenchmarkOpen(b *testing.B) {
	path := filepath.Join(testshared.Dir(b), "testdata", "gguf", "qwen2", "qwen2-F16.gguf")
	for b.Loop() {
		f, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

func TestIsFile(t *testing.T) {
	dir := t.TempDir()
	good, bad, short := dir+"/a.gguf", dir+"/b", dir+"/c"
	os.WriteFile(good, []byte("GGUF\x03\x00\x00\x00"), 0o644)
	os.WriteFile(bad, []byte("GGML1234"), 0o644)
	os.WriteFile(short, []byte("GG"), 0o644)
	if !IsFile(good) || IsFile(bad) || IsFile(short) || IsFile(dir+"/missing") {
		t.Error("IsFile")
	}
}
