package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"nanoserve/grammar"
	"nanoserve/internal/testshared"
	"nanoserve/model"
	"nanoserve/sample"
)

var e2eSchemas = []string{
	`{"type":"object","properties":{"name":{"type":"string","maxLength":8},"age":{"type":"integer","minimum":0,"maximum":120}},"required":["name","age"],"additionalProperties":false}`,
	`{"type":"array","items":{"enum":["red","green",3,null]},"minItems":1,"maxItems":4}`,
	`{"type":"object","properties":{"id":{"type":"string","format":"uuid"},"when":{"type":"string","format":"date-time"},"tags":{"type":"array","items":{"type":"string","pattern":"^[a-z]{1,5}$"},"maxItems":3}},"required":["id","when"]}`,
	`{"$defs":{"n":{"type":"object","properties":{"v":{"type":"number","minimum":-5,"maximum":5},"kids":{"type":"array","items":{"$ref":"#/$defs/n"},"maxItems":2}},"required":["v"]}},"$ref":"#/$defs/n"}`,
	`{"oneOf":[{"type":"object","properties":{"kind":{"const":"a"},"x":{"type":"boolean"}},"required":["kind","x"]},{"type":"object","properties":{"kind":{"const":"b"},"y":{"type":["string","null"]}},"required":["kind"]}]}`,
	`{"type":"object","additionalProperties":{"type":"integer","exclusiveMinimum":10}}`,
	`{"allOf":[{"type":"object","properties":{"p":{"type":"string","minLength":2}},"required":["p"]},{"properties":{"q":{"type":"string","format":"date"}},"required":["q"]}]}`,
	`{"anyOf":[{"type":"integer"},{"type":"string","format":"time"}],"title":"T","description":"d"}`,
}

var grammarFull = flag.Bool("grammar.full", false, "run the 200-schema end-to-end property test")

// Generated schemas (grammar.RandomSchema, every supported keyword) on
// both shared GGUF models, greedy and T = 1, budgets from the shortest
// output up: every output validates. 25 schemas by default, 200 with
// -grammar.full.
func TestGeneratedSchemasEndToEnd(t *testing.T) {
	n := 25
	if *grammarFull {
		n = 200
	}
	total := 0
	for _, rel := range []string{"testdata/gguf/llama_gqa/llama_gqa-Q8_0.gguf", "testdata/gguf/qwen2/qwen2-F16.gguf"} {
		e := loadGGUF(t, rel)
		for i := 0; i < n; i++ {
			schema := string(grammar.RandomSchema(uint64(i)))
			v := validatorFor(t, schema)
			c, err := e.Constraint(context.Background(), ConstraintJSONSchema, schema)
			if err != nil {
				t.Fatalf("schema %d %s: %v", i, schema, err)
			}
			for k, temp := range []float32{0, 1, 1} {
				pol := sample.Defaults()
				pol.Temperature = temp
				seed := uint64(1000*i + k)
				pol.Seed = &seed
				pol.MaxTokens = c.MinTokens() + []int{0, 5, 30}[k]
				res := constrained(t, e, ConstraintJSONSchema, schema, pol)
				inst, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(res.Text)))
				if err != nil {
					t.Fatalf("%s schema %d %s T=%v budget %d: output %q is not JSON: %v", rel, i, schema, temp, pol.MaxTokens, res.Text, err)
				}
				if err := v.Validate(inst); err != nil {
					t.Fatalf("%s schema %d %s: output %q does not validate: %v", rel, i, schema, res.Text, err)
				}
				total++
			}
		}
	}
	t.Logf("%d schemas x 2 models x 3 runs: %d outputs validated", n, total)
}

func loadGGUF(t *testing.T, rel string) *Engine {
	t.Helper()
	m, err := model.Load(filepath.Join(testshared.Dir(t), rel), model.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	e, err := New(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func validatorFor(t *testing.T, schema string) *jsonschema.Schema {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(schema)))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("s.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("s.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// constrained runs one request under kind/spec and returns its text.
func constrained(t *testing.T, e *Engine, kind, spec string, pol sample.Policy) *Result {
	t.Helper()
	c, err := e.Constraint(context.Background(), kind, spec)
	if err != nil {
		t.Fatal(err)
	}
	var perr error
	req := Request{Prompt: "Answer in JSON:", Policy: pol, Processors: func() []LogitsProcessor {
		p, err := GrammarProcessor(c, pol.MaxTokens, pol.StopTokenIDs)
		if err != nil {
			perr = err
			return nil
		}
		return []LogitsProcessor{p}
	}}
	res := generate(t, e, req)
	if perr != nil {
		t.Fatal(perr)
	}
	return res
}

// Every output of the shared random-weight GGUF models under a JSON
// Schema, greedy and at T = 1 with several seeds, under budgets from the
// shortest output up, parses and validates (format assertions on).
func TestConstrainedOutputsValidate(t *testing.T) {
	for _, rel := range []string{"testdata/gguf/llama_gqa/llama_gqa-Q8_0.gguf", "testdata/gguf/qwen2/qwen2-F16.gguf"} {
		e := loadGGUF(t, rel)
		for i, schema := range e2eSchemas {
			v := validatorFor(t, schema)
			c, err := e.Constraint(context.Background(), ConstraintJSONSchema, schema)
			if err != nil {
				t.Fatal(err)
			}
			for k, temp := range []float32{0, 1, 1, 1} {
				pol := sample.Defaults()
				pol.Temperature = temp
				seed := uint64(10*i + k)
				pol.Seed = &seed
				pol.MaxTokens = c.MinTokens() + []int{0, 2, 10, 40}[k]
				res := constrained(t, e, ConstraintJSONSchema, schema, pol)
				inst, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(res.Text)))
				if err != nil {
					t.Fatalf("%s schema %d T=%v budget %d: output %q is not JSON: %v", rel, i, temp, pol.MaxTokens, res.Text, err)
				}
				if err := v.Validate(inst); err != nil {
					t.Fatalf("%s schema %d: output %q does not validate: %v", rel, i, res.Text, err)
				}
			}
		}
		// json_object, regex, choice.
		pol := sample.Defaults()
		pol.MaxTokens = 30
		res := constrained(t, e, ConstraintJSONObject, "", pol)
		var obj map[string]any
		if err := json.Unmarshal([]byte(res.Text), &obj); err != nil {
			t.Fatalf("json_object output %q: %v", res.Text, err)
		}
		re := `[A-Z]{2}-\d{3,5}`
		res = constrained(t, e, ConstraintRegex, re, pol)
		if !regexp.MustCompile(`^(?:` + re + `)$`).MatchString(res.Text) {
			t.Fatalf("regex output %q", res.Text)
		}
		res = constrained(t, e, ConstraintChoice, `["alpha","beta gamma"]`, pol)
		if res.Text != "alpha" && res.Text != "beta gamma" {
			t.Fatalf("choice output %q", res.Text)
		}
	}
}

func TestConstraintBudgetTooSmall(t *testing.T) {
	e := loadGGUF(t, "testdata/gguf/llama_gqa/llama_gqa-Q8_0.gguf")
	c, err := e.Constraint(context.Background(), ConstraintJSONSchema, e2eSchemas[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := GrammarProcessor(c, c.MinTokens()-1, nil); !errors.Is(err, grammar.ErrBudget) {
		t.Fatalf("budget below the shortest output: %v", err)
	}
	// The cache returns the same compiled constraint for the same spec.
	c2, _ := e.Constraint(context.Background(), ConstraintJSONSchema, e2eSchemas[0])
	if c2 != c {
		t.Fatal("constraint cache missed an identical schema")
	}
}

// min_tokens: end-of-generation is masked until N tokens.
func TestMinTokens(t *testing.T) {
	e := loadGGUF(t, "testdata/gguf/llama_gqa/llama_gqa-Q8_0.gguf")
	c, _ := e.Constraint(context.Background(), ConstraintChoice, `["a"]`)
	pol := sample.Defaults()
	pol.MaxTokens = 8
	// Choice "a" would end after one token; min_tokens 1 changes nothing,
	// and a processor chain of min_tokens then grammar never ends early.
	res := generate(t, e, Request{Prompt: "x", Policy: pol, Processors: func() []LogitsProcessor {
		p, _ := GrammarProcessor(c, pol.MaxTokens, nil)
		return []LogitsProcessor{e.MinTokensProcessor(1, nil), p}
	}})
	if res.Text != "a" {
		t.Fatalf("got %q", res.Text)
	}
	mt := e.MinTokensProcessor(2, []int{7})
	eog := e.tok.EOG()
	for step := 0; step < 4; step++ {
		logits := make([]float32, e.vocab)
		if err := mt.Process(logits); err != nil {
			t.Fatal(err)
		}
		for _, id := range append([]int{7}, eog...) {
			if masked := logits[id] == negInf; masked != (step < 2) {
				t.Fatalf("step %d: id %d masked=%v", step, id, masked)
			}
		}
		mt.Accept(100)
	}
}
