package tokenizer

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// streamAll feeds ids through a Decoder and returns each Next result and
// the Flush result.
func streamAll(t *Tokenizer, ids []int, o DecodeOptions) (parts []string, flush string) {
	d := t.NewDecoderWith(o)
	for _, id := range ids {
		parts = append(parts, d.Next(id))
	}
	return parts, d.Flush()
}

// checkStream asserts, for every prefix of ids, that the streamed pieces
// are valid UTF-8 and concatenate (with Flush) to Decode of the prefix.
func checkStream(t *testing.T, tok *Tokenizer, ids []int, o DecodeOptions) {
	t.Helper()
	for n := 0; n <= len(ids); n++ {
		parts, flush := streamAll(tok, ids[:n], o)
		for i, p := range parts {
			if !utf8.ValidString(p) {
				t.Fatalf("ids %v: Next #%d returned invalid UTF-8 %q", ids[:n], i, p)
			}
		}
		got := strings.Join(parts, "") + flush
		if want := tok.DecodeWith(ids[:n], o); got != want {
			t.Fatalf("ids %v: stream %q != Decode %q", ids[:n], got, want)
		}
	}
}

func TestDecoderMatchesDecode(t *testing.T) {
	tok, _ := llamaTokenizers(t)
	modes := []DecodeOptions{{}, {Special: SpecialRender}}
	// Golden encodings, including emoji spelt as byte-fallback tokens.
	for _, g := range readSPGoldens(t) {
		for _, o := range modes {
			checkStream(t, tok, g.IDs, o)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 300; i++ {
		n := 1 + rng.IntN(24)
		ids := make([]int, n)
		for j := range ids {
			switch k := rng.IntN(10); {
			case k < 5: // byte tokens: partial, complete and invalid UTF-8
				ids[j] = 3 + 0x80 + rng.IntN(0x78)
				if rng.IntN(4) == 0 {
					ids[j] = 3 + rng.IntN(256)
				}
			case k < 6: // control and unknown
				ids[j] = rng.IntN(3)
			default:
				ids[j] = rng.IntN(tok.Size())
			}
		}
		checkStream(t, tok, ids, modes[i%2])
	}
	// A multi-byte character split across byte tokens is held back, then
	// emitted whole.
	d := tok.NewDecoder()
	euro := []int{3 + 0xE2, 3 + 0x82, 3 + 0xAC}
	if a, b, c := d.Next(euro[0]), d.Next(euro[1]), d.Next(euro[2]); a != "" || b != "" || c != "€" {
		t.Errorf("€ streamed as %q %q %q", a, b, c)
	}
	// Dummy-prefix space: dropped on the first piece only.
	d = tok.NewDecoder()
	if a, b := d.Next(1), d.Next(15043); a != "" || b != "Hello" {
		t.Errorf("<s> ▁Hello streamed as %q %q", a, b)
	}
	if c := d.Next(3186); c != " world" {
		t.Errorf("▁world streamed as %q", c)
	}
	// An incomplete character at the end is flushed as U+FFFD per byte.
	d = tok.NewDecoder()
	if a := d.Next(euro[0]) + d.Next(euro[1]); a != "" {
		t.Errorf("partial: %q", a)
	}
	if f := d.Flush(); f != "\uFFFD\uFFFD" {
		t.Errorf("flush %q", f)
	}
}

func TestDecoderEncodedText(t *testing.T) {
	tok, _ := llamaTokenizers(t)
	for _, s := range []string{
		"Hello 👋 world 🌍", "𠜎𠜱𠝹 and 🤖🦙", "  two leading", "naïve façade\n\tend", "日本語のテキストです。",
	} {
		ids := tok.Encode(s, false)
		checkStream(t, tok, ids, DecodeOptions{})
		parts, flush := streamAll(tok, ids, DecodeOptions{})
		if got := strings.Join(parts, "") + flush; got != s {
			t.Errorf("stream of %q = %q", s, got)
		}
	}
}
