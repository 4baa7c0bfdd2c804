package llamacpp

import (
	"bytes"
	"slices"
	"testing"

	"nanoserve/gguf"
	"nanoserve/tokenizer"
)

// TestVocabRoundTrip: VocabKVs then ReadVocab gives the vocabulary back,
// padded to the model's size with unused "[PADn]" tokens.
func TestVocabRoundTrip(t *testing.T) {
	v := tokenizer.Vocab{Model: "llama", Tokens: []string{"<unk>", "<s>", "</s>", "▁a", "b"}, Scores: []float32{0, 0, 0, -1, -2},
		Types: []tokenizer.TokenType{tokenizer.TypeUnknown, tokenizer.TypeControl, tokenizer.TypeControl, tokenizer.TypeNormal, tokenizer.TypeNormal},
		BOS:   tokenizer.Some(1), EOS: tokenizer.Some(2), UNK: tokenizer.Some(0), AddBOS: true, AddSpacePrefix: true}
	kvs, err := VocabKVs(v, 7, []int{4})
	if err != nil {
		t.Fatal(err)
	}
	f := parseKVs(t, "llama", kvs)
	got, err := ReadVocab(f)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Tokens, append(slices.Clone(v.Tokens), "[PAD5]", "[PAD6]")) || got.Types[6] != tokenizer.TypeUnused ||
		got.Types[1] != tokenizer.TypeControl || got.Scores[4] != -2 || got.Scores[5] != -1000 ||
		got.BOS != v.BOS || got.EOS != v.EOS || got.UNK != v.UNK || !got.AddBOS || !got.AddSpacePrefix || got.AddEOS || !slices.Equal(got.EOG, []int{4}) {
		t.Errorf("read back %+v", got)
	}
	if got.FIM.SuffixFirst {
		t.Error("suffix-first mark read from a vocabulary without it")
	}
	// A model trained suffix first keeps the mark (nanoserve.fim.suffix_first).
	v.FIM.SuffixFirst = true
	kvs, err = VocabKVs(v, 7, []int{4})
	if err != nil {
		t.Fatal(err)
	}
	if got, err = ReadVocab(parseKVs(t, "llama", kvs)); err != nil || !got.FIM.SuffixFirst {
		t.Errorf("suffix-first mark lost: %v, %v", got.FIM.SuffixFirst, err)
	}
	bad := slices.Clone(kvs)
	for i := range bad {
		if bad[i].Key == KeyFIMSuffixFirst {
			bad[i].Value = gguf.String("yes")
		}
	}
	if _, err := ReadVocab(parseKVs(t, "llama", bad)); err == nil {
		t.Error("a suffix-first mark that is not a bool was accepted")
	}
	if _, err := VocabKVs(tokenizer.Vocab{Model: "bert"}, 0, nil); err == nil {
		t.Error("unknown vocabulary model accepted")
	}
}

// TestVocabRoundTripGemma4: a Gemma 4 vocabulary survives VocabKVs and
// ReadVocab (add_bos forced on, as llama.cpp does) and tokenizes the same.
func TestVocabRoundTripGemma4(t *testing.T) {
	v := tokenizer.Vocab{Model: "gemma4", Tokens: []string{"<pad>", "<eos>", "<bos>", "▁", "a", "b", "ab", "▁ab", "<0xC3>", "<0xA9>"},
		Types: []tokenizer.TokenType{3, 3, 3, 1, 1, 1, 1, 1, 6, 6}, Merges: []string{"a b", "▁ ab"},
		BOS: tokenizer.Some(2), EOS: tokenizer.Some(1)}
	kvs, err := VocabKVs(v, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadVocab(parseKVs(t, "gemma4", kvs))
	if err != nil {
		t.Fatal(err)
	}
	if got.Model != "gemma4" || !got.AddBOS || !slices.Equal(got.Merges, v.Merges) || got.BOS != v.BOS {
		t.Errorf("read back %+v", got)
	}
	tk, err := tokenizer.FromVocab(got)
	if err != nil {
		t.Fatal(err)
	}
	if ids := tk.Encode("ab abé", false); !slices.Equal(ids, []int{6, 7, 8, 9}) {
		t.Errorf("encode: %v", ids)
	}
}

// parseKVs writes general.architecture and kvs as a GGUF file and parses
// it back.
func parseKVs(t *testing.T, arch string, kvs []gguf.KV) *gguf.File {
	t.Helper()
	w := gguf.NewWriter()
	w.AddKV("general.architecture", gguf.String(arch))
	for _, kv := range kvs {
		if err := w.AddKV(kv.Key, kv.Value); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	if _, err := w.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return f
}
