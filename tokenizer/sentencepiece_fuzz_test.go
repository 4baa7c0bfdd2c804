package tokenizer

import (
	"encoding/binary"
	"math"
	"nanoserve/internal/testshared"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzSentencePieceModel parses arbitrary bytes as a tokenizer.model and
// as a llama2.c tokenizer.bin: never a panic, only clean errors, and a
// model that parses can encode and decode.
func FuzzSentencePieceModel(f *testing.F) {
	f.Add(synthSpec{pieces: synthBase()}.bytes())
	p := append(synthBase(), synthPiece{"<0x41>", 0, TypeByte}, synthPiece{"<x>", 0, TypeUserDefined},
		synthPiece{"ab", -1, TypeUnused}, synthPiece{"▁a", -1, TypeNormal})
	f.Add(synthSpec{pieces: p, byteFallback: true, removeExtra: true}.bytes())
	var bin []byte
	bin = binary.LittleEndian.AppendUint32(bin, 6)
	for _, s := range []string{"<unk>", "\n<s>\n", "\n</s>\n", "<0x41>", " ", "a", " a"} {
		bin = binary.LittleEndian.AppendUint32(bin, math.Float32bits(-float32(len(s))))
		bin = binary.LittleEndian.AppendUint32(bin, uint32(len(s)))
		bin = append(bin, s...)
	}
	f.Add(bin)
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0x80})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, parse := range []func([]byte) (*Tokenizer, error){ParseSentencePiece, ParseLlama2C} {
			tok, err := parse(data)
			if err != nil {
				if tok != nil || !strings.HasPrefix(err.Error(), "tokenizer: ") {
					t.Fatalf("bad error %v (tok %v)", err, tok)
				}
				continue
			}
			for _, special := range []bool{false, true} {
				ids := tok.Encode("a  b<s>A\xff<x>é <unk>", special)
				for _, id := range ids {
					if id < 0 || id >= tok.Size() {
						t.Fatalf("id %d outside vocabulary %d", id, tok.Size())
					}
				}
				s := tok.Decode(ids)
				if !utf8.ValidString(s) {
					t.Fatalf("decode gave invalid UTF-8 %q", s)
				}
				d := tok.NewDecoder()
				var b strings.Builder
				for _, id := range ids {
					b.WriteString(d.Next(id))
				}
				b.WriteString(d.Flush())
				if b.String() != s {
					t.Fatalf("stream %q != decode %q", b.String(), s)
				}
			}
		}
	})
}

// FuzzEncodeDecode: with the Llama-2 SentencePiece model, decoding the
// encoding of any text gives the text back. Exceptions, as in SentencePiece
// itself: invalid UTF-8 comes back with each bad byte as U+FFFD (the
// normaliser replaces it), a literal "▁" (U+2581) in the input comes back
// as a space (it is the escaped space), and with parseSpecial control-token
// text vanishes (here off).
// (A remove_extra_whitespaces model would also drop extra spaces; Llama's
// does not.)
func FuzzEncodeDecode(f *testing.F) {
	for _, s := range []string{"Hello world", " leading", "trailing ", "  ", "a\u00a0b", "😀👨\u200d👩", "<s></s>", "\x00\x01\xff\xfe"} {
		f.Add(s)
	}
	data, err := os.ReadFile(filepath.Join(testshared.Dir(f), "models/llama2c/llama2-tokenizer.model"))
	if err != nil {
		f.Fatal(err)
	}
	tok, err := ParseSentencePiece(data)
	if err != nil {
		f.Fatal(err)
	}
	sp := tok.m.(*spModel)
	if !sp.wordSplit {
		f.Fatal("Llama-2 vocabulary should take the word-split path")
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids := tok.Encode(s, false)
		// The word-split, cached path equals the general algorithm.
		norm := string(sp.normalize(nil, s, true))
		if general := sp.encodeNorm(nil, norm); !slices.Equal(ids, general) && len(norm) > 0 {
			t.Fatalf("word-split %v != general %v for %q", ids, general, s)
		}
		want := strings.ReplaceAll(lossyUTF8([]byte(s)), spaceSymbol, " ")
		if got := tok.Decode(ids); got != want {
			t.Fatalf("Decode(Encode(%q)) = %q, want %q (ids %v)", s, got, want, ids)
		}
		d := tok.NewDecoder()
		var b strings.Builder
		for _, id := range ids {
			out := d.Next(id)
			if !utf8.ValidString(out) {
				t.Fatalf("Next gave invalid UTF-8 %q", out)
			}
			b.WriteString(out)
		}
		b.WriteString(d.Flush())
		if b.String() != tok.Decode(ids) {
			t.Fatalf("stream %q != decode %q", b.String(), tok.Decode(ids))
		}
		tok.Encode(s, true) // no panic with special parsing
	})
}
