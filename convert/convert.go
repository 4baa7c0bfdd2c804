// Package convert writes any model nanoserve reads — a llama.cpp GGUF file,
// a llama2.c checkpoint (with its tokenizer), or a Hugging Face directory —
// as a GGUF file that follows llama.cpp's naming and metadata conventions,
// optionally re-encoded as F32/F16/BF16 or block-quantized.
//
// # What a conversion does
//
// Every source tensor is renamed to llama.cpp's name (token_embd.weight,
// blk.N.attn_q.weight, …, output.weight), given ggml dims (dims[0] is the
// row length), and written in the chosen encoding; hyperparameters go to
// "<arch>.*" keys, the vocabulary to "tokenizer.ggml.*", the chat template
// to "tokenizer.chat_template". A GGUF source keeps its metadata verbatim
// (only general.file_type and general.quantization_version are updated)
// and its tensors by name, so re-encoding a GGUF is a pure re-typing.
//
// Two weight-layout changes happen on the way from Hugging Face:
//
//   - RoPE. llama.cpp's "llama" architecture rotates interleaved pairs
//     (0,1), (2,3), … of each head, as llama2.c does, while Hugging Face
//     Llama/Mistral checkpoints rotate halves (i, i+d/2) ("NEOX"). Rotating
//     interleaved pairs of a permuted vector equals rotating halves of the
//     original when, within each head of d rows, row 2i+j of the converted
//     matrix is row j·d/2+i of the original (i < d/2, j ∈ {0,1}). So the
//     Q rows (per query head) and K rows (per KV head), and their biases,
//     are permuted that way — for Llama only, as llama.cpp's converter
//     does. Qwen2 keeps halves in both formats (GGUF "qwen2" is a NEOX
//     architecture), and llama2.c is already interleaved.
//   - GPT-2 Conv1D. Hugging Face GPT-2 stores c_attn, c_proj and c_fc as
//     (in, out) matrices (y = x·W); GGUF wants (out, in) rows (y = W·x), so
//     they are transposed.
//
// # Encodings
//
// 1-D tensors (norm gains, biases, rope_freqs) are always F32, as in
// llama.cpp. Matrices keep their source encoding unless Options.Type names
// a float type, or Options.Quantize a llama.cpp file type (q8_0, q4_0,
// q4_k_m, …), whose per-tensor recipe is llama.cpp's
// (llama_tensor_get_type): for Q4_K_M most matrices are Q4_K, attn_v and
// ffn_down are Q6_K in the layers use_more_bits picks (the first and last
// eighth and every third layer between), output.weight (or a tied
// token_embd) is Q6_K, attn_qkv is Q5_K; a matrix whose row length is not a
// multiple of the type's block (256 for K-quants) falls back to Q5_0 (for
// Q4_K), Q5_1 (Q5_K) or Q8_0 (Q6_K), and to F16 if even that does not fit;
// norms and position_embd are never quantized. Quantization uses package
// tensor's reference quantizers (llama.cpp's quantize_row_*_ref), so a
// Q8_0 conversion of an F16 file reproduces llama.cpp's bytes.
//
// Invariants the tests pin: converting a GGUF without re-typing gives
// identical logits; HF → GGUF and llama2.c → GGUF reproduce the llama.cpp
// and llama2.c goldens; the same weights through llama2.c, HF and GGUF give
// the same logits (Format parity), which is what catches a wrong RoPE
// permutation or a missing Conv1D transpose.
package convert

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"sync"

	"nanoserve/gguf"
	"nanoserve/llamacpp"
	"nanoserve/tensor"
)

// ErrUnsupported is returned (wrapped) for inputs or options convert cannot
// handle.
var ErrUnsupported = errors.New("convert: unsupported")

// Options configure Convert.
type Options struct {
	// Type is the float encoding of matrices: "f32", "f16", "bf16", or ""
	// to keep each tensor's source encoding (F64 becomes F32). With
	// Quantize it applies to the matrices that stay unquantized
	// (position_embd).
	Type string
	// Quantize is a llama.cpp file type: "q8_0", "q4_0", "q4_1", "q5_0",
	// "q5_1", "q4_k_s", "q4_k_m", "q5_k_s", "q5_k_m", "q6_k"; "" for none.
	Quantize string
	// Tokenizer is the tokenizer path for a llama2.c checkpoint (required
	// there); for other inputs it overrides the model's own.
	Tokenizer string
	// Name is general.name ("" : the input's base name; GGUF sources keep
	// theirs).
	Name string
	// Threads quantize rows in parallel (< 1: GOMAXPROCS).
	Threads int
	// Log, if set, receives one line per tensor written.
	Log func(string)
}

// Convert reads the model at in (GGUF file, llama2.c checkpoint, or
// Hugging Face directory) and writes it as a GGUF file at out.
func Convert(in, out string, opts Options) error {
	p, err := newPlan(opts)
	if err != nil {
		return err
	}
	src, err := openSource(in, opts)
	if err != nil {
		return err
	}
	defer src.close()
	if filepath.Clean(in) == filepath.Clean(out) {
		return fmt.Errorf("convert: output %s is the input", out)
	}
	w, err := p.build(src)
	if err != nil {
		return err
	}
	return w.WriteFile(out)
}

// srcTensor is one tensor to write: its llama.cpp name and ggml dims, and
// how to read row r of its (rows, cols) matrix view from the source.
type srcTensor struct {
	name string
	dims []uint64     // ggml order: dims[0] = cols
	typ  tensor.DType // source encoding of data
	data []byte       // (rows, typ.RowBytes(cols)) source rows
	// perm maps a destination row to its source row (Q/K RoPE permutation);
	// nil: identity.
	perm func(r int) int
	// f32 holds decoded (rows, cols) values when the source layout needed
	// a transpose or a type the row decoder lacks; data is nil then.
	f32 []float32
	// layer is the block index of blk.N.* tensors, -1 otherwise.
	layer int
}

func (t *srcTensor) cols() int { return int(t.dims[0]) }

func (t *srcTensor) rows() int {
	n := 1
	for _, d := range t.dims[1:] {
		n *= int(d)
	}
	return n
}

// row decodes destination row r into dst (cols).
func (t *srcTensor) row(dst []float32, r int) {
	c := t.cols()
	if t.perm != nil {
		r = t.perm(r)
	}
	if t.f32 != nil {
		copy(dst, t.f32[r*c:(r+1)*c])
		return
	}
	rb, _ := t.typ.RowBytes(c)
	tensor.DequantizeRow(dst, t.typ, t.data[r*rb:(r+1)*rb])
}

// rawRow returns the source bytes of destination row r (data sources only).
func (t *srcTensor) rawRow(r int) []byte {
	if t.perm != nil {
		r = t.perm(r)
	}
	rb, _ := t.typ.RowBytes(t.cols())
	return t.data[r*rb : (r+1)*rb]
}

// layerOf parses N from "blk.N.…" (-1 if name is not a block tensor).
func layerOf(name string) int { _, l := llamacpp.KindOf(name); return l }

// encodeTo writes tensor t in encoding typ to out, rows in parallel chunks.
func encodeTo(out io.Writer, t *srcTensor, typ tensor.DType, threads int) error {
	rows, cols := t.rows(), t.cols()
	rb, err := typ.RowBytes(cols)
	if err != nil {
		return err
	}
	if t.f32 == nil && typ == t.typ { // same encoding: copy rows (permuted or not) exactly
		if t.perm == nil {
			_, err := out.Write(t.data)
			return err
		}
		for r := range rows {
			if _, err := out.Write(t.rawRow(r)); err != nil {
				return err
			}
		}
		return nil
	}
	// Chunks of about 8 MiB of output, split among the workers.
	chunk := max(1, min(rows, (8<<20)/max(1, rb)))
	buf := make([]byte, chunk*rb)
	for lo := 0; lo < rows; lo += chunk {
		hi := min(rows, lo+chunk)
		n := hi - lo
		workers := max(1, min(threads, n/16))
		var wg sync.WaitGroup
		errs := make([]error, workers)
		for w := range workers {
			a, b := lo+n*w/workers, lo+n*(w+1)/workers
			wg.Add(1)
			go func() {
				defer wg.Done()
				row := make([]float32, cols)
				for r := a; r < b; r++ {
					t.row(row, r)
					if err := tensor.QuantizeRow(buf[(r-lo)*rb:(r-lo+1)*rb], typ, row); err != nil {
						errs[w] = err
						return
					}
				}
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		if _, err := out.Write(buf[:n*rb]); err != nil {
			return err
		}
	}
	return nil
}

// addTensor adds t to w in encoding typ; done (if set) is called once the
// tensor's data is written.
func addTensor(w *gguf.Writer, t *srcTensor, typ tensor.DType, threads int, done func()) error {
	if t.f32 != nil || t.perm != nil || typ != t.typ {
		if !tensor.CanQuantize(typ) {
			return fmt.Errorf("%w: cannot encode %s as %s", ErrUnsupported, t.name, typ)
		}
		if t.f32 == nil && !tensor.Computable(t.typ) {
			return fmt.Errorf("%w: cannot decode %s from %s", ErrUnsupported, t.name, t.typ)
		}
	}
	return w.AddTensorFunc(t.name, typ, t.dims, func(out io.Writer) error {
		if err := encodeTo(out, t, typ, threads); err != nil {
			return err
		}
		if done != nil {
			done()
		}
		return nil
	})
}

func threadsOf(opts Options) int {
	if opts.Threads > 0 {
		return opts.Threads
	}
	return runtime.GOMAXPROCS(0)
}
