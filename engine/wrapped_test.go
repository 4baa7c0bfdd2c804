package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"nanoserve/grammar"
	"nanoserve/sample"
	"nanoserve/tokenizer"
)

// TestWrappedConstraint: ConstraintWrapped on the Qwen2 GGUF model, with
// the control token <|im_start|> (a special token there, as [TOOL_CALLS]
// is in Mistral's vocabulary) opening each block: the model's first token
// is that token's id — reached through the engine's grammar vocabulary,
// which keeps special tokens' texts — and every block holds a value that
// validates, greedy and at T = 1.
func TestWrappedConstraint(t *testing.T) {
	e := loadGGUF(t, "testdata/gguf/qwen2/qwen2-F16.gguf")
	ctl := -1
	for id := range e.tok.Size() {
		if e.tok.Piece(id) == "<|im_start|>" && e.tok.TokenType(id) == tokenizer.TypeControl {
			ctl = id
		}
	}
	if ctl < 0 {
		t.Fatal("no control token <|im_start|> in the Qwen2 vocabulary")
	}
	schema := e2eSchemas[1]
	w := grammar.Wrapper{Prefix: "<|im_start|>call\n", Suffix: "\n.", Repeat: true, Separator: "\n", ControlTokens: []string{"<|im_start|>"}}
	spec, err := json.Marshal(WrappedSpec{Wrapper: w, Schema: json.RawMessage(schema)})
	if err != nil {
		t.Fatal(err)
	}
	v := validatorFor(t, schema)
	c, err := e.Constraint(context.Background(), ConstraintWrapped, string(spec))
	if err != nil {
		t.Fatal(err)
	}
	for k, temp := range []float32{0, 1, 1} {
		pol := sample.Defaults()
		pol.Temperature = temp
		seed := uint64(k)
		pol.Seed = &seed
		pol.MaxTokens = c.MinTokens() + []int{0, 10, 40}[k]
		res := constrained(t, e, ConstraintWrapped, string(spec), pol)
		if len(res.IDs) == 0 || res.IDs[0] != ctl {
			t.Fatalf("T=%v: first id %v, want the control token %d", temp, res.IDs, ctl)
		}
		n := 0
		for _, id := range res.IDs {
			if id == ctl {
				n++
			}
		}
		// With control tokens rendered: "<|im_start|>call\n" value "\n."
		// blocks joined by "\n".
		body := e.tok.DecodeWith(res.IDs, tokenizer.DecodeOptions{Special: tokenizer.SpecialRender})
		blocks := strings.Split(strings.TrimPrefix(body, "<|im_start|>"), "\n<|im_start|>")
		if len(blocks) != n {
			t.Fatalf("T=%v: %d control tokens, %d blocks in %q", temp, n, len(blocks), body)
		}
		for _, b := range blocks {
			val, ok := strings.CutPrefix(b, "call\n")
			if val, ok = strings.CutSuffix(val, "\n."); !ok {
				t.Fatalf("T=%v: block %q of %q", temp, b, body)
			}
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(val)))
			if err != nil {
				t.Fatalf("T=%v: value %q: %v", temp, val, err)
			}
			if err := v.Validate(inst); err != nil {
				t.Fatalf("T=%v: value %q does not validate: %v", temp, val, err)
			}
		}
		t.Logf("T=%v budget %d: %q", temp, pol.MaxTokens, body)
	}
}
