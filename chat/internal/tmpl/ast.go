package tmpl

// The syntax tree. Statements (node) and expressions (expr) are plain
// structs; the evaluator switches on their type. Every one keeps the byte
// offset where it starts, for error positions.

type node interface{ at() int }

type expr interface{ at() int }

type base struct{ pos int }

func (b base) at() int { return b.pos }

// Statements.

type (
	textNode struct {
		base
		text string
	}
	outputNode struct { // {{ e }}
		base
		e expr
	}
	ifNode struct { // {% if %} {% elif %}... {% else %} {% endif %}
		base
		conds  []expr
		bodies [][]node
		els    []node
	}
	forNode struct {
		base
		targets   []string // one name, or several to unpack
		iter      expr
		filter    expr // {% for x in xs if cond %}, or nil
		body, els []node
		recursive bool
	}
	setNode struct { // {% set a = e %}, {% set a, b = e %}, {% set ns.x = e %}
		base
		targets []string
		attr    string // non-empty: targets[0] is a namespace, attr its field
		e       expr
	}
	setBlockNode struct { // {% set a %}...{% endset %}, optionally {% set a | f %}
		base
		target  string
		attr    string
		filters []*filterExpr // applied in order to the captured text
		body    []node
	}
	macroNode struct {
		base
		def *macroDef
	}
	callBlockNode struct { // {% call(params) m(args) %}body{% endcall %}
		base
		call   *callExpr
		caller *macroDef
	}
	filterBlockNode struct { // {% filter f %}body{% endfilter %}
		base
		filters []*filterExpr
		body    []node
	}
	withNode struct {
		base
		names []string
		vals  []expr
		body  []node
	}
	breakNode    struct{ base }
	continueNode struct{ base }
)

// macroDef is a macro, or the body of a call block (name "caller").
type macroDef struct {
	name     string
	params   []string
	defaults []expr // nil entries: no default
	body     []node
	pos      int
	src      string
	// The body mentions varargs / kwargs: as in Jinja2, only then does the
	// macro accept extra positional / keyword arguments.
	usesVarargs, usesKwargs bool
}

// Expressions.

type (
	constExpr struct {
		base
		v Value
	}
	nameExpr struct {
		base
		name string
	}
	listExpr struct {
		base
		items []expr
		tuple bool
	}
	dictExpr struct {
		base
		keys, vals []expr
	}
	attrExpr struct { // x.name
		base
		x    expr
		name string
	}
	indexExpr struct { // x[i]
		base
		x, i expr
	}
	sliceExpr struct { // x[lo:hi:step]; nil parts are absent
		base
		x, lo, hi, step expr
	}
	callExpr struct {
		base
		fn     expr
		args   []expr
		kwargs []kwExpr
	}
	filterExpr struct { // x | name(args); x nil in a filter block or set block
		base
		x      expr
		name   string
		args   []expr
		kwargs []kwExpr
	}
	testExpr struct { // x is [not] name(args)
		base
		x    expr
		name string
		args []expr
		neg  bool
	}
	unaryExpr struct { // -x, +x, not x
		base
		op string
		x  expr
	}
	binaryExpr struct { // arithmetic, comparison, in, not in, ~, and, or
		base
		op   string
		a, b expr
	}
	condExpr struct { // yes if test else no; no nil means Undefined
		base
		test, yes, no expr
	}
)

type kwExpr struct {
	name string
	e    expr
}
