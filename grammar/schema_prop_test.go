package grammar

import (
	"bytes"
	"encoding/json"
	"flag"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

var fullRun = flag.Bool("grammar.full", false, "run the full 200-schema property test on both vocabularies")

func validator(t testing.TB, schema []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
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
		t.Fatalf("validator rejects schema %s: %v", schema, err)
	}
	return s
}

func checkInstance(t testing.TB, v *jsonschema.Schema, schema, out []byte) {
	t.Helper()
	if !json.Valid(out) {
		t.Fatalf("schema %s: output is not JSON: %q", schema, out)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("schema %s: output %q: %v", schema, out, err)
	}
	if err := v.Validate(inst); err != nil {
		t.Fatalf("schema %s: output %q does not validate: %v", schema, out, err)
	}
}

// TestSchemaProperty: seeded schemas × both vocabularies × uniform and
// greedy walks under tight budgets; every output parses and validates.
// -grammar.full runs 200 schemas × 4 walks per vocabulary.
func TestSchemaProperty(t *testing.T) {
	n, walks := 40, 2
	if *fullRun {
		n, walks = 200, 4
	}
	cov := map[string]int{}
	outputs := 0
	for _, which := range []int{0, 1} {
		tv := realVocab(t, which)
		for i := 0; i < n; i++ {
			schema := genSchema(uint64(i), cov)
			g, err := FromJSONSchema(schema)
			if err != nil {
				t.Fatalf("schema %d %s: %v", i, schema, err)
			}
			c, err := Compile(g, tv.v)
			if err != nil {
				t.Fatalf("schema %d %s: %v", i, schema, err)
			}
			v := validator(t, schema)
			rng := rand.New(rand.NewPCG(uint64(i), uint64(which)))
			for w := 0; w < walks; w++ {
				budget := c.MinTokens() + []int{0, 3, 20, 80}[w%4]
				out := walk(t, c, tv, budget, rng, w%2 == 1)
				checkInstance(t, v, schema, out)
				outputs++
			}
		}
	}
	var missing []string
	for k := range schemaKeywords {
		if cov[k] == 0 {
			missing = append(missing, k)
		}
	}
	if *fullRun {
		for _, k := range append([]string{"format+pattern", "format+maxLength"}, formatNames...) {
			if _, isFormat := formatMaxLen[k]; isFormat {
				k = "format:" + k
			}
			if cov[k] == 0 {
				missing = append(missing, k)
			}
		}
	}
	if len(missing) > 0 {
		t.Errorf("generator never used: %s", strings.Join(missing, ", "))
	}
	t.Logf("%d schemas × 2 vocabularies, %d outputs validated", n, outputs)
}
