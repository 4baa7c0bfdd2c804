package tokenizer

import (
	"nanoserve/internal/testshared"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func shakespeare(b *testing.B) string {
	data, err := os.ReadFile(filepath.Join(testshared.Dir(b), "corpus/tinyshakespeare.txt"))
	if err != nil {
		b.Fatal(err)
	}
	return string(data)
}

// BenchmarkEncodeSentencePiece encodes English prose (tinyshakespeare) in
// paragraph-sized calls, the way prompts arrive.
func BenchmarkEncodeSentencePiece(b *testing.B) {
	tok, _ := llamaTokenizers(b)
	text := shakespeare(b)
	paras := strings.SplitAfter(text, "\n\n")
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	ntok := 0
	for b.Loop() {
		ntok = 0
		for _, p := range paras {
			ntok += len(tok.Encode(p, false))
		}
	}
	b.ReportMetric(float64(len(text))/float64(ntok), "bytes/token")
}

// BenchmarkEncodeSentencePieceWhole encodes the whole 1.1 MB corpus in one
// call (one merge heap over a million symbols).
func BenchmarkEncodeSentencePieceWhole(b *testing.B) {
	tok, _ := llamaTokenizers(b)
	text := shakespeare(b)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		tok.Encode(text, false)
	}
}

func BenchmarkDecodeStreamSentencePiece(b *testing.B) {
	tok, _ := llamaTokenizers(b)
	text := shakespeare(b)
	ids := tok.Encode(text, false)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		d := tok.NewDecoder()
		for _, id := range ids {
			d.Next(id)
		}
		d.Flush()
	}
}
