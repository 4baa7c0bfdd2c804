// Package tokenizer turns text into token ids and back.
//
// (Skeleton: the SentencePiece helper owns and completes this file.)
package tokenizer

import "errors"

// TokenType classifies a vocabulary entry, with SentencePiece's and GGUF's
// numbering (tokenizer.ggml.token_type).
type TokenType int32

const (
	TypeUndefined   TokenType = 0
	TypeNormal      TokenType = 1
	TypeUnknown     TokenType = 2
	TypeControl     TokenType = 3
	TypeUserDefined TokenType = 4
	TypeUnused      TokenType = 5
	TypeByte        TokenType = 6
)

// OptID is an optional token id (no -1 sentinels).
type OptID struct {
	ID int
	OK bool
}

// Some returns a present OptID.
func Some(id int) OptID { return OptID{ID: id, OK: true} }

// Vocab is a plain vocabulary that any loader (GGUF metadata, tokenizer
// files) can fill; FromVocab builds a Tokenizer from it.
type Vocab struct {
	Model  string      // "llama" (SentencePiece BPE: Scores) or "gpt2" (byte-level BPE: Merges)
	Pre    string      // byte-level pre-tokenizer, GGUF tokenizer.ggml.pre names: "gpt2", "llama-bpe", "qwen2", "smollm", ...
	Tokens []string    // (vocab) token text as the source stores it ("▁" for SentencePiece spaces, GPT-2 byte chars for byte-level)
	Scores []float32   // (vocab) SentencePiece piece scores; nil if absent
	Types  []TokenType // (vocab) nil means all normal (byte tokens recognised by "<0xNN>" text)
	Merges []string    // byte-level merges "left right", in rank order

	BOS, EOS, UNK, PAD OptID
	EOG                []int // further end-of-generation ids (EOS is always one)

	AddBOS, AddEOS bool
	AddSpacePrefix bool   // SentencePiece dummy prefix "▁" before the text
	IgnoreMerges   bool   // byte-level: a pre-token that is itself in the vocab is emitted whole (Llama-3)
	Normalizer     string // "" or "NFC"
}

// model is one tokenization algorithm over a vocabulary.
type model interface {
	// encode appends the ids of text, which holds no special tokens. first
	// reports whether text starts the input (SentencePiece adds its dummy
	// prefix only there).
	encode(dst []int, text string, first bool) []int
	// piece returns the bytes token id decodes to: byte tokens as their
	// byte, SentencePiece "▁" as a space, byte-level characters unmapped.
	piece(id int) []byte
}

var errNotImplemented = errors.New("tokenizer: not implemented yet")
