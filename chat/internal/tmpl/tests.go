package tmpl

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// Tests: `x is name(args)`, with Jinja2's definitions (e.g. a bool is a
// number but not an integer; a dict is a sequence; Undefined is iterable).

type testFn func(r *renderer, x Value, args []Value) (bool, error)

var tests map[string]testFn

func init() {
	cmpTest := func(op string) testFn {
		return func(r *renderer, x Value, args []Value) (bool, error) {
			if len(args) != 1 {
				return false, fmt.Errorf("test '%s' takes one argument", op)
			}
			switch op {
			case "==":
				return r.equal(x, args[0]), nil
			case "!=":
				return !r.equal(x, args[0]), nil
			case "in":
				return r.contains(0, args[0], x)
			}
			c, ok := r.compare(x, args[0])
			if !ok {
				return false, fmt.Errorf("'%s' not supported between instances of '%s' and '%s'", op, typeName(x), typeName(args[0]))
			}
			switch op {
			case "<":
				return c < 0, nil
			case "<=":
				return c <= 0, nil
			case ">":
				return c > 0, nil
			}
			return c >= 0, nil
		}
	}
	kind := func(pred func(Value) bool) testFn {
		return func(r *renderer, x Value, args []Value) (bool, error) { return pred(x), nil }
	}
	tests = map[string]testFn{
		"defined":   kind(func(x Value) bool { return x.kind != KUndefined }),
		"undefined": kind(func(x Value) bool { return x.kind == KUndefined }),
		"none":      kind(func(x Value) bool { return x.kind == KNone }),
		"string":    kind(func(x Value) bool { return x.kind == KString }),
		"mapping":   kind(func(x Value) bool { return x.kind == KDict }),
		"number":    kind(func(x Value) bool { return x.isNumber() }),
		"integer":   kind(func(x Value) bool { return x.kind == KInt }),
		"float":     kind(func(x Value) bool { return x.kind == KFloat }),
		"boolean":   kind(func(x Value) bool { return x.kind == KBool }),
		"true":      kind(func(x Value) bool { return x.kind == KBool && x.n != 0 }),
		"false":     kind(func(x Value) bool { return x.kind == KBool && x.n == 0 }),
		"callable":  kind(func(x Value) bool { return x.kind == KFunc }),
		"iterable": kind(func(x Value) bool {
			return x.kind == KString || x.kind == KList || x.kind == KDict || x.kind == KUndefined || x.kind == KIter
		}),
		"sequence": kind(func(x Value) bool {
			return x.kind == KString || x.kind == KList || x.kind == KDict || x.kind == KUndefined
		}),
		"escaped": kind(func(x Value) bool { return false }),
		"lower": kind(func(x Value) bool {
			return x.kind == KString && strings.ToLower(x.s) == x.s && hasCased(x.s)
		}),
		"upper": kind(func(x Value) bool {
			return x.kind == KString && strings.ToUpper(x.s) == x.s && hasCased(x.s)
		}),
		"even": intTest(func(n int64) bool { return n%2 == 0 }),
		"odd":  intTest(func(n int64) bool { return n%2 != 0 }),
		"divisibleby": func(r *renderer, x Value, args []Value) (bool, error) {
			if len(args) != 1 || !x.isNumber() || !args[0].isNumber() {
				return false, errors.New("divisibleby needs two numbers")
			}
			if args[0].number() == 0 {
				return false, errors.New("divisibleby: division by zero")
			}
			v, err := r.numArith(0, "%", x, args[0])
			return err == nil && v.number() == 0, err
		},
		"sameas": func(r *renderer, x Value, args []Value) (bool, error) {
			if len(args) != 1 {
				return false, errors.New("sameas takes one argument")
			}
			y := args[0]
			if x.kind != y.kind {
				return false, nil
			}
			switch x.kind {
			case KNone, KUndefined:
				return true, nil
			case KBool:
				return x.n == y.n, nil
			case KList, KDict, KSpace, KFunc, KIter:
				return x.ref == y.ref, nil
			}
			return r.equal(x, y), nil
		},
		"filter": func(r *renderer, x Value, args []Value) (bool, error) {
			_, ok := filters[x.s]
			return x.kind == KString && ok, nil
		},
		"test": func(r *renderer, x Value, args []Value) (bool, error) {
			_, ok := tests[x.s]
			return x.kind == KString && ok, nil
		},
		"eq": cmpTest("=="), "equalto": cmpTest("=="), "==": cmpTest("=="),
		"ne": cmpTest("!="), "!=": cmpTest("!="),
		"lt": cmpTest("<"), "lessthan": cmpTest("<"), "<": cmpTest("<"),
		"le": cmpTest("<="), "<=": cmpTest("<="),
		"gt": cmpTest(">"), "greaterthan": cmpTest(">"), ">": cmpTest(">"),
		"ge": cmpTest(">="), ">=": cmpTest(">="),
		"in": cmpTest("in"),
	}
}

func hasCased(s string) bool {
	for _, r := range s {
		if unicode.IsUpper(r) || unicode.IsLower(r) {
			return true
		}
	}
	return false
}

func intTest(pred func(int64) bool) testFn {
	return func(r *renderer, x Value, args []Value) (bool, error) {
		switch x.kind {
		case KInt, KBool:
			return pred(x.n), nil
		case KUndefined:
			return false, errors.New(undefMsg(x))
		}
		return false, fmt.Errorf("'%s' is not an integer", typeName(x))
	}
}

func (r *renderer) evalTest(e *testExpr, sc *scope) (Value, error) {
	x, err := r.eval(e.x, sc)
	if err != nil {
		return Value{}, err
	}
	args := make([]Value, len(e.args))
	for i, a := range e.args {
		if args[i], err = r.eval(a, sc); err != nil {
			return Value{}, err
		}
	}
	fn, found := tests[e.name]
	if !found {
		return Value{}, r.fail(e.pos, "test", "no test named '%s'", e.name)
	}
	ok, err := fn(r, x, args)
	if err != nil {
		return Value{}, r.wrap(e.pos, "test '"+e.name+"'", err)
	}
	return Bool(ok != e.neg), nil
}
