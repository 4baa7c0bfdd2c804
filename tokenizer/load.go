package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrGGUF is returned by Load for a GGUF file: its vocabulary lives in the
// model metadata, which the model package reads (model.LoadTokenizer).
var ErrGGUF = errors.New("tokenizer: GGUF files hold their vocabulary in model metadata; load them with model.LoadTokenizer")

// Load reads a tokenizer from path:
//
//   - a tokenizer.json (Hugging Face, byte-level or SentencePiece kind),
//   - a SentencePiece tokenizer.model,
//   - a llama2.c tokenizer.bin,
//   - a folder holding one of: tokenizer.json; tokenizer.model;
//     encoder.json + vocab.bpe; vocab.json + merges.txt; tokenizer.bin
//     (looked for in that order). For a tokenizer.model folder,
//     tokenizer_config.json's add_bos_token / add_eos_token and added
//     tokens beyond the SentencePiece vocabulary are applied.
func Load(path string) (*Tokenizer, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	if st.IsDir() {
		return loadDir(path)
	}
	return loadFile(path)
}

func exists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir()
}

func loadDir(dir string) (*Tokenizer, error) {
	j := func(name string) string { return filepath.Join(dir, name) }
	switch {
	case exists(j("tokenizer.json")):
		return loadTokenizerJSON(j("tokenizer.json"))
	case exists(j("tokenizer.model")):
		data, err := os.ReadFile(j("tokenizer.model"))
		if err != nil {
			return nil, fmt.Errorf("tokenizer: %w", err)
		}
		v, o, err := parseSentencePieceVocab(data)
		if err != nil {
			return nil, fmt.Errorf("%w (in %s)", err, j("tokenizer.model"))
		}
		if err := applyTokenizerConfig(v, j("tokenizer_config.json")); err != nil {
			return nil, err
		}
		return fromVocab(*v, o)
	case exists(j("encoder.json")) && exists(j("vocab.bpe")),
		exists(j("vocab.json")) && exists(j("merges.txt")):
		return loadGPT2Dir(dir)
	case exists(j("tokenizer.bin")):
		return LoadLlama2C(j("tokenizer.bin"))
	}
	return nil, fmt.Errorf("tokenizer: %s holds no tokenizer.json, tokenizer.model, encoder.json+vocab.bpe, vocab.json+merges.txt or tokenizer.bin", dir)
}

func loadFile(path string) (*Tokenizer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	head := make([]byte, 4)
	n, _ := f.Read(head)
	f.Close()
	head = head[:n]
	lower := strings.ToLower(path)
	switch {
	case bytes.Equal(head, []byte("GGUF")):
		// GGUF vocabularies are read by llamacpp.LoadTokenizer (which
		// model.LoadTokenizer uses): tokenizer imports nothing internal.
		return nil, fmt.Errorf("%w (%s)", ErrGGUF, path)
	case strings.HasSuffix(lower, ".json"):
		return loadTokenizerJSON(path)
	case strings.HasSuffix(lower, ".model"):
		return LoadSentencePiece(path)
	case strings.HasSuffix(lower, ".bin"):
		return LoadLlama2C(path)
	}
	// Unknown name: a SentencePiece model starts with field 1 (pieces),
	// key byte 0x0A.
	if len(head) > 0 && head[0] == 0x0A {
		if t, err := LoadSentencePiece(path); err == nil {
			return t, nil
		}
	}
	if len(head) > 0 && head[0] == '{' {
		return loadTokenizerJSON(path)
	}
	return LoadLlama2C(path)
}

// applyTokenizerConfig applies a Hugging Face tokenizer_config.json next to
// a tokenizer.model: add_bos_token, add_eos_token, and added tokens whose
// ids extend the vocabulary. A missing file is not an error.
func applyTokenizerConfig(v *Vocab, path string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("tokenizer: %w", err)
	}
	var cfg struct {
		AddBOS *bool `json:"add_bos_token"`
		AddEOS *bool `json:"add_eos_token"`
		Added  map[string]struct {
			Content string `json:"content"`
			Special bool   `json:"special"`
		} `json:"added_tokens_decoder"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return fmt.Errorf("tokenizer: %s: %w", path, err)
	}
	if cfg.AddBOS != nil {
		v.AddBOS = *cfg.AddBOS
	}
	if cfg.AddEOS != nil {
		v.AddEOS = *cfg.AddEOS
	}
	// Added tokens past the end, in id order, must be contiguous.
	for id := len(v.Tokens); ; id++ {
		a, ok := cfg.Added[strconv.Itoa(id)]
		if !ok || a.Content == "" {
			break
		}
		ty := TypeUserDefined
		if a.Special {
			ty = TypeControl
		}
		v.Tokens = append(v.Tokens, a.Content)
		v.Scores = append(v.Scores, 0)
		v.Types = append(v.Types, ty)
	}
	return nil
}
