package model

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"nanoserve/internal/testshared"
)

// A tokenizer with more tokens than the model's embedding (a 32000-token
// Llama-2 tokenizer with a 512-vocabulary model) used to load and then fail
// every request with "token id 9038 out of range"; Load refuses it, naming
// both sizes. The reverse, an embedding larger than the tokenizer (Qwen2.5
// pads its embedding), keeps loading.
func TestTokenizerLargerThanEmbedding(t *testing.T) {
	dir := testshared.Dir(t)
	small := filepath.Join(dir, "models/llama2c/aidreams260K.bin")
	big := filepath.Join(dir, "models/llama2c/llama2-tokenizer.bin")
	_, err := Load(small, Options{Tokenizer: big, Threads: 1})
	if !errors.Is(err, ErrVocabMismatch) {
		t.Fatalf("Load(512-vocab model, 32000-token tokenizer): err = %v, want ErrVocabMismatch", err)
	}
	for _, n := range []string{"32000", "512"} {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("error %q should name %s", err, n)
		}
	}
	m, err := Load(filepath.Join(dir, "models/llama2c/tiny_mha.bin"), Options{Tokenizer: filepath.Join(dir, "models/llama2c/aidreams-tok512.bin"), Threads: 1})
	if err != nil {
		t.Fatalf("an embedding larger than the tokenizer must load: %v", err)
	}
	defer m.Close()
	if m.Vocab <= m.Tokenizer.Size() {
		t.Fatalf("fixture: model vocab %d, tokenizer %d; want the model larger", m.Vocab, m.Tokenizer.Size())
	}
}
