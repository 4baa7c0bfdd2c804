package model

import (
	"nanoserve/tokenizer"
)

// LoadTokenizer reads a tokenizer: from a GGUF file's metadata
// (VocabFromGGUF and tokenizer.FromVocab), anything else with
// tokenizer.Load (tokenizer.json, tokenizer.model, llama2.c tokenizer.bin,
// GPT-2 vocabulary files, or a directory holding them).
func LoadTokenizer(path string) (*tokenizer.Tokenizer, error) {
	if isGGUF(path) {
		return loadGGUFTokenizer(path)
	}
	return tokenizer.Load(path)
}
