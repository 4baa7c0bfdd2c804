package tokenizer

// Reading llama2.c's tokenizer.bin (written by llama2.c's tokenizer.py
// from a SentencePiece model):
//
//	int32 max_token_length
//	repeated until end of file: float32 score, int32 length, length bytes
//
// all little-endian. The file stores no vocabulary size (run.c takes it from
// the checkpoint), no token types and no special ids: tokenizer.py writes
// "▁" as a plain space and BOS/EOS as "\n<s>\n" and "\n</s>\n". We undo
// that: spaces go back to "▁", ids 0, 1, 2 are <unk>, <s> (BOS) and </s>
// (EOS) as run.c assumes, and "<0xNN>" texts are byte tokens. Encoding with
// the result equals run.c's encode(): a dummy-prefix space, characters
// (byte fallback for unknown ones), then best-score-leftmost merges.

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strings"
)

// ParseLlama2C reads a llama2.c tokenizer.bin.
func ParseLlama2C(data []byte) (*Tokenizer, error) {
	v, err := parseLlama2CVocab(data)
	if err != nil {
		return nil, err
	}
	return FromVocab(*v)
}

func parseLlama2CVocab(data []byte) (*Vocab, error) {
	if len(data) < 4 {
		return nil, badModel("llama2.c tokenizer: %d bytes, too short for a header", len(data))
	}
	maxLen := int32(binary.LittleEndian.Uint32(data))
	if maxLen < 0 {
		return nil, badModel("llama2.c tokenizer: negative max_token_length %d", maxLen)
	}
	v := &Vocab{Model: "llama", AddSpacePrefix: true}
	for off := 4; off < len(data); {
		id := len(v.Tokens)
		if len(data)-off < 8 {
			return nil, badModel("llama2.c tokenizer: token %d: truncated header at byte %d", id, off)
		}
		score := math.Float32frombits(binary.LittleEndian.Uint32(data[off:]))
		n := int32(binary.LittleEndian.Uint32(data[off+4:]))
		off += 8
		if n < 0 || int(n) > len(data)-off {
			return nil, badModel("llama2.c tokenizer: token %d: length %d at byte %d runs past the end (%d bytes)", id, n, off-4, len(data))
		}
		if math.IsNaN(float64(score)) {
			return nil, badModel("llama2.c tokenizer: token %d: score is NaN", id)
		}
		s := string(data[off : off+int(n)])
		off += int(n)
		ty := TypeNormal
		switch {
		case id == 0:
			ty = TypeUnknown
		case id == 1 || id == 2:
			ty = TypeControl
			s = strings.Trim(s, "\n")
		case len(s) == 6:
			if _, ok := parseByteToken(s); ok {
				ty = TypeByte
			}
		}
		if ty == TypeNormal {
			s = strings.ReplaceAll(s, " ", spaceSymbol)
		}
		v.Tokens = append(v.Tokens, s)
		v.Scores = append(v.Scores, score)
		v.Types = append(v.Types, ty)
	}
	n := len(v.Tokens)
	if n < 3 {
		return nil, badModel("llama2.c tokenizer: %d tokens; need at least <unk>, <s>, </s>", n)
	}
	v.UNK, v.BOS, v.EOS = Some(0), Some(1), Some(2)
	v.AddBOS = true
	return v, nil
}

// LoadLlama2C reads a llama2.c tokenizer.bin file.
func LoadLlama2C(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	t, err := ParseLlama2C(data)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return t, nil
}
