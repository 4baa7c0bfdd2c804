package llamacpp

import (
	"errors"
	"slices"
	"testing"

	"nanoserve/tokenizer"
)

// fimTok is a byte-level tokenizer with no merges: every byte is its own
// token, so expected layouts can be spelt out byte by byte.
func fimTok(t *testing.T, special ...string) *tokenizer.Tokenizer {
	t.Helper()
	v, err := tokenizer.TrainBPE(nil, tokenizer.TrainOptions{VocabSize: 256 + len(special), Special: special})
	if err != nil {
		t.Fatal(err)
	}
	tk, err := tokenizer.FromVocab(v)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func bytesOf(s string) []int {
	var out []int
	for i := range len(s) {
		out = append(out, int(s[i]))
	}
	return out
}

func cat(parts ...[]int) []int { return slices.Concat(parts...) }

// TestInfillLayout: PSM and SPM prompts are llama-server's token sequence
// (REP "myproject\n", SEP file "\n" text per extra chunk, SEP "filename\n",
// then PRE prefix prompt SUF suffix MID, or SUF suffix PRE prefix prompt
// MID).
func TestInfillLayout(t *testing.T) {
	tk := fimTok(t, "<|endoftext|>", tokenizer.FIMPrefix, tokenizer.FIMSuffix, tokenizer.FIMMiddle, tokenizer.FIMPad, tokenizer.FIMRepoName, tokenizer.FIMFileSep)
	const eot, pre, suf, mid, rep, sep = 256, 257, 258, 259, 261, 262
	in := InfillInput{Prefix: "ab", Suffix: "cd", Prompt: []int{'x'}, Extra: []InfillChunk{{"f.go", "E"}, {"", "F"}}}
	extra := cat([]int{rep}, bytesOf("myproject\n"), []int{sep}, bytesOf("f.go\nE"), []int{sep}, bytesOf("tmp\nF"), []int{sep}, bytesOf("filename\n"))
	psm, err := InfillPrompt(tk, in, InfillBudget{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := cat(extra, []int{pre, 'a', 'b', 'x', suf, 'c', 'd', mid}); !slices.Equal(psm, want) {
		t.Errorf("PSM\n got %v\nwant %v", psm, want)
	}
	spm, err := InfillPrompt(tk, in, InfillBudget{}, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := cat(extra, []int{suf, 'c', 'd', pre, 'a', 'b', 'x', mid}); !slices.Equal(spm, want) {
		t.Errorf("SPM\n got %v\nwant %v", spm, want)
	}

	// The budget: batch 16 keeps the last 12 prefix tokens and the first
	// 16/4 − (2 + 1) = 1 suffix token; ctx 40 − 16 − 2·8 = 8 extra tokens
	// (the end of the extra context).
	in = InfillInput{Prefix: "0123456789abcdefgh", Suffix: "SUFFIX", Prompt: []int{'x'}}
	got, err := InfillPrompt(tk, in, InfillBudget{Batch: 16, Predict: 8, Ctx: 40}, false)
	if err != nil {
		t.Fatal(err)
	}
	full := cat([]int{rep}, bytesOf("myproject\n"), []int{sep}, bytesOf("filename\n"))
	if want := cat(full[len(full)-8:], []int{pre}, bytesOf("6789abcdefgh"), []int{'x', suf, 'S', mid}); !slices.Equal(got, want) {
		t.Errorf("budgeted\n got %v\nwant %v", got, want)
	}

	// Without REP and SEP tokens: extra chunks behind the snippet marker.
	tk2 := fimTok(t, "<|endoftext|>", tokenizer.FIMPrefix, tokenizer.FIMSuffix, tokenizer.FIMMiddle)
	got, err = InfillPrompt(tk2, InfillInput{Prefix: "a", Suffix: "b", Extra: []InfillChunk{{"f", "E"}}}, InfillBudget{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := cat(bytesOf("\n\n--- snippet ---\n\nE"), []int{pre, 'a', suf, 'b', mid}); !slices.Equal(got, want) {
		t.Errorf("no REP/SEP\n got %v\nwant %v", got, want)
	}

	// User text spelling a FIM token stays text.
	got, _ = InfillPrompt(tk, InfillInput{Prefix: tokenizer.FIMMiddle}, InfillBudget{}, false)
	if n := slices.Index(got, mid); n != len(got)-1 {
		t.Errorf("prefix text %q produced the middle token at %d in %v", tokenizer.FIMMiddle, n, got)
	}

	// A model without FIM tokens: ErrNoFIM naming them.
	_, err = InfillPrompt(fimTok(t, "<|endoftext|>", tokenizer.FIMPrefix), in, InfillBudget{}, false)
	if !errors.Is(err, ErrNoFIM) || err.Error() != "the model has no fill-in-the-middle tokens (no suffix, middle token)" {
		t.Errorf("err = %v", err)
	}
}

// TestFIMKeysRoundTrip: the FIM ids are written under llama.cpp's keys and
// read back; an old file's deprecated prefix key is read too.
func TestFIMKeysRoundTrip(t *testing.T) {
	tk := fimTok(t, "<|endoftext|>", "<A>", "<B>", "<C>", "<D>", "<E>", "<F>")
	v := *tk.Vocab()
	v.FIM = tokenizer.FIMTokens{Pre: tokenizer.Some(257), Suf: tokenizer.Some(258), Mid: tokenizer.Some(259),
		Pad: tokenizer.Some(260), Rep: tokenizer.Some(261), Sep: tokenizer.Some(262)}
	kvs, err := VocabKVs(v, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, kv := range kvs {
		keys[kv.Key] = true
	}
	for _, k := range []string{"fim_pre_token_id", "fim_suf_token_id", "fim_mid_token_id", "fim_pad_token_id", "fim_rep_token_id", "fim_sep_token_id"} {
		if !keys["tokenizer.ggml."+k] {
			t.Errorf("tokenizer.ggml.%s not written", k)
		}
	}
	got, err := ReadVocab(parseKVs(t, "llama", kvs))
	if err != nil {
		t.Fatal(err)
	}
	if got.FIM != v.FIM {
		t.Errorf("read back %+v, want %+v", got.FIM, v.FIM)
	}
	for i := range kvs {
		if kvs[i].Key == "tokenizer.ggml.fim_pre_token_id" {
			kvs[i].Key = "tokenizer.ggml.prefix_token_id"
		}
	}
	if got, err = ReadVocab(parseKVs(t, "llama", kvs)); err != nil || got.FIM.Pre != v.FIM.Pre {
		t.Errorf("deprecated prefix_token_id: %+v, %v", got.FIM, err)
	}
}
