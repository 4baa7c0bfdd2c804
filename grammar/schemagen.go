package grammar

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
)

// RandomSchema returns the seed-th schema of a seeded JSON Schema
// generator that covers every keyword FromJSONSchema supports and their
// nesting (objects, maps, tuples, unions, tagged unions, allOf, formats,
// bounds, patterns, enums, $ref recursion). It exists for property tests
// in this and other packages; every schema it returns compiles.
func RandomSchema(seed uint64) []byte { return genSchema(seed, map[string]int{}) }

// schemaGen is a seeded JSON Schema generator covering every supported
// keyword and their nesting; coverage counts which keywords it emitted.
type schemaGen struct {
	rng      *rand.Rand
	coverage map[string]int
	defs     *obj
	ndefs    int
	seed     uint64
	nformats uint64
}

func (g *schemaGen) o(kv ...any) *obj {
	o := newObj()
	for i := 0; i < len(kv); i += 2 {
		k := kv[i].(string)
		o.set(k, kv[i+1])
		g.coverage[k]++
	}
	return o
}

func num(x int) json.Number { return json.Number(fmt.Sprint(x)) }

var propNames = []string{"id", "name", "a", "tags", "x_y", "na\"me", "é", "with space", "count", "items"}

var formatNames = []string{"date", "time", "date-time", "duration", "email", "hostname", "ipv4", "ipv6", "uri", "uuid"}

// zodEmailPattern is the pattern Zod 4's z.string().email() puts beside
// format: email.
const zodEmailPattern = `^(?:[A-Za-z0-9_'+\-]+\.)*[A-Za-z0-9_'+\-]*[A-Za-z0-9_+-]@(?:[A-Za-z0-9][A-Za-z0-9\-]*\.)+[A-Za-z]{2,}$`

var patterns = []string{`^[a-z]{2,4}$`, `^\d{3}-\d{4}$`, `ab+c`, `^(foo|bar)[0-9]?$`, `[A-Z]`, `^\w+@\w+\.com$`, `^[^"\\]{1,3}$`, `x\.y`, `^a|b$`, `^(?:\+|-)?\d+(\.\d{1,2})?$`, `^\s*\S+$`}

func (g *schemaGen) annotate(o *obj) {
	switch g.rng.IntN(6) {
	case 0:
		o.set("title", "T")
		g.coverage["title"]++
	case 1:
		o.set("description", "a field")
		g.coverage["description"]++
	case 2:
		o.set("examples", []any{"x"})
		g.coverage["examples"]++
	case 3:
		o.set("default", nil)
		g.coverage["default"]++
	}
}

func (g *schemaGen) schema(depth int) any {
	r := g.rng
	k := r.IntN(23)
	if depth >= 3 && k >= 12 {
		k = r.IntN(12)
	}
	var s *obj
	switch k {
	case 0:
		s = g.o("type", "string")
		if r.IntN(2) == 0 {
			lo := r.IntN(4)
			s.set("minLength", num(lo))
			g.coverage["minLength"]++
			if r.IntN(2) == 0 {
				s.set("maxLength", num(lo+r.IntN(5)))
				g.coverage["maxLength"]++
			}
		} else if r.IntN(2) == 0 {
			s.set("maxLength", num(r.IntN(6)))
			g.coverage["maxLength"]++
		}
	case 1:
		s = g.o("type", "string", "pattern", patterns[r.IntN(len(patterns))])
	case 2, 22:
		f := formatNames[(g.seed+g.nformats)%uint64(len(formatNames))] // each seed starts elsewhere: every format is met
		g.nformats++
		s = g.o("type", "string", "format", f)
		g.coverage["format:"+f]++
		switch {
		case f == "email" && r.IntN(2) == 0:
			// what Zod's z.string().email() sends beside the format
			s.set("pattern", zodEmailPattern)
			g.coverage["format+pattern"]++
		case f == "date-time" && r.IntN(2) == 0:
			s.set("pattern", `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$`)
			g.coverage["format+pattern"]++
		case (f == "hostname" || f == "uri" || f == "email") && r.IntN(2) == 0:
			s.set("maxLength", num(12+r.IntN(30)))
			g.coverage["format+maxLength"]++
		}
	case 3, 4:
		t := []string{"integer", "number"}[r.IntN(2)]
		s = g.o("type", t)
		lo := r.IntN(200) - 100
		width := 2
		if r.IntN(3) == 0 {
			// a multiple of q lies in every window of 8 (q <= 3, or an
			// integer type with q = 1.5: multiples of 3)
			s.set("multipleOf", json.Number([]string{"0.5", "0.25", "3", "1.5", "0.1", "2"}[r.IntN(6)]))
			g.coverage["multipleOf"]++
			width = 8
		}
		// a fractional bound now and then (any type may carry one)
		bnd := func(x int) json.Number {
			if r.IntN(3) == 0 {
				return json.Number(strconv.FormatFloat(float64(x)+[]float64{0.25, 0.5, -0.75}[r.IntN(3)], 'f', -1, 64))
			}
			return num(x)
		}
		if r.IntN(3) > 0 {
			kw := []string{"minimum", "exclusiveMinimum"}[r.IntN(2)]
			s.set(kw, bnd(lo))
			g.coverage[kw]++
		}
		if r.IntN(3) > 0 {
			kw := []string{"maximum", "exclusiveMaximum"}[r.IntN(2)]
			s.set(kw, bnd(lo+width+1+r.IntN(1000)))
			g.coverage[kw]++
		}
	case 5:
		s = g.o("type", []any{"boolean", "null"}[r.IntN(2)])
	case 6:
		vals := []any{"red", "gr\"een", json.Number("3"), json.Number("-1.5"), nil, true, "ü"}
		r.Shuffle(len(vals), func(i, j int) { vals[i], vals[j] = vals[j], vals[i] })
		s = g.o("enum", vals[:1+r.IntN(4)])
	case 7:
		s = g.o("const", []any{"fixed", json.Number("42"), false, nil}[r.IntN(4)])
	case 8:
		s = g.o("type", []any{"string", "null"})
	case 9:
		s = g.o("type", []any{"integer", "boolean", "string"})
		s.set("maximum", num(10))
		g.coverage["maximum"]++
	case 10:
		return true
	case 11:
		// a reference to a definition
		name := fmt.Sprintf("d%d", g.ndefs)
		g.ndefs++
		g.defs.set(name, g.schema(depth+1))
		s = g.o("$ref", "#/$defs/"+name)
	case 12, 13, 14:
		props := newObj()
		var names []any
		n := 1 + r.IntN(4)
		perm := r.Perm(len(propNames))[:n]
		for _, i := range perm {
			props.set(propNames[i], g.schema(depth+1))
			names = append(names, propNames[i])
		}
		s = g.o("type", "object", "properties", props)
		var req []any
		for _, nm := range names {
			if r.IntN(2) == 0 {
				req = append(req, nm)
			}
		}
		if len(req) > 0 || r.IntN(2) == 0 {
			s.set("required", req)
			g.coverage["required"]++
		}
		if r.IntN(3) == 0 {
			lo := r.IntN(len(names) + 1)
			s.set("minProperties", num(lo))
			g.coverage["minProperties"]++
			if r.IntN(2) == 0 {
				s.set("maxProperties", num(max(lo, len(req))+r.IntN(2)))
				g.coverage["maxProperties"]++
			}
		}
		switch r.IntN(3) {
		case 0:
			s.set("additionalProperties", false)
			g.coverage["additionalProperties"]++
		case 1:
			s.set("additionalProperties", g.schema(depth+1))
			g.coverage["additionalProperties"]++
		}
	case 15:
		// a map
		s = g.o("type", "object", "additionalProperties", g.schema(depth+1))
		if r.IntN(2) == 0 {
			s.set("maxProperties", num(1+r.IntN(3)))
			g.coverage["maxProperties"]++
			if r.IntN(2) == 0 {
				s.set("minProperties", num(1))
				g.coverage["minProperties"]++
			}
		}
	case 16, 17:
		if r.IntN(3) == 0 {
			// a set of listed values (uniqueItems: each at most once, in order)
			vals := []any{"red", "green", json.Number("3"), json.Number("3.0"), true, nil, "blue"}
			r.Shuffle(len(vals), func(i, j int) { vals[i], vals[j] = vals[j], vals[i] })
			s = g.o("type", "array", "items", g.o("enum", vals[:2+r.IntN(4)]), "uniqueItems", true)
			if r.IntN(2) == 0 {
				s.set("minItems", num(1))
				g.coverage["minItems"]++
			}
			if r.IntN(2) == 0 {
				s.set("maxItems", num(2+r.IntN(2)))
				g.coverage["maxItems"]++
			}
			break
		}
		s = g.o("type", "array")
		if r.IntN(4) == 0 {
			s.set("uniqueItems", false)
			g.coverage["uniqueItems"]++
		}
		if r.IntN(2) == 0 {
			var pre []any
			for i := 0; i < 1+r.IntN(2); i++ {
				pre = append(pre, g.schema(depth+1))
			}
			s.set("prefixItems", pre)
			g.coverage["prefixItems"]++
		}
		switch r.IntN(3) {
		case 0:
			s.set("items", g.schema(depth+1))
			g.coverage["items"]++
		case 1:
			if _, ok := s.get("prefixItems"); ok {
				s.set("items", false)
				g.coverage["items"]++
			}
		}
		lo := r.IntN(3)
		if r.IntN(2) == 0 {
			s.set("minItems", num(lo))
			g.coverage["minItems"]++
		}
		if r.IntN(2) == 0 {
			s.set("maxItems", num(lo+r.IntN(3)))
			g.coverage["maxItems"]++
		}
		if pi, ok := s.get("prefixItems"); ok {
			if it, ok := s.get("items"); ok && it == false {
				m, _ := s.get("minItems")
				if mn, ok := m.(json.Number); ok {
					if x, _ := mn.Int64(); int(x) > len(pi.([]any)) {
						s.set("minItems", num(len(pi.([]any))))
					}
				}
			}
		}
	case 18:
		s = g.o("anyOf", []any{g.schema(depth + 1), g.schema(depth + 1)})
	case 19:
		// oneOf with exclusive branches: distinct types, or a tagged union
		if r.IntN(2) == 0 {
			s = g.o("oneOf", []any{g.o("type", "string", "maxLength", num(3)), g.o("type", "integer"), g.o("type", "null")})
		} else {
			mk := func(tag string) any {
				return g.o("type", "object", "properties", g.o("kind", g.o("const", tag), "v", g.schema(depth+1)), "required", []any{"kind"})
			}
			s = g.o("oneOf", []any{mk("a"), mk("b")})
		}
	case 20:
		s = g.o("allOf", []any{
			g.o("type", "object", "properties", g.o("p", g.schema(depth+1)), "required", []any{"p"}),
			g.o("properties", g.o("q", g.schema(depth+1))),
		})
	case 21:
		// recursion through $defs: a tree
		name := fmt.Sprintf("tree%d", g.ndefs)
		g.ndefs++
		g.defs.set(name, g.o("type", "object",
			"properties", g.o("v", g.o("type", "integer"), "kids", g.o("type", "array", "items", g.o("$ref", "#/$defs/"+name), "maxItems", num(2))),
			"required", []any{"v"}, "additionalProperties", false))
		s = g.o("$ref", "#/$defs/"+name)
	}
	if _, isRef := s.get("$ref"); !isRef {
		g.annotate(s)
	}
	return s
}

// genSchema returns schema i of the seeded sequence as JSON text.
func genSchema(seed uint64, cov map[string]int) []byte {
	g := &schemaGen{rng: rand.New(rand.NewPCG(seed, 99)), coverage: cov, defs: newObj(), seed: seed}
	s := g.schema(0)
	root, ok := s.(*obj)
	if !ok || g.defs.keys != nil {
		wrap := newObj()
		if ok {
			for _, k := range root.keys {
				wrap.set(k, root.vals[k])
			}
		}
		if !ok {
			wrap.set("description", "any")
		}
		if len(g.defs.keys) > 0 {
			wrap.set("$defs", g.defs)
			cov["$defs"]++
		}
		root = wrap
	}
	if seed%5 == 0 {
		root.set("$schema", "https://json-schema.org/draft/2020-12/schema")
	}
	return []byte(encodeJSON(root))
}
