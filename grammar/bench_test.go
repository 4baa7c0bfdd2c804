package grammar

import (
	"math/rand/v2"
	"testing"
)

// nestedSchema is the benchmark schema: an object with nested objects,
// arrays, enums, formats, bounds and a recursive reference.
const nestedSchema = `{
  "type": "object",
  "properties": {
    "id": {"type": "string", "format": "uuid"},
    "name": {"type": "string", "minLength": 1, "maxLength": 40},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "score": {"type": "number"},
    "tags": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 5},
    "address": {"type": "object", "properties": {
        "street": {"type": "string"}, "city": {"type": "string"},
        "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
        "kind": {"enum": ["home", "work", "other"]}},
      "required": ["street", "city"], "additionalProperties": false},
    "created": {"type": "string", "format": "date-time"},
    "parent": {"$ref": "#/$defs/node"}
  },
  "required": ["id", "name", "age", "tags", "address"],
  "additionalProperties": false,
  "$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
     "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}}, "required": ["v"]}}
}`

func benchMask(b *testing.B, which int) {
	tv := realVocab(b, which)
	g, err := FromJSONSchema([]byte(nestedSchema))
	if err != nil {
		b.Fatal(err)
	}
	c, err := Compile(g, tv.v)
	if err != nil {
		b.Fatal(err)
	}
	// A fixed token sequence from a greedy walk (random scores).
	rng := rand.New(rand.NewPCG(5, 5))
	m, _ := c.NewMatcher(400)
	mask := make([]uint64, tv.v.MaskWords())
	score := make([]float64, tv.v.Size())
	for i := range score {
		score[i] = rng.Float64()
	}
	var ids []int
	for m.Remaining() > 0 && !m.Ended() {
		n := mustMask(b, m, mask)
		id := pick(mask, n, rng, score)
		m.Accept(id)
		ids = append(ids, id)
	}
	b.ResetTimer()
	steps := 0
	for i := 0; i < b.N; i++ {
		m, _ := c.NewMatcher(400)
		for _, id := range ids {
			mustMask(b, m, mask)
			if err := m.Accept(id); err != nil {
				b.Fatal(err)
			}
			steps++
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(steps), "µs/token")
}

// Warm: the per-stack mask cache is filled (steady state, every request
// after the first with this schema).
func BenchmarkMaskLlama2(b *testing.B) { benchMask(b, 0) }
func BenchmarkMaskQwen3(b *testing.B)  { benchMask(b, 1) }

// Cold: compile plus one full generation, cache empty (first use).
func benchCold(b *testing.B, which int) {
	tv := realVocab(b, which)
	rng := rand.New(rand.NewPCG(5, 5))
	mask := make([]uint64, tv.v.MaskWords())
	b.ResetTimer()
	steps := 0
	for i := 0; i < b.N; i++ {
		g, _ := FromJSONSchema([]byte(nestedSchema))
		c, err := Compile(g, tv.v)
		if err != nil {
			b.Fatal(err)
		}
		m, _ := c.NewMatcher(400)
		for m.Remaining() > 0 && !m.Ended() {
			n := mustMask(b, m, mask)
			m.Accept(pick(mask, n, rng, nil))
			steps++
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(steps), "µs/token")
}

func BenchmarkMaskColdLlama2(b *testing.B) { benchCold(b, 0) }
func BenchmarkMaskColdQwen3(b *testing.B)  { benchCold(b, 1) }

// Compile: schema → grammar → lowered program + costs (no masks yet).
func benchCompile(b *testing.B, which int) {
	tv := realVocab(b, which)
	for i := 0; i < b.N; i++ {
		g, err := FromJSONSchema([]byte(nestedSchema))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Compile(g, tv.v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompileLlama2(b *testing.B) { benchCompile(b, 0) }
func BenchmarkCompileQwen3(b *testing.B)  { benchCompile(b, 1) }
