package tokenizer

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"
)

// A tiny protobuf writer, to build SentencePiece models in tests.

func pbKey(b []byte, num, wire int) []byte { return binary.AppendUvarint(b, uint64(num<<3|wire)) }

func pbVarint(b []byte, num int, v int64) []byte {
	return binary.AppendUvarint(pbKey(b, num, 0), uint64(v))
}

func pbBytes(b []byte, num int, v []byte) []byte {
	b = binary.AppendUvarint(pbKey(b, num, 2), uint64(len(v)))
	return append(b, v...)
}

func pbFloat(b []byte, num int, f float32) []byte {
	return binary.LittleEndian.AppendUint32(pbKey(b, num, 5), math.Float32bits(f))
}

type synthPiece struct {
	text  string
	score float32
	ty    TokenType
}

type synthSpec struct {
	pieces       []synthPiece
	byteFallback bool
	removeExtra  bool
	noDummy      bool
	modelType    int64
}

func (s synthSpec) bytes() []byte {
	var out []byte
	for _, p := range s.pieces {
		var m []byte
		m = pbBytes(m, 1, []byte(p.text))
		m = pbFloat(m, 2, p.score)
		if p.ty != TypeNormal {
			m = pbVarint(m, 3, int64(p.ty))
		}
		out = pbBytes(out, 1, m)
	}
	mt := s.modelType
	if mt == 0 {
		mt = 2
	}
	var tr []byte
	tr = pbVarint(tr, 3, mt)
	tr = pbBytes(tr, 7, []byte("text")) // an unrelated field, skipped
	if s.byteFallback {
		tr = pbVarint(tr, 35, 1)
	}
	tr = pbVarint(tr, 43, -1) // pad_id -1: a 10-byte varint
	out = pbBytes(out, 2, tr)
	var nm []byte
	nm = pbBytes(nm, 1, []byte("identity"))
	nm = pbVarint(nm, 3, map[bool]int64{true: 0, false: 1}[s.noDummy])
	nm = pbVarint(nm, 4, map[bool]int64{true: 1, false: 0}[s.removeExtra])
	out = pbBytes(out, 3, nm)
	return out
}

// base pieces: <unk> <s> </s> then letters.
func synthBase() []synthPiece {
	return []synthPiece{
		{"<unk>", 0, TypeUnknown}, {"<s>", 0, TypeControl}, {"</s>", 0, TypeControl},
		{"▁", -1, TypeNormal}, {"a", -2, TypeNormal}, {"b", -3, TypeNormal}, {"c", -4, TypeNormal},
	}
}

func synthTok(t *testing.T, s synthSpec) *Tokenizer {
	t.Helper()
	tok, err := ParseSentencePiece(s.bytes())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestSynthMergeOrder(t *testing.T) {
	p := append(synthBase(),
		synthPiece{"ab", -10, TypeNormal},  // 7
		synthPiece{"bc", -5, TypeNormal},   // 8: better than ab
		synthPiece{"▁a", -20, TypeNormal},  // 9
		synthPiece{"abc", -1, TypeNormal},  // 10: only reachable via ab+c
		synthPiece{"▁abc", -1, TypeNormal}, // 11
	)
	tok := synthTok(t, synthSpec{pieces: p})
	// "▁abc": bc (-5) beats ab (-10) and ▁a (-20): ▁ a bc -> ▁a bc -> no ▁abc
	// (needs ▁a+bc = "▁abc", which is a piece!) -> ▁abc.
	if got := tok.Encode("abc", false); !slices.Equal(got, []int{11}) {
		t.Errorf("abc: %v", got)
	}
	// Equal scores: the leftmost pair merges first.
	p2 := append(synthBase(), synthPiece{"ab", -5, TypeNormal}, synthPiece{"ba", -5, TypeNormal})
	tok2 := synthTok(t, synthSpec{pieces: p2, noDummy: true})
	if got := tok2.Encode("aba", false); !slices.Equal(got, []int{7, 4}) {
		t.Errorf("aba: %v, want [ab a]", got)
	}
	if got := tok2.Encode("bab", false); !slices.Equal(got, []int{8, 5}) {
		t.Errorf("bab: %v, want [ba b]", got)
	}
}

func TestSynthUnknownNoByteFallback(t *testing.T) {
	tok := synthTok(t, synthSpec{pieces: synthBase()})
	// Consecutive unknown characters share one <unk>, as SentencePiece
	// merges a run of unknown pieces.
	if got := tok.Encode("axyb", false); !slices.Equal(got, []int{3, 4, 0, 5}) {
		t.Errorf("axyb: %v", got)
	}
	if got := tok.Decode([]int{3, 4, 0, 5}); got != "a \u2047 b" {
		t.Errorf("decode %q", got)
	}
}

func TestSynthByteFallback(t *testing.T) {
	p := synthBase()
	for b := 0; b < 256; b++ {
		p = append(p, synthPiece{string([]byte{'<', '0', 'x', "0123456789ABCDEF"[b>>4], "0123456789ABCDEF"[b&15], '>'}), 0, TypeByte})
	}
	tok := synthTok(t, synthSpec{pieces: p, byteFallback: true})
	got := tok.Encode("aé", false)
	want := []int{3, 4, 7 + 0xC3, 7 + 0xA9}
	if !slices.Equal(got, want) {
		t.Errorf("aé: %v want %v", got, want)
	}
	if s := tok.Decode(got); s != "aé" {
		t.Errorf("decode %q", s)
	}
	// Invalid UTF-8 input is normalised to U+FFFD, as SentencePiece does.
	if s := tok.Decode(tok.Encode("a\xffb", false)); s != "a\uFFFDb" {
		t.Errorf("invalid utf8 round trip %q", s)
	}
}

func TestSynthUserDefinedAndUnused(t *testing.T) {
	p := append(synthBase(),
		synthPiece{"<sep>", 0, TypeUserDefined}, // 7
		synthPiece{"ab", -1, TypeUnused},        // 8: merges, then splits back
		synthPiece{"abc", -2, TypeNormal},       // 9
	)
	tok := synthTok(t, synthSpec{pieces: p, noDummy: true})
	// User-defined pieces are always matched (parseSpecial or not) and frozen.
	if got := tok.Encode("a<sep>b", false); !slices.Equal(got, []int{4, 7, 5}) {
		t.Errorf("a<sep>b: %v", got)
	}
	// ab is unused: still merged (so abc can form), but emitted as a b.
	if got := tok.Encode("abc", false); !slices.Equal(got, []int{9}) {
		t.Errorf("abc: %v", got)
	}
	if got := tok.Encode("ab", false); !slices.Equal(got, []int{4, 5}) {
		t.Errorf("ab: %v", got)
	}
}

func TestSynthRemoveExtraWhitespaces(t *testing.T) {
	tok := synthTok(t, synthSpec{pieces: synthBase(), removeExtra: true})
	if got := tok.Encode("  a   b  ", false); !slices.Equal(got, []int{3, 4, 3, 5}) {
		t.Errorf("got %v", got)
	}
	if got := tok.Encode("   ", false); len(got) != 0 {
		t.Errorf("spaces: %v", got)
	}
	if s := tok.Decode([]int{3, 4, 3, 5}); s != "a b" {
		t.Errorf("decode %q", s)
	}
}

func TestParseErrors(t *testing.T) {
	good := synthSpec{pieces: synthBase()}.bytes()
	for n := 0; n < len(good); n++ {
		ParseSentencePiece(good[:n]) // never panics
	}
	if _, err := ParseSentencePiece(good[:len(good)-1]); !errors.Is(err, ErrBadModelFile) {
		t.Errorf("truncated model: %v", err)
	}
	if _, err := ParseSentencePiece(synthSpec{pieces: synthBase(), modelType: 1}.bytes()); err == nil {
		t.Error("unigram accepted")
	}
	if _, err := ParseLlama2C([]byte{1, 0, 0, 0, 0, 0, 0, 0, 100, 0, 0, 0, 'a'}); !errors.Is(err, ErrBadModelFile) {
		t.Errorf("llama2c overrun: %v", err)
	}
}

func TestScoresFromMerges(t *testing.T) {
	// A merges-only SentencePiece vocabulary (Hugging Face tokenizer.json).
	v := Vocab{
		Model:          "llama",
		Tokens:         []string{"<unk>", "<s>", "</s>", "▁", "a", "b", "ab", "▁ab", "ba"},
		Types:          []TokenType{TypeUnknown, TypeControl, TypeControl, 1, 1, 1, 1, 1, 1},
		Merges:         []string{"a b", "▁ ab", "b a"},
		UNK:            Some(0),
		AddSpacePrefix: true,
	}
	tok, err := FromVocab(v)
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Encode("aba", false); !slices.Equal(got, []int{7, 4}) {
		t.Errorf("aba: %v", got)
	}
	if _, err := FromVocab(Vocab{Model: "llama", Tokens: []string{"a"}}); err == nil {
		t.Error("vocab without scores or merges accepted")
	}
}
