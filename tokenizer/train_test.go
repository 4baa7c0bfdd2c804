package tokenizer

import (
	"reflect"
	"strings"
	"testing"
)

func TestTrainBPE(t *testing.T) {
	texts := []string{
		"package main\n\nfunc main() {\n\tfmt.Println(\"hello, world\")\n}\n",
		"func add(a, b int) int {\n\treturn a + b\n}\n\nfunc sub(a, b int) int {\n\treturn a - b\n}\n",
		strings.Repeat("the quick brown fox jumps over the lazy dog. ", 20),
	}
	opts := TrainOptions{VocabSize: 256 + 40 + 1, Special: []string{"<|endoftext|>"}}
	v, err := TrainBPE(texts, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Tokens) != opts.VocabSize || len(v.Merges) != 40 {
		t.Fatalf("got %d tokens, %d merges", len(v.Tokens), len(v.Merges))
	}
	v2, _ := TrainBPE(texts, opts)
	if !reflect.DeepEqual(v, v2) {
		t.Fatal("training is not deterministic")
	}
	tk, err := FromVocab(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range append(texts, "unseen Ünïcode\x00 text\n\t\t}") {
		ids := tk.Encode(s, false)
		if got := tk.Decode(ids); got != s {
			t.Errorf("round trip %q -> %q", s, got)
		}
		if s == texts[2] && len(ids) > len(s)/3 {
			t.Errorf("repeated text not compressed: %d ids for %d bytes", len(ids), len(s))
		}
	}
	if id, ok := tk.EOS(); !ok || id != opts.VocabSize-1 || !tk.IsEOG(id) {
		t.Errorf("EOS = %d, %v", id, ok)
	}
	if _, err := TrainBPE(texts, TrainOptions{VocabSize: 100}); err == nil {
		t.Error("too small vocabulary accepted")
	}
}
