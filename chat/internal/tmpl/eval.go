package tmpl

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"unsafe"
)

// The evaluator walks the tree with a renderer holding the render's budget.
// Every statement executed and every expression evaluated costs one step;
// every macro or caller() call is one level of depth; every string or list
// the render builds is charged to the allocation budget before it is built;
// every write is checked against the output limit. So a limit error comes
// at the point of excess, with the template position of the construct that
// caused it.

// scope is one level of variables. Most hold a few names (a macro's
// parameters, a loop's target and `loop`), so they are a pair of slices
// searched linearly; a scope that grows past smallScope, and the render's
// variables, use a map.
type scope struct {
	vars   []binding
	m      map[string]Value
	parent *scope
}

type binding struct {
	name string
	v    Value
}

const smallScope = 12

func newScope(parent *scope) *scope { return &scope{parent: parent} }

func (s *scope) get(name string) (Value, bool) {
	if s.m != nil {
		v, ok := s.m[name]
		return v, ok
	}
	for i := range s.vars {
		if s.vars[i].name == name {
			return s.vars[i].v, true
		}
	}
	return Value{}, false
}

func (s *scope) set(name string, v Value) {
	if s.m != nil {
		s.m[name] = v
		return
	}
	for i := range s.vars {
		if s.vars[i].name == name {
			s.vars[i].v = v
			return
		}
	}
	if len(s.vars) >= smallScope {
		s.m = make(map[string]Value, 2*smallScope)
		for _, b := range s.vars {
			s.m[b.name] = b.v
		}
		s.m[name] = v
		s.vars = nil
		return
	}
	s.vars = append(s.vars, binding{name, v})
}

// reset empties the scope for reuse (a loop's next iteration).
func (s *scope) reset() {
	if s.m != nil {
		clear(s.m)
		return
	}
	clear(s.vars)
	s.vars = s.vars[:0]
}

func (s *scope) lookup(name string) (Value, bool) {
	for ; s != nil; s = s.parent {
		if v, ok := s.get(name); ok {
			return v, true
		}
	}
	return Value{}, false
}

type renderer struct {
	t       *Template
	lim     Limits
	steps   int64
	alloc   int64
	depth   int
	out     *strings.Builder
	free    []*Call // reusable argument lists
	callPos int     // position of the builtin call being made, for its errors
	overPos int     // position of the step that ran the step budget out
}

type flow uint8

const (
	flowNormal flow = iota
	flowBreak
	flowContinue
)

// Render renders the template with vars as its global variables (they
// shadow the built-in globals range, dict, namespace, cycler and joiner).
// Zero fields of lim take DefaultLimits.
func (t *Template) Render(vars map[string]Value, lim Limits) (out string, err error) {
	if lim.MaxDepth <= 0 {
		lim.MaxDepth = DefaultLimits.MaxDepth
	}
	if lim.MaxSteps <= 0 {
		lim.MaxSteps = DefaultLimits.MaxSteps
	}
	if lim.MaxOutput <= 0 {
		lim.MaxOutput = DefaultLimits.MaxOutput
	}
	if lim.MaxAlloc <= 0 {
		lim.MaxAlloc = DefaultLimits.MaxAlloc
	}
	var b strings.Builder
	r := &renderer{t: t, lim: lim, out: &b}
	globals := &scope{m: builtinGlobals}
	if vars == nil {
		vars = map[string]Value{}
	}
	sc := newScope(&scope{m: vars, parent: globals})
	defer func() {
		if p := recover(); p != nil {
			out, err = "", fmt.Errorf("internal error (please report): %v", p)
		}
	}()
	if _, err := r.exec(t.body, sc); err != nil {
		return "", err
	}
	if r.steps > r.lim.MaxSteps {
		// A comparison ran out of budget (it then answers "unequal") after
		// the last step check: the render is not to be trusted.
		return "", r.limitErr(r.overPos, "steps", r.lim.MaxSteps)
	}
	return b.String(), nil
}

// Budget checks.

// noPos stands for "the position of the call being made" in builtins.
const noPos = -1

func (r *renderer) limitErr(pos int, what string, limit int64) error {
	if pos == noPos {
		pos = r.callPos
	}
	le := &LimitError{What: what, Limit: limit}
	e := newError(r.t.src, pos, "", le.Error())
	e.Err = le
	return e
}

func (r *renderer) step(pos int) error {
	r.steps++
	r.overPos = pos
	if r.steps > r.lim.MaxSteps {
		return r.limitErr(pos, "steps", r.lim.MaxSteps)
	}
	return nil
}

// charge accounts for building a string of n bytes: no one string may
// exceed MaxOutput, and all together not MaxAlloc.
func (r *renderer) charge(pos int, n int64) error {
	if n > r.lim.MaxOutput {
		return r.limitErr(pos, "output size", r.lim.MaxOutput)
	}
	return r.chargeSlots(pos, n)
}

// chargeSlots accounts for n bytes of list or dict slots (MaxAlloc only).
func (r *renderer) chargeSlots(pos int, n int64) error {
	r.alloc += n
	if r.alloc > r.lim.MaxAlloc {
		return r.limitErr(pos, "allocation", r.lim.MaxAlloc)
	}
	return nil
}

const slotBytes = int64(unsafe.Sizeof(Value{})) // what a list slot or dict entry is charged (its real size)

func (r *renderer) write(pos int, s string) error {
	if int64(r.out.Len())+int64(len(s)) > r.lim.MaxOutput {
		return r.limitErr(pos, "output size", r.lim.MaxOutput)
	}
	r.out.WriteString(s)
	return nil
}

// fail makes a render error at pos.
func (r *renderer) fail(pos int, construct, format string, args ...any) error {
	return newError(r.t.src, pos, construct, fmt.Sprintf(format, args...))
}

// wrap attaches a position to an error from a builtin or a Go function,
// keeping an existing position.
func (r *renderer) wrap(pos int, construct string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	ne := newError(r.t.src, pos, construct, err.Error())
	ne.Err = err
	return ne
}

// undefErr is the error of using an Undefined, with Jinja2's wording.
func undefMsg(v Value) string {
	if v.s != "" {
		return v.s
	}
	return "a value is undefined"
}

// equal and compare are == and < charged to the step budget: one step per
// node visited, so no comparison of shared, repeated structures outlasts it.
func (r *renderer) equal(a, b Value) bool {
	budget := max(int(r.lim.MaxSteps-r.steps), 0)
	start := budget
	eq := equalAt(a, b, 0, &budget)
	r.steps += int64(start - budget)
	return eq
}

func (r *renderer) compare(a, b Value) (int, bool) {
	budget := max(int(r.lim.MaxSteps-r.steps), 0)
	start := budget
	c, ok := compareAt(a, b, 0, &budget)
	r.steps += int64(start - budget)
	return c, ok
}

// Statements.

func (r *renderer) exec(nodes []node, sc *scope) (flow, error) {
	for _, n := range nodes {
		if err := r.step(n.at()); err != nil {
			return flowNormal, err
		}
		switch n := n.(type) {
		case *textNode:
			if err := r.write(n.pos, n.text); err != nil {
				return flowNormal, err
			}
		case *outputNode:
			v, err := r.eval(n.e, sc)
			if err != nil {
				return flowNormal, err
			}
			if v.kind == KString {
				err = r.write(n.pos, v.s)
			} else {
				var s string
				if s, err = r.str(n.pos, v); err == nil {
					err = r.write(n.pos, s)
				}
			}
			if err != nil {
				return flowNormal, err
			}
		case *ifNode:
			done := false
			for i, c := range n.conds {
				v, err := r.eval(c, sc)
				if err != nil {
					return flowNormal, err
				}
				if v.Truth() {
					f, err := r.exec(n.bodies[i], sc)
					if f != flowNormal || err != nil {
						return f, err
					}
					done = true
					break
				}
			}
			if !done && n.els != nil {
				f, err := r.exec(n.els, sc)
				if f != flowNormal || err != nil {
					return f, err
				}
			}
		case *forNode:
			if err := r.execFor(n, sc); err != nil {
				return flowNormal, err
			}
		case *setNode:
			v, err := r.eval(n.e, sc)
			if err != nil {
				return flowNormal, err
			}
			if err := r.assign(n.pos, sc, n.targets, n.attr, v); err != nil {
				return flowNormal, err
			}
		case *setBlockNode:
			s, err := r.capture(n.body, sc)
			if err != nil {
				return flowNormal, err
			}
			v := String(s)
			for _, f := range n.filters {
				if v, err = r.applyFilter(f, v, sc); err != nil {
					return flowNormal, err
				}
			}
			if err := r.assign(n.pos, sc, []string{n.target}, n.attr, v); err != nil {
				return flowNormal, err
			}
		case *macroNode:
			sc.set(n.def.name, Value{kind: KFunc, ref: &Func{Name: n.def.name, mac: n.def, scope: sc}})
		case *callBlockNode:
			caller := Value{kind: KFunc, ref: &Func{Name: "caller", mac: n.caller, scope: sc}}
			v, err := r.callExpr(n.call, sc, &caller)
			if err != nil {
				return flowNormal, err
			}
			s, err := r.str(n.pos, v)
			if err == nil {
				err = r.write(n.pos, s)
			}
			if err != nil {
				return flowNormal, err
			}
		case *filterBlockNode:
			s, err := r.capture(n.body, sc)
			if err != nil {
				return flowNormal, err
			}
			v := String(s)
			for _, f := range n.filters {
				if v, err = r.applyFilter(f, v, sc); err != nil {
					return flowNormal, err
				}
			}
			if s, err = r.str(n.pos, v); err == nil {
				err = r.write(n.pos, s)
			}
			if err != nil {
				return flowNormal, err
			}
		case *withNode:
			inner := sc
			if len(n.names) > 0 {
				inner = newScope(sc)
				for i, name := range n.names {
					v, err := r.eval(n.vals[i], sc)
					if err != nil {
						return flowNormal, err
					}
					inner.set(name, v)
				}
			}
			f, err := r.exec(n.body, inner)
			if f != flowNormal || err != nil {
				return f, err
			}
		case *breakNode:
			return flowBreak, nil
		case *continueNode:
			return flowContinue, nil
		}
	}
	return flowNormal, nil
}

// capture renders nodes into a string (a set block, filter block or macro).
func (r *renderer) capture(nodes []node, sc *scope) (string, error) {
	saved := r.out
	var b strings.Builder
	r.out = &b
	_, err := r.exec(nodes, sc)
	r.out = saved
	if err != nil {
		return "", err
	}
	if err := r.charge(noPos, int64(b.Len())); err != nil {
		return "", err
	}
	return b.String(), nil
}

func (r *renderer) assign(pos int, sc *scope, targets []string, attr string, v Value) error {
	if attr != "" {
		ns, ok := sc.lookup(targets[0])
		if !ok || ns.kind != KSpace {
			return r.fail(pos, "{% set %}", "%s is not a namespace; only a namespace() takes {%% set %s.%s = ... %%}", targets[0], targets[0], attr)
		}
		ns.Dict().SetStr(attr, v)
		return nil
	}
	if len(targets) == 1 {
		sc.set(targets[0], v)
		return nil
	}
	items, err := r.unpack(pos, "{% set %}", v, len(targets))
	if err != nil {
		return err
	}
	for i, t := range targets {
		sc.set(t, items[i])
	}
	return nil
}

// unpack splits v into n values for a multi-name target.
func (r *renderer) unpack(pos int, construct string, v Value, n int) ([]Value, error) {
	items, err := r.iterate(pos, v)
	if err != nil {
		return nil, err
	}
	if len(items) != n {
		if len(items) > n {
			return nil, r.fail(pos, construct, "too many values to unpack (expected %d)", n)
		}
		return nil, r.fail(pos, construct, "not enough values to unpack (expected %d, got %d)", n, len(items))
	}
	return items, nil
}

// iterate returns the items a for loop visits: a list's items, a dict's
// keys, a string's characters; Undefined is empty.
func (r *renderer) iterate(pos int, v Value) ([]Value, error) {
	switch v.kind {
	case KList:
		return v.List().Items, nil
	case KIter:
		items := v.List().Items
		v.List().Items = nil // consumed
		return items, nil
	case KDict:
		return append([]Value(nil), v.Dict().keys...), nil
	case KString:
		if err := r.chargeSlots(pos, int64(len(v.s))*slotBytes); err != nil {
			return nil, err
		}
		out := make([]Value, 0, len(v.s))
		for _, c := range v.s {
			out = append(out, String(string(c)))
		}
		return out, nil
	case KUndefined:
		return nil, nil
	}
	return nil, r.fail(pos, "", "'%s' object is not iterable", typeName(v))
}

// loopState is the `loop` variable of a for loop.
type loopState struct {
	items []Value
	i     int
	depth int
	last  *Value // loop.changed's previous arguments
	fn    *forNode
	sc    *scope
}

func (r *renderer) execFor(n *forNode, sc *scope) error {
	seq, err := r.eval(n.iter, sc)
	if err != nil {
		return err
	}
	return r.runLoop(n, sc, seq, 1)
}

func (r *renderer) runLoop(n *forNode, sc *scope, seq Value, depth int) error {
	items, err := r.iterate(n.iter.at(), seq)
	if err != nil {
		return err
	}
	inner := newScope(sc)
	bind := func(v Value) error {
		if len(n.targets) == 1 {
			inner.set(n.targets[0], v)
			return nil
		}
		parts, err := r.unpack(n.pos, "{% for %}", v, len(n.targets))
		if err != nil {
			return err
		}
		for i, t := range n.targets {
			inner.set(t, parts[i])
		}
		return nil
	}
	if n.filter != nil {
		var kept []Value
		for _, it := range items {
			if err := r.step(n.pos); err != nil {
				return err
			}
			if err := bind(it); err != nil {
				return err
			}
			ok, err := r.eval(n.filter, inner)
			if err != nil {
				return err
			}
			if ok.Truth() {
				kept = append(kept, it)
			}
		}
		items = kept
	}
	if len(items) == 0 {
		if n.els != nil {
			_, err := r.exec(n.els, sc)
			return err
		}
		return nil
	}
	ls := &loopState{items: items, depth: depth, fn: n, sc: sc}
	loopVar := Value{kind: kLoop, ref: ls}
	for i, it := range items {
		if err := r.step(n.pos); err != nil {
			return err
		}
		// Each iteration starts from the enclosing scope: a {% set %} in
		// the body is seen by the rest of that iteration only (Jinja2).
		inner.reset()
		inner.set("loop", loopVar)
		ls.i = i
		if err := bind(it); err != nil {
			return err
		}
		f, err := r.exec(n.body, inner)
		if err != nil {
			return err
		}
		if f == flowBreak {
			break
		}
	}
	return nil
}

// recurse is loop(items) in a {% for ... recursive %}: the loop body run
// over items one level deeper, its output returned as a string.
func (r *renderer) recurse(pos int, ls *loopState, c *Call) (Value, error) {
	if !ls.fn.recursive {
		return Value{}, r.fail(pos, "loop()", "the loop is not recursive; write {%% for ... recursive %%} to call loop(items)")
	}
	if len(c.Args) != 1 || len(c.Kwargs) > 0 {
		return Value{}, r.fail(pos, "loop()", "expected one argument, the items of the next level")
	}
	r.depth++
	defer func() { r.depth-- }()
	if r.depth > r.lim.MaxDepth {
		return Value{}, r.limitErr(pos, "call depth", int64(r.lim.MaxDepth))
	}
	saved := r.out
	var b strings.Builder
	r.out = &b
	err := r.runLoop(ls.fn, ls.sc, c.Args[0], ls.depth+1)
	r.out = saved
	if err != nil {
		return Value{}, err
	}
	return String(b.String()), r.charge(pos, int64(b.Len()))
}

// kLoop is the kind of the loop variable (internal; prints as a dict would).
const kLoop Kind = 100

func (r *renderer) loopAttr(ls *loopState, name string) (Value, bool) {
	n := int64(len(ls.items))
	i := int64(ls.i)
	switch name {
	case "index":
		return Int(i + 1), true
	case "index0":
		return Int(i), true
	case "revindex":
		return Int(n - i), true
	case "revindex0":
		return Int(n - i - 1), true
	case "first":
		return Bool(i == 0), true
	case "last":
		return Bool(i == n-1), true
	case "length":
		return Int(n), true
	case "depth":
		return Int(int64(ls.depth)), true
	case "depth0":
		return Int(int64(ls.depth - 1)), true
	case "previtem":
		if i > 0 {
			return ls.items[i-1], true
		}
		return undefinedNamed("there is no previous item"), true
	case "nextitem":
		if i < n-1 {
			return ls.items[i+1], true
		}
		return undefinedNamed("there is no next item"), true
	case "cycle":
		return NewFunc("loop.cycle", func(c *Call) (Value, error) {
			if len(c.Args) == 0 {
				return Value{}, errors.New("loop.cycle: no items given")
			}
			return c.Args[ls.i%len(c.Args)], nil
		}), true
	case "changed":
		return NewFunc("loop.changed", func(c *Call) (Value, error) {
			cur := newTuple(append([]Value(nil), c.Args...))
			if ls.last != nil && r.equal(*ls.last, cur) {
				return Bool(false), nil
			}
			ls.last = &cur
			return Bool(true), nil
		}), true
	}
	return Value{}, false
}

// Expressions.

func (r *renderer) eval(e expr, sc *scope) (Value, error) {
	if err := r.step(e.at()); err != nil {
		return Value{}, err
	}
	switch e := e.(type) {
	case *constExpr:
		return e.v, nil
	case *nameExpr:
		if v, ok := sc.lookup(e.name); ok {
			return v, nil
		}
		return undefinedNamed("'" + e.name + "' is undefined"), nil
	case *listExpr:
		if err := r.chargeSlots(e.pos, int64(len(e.items))*slotBytes); err != nil {
			return Value{}, err
		}
		items := make([]Value, len(e.items))
		for i, x := range e.items {
			v, err := r.eval(x, sc)
			if err != nil {
				return Value{}, err
			}
			items[i] = v
		}
		if e.tuple {
			return newTuple(items), nil
		}
		return NewList(items), nil
	case *dictExpr:
		if err := r.chargeSlots(e.pos, int64(len(e.keys))*2*slotBytes); err != nil {
			return Value{}, err
		}
		d := NewDict()
		for i := range e.keys {
			k, err := r.eval(e.keys[i], sc)
			if err != nil {
				return Value{}, err
			}
			v, err := r.eval(e.vals[i], sc)
			if err != nil {
				return Value{}, err
			}
			if !d.Dict().Set(k, v) {
				return Value{}, r.fail(e.keys[i].at(), "dict literal", "unhashable type: '%s'", typeName(k))
			}
		}
		return d, nil
	case *attrExpr:
		x, err := r.eval(e.x, sc)
		if err != nil {
			return Value{}, err
		}
		return r.getAttr(e.pos, x, e.name)
	case *indexExpr:
		x, err := r.eval(e.x, sc)
		if err != nil {
			return Value{}, err
		}
		i, err := r.eval(e.i, sc)
		if err != nil {
			return Value{}, err
		}
		return r.getItem(e.pos, x, i)
	case *sliceExpr:
		return r.evalSlice(e, sc)
	case *callExpr:
		return r.callExpr(e, sc, nil)
	case *filterExpr:
		x, err := r.eval(e.x, sc)
		if err != nil {
			return Value{}, err
		}
		return r.applyFilter(e, x, sc)
	case *testExpr:
		return r.evalTest(e, sc)
	case *unaryExpr:
		x, err := r.eval(e.x, sc)
		if err != nil {
			return Value{}, err
		}
		switch e.op {
		case "not":
			return Bool(!x.Truth()), nil
		case "-":
			switch x.kind {
			case KInt, KBool:
				if x.n == math.MinInt64 {
					return Value{}, r.fail(e.pos, "", "integer overflow")
				}
				return Int(-x.n), nil
			case KFloat:
				return Float(-x.f), nil
			}
		case "+":
			switch x.kind {
			case KInt, KBool:
				return Int(x.n), nil
			case KFloat:
				return x, nil
			}
		}
		if x.kind == KUndefined {
			return Value{}, r.fail(e.pos, "", "%s", undefMsg(x))
		}
		return Value{}, r.fail(e.pos, "", "bad operand type for unary %s: '%s'", e.op, typeName(x))
	case *binaryExpr:
		return r.evalBinary(e, sc)
	case *condExpr:
		t, err := r.eval(e.test, sc)
		if err != nil {
			return Value{}, err
		}
		if t.Truth() {
			return r.eval(e.yes, sc)
		}
		if e.no == nil {
			return undefinedNamed("the inline if expression evaluated to false and no else section was defined"), nil
		}
		return r.eval(e.no, sc)
	}
	return Value{}, r.fail(e.at(), "", "unknown expression")
}

// getAttr is x.name: a method of x's type, else an item of a dict (the
// field of a namespace, the field of loop); else Undefined. Using an
// attribute of Undefined is an error, as in Jinja2.
func (r *renderer) getAttr(pos int, x Value, name string) (Value, error) {
	switch x.kind {
	case KUndefined:
		return Value{}, r.fail(pos, "attribute '."+name+"'", "%s", undefMsg(x))
	case KDict:
		if isMethod(x, name) {
			return boundMethod(x, name), nil
		}
		if v, ok := x.Dict().GetStr(name); ok {
			return v, nil
		}
	case KSpace:
		if v, ok := x.Dict().GetStr(name); ok {
			return v, nil
		}
	case kLoop:
		if v, ok := r.loopAttr(x.ref.(*loopState), name); ok {
			return v, nil
		}
	case KList:
		if isMethod(x, name) {
			return boundMethod(x, name), nil
		}
		for i, f := range x.List().Fields {
			if f == name {
				return x.List().Items[i], nil
			}
		}
	default:
		if isMethod(x, name) {
			return boundMethod(x, name), nil
		}
	}
	return undefinedNamed(fmt.Sprintf("'%s' has no attribute '%s'", objName(x), name)), nil
}

func objName(x Value) string {
	switch x.kind {
	case KDict:
		return "dict object"
	case KList:
		return typeName(x) + " object"
	case KString:
		return "str object"
	case KNone:
		return "None"
	}
	return typeName(x) + " object"
}

// getItem is x[i]: an item, else (for a string key) an attribute.
func (r *renderer) getItem(pos int, x, i Value) (Value, error) {
	switch x.kind {
	case KUndefined:
		return Value{}, r.fail(pos, "subscript", "%s", undefMsg(x))
	case KDict, KSpace:
		if x.kind == KDict {
			if v, ok := x.Dict().Get(i); ok {
				return v, nil
			}
		}
		if i.kind == KString {
			return r.getAttr(pos, x, i.s)
		}
	case KList:
		if i.kind == KInt || i.kind == KBool {
			items := x.List().Items
			k := i.n
			if k < 0 {
				k += int64(len(items))
			}
			if k >= 0 && k < int64(len(items)) {
				return items[k], nil
			}
			return undefinedNamed(fmt.Sprintf("%s has no element %d", objName(x), i.n)), nil
		}
		if i.kind == KString {
			return r.getAttr(pos, x, i.s)
		}
	case KString:
		if i.kind == KInt || i.kind == KBool {
			rs := []rune(x.s)
			k := i.n
			if k < 0 {
				k += int64(len(rs))
			}
			if k >= 0 && k < int64(len(rs)) {
				return String(string(rs[k])), nil
			}
			return undefinedNamed(fmt.Sprintf("str object has no element %d", i.n)), nil
		}
		if i.kind == KString {
			return r.getAttr(pos, x, i.s)
		}
	case kLoop:
		if i.kind == KString {
			return r.getAttr(pos, x, i.s)
		}
	}
	return undefinedNamed(fmt.Sprintf("%s has no element %s", objName(x), pyStr(i))), nil
}

func (r *renderer) evalSlice(e *sliceExpr, sc *scope) (Value, error) {
	x, err := r.eval(e.x, sc)
	if err != nil {
		return Value{}, err
	}
	var bounds [3]*int64
	for k, part := range []expr{e.lo, e.hi, e.step} {
		if part == nil {
			continue
		}
		v, err := r.eval(part, sc)
		if err != nil {
			return Value{}, err
		}
		switch v.kind {
		case KNone:
		case KInt, KBool:
			n := v.n
			bounds[k] = &n
		default:
			return Value{}, r.fail(part.at(), "slice", "slice indices must be integers or None")
		}
	}
	step := int64(1)
	if bounds[2] != nil {
		step = *bounds[2]
		if step == 0 {
			return Value{}, r.fail(e.pos, "slice", "slice step cannot be zero")
		}
	}
	var n int64
	switch x.kind {
	case KList:
		n = int64(len(x.List().Items))
	case KString:
		n = int64(len(x.s)) // ASCII fast path below; runes otherwise
	case KUndefined:
		return Value{}, r.fail(e.pos, "slice", "%s", undefMsg(x))
	default:
		return Value{}, r.fail(e.pos, "slice", "'%s' object is not subscriptable", typeName(x))
	}
	var runes []rune
	if x.kind == KString && !isASCII(x.s) {
		runes = []rune(x.s)
		n = int64(len(runes))
	}
	idx := sliceIndices(n, bounds[0], bounds[1], step)
	if err := r.chargeSlots(e.pos, int64(len(idx))*slotBytes); err != nil {
		return Value{}, err
	}
	if x.kind == KList {
		items := x.List().Items
		out := make([]Value, len(idx))
		for k, j := range idx {
			out[k] = items[j]
		}
		if x.List().Tuple {
			return newTuple(out), nil
		}
		return NewList(out), nil
	}
	if runes == nil && step == 1 {
		if len(idx) == 0 {
			return String(""), nil
		}
		return String(x.s[idx[0] : idx[len(idx)-1]+1]), nil
	}
	var b strings.Builder
	for _, j := range idx {
		if runes != nil {
			b.WriteRune(runes[j])
		} else {
			b.WriteByte(x.s[j])
		}
	}
	return String(b.String()), nil
}

// sliceIndices is Python's slice.indices, expanded.
func sliceIndices(n int64, lo, hi *int64, step int64) []int64 {
	clamp := func(p *int64, def, lower, upper int64) int64 {
		if p == nil {
			return def
		}
		v := *p
		if v < 0 {
			v += n
			if v < lower {
				v = lower
			}
		} else if v > upper {
			v = upper
		}
		return v
	}
	var start, stop int64
	if step > 0 {
		start = clamp(lo, 0, 0, n)
		stop = clamp(hi, n, 0, n)
	} else {
		start = clamp(lo, n-1, -1, n-1)
		stop = clamp(hi, -1, -1, n-1)
	}
	var out []int64
	if step > 0 {
		for i := start; i < stop; i += step {
			out = append(out, i)
		}
	} else {
		for i := start; i > stop; i += step {
			out = append(out, i)
		}
	}
	return out
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// Calls.

// evalArgs evaluates a call's arguments into a Call from the renderer's
// free list; the caller returns it with putCall once the callee is done
// (no callee keeps a *Call or its slices).
func (r *renderer) evalArgs(args []expr, kwargs []kwExpr, sc *scope) (*Call, error) {
	var c *Call
	if n := len(r.free); n > 0 {
		c = r.free[n-1]
		r.free = r.free[:n-1]
	} else {
		c = &Call{r: r}
	}
	for _, a := range args {
		v, err := r.eval(a, sc)
		if err != nil {
			return nil, err
		}
		c.Args = append(c.Args, v)
	}
	for _, kw := range kwargs {
		v, err := r.eval(kw.e, sc)
		if err != nil {
			return nil, err
		}
		c.Kwargs = append(c.Kwargs, Kwarg{kw.name, v})
	}
	return c, nil
}

func (r *renderer) putCall(c *Call) {
	clear(c.Args)
	clear(c.Kwargs)
	c.Args, c.Kwargs, c.self = c.Args[:0], c.Kwargs[:0], Value{}
	r.free = append(r.free, c)
}

// callExpr evaluates a call; caller is the {% call %} block's body, if any.
func (r *renderer) callExpr(e *callExpr, sc *scope, caller *Value) (Value, error) {
	var fn Value
	var err error
	if a, ok := e.fn.(*attrExpr); ok {
		// x.method(...) without building a bound method value.
		x, err := r.eval(a.x, sc)
		if err != nil {
			return Value{}, err
		}
		if x.kind != KUndefined && x.kind != KSpace && x.kind != kLoop && isMethod(x, a.name) {
			c, err := r.evalArgs(e.args, e.kwargs, sc)
			if err != nil {
				return Value{}, err
			}
			c.self = x
			r.callPos = e.pos
			v, err := callMethod(c, x, a.name)
			r.putCall(c)
			if err != nil {
				return Value{}, r.wrap(e.pos, "method '"+a.name+"'", err)
			}
			return v, nil
		}
		if fn, err = r.getAttr(a.pos, x, a.name); err != nil {
			return Value{}, err
		}
	} else if fn, err = r.eval(e.fn, sc); err != nil {
		return Value{}, err
	}
	c, err := r.evalArgs(e.args, e.kwargs, sc)
	if err != nil {
		return Value{}, err
	}
	if caller != nil {
		c.Kwargs = append(c.Kwargs, Kwarg{"caller", *caller})
	}
	v, err := r.call(e.pos, fn, c)
	r.putCall(c)
	return v, err
}

func (r *renderer) call(pos int, fn Value, c *Call) (Value, error) {
	if fn.kind == kLoop {
		return r.recurse(pos, fn.ref.(*loopState), c)
	}
	if fn.kind != KFunc {
		if fn.kind == KUndefined {
			return Value{}, r.fail(pos, "call", "%s", undefMsg(fn))
		}
		return Value{}, r.fail(pos, "call", "'%s' object is not callable", typeName(fn))
	}
	f := fn.func_()
	if f.mac != nil {
		return r.callMacro(pos, f, c)
	}
	c.r = r
	c.self = f.self
	r.callPos = pos
	v, err := f.Fn(c)
	if err != nil {
		return Value{}, r.wrap(pos, f.Name+"()", err)
	}
	return v, nil
}

func (r *renderer) callMacro(pos int, f *Func, c *Call) (Value, error) {
	m := f.mac
	r.depth++
	defer func() { r.depth-- }()
	if r.depth > r.lim.MaxDepth {
		return Value{}, r.limitErr(pos, "call depth", int64(r.lim.MaxDepth))
	}
	sc := &scope{vars: make([]binding, 0, len(m.params)+1), parent: f.scope}
	var extra []Value
	for i, a := range c.Args {
		if i < len(m.params) {
			sc.set(m.params[i], a)
		} else if m.usesVarargs {
			extra = append(extra, a)
		} else {
			return Value{}, r.fail(pos, "call", "macro '%s' takes not more than %d argument(s)", m.name, len(m.params))
		}
	}
	var kw *Dict
	for _, k := range c.Kwargs {
		known := false
		for _, p := range m.params {
			if p == k.Name {
				known = true
			}
		}
		switch {
		case known:
			sc.set(k.Name, k.Value)
		case k.Name == "caller":
			sc.set("caller", k.Value)
		case m.usesKwargs:
			if kw == nil {
				kw = &Dict{}
			}
			kw.SetStr(k.Name, k.Value)
		default:
			return Value{}, r.fail(pos, "call", "macro '%s' takes no keyword argument '%s'", m.name, k.Name)
		}
	}
	for i, p := range m.params {
		if _, ok := sc.get(p); ok {
			continue
		}
		if m.defaults[i] != nil {
			v, err := r.eval(m.defaults[i], sc)
			if err != nil {
				return Value{}, err
			}
			sc.set(p, v)
		} else {
			sc.set(p, undefinedNamed(fmt.Sprintf("parameter '%s' was not provided", p)))
		}
	}
	if m.usesVarargs {
		sc.set("varargs", newTuple(extra))
	}
	if m.usesKwargs {
		if kw == nil {
			kw = &Dict{}
		}
		sc.set("kwargs", Value{kind: KDict, ref: kw})
	}
	s, err := r.capture(m.body, sc)
	if err != nil {
		return Value{}, err
	}
	return String(s), nil
}

// Operators.

func (r *renderer) evalBinary(e *binaryExpr, sc *scope) (Value, error) {
	a, err := r.eval(e.a, sc)
	if err != nil {
		return Value{}, err
	}
	switch e.op {
	case "and":
		if !a.Truth() {
			return a, nil
		}
		return r.eval(e.b, sc)
	case "or":
		if a.Truth() {
			return a, nil
		}
		return r.eval(e.b, sc)
	}
	b, err := r.eval(e.b, sc)
	if err != nil {
		return Value{}, err
	}
	switch e.op {
	case "==":
		return Bool(r.equal(a, b)), nil
	case "!=":
		return Bool(!r.equal(a, b)), nil
	case "<", "<=", ">", ">=":
		for _, x := range []Value{a, b} {
			if x.kind == KUndefined {
				return Value{}, r.fail(e.pos, "comparison", "%s", undefMsg(x))
			}
		}
		c, ok := r.compare(a, b)
		if !ok {
			if err := r.step(e.pos); err != nil {
				return Value{}, err
			}
			return Value{}, r.fail(e.pos, "comparison", "'%s' not supported between instances of '%s' and '%s'", e.op, typeName(a), typeName(b))
		}
		switch e.op {
		case "<":
			return Bool(c < 0), nil
		case "<=":
			return Bool(c <= 0), nil
		case ">":
			return Bool(c > 0), nil
		}
		return Bool(c >= 0), nil
	case "in", "not in":
		in, err := r.contains(e.pos, b, a)
		if err != nil {
			return Value{}, err
		}
		return Bool(in == (e.op == "in")), nil
	case "~":
		sa, err := r.str(e.pos, a)
		if err != nil {
			return Value{}, err
		}
		sb, err := r.str(e.pos, b)
		if err != nil {
			return Value{}, err
		}
		if err := r.charge(e.pos, int64(len(sa)+len(sb))); err != nil {
			return Value{}, err
		}
		return String(sa + sb), nil
	}
	return r.arith(e.pos, e.op, a, b)
}

// contains is Python's `x in container`.
func (r *renderer) contains(pos int, container, x Value) (bool, error) {
	switch container.kind {
	case KString:
		if x.kind != KString {
			if x.kind == KUndefined {
				return false, r.fail(pos, "'in'", "%s", undefMsg(x))
			}
			return false, r.fail(pos, "'in'", "'in <string>' requires string as left operand, not %s", typeName(x))
		}
		return strings.Contains(container.s, x.s), nil
	case KList:
		for _, it := range container.List().Items {
			if r.equal(it, x) {
				return true, nil
			}
		}
		return false, nil
	case KDict:
		_, ok := container.Dict().Get(x)
		return ok, nil
	case KUndefined:
		return false, nil
	}
	return false, r.fail(pos, "'in'", "argument of type '%s' is not iterable", typeName(container))
}

func (r *renderer) arith(pos int, op string, a, b Value) (Value, error) {
	for _, x := range []Value{a, b} {
		if x.kind == KUndefined {
			return Value{}, r.fail(pos, "'"+op+"'", "%s", undefMsg(x))
		}
	}
	if a.isNumber() && b.isNumber() {
		return r.numArith(pos, op, a, b)
	}
	switch op {
	case "+":
		switch {
		case a.kind == KString && b.kind == KString:
			if a.isMarkup() || b.isMarkup() {
				// markupsafe: Markup + str escapes the str; the sum is Markup.
				x, y := a.s, b.s
				if !a.isMarkup() {
					x = htmlEscape(x)
				}
				if !b.isMarkup() {
					y = htmlEscape(y)
				}
				if err := r.charge(pos, int64(len(x)+len(y))); err != nil {
					return Value{}, err
				}
				return markup(x + y), nil
			}
			if err := r.charge(pos, int64(len(a.s)+len(b.s))); err != nil {
				return Value{}, err
			}
			return String(a.s + b.s), nil
		case a.kind == KList && b.kind == KList && a.List().Tuple == b.List().Tuple:
			x, y := a.List().Items, b.List().Items
			if err := r.chargeSlots(pos, int64(len(x)+len(y))*slotBytes); err != nil {
				return Value{}, err
			}
			out := make([]Value, 0, len(x)+len(y))
			out = append(append(out, x...), y...)
			return Value{kind: KList, ref: &List{Items: out, Tuple: a.List().Tuple}}, nil
		}
	case "*":
		if b.kind == KString || b.kind == KList {
			a, b = b, a
		}
		if (b.kind == KInt || b.kind == KBool) && (a.kind == KString || a.kind == KList) {
			n := max(b.n, 0)
			if a.kind == KString {
				if n > 0 && int64(len(a.s)) > r.lim.MaxOutput/n {
					return Value{}, r.limitErr(pos, "output size", r.lim.MaxOutput)
				}
				if err := r.charge(pos, int64(len(a.s))*n); err != nil {
					return Value{}, err
				}
				return Value{kind: KString, s: strings.Repeat(a.s, int(n)), n: a.n}, nil
			}
			items := a.List().Items
			if n > 0 && int64(len(items)) > r.lim.MaxAlloc/slotBytes/n {
				return Value{}, r.limitErr(pos, "allocation", r.lim.MaxAlloc)
			}
			if err := r.chargeSlots(pos, int64(len(items))*n*slotBytes); err != nil {
				return Value{}, err
			}
			out := make([]Value, 0, int64(len(items))*n)
			for range n {
				out = append(out, items...)
			}
			return Value{kind: KList, ref: &List{Items: out, Tuple: a.List().Tuple}}, nil
		}
	case "%":
		if a.kind == KString {
			s, err := percentFormat(a.s, b)
			if err != nil {
				return Value{}, r.wrap(pos, "'%' formatting", err)
			}
			if err := r.charge(pos, int64(len(s))); err != nil {
				return Value{}, err
			}
			return String(s), nil
		}
	}
	return Value{}, r.fail(pos, "'"+op+"'", "unsupported operand type(s) for %s: '%s' and '%s'", op, typeName(a), typeName(b))
}

func (r *renderer) numArith(pos int, op string, a, b Value) (Value, error) {
	if a.kind != KFloat && b.kind != KFloat {
		x, y := a.n, b.n
		switch op {
		case "+":
			s := x + y
			if (s > x) == (y > 0) {
				return Int(s), nil
			}
		case "-":
			s := x - y
			if (s < x) == (y > 0) {
				return Int(s), nil
			}
		case "*":
			if x == 0 || y == 0 {
				return Int(0), nil
			}
			p := x * y
			if p/y == x && !(x == -1 && y == math.MinInt64) && !(y == -1 && x == math.MinInt64) {
				return Int(p), nil
			}
		case "/":
			if y == 0 {
				return Value{}, r.fail(pos, "'/'", "division by zero")
			}
			return Float(float64(x) / float64(y)), nil
		case "//":
			if y == 0 {
				return Value{}, r.fail(pos, "'//'", "integer division or modulo by zero")
			}
			q := x / y
			if (x%y != 0) && ((x < 0) != (y < 0)) {
				q--
			}
			return Int(q), nil
		case "%":
			if y == 0 {
				return Value{}, r.fail(pos, "'%'", "integer division or modulo by zero")
			}
			m := x % y
			if m != 0 && (m < 0) != (y < 0) {
				m += y
			}
			return Int(m), nil
		case "**":
			return intPow(x, y, func() error { return r.fail(pos, "'**'", "integer overflow") })
		}
		return Value{}, r.fail(pos, "'"+op+"'", "integer overflow")
	}
	x, y := a.number(), b.number()
	switch op {
	case "+":
		return Float(x + y), nil
	case "-":
		return Float(x - y), nil
	case "*":
		return Float(x * y), nil
	case "/":
		if y == 0 {
			return Value{}, r.fail(pos, "'/'", "float division by zero")
		}
		return Float(x / y), nil
	case "//":
		if y == 0 {
			return Value{}, r.fail(pos, "'//'", "float floor division by zero")
		}
		return Float(math.Floor(x / y)), nil
	case "%":
		if y == 0 {
			return Value{}, r.fail(pos, "'%'", "float modulo")
		}
		m := math.Mod(x, y)
		if m != 0 && (m < 0) != (y < 0) {
			m += y
		}
		return Float(m), nil
	case "**":
		return Float(math.Pow(x, y)), nil
	}
	return Value{}, r.fail(pos, "'"+op+"'", "unknown operator")
}

// str is Python's str(v), with the size of a printed list or dict checked
// against the output limit before it is built.
func (r *renderer) str(pos int, v Value) (string, error) {
	switch v.kind {
	case KString:
		return v.s, nil
	case KUndefined:
		return "", nil
	case KList, KDict, KSpace:
		if n := reprSize(v, r.lim.MaxOutput, nil); n > r.lim.MaxOutput {
			return "", r.limitErr(pos, "output size", r.lim.MaxOutput)
		} else if err := r.charge(pos, n); err != nil {
			return "", err
		}
	}
	return pyStr(v), nil
}

// reprSize estimates (from above, roughly) the length of repr(v), stopping
// once it passes limit; path as in writeRepr.
func reprSize(v Value, limit int64, path []any) int64 {
	if len(path) > maxCompareDepth {
		return limit + 1
	}
	switch v.kind {
	case KString:
		return int64(len(v.s))*2 + 2
	case KList:
		if onPath(path, v.ref) {
			return 5
		}
		path = append(path, v.ref)
		n := int64(2)
		for _, it := range v.List().Items {
			n += 2 + reprSize(it, limit-n, path)
			if n > limit {
				return n
			}
		}
		return n
	case KDict, KSpace:
		if onPath(path, v.ref) {
			return 5
		}
		path = append(path, v.ref)
		d := v.Dict()
		n := int64(14)
		for i := range d.keys {
			n += 4 + reprSize(d.keys[i], limit-n, path) + reprSize(d.vals[i], limit-n, path)
			if n > limit {
				return n
			}
		}
		return n
	}
	return 32
}

// intPow is x**y for ints; a negative y gives a float, as in Python.
func intPow(x, y int64, overflow func() error) (Value, error) {
	switch {
	case y < 0:
		return Float(math.Pow(float64(x), float64(y))), nil
	case y == 0:
		return Int(1), nil
	case x == 0 || x == 1:
		return Int(x), nil
	case x == -1:
		if y%2 == 1 {
			return Int(-1), nil
		}
		return Int(1), nil
	case y > 63:
		return Value{}, overflow()
	}
	ax := x
	if ax < 0 {
		ax = -ax
	}
	res := int64(1)
	for range y {
		a := res
		if a < 0 {
			a = -a
		}
		if a > math.MaxInt64/ax {
			return Value{}, overflow()
		}
		res *= x
	}
	return Int(res), nil
}
