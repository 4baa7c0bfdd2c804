package engine

import (
	"testing"

	"nanoserve/sample"
)

// The text a constrained request returns is exactly what the grammar
// matched, including a leading space that a SentencePiece piece carries.
func TestConstrainedLeadingSpace(t *testing.T) {
	e := loadGGUF(t, "testdata/gguf/llama_gqa/llama_gqa-Q8_0.gguf")
	pol := sample.Greedy()
	pol.MaxTokens = 8
	res := constrained(t, e, ConstraintGBNF, `root ::= " hello" [a-z]`, pol)
	if len(res.Text) != 7 || res.Text[:6] != " hello" {
		t.Fatalf("got %q", res.Text)
	}
}
