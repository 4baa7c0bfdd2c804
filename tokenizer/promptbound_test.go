package tokenizer

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

// totalAlloc is the bytes allocated while f runs (this goroutine's work; the
// test runs alone in its process section, so other goroutines add noise only).
func totalAlloc(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// One long pre-token (a word with no spaces) used to take ~145 bytes of
// allocation per input byte in the byte-level BPE heap (stale heap entries:
// ~600 MB for 4 MB); the indexed heap takes a fixed 28 plus the ids.
func TestLongWordAllocationsBounded(t *testing.T) {
	tk := blTokenizer(t, qwen3JSON)
	for _, w := range []string{strings.Repeat("a", 256<<10), strings.Repeat("ab1é", 64<<10)} {
		var ids []int
		got := totalAlloc(func() { ids = tk.Encode(w, false) })
		if limit := uint64(48 * len(w)); got > limit {
			t.Errorf("Encode of a %d-byte word allocated %d bytes (%.0f per byte), want <= %d (48 per byte)", len(w), got, float64(got)/float64(len(w)), limit)
		}
		if tk.Decode(ids) != w {
			t.Errorf("Decode(Encode(w)) != w for a %d-byte word", len(w))
		}
	}
}

// The heap merge loop and the quadratic scan give the same ids on long
// repetitive words, where many pairs tie on rank (leftmost first).
func TestBPEHeapMatchesScanRepeats(t *testing.T) {
	for _, rel := range []string{gpt2Dir, qwen3JSON, llama3JSON} {
		tk := blTokenizer(t, rel)
		m := tk.m.(*byteLevel)
		for _, w := range []string{
			strings.Repeat("a", 200), strings.Repeat("ab", 150), strings.Repeat("hello", 30),
			strings.Repeat("0123456789", 20), strings.Repeat("é", 100), "Supercalifragilisticexpialidocious" + strings.Repeat("x", 60),
			strings.Repeat("🙂", 40), strings.Repeat("the", 50) + strings.Repeat("ing", 50),
		} {
			var s1, s2 bpeScratch
			heap := append([]int32(nil), m.bpeHeap(w, &s1)...)
			scan := append([]int32(nil), m.bpeScan(w, &s2)...)
			if len(heap) != len(scan) {
				t.Errorf("%s %.20q...: heap %d ids, scan %d", rel, w, len(heap), len(scan))
				continue
			}
			for i := range heap {
				if heap[i] != scan[i] {
					t.Errorf("%s %.20q...: id %d: heap %d, scan %d", rel, w, i, heap[i], scan[i])
					break
				}
			}
		}
	}
}

// CheckPromptBytes never refuses a text that fits: for each text, with
// maxTokens = its own token count, it says nil; and it refuses the 4 MB word
// for a 512-token context.
func TestCheckPromptBytes(t *testing.T) {
	texts := []string{
		"Hello, world!", "   lots   of    spaces   ", strings.Repeat(" ", 1000), "각 난 닫", // Hangul jamo: NFC shrinks 3x
		"e\u0301e\u0301e\u0301", "<|im_start|>user\nhi<|im_end|>", "\xff\xfe invalid", strings.Repeat("ab", 500),
	}
	for _, rel := range []string{gpt2Dir, qwen3JSON, llama3JSON, "models/llama2c/llama2-tokenizer.model"} {
		tk := blTokenizer(t, rel)
		for _, s := range texts {
			for _, special := range []bool{false, true} {
				n := len(tk.Encode(s, special))
				if err := tk.CheckPromptBytes(s, n); err != nil {
					t.Errorf("%s: CheckPromptBytes(%.30q, %d) = %v, but it encodes to %d tokens", rel, s, n, err, n)
				}
			}
		}
		big := strings.Repeat("a", 4<<20)
		var pe *PromptBytesError
		if err := tk.CheckPromptBytes(big, 512); !errors.As(err, &pe) {
			t.Errorf("%s: CheckPromptBytes(4 MB, 512) = %v, want a *PromptBytesError", rel, err)
		} else if !strings.Contains(err.Error(), "4194304 bytes") {
			t.Errorf("%s: error %q should give the size", rel, err)
		}
	}
}
