package grammar

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// JSON Schema → grammar.
//
// Supported (draft 2020-12 semantics): type (a name or a list), enum,
// const, properties, required, additionalProperties, minProperties,
// maxProperties, anyOf, oneOf (when the branches provably exclude each
// other: different types, or a required property whose const/enum values
// differ), allOf (merged when the members do not conflict), items,
// prefixItems, minItems, maxItems, uniqueItems (see below), minLength,
// maxLength, pattern (the FromRegex subset; unanchored as JSON Schema
// says), format (date, time, date-time, duration, email, hostname, ipv4,
// ipv6, uri, uuid: schema_formats.go), minimum/maximum/exclusiveMinimum/
// exclusiveMaximum (any decimal; the draft-4 boolean exclusive forms too)
// and multipleOf (schema_numbers.go), $ref to "#", "#/$defs/…" and
// "#/definitions/…" including recursion. Draft-07's tuple spelling is
// read too: items as an array of schemas is prefixItems, and
// additionalItems beside it is the items after the prefix (beside an
// items schema, or none, additionalItems has no effect, as in draft-07).
// format, pattern and the length
// bounds combine (their languages are intersected, nfa.go). Annotations
// are accepted and change nothing. Any other keyword is an error naming
// it: a schema is never enforced partially.
//
// The grammar generates a subset of the valid instances, never more:
// properties appear in declaration order and only declared ones (when
// properties are declared, additionalProperties adds none); whitespace is
// at most one space after ':' and ','; numbers under bounds or multipleOf
// carry no exponent; formats are the bounded subsets schema_formats.go
// lists. Where no grammar can be exact the rule is: enforce a stricter
// subset when one keeps the outputs useful, refuse otherwise.
// uniqueItems on an array of listed scalars (enum, const, boolean, null)
// writes each value at most once in the listed order; on any other array
// that may hold two or more elements it is refused. minProperties above 1
// on an object without declared properties is refused (free keys may
// repeat, and a repeated key is one property).

// maxDigits bounds the integer part and the fraction of every number the
// grammar writes, as llama.cpp's json-schema-to-grammar does (integral
// part [0] | [1-9] [0-9]{0,15}, decimal part [0-9]{1,16}): an output
// cannot spend its budget on one endless number, and 16 digits hold every
// integer a float64 represents exactly.
const maxDigits = 16

var annotationKeywords = map[string]bool{
	"title": true, "description": true, "$schema": true, "$id": true, "$comment": true,
	"default": true, "examples": true, "deprecated": true, "readOnly": true, "writeOnly": true,
	"$defs": true, "definitions": true,
}

var schemaKeywords = map[string]bool{
	"type": true, "enum": true, "const": true, "properties": true, "required": true,
	"additionalProperties": true, "anyOf": true, "oneOf": true, "allOf": true, "items": true,
	"prefixItems": true, "minItems": true, "maxItems": true, "minLength": true, "maxLength": true,
	"pattern": true, "format": true, "minimum": true, "maximum": true, "exclusiveMinimum": true,
	"exclusiveMaximum": true, "$ref": true, "multipleOf": true, "minProperties": true, "maxProperties": true,
	"uniqueItems": true,
}

// draft07Keywords are the keywords of earlier drafts read beside
// schemaKeywords (the property test's generator speaks 2020-12; these are
// checked by TestDraft07TuplesSameGrammar).
var draft07Keywords = map[string]bool{"additionalItems": true}

// SchemaError is a schema the compiler cannot enforce; Keyword names the
// offending keyword and Path where it sits (a JSON pointer).
type SchemaError struct {
	Path, Keyword, Msg string
}

func (e *SchemaError) Error() string {
	p := e.Path
	if p == "" {
		p = "#"
	}
	if e.Keyword == "" {
		return fmt.Sprintf("grammar: json schema at %s: %s", p, e.Msg)
	}
	return fmt.Sprintf("grammar: json schema at %s: keyword %q: %s", p, e.Keyword, e.Msg)
}

func serr(path, kw, format string, a ...any) error {
	return &SchemaError{Path: path, Keyword: kw, Msg: fmt.Sprintf(format, a...)}
}

type schemaCompiler struct {
	b     *Budget
	g     *Grammar
	root  any
	refs  map[string]string // $ref → rule name
	base  map[string]bool   // shared rules added
	n     int
	depth int
	// inlining holds the references allOf is inlining on the current
	// path: one met again is a cycle that would inline forever.
	inlining map[string]bool
	// memo holds the expression compiled for each schema object of the
	// document: allOf inlines a referenced schema's keywords, so the same
	// subschemas come back wherever it is inlined; the second time they
	// become a named rule that every later use references, so the work
	// and the grammar stay linear in the document (two inlinings per
	// level of a chain of definitions were 2^depth compiles).
	memo map[*obj]*memoExpr
}

type memoExpr struct {
	e     expr
	named bool
}

// FromJSONSchema compiles a JSON Schema (JSON text) into a grammar whose
// outputs are compact-ish JSON instances that validate against it, under
// the default limits.
func FromJSONSchema(schema []byte) (*Grammar, error) { return defaultBudget().FromJSONSchema(schema) }

// FromJSONSchema is FromJSONSchema within b: every schema visited, enum
// value and merged member is a step, so references that fan out (allOf
// inlines its members) cannot grow the work past b's limits.
func (b *Budget) FromJSONSchema(schema []byte) (*Grammar, error) {
	b.stage = "json schema"
	if err := b.alloc(0, int64(len(schema))*4); err != nil { // the decoded tree
		return nil, err
	}
	root, err := decodeOrdered(schema)
	if err != nil {
		return nil, fmt.Errorf("grammar: json schema is not valid JSON: %v", err)
	}
	c := &schemaCompiler{b: b, g: &Grammar{root: "root"}, root: root, refs: map[string]string{}, base: map[string]bool{}, inlining: map[string]bool{}, memo: map[*obj]*memoExpr{}}
	e, err := c.schema(root, "")
	if err != nil {
		return nil, err
	}
	if err := c.g.addRule("root", e); err != nil {
		return nil, err
	}
	return c.g, c.g.checkIn(c.b)
}

// JSONObject is the grammar of any JSON object (response_format
// json_object).
func JSONObject() *Grammar {
	c := &schemaCompiler{b: defaultBudget(), g: &Grammar{root: "root"}, refs: map[string]string{}, base: map[string]bool{}}
	c.g.addRule("root", c.baseRule("object"))
	return c.g
}

// baseRule defines (once) and references one of the generic JSON rules.
func (c *schemaCompiler) baseRule(name string) expr {
	if c.base[name] {
		return ref(name)
	}
	c.base[name] = true
	sp := opt(lit(" "))
	hex := class(cpRange{'0', '9'}, cpRange{'a', 'f'}, cpRange{'A', 'F'})
	var e expr
	switch name {
	case "value":
		e = alt(c.baseRule("object"), c.baseRule("array"), c.baseRule("string"), c.baseRule("number"), lit("true"), lit("false"), lit("null"))
	case "object":
		kv := seq(c.baseRule("string"), lit(":"), sp, c.baseRule("value"))
		e = seq(lit("{"), opt(seq(kv, star(seq(lit(","), sp, kv)))), lit("}"))
	case "array":
		v := c.baseRule("value")
		e = seq(lit("["), opt(seq(v, star(seq(lit(","), sp, v)))), lit("]"))
	case "string":
		e = seq(lit(`"`), star(c.baseRule("char")), lit(`"`))
	case "char":
		// one decoded code point: raw, or an escape (\u excluding surrogates,
		// so that lengths count code points exactly)
		e = alt(classExpr{negate(normRanges([]cpRange{{0, 0x1F}, {'"', '"'}, {'\\', '\\'}}))},
			seq(lit(`\`), alt(class(cpRange{'"', '"'}, cpRange{'\\', '\\'}, cpRange{'/', '/'}, cpRange{'b', 'b'}, cpRange{'f', 'f'}, cpRange{'n', 'n'}, cpRange{'r', 'r'}, cpRange{'t', 't'}),
				seq(lit("u"), alt(seq(class(cpRange{'0', '9'}, cpRange{'a', 'c'}, cpRange{'A', 'C'}, cpRange{'e', 'f'}, cpRange{'E', 'F'}), hex, hex, hex),
					seq(class(cpRange{'d', 'd'}, cpRange{'D', 'D'}), class(cpRange{'0', '7'}), hex, hex))))))
	case "number":
		e = seq(c.baseRule("integer"), opt(seq(lit("."), rep(class(cpRange{'0', '9'}), 1, maxDigits))),
			opt(seq(class(cpRange{'e', 'e'}, cpRange{'E', 'E'}), opt(class(cpRange{'+', '+'}, cpRange{'-', '-'})), rep(class(cpRange{'0', '9'}), 1, 2))))
	case "integer":
		e = seq(opt(lit("-")), alt(lit("0"), seq(class(cpRange{'1', '9'}), rep(class(cpRange{'0', '9'}), 0, maxDigits-1))))
	}
	c.g.addRule(name, e)
	return ref(name)
}

// share names e as a rule of its own when the caller uses it more than
// once, so the expression stays a tree of linear size: without it an
// array of arrays (items written twice, for the first element and the
// rest) doubles per level of nesting.
func (c *schemaCompiler) share(e expr) (expr, error) {
	switch e.(type) {
	case refExpr, litExpr, classExpr:
		return e, nil
	}
	name := c.newName("item")
	if err := c.g.addRule(name, e); err != nil {
		return nil, err
	}
	return ref(name), nil
}

func (c *schemaCompiler) newName(prefix string) string {
	c.n++
	return fmt.Sprintf("%s-%d", prefix, c.n)
}

// deref resolves a $ref-only chain to the target schema.
func (c *schemaCompiler) resolve(r, path string) (any, error) {
	if r == "#" {
		return c.root, nil
	}
	if !strings.HasPrefix(r, "#/") {
		return nil, serr(path, "$ref", "only local references (#, #/$defs/..., #/definitions/...) are supported, got %q", r)
	}
	cur := c.root
	for _, tok := range strings.Split(r[2:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := cur.(type) {
		case *obj:
			v, ok := x.get(tok)
			if !ok {
				return nil, serr(path, "$ref", "reference %q does not resolve", r)
			}
			cur = v
		case []any: // an array element: a decimal index (RFC 6901)
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) || strconv.Itoa(i) != tok {
				return nil, serr(path, "$ref", "reference %q does not resolve", r)
			}
			cur = x[i]
		default:
			return nil, serr(path, "$ref", "reference %q does not resolve", r)
		}
	}
	return cur, nil
}

func (c *schemaCompiler) ref(r, path string) (expr, error) {
	if name, ok := c.refs[r]; ok {
		return ref(name), nil
	}
	target, err := c.resolve(r, path)
	if err != nil {
		return nil, err
	}
	name := c.newName("ref")
	c.refs[r] = name
	e, err := c.schema(target, strings.TrimPrefix(r, "#"))
	if err != nil {
		return nil, err
	}
	if err := c.g.addRule(name, e); err != nil {
		return nil, err
	}
	return ref(name), nil
}

func (c *schemaCompiler) schema(s any, path string) (expr, error) {
	c.depth++
	defer func() { c.depth-- }()
	if err := c.b.step(1); err != nil {
		return nil, err
	}
	// What one schema builds: its expressions, a rule or two, the paths.
	if err := c.b.alloc(1, 8*exprBytes); err != nil {
		return nil, err
	}
	if c.depth > 200 {
		return nil, serr(path, "", "nested too deeply")
	}
	switch s := s.(type) {
	case bool:
		if !s {
			return nil, serr(path, "", "schema false matches nothing")
		}
		return c.baseRule("value"), nil
	case *obj:
		if m, ok := c.memo[s]; ok {
			if !m.named {
				e, err := c.share(m.e)
				if err != nil {
					return nil, err
				}
				m.e, m.named = e, true
			}
			return m.e, nil
		}
		e, err := c.object(s, path)
		if err == nil && c.memo != nil {
			c.memo[s] = &memoExpr{e: e}
		}
		return e, err
	}
	return nil, serr(path, "", "a schema must be an object or a boolean, got %s", jsonType(s))
}

func (c *schemaCompiler) object(s *obj, path string) (expr, error) {
	for _, k := range s.keys {
		if !schemaKeywords[k] && !annotationKeywords[k] && !draft07Keywords[k] {
			return nil, serr(path, k, "unsupported keyword (it cannot be enforced, so the schema is refused rather than ignored)")
		}
	}
	constraining := func(except ...string) string {
		for _, k := range s.keys {
			if !annotationKeywords[k] && !slices.Contains(except, k) {
				return k
			}
		}
		return ""
	}
	if r, ok := s.get("$ref"); ok {
		rs, ok := r.(string)
		if !ok {
			return nil, serr(path, "$ref", "must be a string")
		}
		if k := constraining("$ref"); k != "" {
			return nil, serr(path, k, "keywords beside $ref are not supported")
		}
		return c.ref(rs, path)
	}
	if all, ok := s.get("allOf"); ok {
		var inlined []string
		merged, err := c.mergeAllOf(s, all, path, &inlined)
		if err != nil {
			return nil, err
		}
		// The merged schema holds the inlined references' keywords: while
		// it compiles, meeting one of them again is a cycle.
		var added []string
		for _, r := range inlined {
			if !c.inlining[r] {
				c.inlining[r] = true
				added = append(added, r)
			}
		}
		defer func() {
			for _, r := range added {
				delete(c.inlining, r)
			}
		}()
		return c.object(merged, path)
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if v, ok := s.get(kw); ok {
			if k := constraining(kw); k != "" {
				return nil, serr(path, k, "keywords beside %s are not supported", kw)
			}
			branches, ok := v.([]any)
			if !ok || len(branches) == 0 {
				return nil, serr(path, kw, "must be a non-empty array")
			}
			if kw == "oneOf" {
				if err := c.disjoint(branches, path); err != nil {
					return nil, err
				}
			}
			var alts []expr
			for i, b := range branches {
				e, err := c.schema(b, fmt.Sprintf("%s/%s/%d", path, kw, i))
				if err != nil {
					return nil, err
				}
				alts = append(alts, e)
			}
			return alt(alts...), nil
		}
	}
	types, err := schemaTypes(s, path)
	if err != nil {
		return nil, err
	}
	if v, ok := s.get("const"); ok {
		if k := constraining("const", "type"); k != "" {
			return nil, serr(path, k, "not supported together with const")
		}
		return c.enum([]any{v}, types, path, "const")
	}
	if v, ok := s.get("enum"); ok {
		if k := constraining("enum", "type"); k != "" {
			return nil, serr(path, k, "not supported together with enum")
		}
		vals, ok := v.([]any)
		if !ok || len(vals) == 0 {
			return nil, serr(path, "enum", "must be a non-empty array")
		}
		return c.enum(vals, types, path, "enum")
	}
	var alts []expr
	for _, t := range types {
		var e expr
		var err error
		switch t {
		case "null":
			e = lit("null")
		case "boolean":
			e = alt(lit("true"), lit("false"))
		case "string":
			e, err = c.stringSchema(s, path)
		case "integer", "number":
			e, err = c.numberSchema(s, path, t == "integer")
		case "object":
			e, err = c.objectSchema(s, path)
		case "array":
			e, err = c.arraySchema(s, path)
		}
		if err != nil {
			return nil, err
		}
		alts = append(alts, e)
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return alt(alts...), nil
}

var allTypes = []string{"null", "boolean", "object", "array", "number", "string"}

// schemaTypes lists the types s allows ("integer" dropped when "number" is
// present, since numbers cover integers).
func schemaTypes(s *obj, path string) ([]string, error) {
	v, ok := s.get("type")
	if !ok {
		return allTypes, nil
	}
	var names []string
	switch v := v.(type) {
	case string:
		names = []string{v}
	case []any:
		for _, x := range v {
			n, ok := x.(string)
			if !ok {
				return nil, serr(path, "type", "entries must be strings")
			}
			names = append(names, n)
		}
	default:
		return nil, serr(path, "type", "must be a string or an array of strings")
	}
	if len(names) == 0 {
		return nil, serr(path, "type", "empty type list matches nothing")
	}
	var out []string
	for _, n := range names {
		if n != "integer" && !slices.Contains(allTypes, n) {
			return nil, serr(path, "type", "unknown type %q", n)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if slices.Contains(out, "number") {
		out = slices.DeleteFunc(out, func(x string) bool { return x == "integer" })
	}
	return out, nil
}

func typeAllows(types []string, t string) bool {
	return slices.Contains(types, t) || t == "integer" && slices.Contains(types, "number")
}

func (c *schemaCompiler) enum(vals []any, types []string, path, kw string) (expr, error) {
	var alts []expr
	seen := map[string]bool{}
	if err := c.b.step(int64(len(vals))); err != nil {
		return nil, err
	}
	for _, v := range vals {
		if !typeAllows(types, jsonType(v)) {
			continue
		}
		j := encodeJSON(v)
		if !seen[j] {
			seen[j] = true
			alts = append(alts, lit(j))
		}
	}
	if len(alts) == 0 {
		return nil, serr(path, kw, "no value has an allowed type")
	}
	return alt(alts...), nil
}

func nonNegInt(s *obj, kw, path string) (int, bool, error) {
	v, ok := s.get(kw)
	if !ok {
		return 0, false, nil
	}
	n, isNum := v.(json.Number)
	if !isNum {
		return 0, false, serr(path, kw, "must be a non-negative integer")
	}
	i, err := n.Int64()
	if err != nil || i < 0 {
		return 0, false, serr(path, kw, "must be a non-negative integer")
	}
	if i > 1000 {
		return 0, false, serr(path, kw, "%d is larger than the supported 1000", i)
	}
	return int(i), true, nil
}

// countBounds reads a pair of count keywords (minLength/maxLength,
// minItems/maxItems, minProperties/maxProperties), the min first: lo is 0
// when the min is absent (hasLo false), hi is −1 when the max is absent
// (no upper bound).
func countBounds(s *obj, minKw, maxKw, path string) (lo int, hasLo bool, hi int, err error) {
	lo, hasLo, err = nonNegInt(s, minKw, path)
	if err != nil {
		return 0, false, 0, err
	}
	hi, hasHi, err := nonNegInt(s, maxKw, path)
	if err != nil {
		return 0, false, 0, err
	}
	if !hasHi {
		hi = -1
	}
	return lo, hasLo, hi, nil
}

func (c *schemaCompiler) stringSchema(s *obj, path string) (expr, error) {
	s = dropFormatCoveredLengths(s)
	lo, hasLo, hi, err := countBounds(s, "minLength", "maxLength", path)
	if err != nil {
		return nil, err
	}
	if hi >= 0 && lo > hi {
		return nil, serr(path, "minLength", "minLength %d > maxLength %d", lo, hi)
	}
	// Each of format, pattern and the length bounds is a regular language
	// over code points; one alone is written as it is, two or three are
	// intersected (nfa.go).
	var parts []expr
	if fv, ok := s.get("format"); ok {
		f, _ := fv.(string)
		e, ok := formatExpr(f)
		if !ok {
			return nil, serr(path, "format", "format %q is not supported (date, time, date-time, duration, email, hostname, ipv4, ipv6, uri, uuid are)", f)
		}
		parts = append(parts, e)
	}
	if pat, ok := s.get("pattern"); ok {
		ps, ok := pat.(string)
		if !ok {
			return nil, serr(path, "pattern", "must be a string")
		}
		a, err := parseRegex(ps)
		if err != nil {
			return nil, serr(path, "pattern", "%v", strings.TrimPrefix(err.Error(), "grammar: "))
		}
		any := star(classExpr{[]cpRange{{0, maxRune}}})
		e := a.e
		if !a.anchorStart {
			e = seq(any, e)
		}
		if !a.anchorEnd {
			e = seq(e, any)
		}
		parts = append(parts, e)
	}
	switch {
	case len(parts) == 0:
		return seq(lit(`"`), rep(c.baseRule("char"), lo, hi), lit(`"`)), nil
	case len(parts) == 1 && !hasLo && hi < 0:
		return seq(lit(`"`), jsonify(parts[0]), lit(`"`)), nil
	}
	if hasLo || hi >= 0 {
		parts = append(parts, rep(classExpr{[]cpRange{{0, maxRune}}}, lo, hi))
	}
	a, err := c.intersectAll(parts)
	if err != nil {
		return nil, err
	}
	if a == nil {
		return nil, serr(path, "", "no string satisfies format, pattern and length bounds together")
	}
	e, err := c.rules(a, jsonClass)
	if err != nil {
		return nil, err
	}
	return seq(lit(`"`), e, lit(`"`)), nil
}

// jsonify maps an expression over decoded characters to one over their
// JSON string encoding.
func jsonify(e expr) expr {
	switch e := e.(type) {
	case litExpr:
		var items []expr
		for _, r := range e.s {
			items = append(items, jsonClass([]cpRange{{r, r}}))
		}
		return seq(items...)
	case classExpr:
		return jsonClass(e.r)
	case seqExpr:
		out := make([]expr, len(e.items))
		for i, x := range e.items {
			out[i] = jsonify(x)
		}
		return seqExpr{out}
	case altExpr:
		out := make([]expr, len(e.alts))
		for i, x := range e.alts {
			out[i] = jsonify(x)
		}
		return altExpr{out}
	case repExpr:
		return repExpr{jsonify(e.e), e.min, e.max}
	}
	return e
}

func intersect(a, b []cpRange) []cpRange {
	return negate(normRanges(append(negate(a), negate(b)...)))
}

func jsonClass(r []cpRange) expr {
	var alts []expr
	if raw := intersect(r, negate(normRanges([]cpRange{{0, 0x1F}, {'"', '"'}, {'\\', '\\'}}))); len(raw) > 0 {
		alts = append(alts, classExpr{raw})
	}
	for _, x := range intersect(r, []cpRange{{0, 0x1F}, {'"', '"'}, {'\\', '\\'}}) {
		for c := x.lo; c <= x.hi; c++ {
			esc := map[rune]string{'"': `\"`, '\\': `\\`, '\n': `\n`, '\r': `\r`, '\t': `\t`, '\b': `\b`, '\f': `\f`}[c]
			if esc == "" {
				esc = fmt.Sprintf(`\u%04x`, c)
			}
			alts = append(alts, lit(esc))
		}
	}
	if len(alts) == 1 {
		return alts[0]
	}
	return alt(alts...)
}

func digits(a, b rune) expr { return class(cpRange{a, b}) }

func (c *schemaCompiler) objectSchema(s *obj, path string) (expr, error) {
	sp := opt(lit(" "))
	props := newObj()
	if v, ok := s.get("properties"); ok {
		o, ok := v.(*obj)
		if !ok {
			return nil, serr(path, "properties", "must be an object")
		}
		props = o
	}
	var required []string
	if v, ok := s.get("required"); ok {
		a, ok := v.([]any)
		if !ok {
			return nil, serr(path, "required", "must be an array of strings")
		}
		for _, x := range a {
			n, ok := x.(string)
			if !ok {
				return nil, serr(path, "required", "must be an array of strings")
			}
			required = append(required, n)
		}
	}
	addl, hasAddl := s.get("additionalProperties")
	if hasAddl {
		switch addl.(type) {
		case bool, *obj:
		default:
			return nil, serr(path, "additionalProperties", "must be a boolean or a schema")
		}
	}
	// Required names not declared: they must still appear.
	names := slices.Clone(props.keys)
	schemas := map[string]any{}
	for _, k := range props.keys {
		schemas[k] = props.vals[k]
	}
	for _, r := range required {
		if _, ok := schemas[r]; ok {
			continue
		}
		if addl == false {
			return nil, serr(path, "required", "property %q is required but additionalProperties is false", r)
		}
		names = append(names, r)
		if hasAddl {
			schemas[r] = addl
		} else {
			schemas[r] = true
		}
	}
	minP, _, maxP, err := countBounds(s, "minProperties", "maxProperties", path)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		// A map: any keys, values of additionalProperties.
		if addl == false || maxP == 0 {
			if minP > 0 {
				return nil, serr(path, "minProperties", "no property may appear, so minProperties %d cannot be met", minP)
			}
			return lit("{}"), nil
		}
		if minP > 1 {
			// Keys the model writes freely may repeat, and a repeated key is
			// one property: no grammar over free keys can promise two.
			return nil, serr(path, "minProperties", "%d distinct keys cannot be enforced on an object without declared properties (at most 1 is)", minP)
		}
		val := c.baseRule("value")
		if o, ok := addl.(*obj); ok {
			var err error
			if val, err = c.schema(o, path+"/additionalProperties"); err == nil {
				val, err = c.share(val)
			}
			if err != nil {
				return nil, err
			}
		}
		kv := seq(c.baseRule("string"), lit(":"), sp, val)
		more := star(seq(lit(","), sp, kv))
		if maxP > 0 {
			more = rep(seq(lit(","), sp, kv), 0, maxP-1)
		}
		if minP == 1 {
			return seq(lit("{"), kv, more, lit("}")), nil
		}
		return seq(lit("{"), opt(seq(kv, more)), lit("}")), nil
	}
	type prop struct {
		kv  expr
		req bool
	}
	var ps []prop
	isRequired := map[string]bool{}
	for _, r := range required {
		isRequired[r] = true
	}
	for _, n := range names {
		isReq := isRequired[n]
		if schemas[n] == false {
			if isReq {
				return nil, serr(path+"/properties/"+n, "", "property %q is required but its schema is false", n)
			}
			continue
		}
		v, err := c.schema(schemas[n], path+"/properties/"+escapePointer(n))
		if err == nil {
			v, err = c.share(v) // written twice: as the first property and after a comma
		}
		if err != nil {
			return nil, err
		}
		ps = append(ps, prop{seq(lit(encodeJSON(n)), lit(":"), sp, v), isReq})
	}
	var items []expr
	var req []bool
	for _, p := range ps {
		items = append(items, p.kv)
		req = append(req, p.req)
	}
	e, err := c.subsetRules(items, req, minP, maxP, seq(lit(","), sp))
	if err != nil {
		return nil, err
	}
	if e == nil {
		return nil, serr(path, "minProperties", "no object with the declared properties (%d, %d required) has between %d and %d of them (additional properties are never written beside declared ones)", len(ps), len(required), minP, maxP)
	}
	return seq(lit("{"), e, lit("}")), nil
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func (c *schemaCompiler) arraySchema(s *obj, path string) (expr, error) {
	sp := opt(lit(" "))
	// The prefix and the schema of the elements after it: prefixItems and
	// items, or draft-07's items array and additionalItems.
	preKw, restKw := "prefixItems", "items"
	if v, ok := s.get("items"); ok {
		if _, isArr := v.([]any); isArr {
			if _, both := s.get("prefixItems"); both {
				return nil, serr(path, "items", "an array of schemas (draft-07's tuple) cannot stand beside prefixItems")
			}
			preKw, restKw = "items", "additionalItems"
		}
	}
	var prefix []expr
	closed := false // a false in the prefix: no instance reaches that element
	v, hasPrefix := s.get(preKw)
	if hasPrefix {
		a, ok := v.([]any)
		if !ok {
			return nil, serr(path, preKw, "must be an array of schemas")
		}
		for i, x := range a {
			if x == false {
				closed = true
				break
			}
			e, err := c.schema(x, fmt.Sprintf("%s/%s/%d", path, preKw, i))
			if err != nil {
				return nil, err
			}
			prefix = append(prefix, e)
		}
	}
	var items expr = c.baseRule("value")
	if v, ok := s.get(restKw); ok {
		switch v := v.(type) {
		case bool:
			if !v {
				items = nil
			}
		case *obj:
			e, err := c.schema(v, path+"/"+restKw)
			if err == nil {
				e, err = c.share(e)
			}
			if err != nil {
				return nil, err
			}
			items = e
		default:
			return nil, serr(path, restKw, "must be a schema or an array of schemas")
		}
	}
	lo, _, hi, err := countBounds(s, "minItems", "maxItems", path)
	if err != nil {
		return nil, err
	}
	if (items == nil || closed) && (hi < 0 || hi > len(prefix)) {
		hi = len(prefix)
	}
	if hi >= 0 && lo > hi {
		return nil, serr(path, "minItems", "minItems %d exceeds the most elements the schema allows (%d)", lo, hi)
	}
	if u, ok := s.get("uniqueItems"); ok {
		ub, isBool := u.(bool)
		if !isBool {
			return nil, serr(path, "uniqueItems", "must be a boolean")
		}
		if ub && (hi < 0 || hi > 1) {
			return c.uniqueArray(s, hasPrefix, lo, hi, path)
		}
	}
	elem := func(i int) expr {
		if i < len(prefix) {
			return prefix[i]
		}
		return items
	}
	var tail func(i int) expr
	tail = func(i int) expr {
		if hi >= 0 && i >= hi {
			return seq()
		}
		sep := seq()
		if i > 0 {
			sep = seq(lit(","), sp)
		}
		if i >= len(prefix) && i >= lo {
			more := -1
			if hi >= 0 {
				more = hi - i
			}
			if i == 0 {
				return opt(seq(items, rep(seq(lit(","), sp, items), 0, max(more-1, -1))))
			}
			return rep(seq(sep, items), 0, more)
		}
		take := seq(sep, elem(i), tail(i+1))
		if i < lo {
			return take
		}
		return opt(take)
	}
	return seq(lit("["), tail(0), lit("]")), nil
}

// mergeAllOf merges s's allOf members (and s's other keywords) into one
// schema when they do not conflict. Members that are references are
// inlined (their keywords merged here) and appended to *inlined. A
// reference met again while it is being inlined — further down its own
// member's chain, or in the schema merged from it (the caller keeps
// *inlined in c.inlining while compiling that) — is a cycle
// (`{"allOf":[{"$ref":"#"}]}`) that inlining would follow forever without
// writing a byte of output, so it is refused like the left recursion it
// is. Two members naming the same reference side by side are no cycle.
func (c *schemaCompiler) mergeAllOf(s *obj, all any, path string, inlined *[]string) (*obj, error) {
	members, ok := all.([]any)
	if !ok || len(members) == 0 {
		return nil, serr(path, "allOf", "must be a non-empty array")
	}
	out := newObj()
	for _, k := range s.keys {
		if k != "allOf" {
			out.set(k, s.vals[k])
		}
	}
	var parts []*obj
	parts = append(parts, out)
	for i, m := range members {
		p := fmt.Sprintf("%s/allOf/%d", path, i)
		var chain []string // references this member has inlined
		for depth := 0; ; depth++ {
			if b, ok := m.(bool); ok && b {
				m = newObj()
			}
			o, ok := m.(*obj)
			if !ok {
				return nil, serr(p, "allOf", "member must be a schema object")
			}
			if err := c.b.step(1); err != nil {
				return nil, err
			}
			if r, ok := o.get("$ref"); ok && len(o.keys) == 1 && depth < 50 {
				rs, _ := r.(string)
				if c.inlining[rs] || slices.Contains(chain, rs) {
					return nil, serr(p, "allOf", "$ref %q leads back into an allOf that is inlining it: the cycle makes no progress (left recursion), so the schema is refused", rs)
				}
				t, err := c.resolve(rs, p)
				if err != nil {
					return nil, err
				}
				chain = append(chain, rs)
				m = t
				continue
			}
			if inner, ok := o.get("allOf"); ok {
				var added []string
				for _, r := range chain {
					if !c.inlining[r] {
						c.inlining[r] = true
						added = append(added, r)
					}
				}
				mo, err := c.mergeAllOf(o, inner, p, &chain)
				for _, r := range added {
					delete(c.inlining, r)
				}
				if err != nil {
					return nil, err
				}
				o = mo
			}
			parts = append(parts, o)
			*inlined = append(*inlined, chain...)
			break
		}
	}
	merged := newObj()
	for _, part := range parts[1:] {
		if a, ok := part.get("additionalProperties"); ok && a == false {
			pr, _ := part.get("properties")
			declared, _ := pr.(*obj)
			for _, other := range parts {
				op, _ := other.get("properties")
				oo, _ := op.(*obj)
				if oo == nil {
					continue
				}
				for _, k := range oo.keys {
					if _, ok := declared.get(k); !ok {
						return nil, serr(path, "allOf", "property %q is declared by one member but forbidden by another's additionalProperties: false", k)
					}
				}
			}
		}
	}
	for _, part := range parts {
		for _, k := range part.keys {
			v := part.vals[k]
			old, exists := merged.get(k)
			if !exists || annotationKeywords[k] {
				if !exists {
					merged.set(k, v)
				}
				continue
			}
			switch k {
			case "properties":
				po, ok1 := old.(*obj)
				pn, ok2 := v.(*obj)
				if !ok1 || !ok2 {
					return nil, serr(path, "properties", "must be an object")
				}
				m := newObj()
				for _, pk := range po.keys {
					m.set(pk, po.vals[pk])
				}
				for _, pk := range pn.keys {
					if ov, ok := m.get(pk); ok && c.enc(ov) != c.enc(pn.vals[pk]) {
						return nil, serr(path, "allOf", "members give property %q different schemas", pk)
					}
					m.set(pk, pn.vals[pk])
				}
				merged.set(k, m)
			case "required":
				a, _ := old.([]any)
				b, _ := v.([]any)
				u := slices.Clone(a)
				has := map[any]bool{}
				for _, x := range a {
					if _, ok := x.(string); ok {
						has[x] = true
					}
				}
				for _, x := range b {
					if _, ok := x.(string); ok && !has[x] {
						has[x] = true
						u = append(u, x)
					} else if !ok {
						u = append(u, x) // not a name: objectSchema reports it
					}
				}
				merged.set(k, u)
			default:
				if c.enc(old) != c.enc(v) {
					return nil, serr(path, k, "allOf members disagree on %s (merging is only supported when they do not conflict)", k)
				}
			}
		}
	}
	return merged, nil
}

// enc is encodeJSON counted against the budget (a step per 64 bytes).
func (c *schemaCompiler) enc(v any) string {
	j := encodeJSON(v)
	c.b.step(int64(len(j)/64 + 1))
	return j
}

// typesOf approximates the set of JSON types a schema can produce (nil:
// unknown/any) for the oneOf exclusivity check.
func (c *schemaCompiler) typesOf(s any, depth int) []string {
	o, ok := s.(*obj)
	if !ok || depth > 20 {
		return nil
	}
	if r, ok := o.get("$ref"); ok {
		rs, _ := r.(string)
		t, err := c.resolve(rs, "")
		if err != nil {
			return nil
		}
		return c.typesOf(t, depth+1)
	}
	var vals []any
	if v, ok := o.get("const"); ok {
		vals = []any{v}
	} else if v, ok := o.get("enum"); ok {
		vals, _ = v.([]any)
	}
	if vals != nil {
		var ts []string
		for _, v := range vals {
			t := jsonType(v)
			if t == "integer" {
				t = "number"
			}
			if !slices.Contains(ts, t) {
				ts = append(ts, t)
			}
		}
		return ts
	}
	if _, ok := o.get("type"); ok {
		ts, err := schemaTypes(o, "")
		if err != nil {
			return nil
		}
		for i, t := range ts {
			if t == "integer" {
				ts[i] = "number"
			}
		}
		return ts
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if v, ok := o.get(kw); ok {
			bs, _ := v.([]any)
			var ts []string
			for _, b := range bs {
				bt := c.typesOf(b, depth+1)
				if bt == nil {
					return nil
				}
				for _, t := range bt {
					if !slices.Contains(ts, t) {
						ts = append(ts, t)
					}
				}
			}
			return ts
		}
	}
	return nil
}

// discriminators returns, for an object branch, the canonical values each
// required property is pinned to by const/enum.
func (c *schemaCompiler) discriminators(s any) map[string][]string {
	o, ok := s.(*obj)
	if !ok {
		return nil
	}
	if r, ok := o.get("$ref"); ok {
		rs, _ := r.(string)
		t, err := c.resolve(rs, "")
		if err != nil {
			return nil
		}
		o, _ = t.(*obj)
		if o == nil {
			return nil
		}
	}
	pv, _ := o.get("properties")
	props, _ := pv.(*obj)
	rv, _ := o.get("required")
	req, _ := rv.([]any)
	out := map[string][]string{}
	for _, r := range req {
		n, _ := r.(string)
		ps, _ := props.get(n)
		po, _ := ps.(*obj)
		if po == nil {
			continue
		}
		if v, ok := po.get("const"); ok {
			out[n] = []string{encodeJSON(v)}
		} else if v, ok := po.get("enum"); ok {
			vs, _ := v.([]any)
			for _, x := range vs {
				out[n] = append(out[n], encodeJSON(x))
			}
		}
	}
	return out
}

// disjoint proves oneOf's branches exclusive, or errors.
func (c *schemaCompiler) disjoint(branches []any, path string) error {
	types := make([][]string, len(branches))
	for i, b := range branches {
		types[i] = c.typesOf(b, 0)
	}
	for i := range branches {
		for j := i + 1; j < len(branches); j++ {
			if types[i] != nil && types[j] != nil && !slices.ContainsFunc(types[i], func(t string) bool { return slices.Contains(types[j], t) }) {
				continue
			}
			onlyObj := func(ts []string) bool { return len(ts) == 1 && ts[0] == "object" }
			di, dj := c.discriminators(branches[i]), c.discriminators(branches[j])
			ok := false
			if !onlyObj(types[i]) || !onlyObj(types[j]) {
				di = nil
			}
			for p, vi := range di {
				if vj, has := dj[p]; has && !slices.ContainsFunc(vi, func(x string) bool { return slices.Contains(vj, x) }) {
					ok = true
					break
				}
			}
			if !ok {
				return serr(path, "oneOf", "branches %d and %d are not provably exclusive (different types or a required const/enum discriminator are needed; use anyOf otherwise)", i, j)
			}
		}
	}
	return nil
}
