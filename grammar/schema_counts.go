package grammar

import (
	"encoding/json"
	"fmt"
	"math/big"
)

// Counted choices: an object's declared properties under minProperties /
// maxProperties, and the elements of a uniqueItems array of listed values,
// are both "some of these items, in this order, each at most once, the
// required ones always, between lo and hi of them". subsetRules writes
// that as rules named by (next item, items written so far); the count is
// kept only up to max(lo, hi, 1), so without bounds it is the two rules
// per item (first or not) it always was, and with them O(items × bound)
// rules, each counted against the budget. Only states from which a
// complete choice is still possible get a rule, so no prefix the grammar
// allows is a dead end.

// subsetRules returns the expression for items (each written after sep
// unless it is the first) chosen in order within [lo, hi] (hi < 0: no
// upper bound); nil when no choice satisfies the bounds.
func (c *schemaCompiler) subsetRules(items []expr, req []bool, lo, hi int, sep expr) (expr, error) {
	n := len(items)
	reqLeft := make([]int, n+1) // required items in items[i:]
	for i := n - 1; i >= 0; i-- {
		reqLeft[i] = reqLeft[i+1]
		if req[i] {
			reqLeft[i]++
		}
	}
	top := max(lo, hi, 1)
	feasible := func(i, cnt int) bool {
		return (hi < 0 || cnt+reqLeft[i] <= hi) && cnt+n-i >= lo
	}
	if !feasible(0, 0) {
		return nil, nil
	}
	base := c.newName("obj")
	name := func(i, cnt int) string { return fmt.Sprintf("%s-%d-%d", base, i, cnt) }
	made := map[[2]int]bool{}
	var define func(i, cnt int) error
	define = func(i, cnt int) error {
		if made[[2]int{i, cnt}] {
			return nil
		}
		made[[2]int{i, cnt}] = true
		if err := c.b.alloc(1, 4*exprBytes); err != nil {
			return err
		}
		var e expr
		if i == n {
			e = seq()
		} else {
			var alts []expr
			if next := min(cnt+1, top); feasible(i+1, cnt+1) {
				item := items[i]
				if cnt > 0 {
					item = seq(sep, items[i])
				}
				if err := define(i+1, next); err != nil {
					return err
				}
				alts = append(alts, seq(item, ref(name(i+1, next))))
			}
			if !req[i] && feasible(i+1, cnt) {
				if err := define(i+1, cnt); err != nil {
					return err
				}
				alts = append(alts, ref(name(i+1, cnt)))
			}
			e = alt(alts...)
		}
		return c.g.addRule(name(i, cnt), e)
	}
	if err := define(0, 0); err != nil {
		return nil, err
	}
	return ref(name(0, 0)), nil
}

// uniqueValues lists the values an items schema allows when they are a
// finite list of scalars (enum, const, boolean, null), distinct as JSON
// Schema compares them (1 and 1.0 are one value); ok false otherwise.
func uniqueValues(items any) ([]any, bool) {
	o, ok := items.(*obj)
	if !ok {
		return nil, false
	}
	types := allTypes
	if _, has := o.get("type"); has {
		var err error
		if types, err = schemaTypes(o, ""); err != nil {
			return nil, false
		}
	}
	var vals []any
	for _, k := range o.keys {
		if !annotationKeywords[k] && k != "type" && k != "enum" && k != "const" {
			return nil, false
		}
	}
	if v, ok := o.get("const"); ok {
		vals = []any{v}
	} else if v, ok := o.get("enum"); ok {
		vals, _ = v.([]any)
	} else {
		for _, t := range types {
			switch t {
			case "boolean":
				vals = append(vals, true, false)
			case "null":
				vals = append(vals, nil)
			default:
				return nil, false
			}
		}
	}
	var out []any
	var seen []any
	for _, v := range vals {
		switch v.(type) {
		case *obj, []any:
			return nil, false
		}
		if !typeAllows(types, jsonType(v)) {
			continue
		}
		dup := false
		for _, s := range seen {
			if sameScalar(s, v) {
				dup = true
			}
		}
		if !dup {
			seen = append(seen, v)
			out = append(out, v)
		}
	}
	return out, len(out) > 0
}

func sameScalar(a, b any) bool {
	an, ok1 := a.(json.Number)
	bn, ok2 := b.(json.Number)
	if ok1 && ok2 {
		x, okx := new(big.Rat).SetString(string(an))
		y, oky := new(big.Rat).SetString(string(bn))
		return okx && oky && x.Cmp(y) == 0
	}
	return encodeJSON(a) == encodeJSON(b)
}

// uniqueArray is an array with uniqueItems that may hold two or more
// elements. A grammar cannot compare an element with all earlier ones,
// so only the stricter subset where uniqueness holds by construction is
// enforced: items a finite list of scalars (enum, const, boolean, null),
// each written at most once, in the listed order. Any other such array is
// refused.
func (c *schemaCompiler) uniqueArray(s *obj, hasPrefix bool, lo, hi int, path string) (expr, error) {
	items, _ := s.get("items")
	vals, ok := uniqueValues(items)
	if !ok || hasPrefix {
		return nil, serr(path, "uniqueItems", "enforced only for items that are an enum, a const, boolean or null without prefixItems (written at most once each, in the listed order) or arrays of at most one element (maxItems <= 1); other arrays cannot be kept unique by a grammar")
	}
	var es []expr
	for _, v := range vals {
		es = append(es, lit(encodeJSON(v)))
	}
	if hi < 0 || hi > len(vals) {
		hi = len(vals)
	}
	e, err := c.subsetRules(es, make([]bool, len(es)), lo, hi, seq(lit(","), opt(lit(" "))))
	if err != nil {
		return nil, err
	}
	if e == nil {
		return nil, serr(path, "minItems", "minItems %d exceeds the %d distinct values the items allow", lo, len(vals))
	}
	return seq(lit("["), e, lit("]")), nil
}
