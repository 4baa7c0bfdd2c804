// Package tmpl is a Jinja interpreter for chat templates: the subset of
// Jinja2 3.1 that model chat templates use, with the semantics of the
// environment Hugging Face's apply_chat_template renders them in
// (ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
// extensions=[loopcontrols]) plus its tojson filter), written for templates
// that come from untrusted model files.
//
// Pipeline. A source is normalized (CRLF/CR → LF, one trailing newline
// dropped), lexed (lex.go: text and tags, whitespace control applied there),
// parsed by recursive descent into a tree (parse.go, ast.go), and evaluated
// by walking the tree (eval.go) over Values (value.go: Python's None, bool,
// int, float, str, list/tuple, ordered dict, plus Undefined, namespace,
// callables and one-shot iterators).
//
// Supported: {{ }}, {# #}, {% raw %}; if/elif/else; for with else, an if
// filter, unpacking, loop.index/index0/revindex/revindex0/first/last/length/
// depth/previtem/nextitem/cycle()/changed(), break/continue; set (names,
// unpacking, namespace attributes, block set with filters); macro with
// defaults, varargs/kwargs, call blocks and caller(args); filter blocks;
// with; Hugging Face's {% generation %}. Expressions: literals (ints, floats,
// strings with Python escapes, lists, tuples, dicts), arithmetic with
// Python's rules (// and % floor, / true division), comparisons, in, and/or/
// not, ~, conditional expressions, attribute and item access, slicing,
// calls, filters (filters.go), tests (tests.go), str/dict/list methods
// (methods.go), globals range/dict/namespace/cycler/joiner (globals.go).
//
// Semantics kept from Jinja2 because templates depend on them: Undefined
// prints as "", is false, iterates empty and has length 0, but an attribute,
// item, call or arithmetic on it fails; x.name tries a method of x's type,
// then the item; a {% set %} in a loop body lasts for that iteration; map,
// select, reject, selectattr, rejectattr, unique, items and reverse return
// one-shot iterators (always true, no length, not JSON); |safe and |escape
// make Markup, and adding a plain string to Markup HTML-escapes it; an
// unknown filter or test is a parse error except directly inside an
// {% if %}, where it fails only when reached.
//
// Untrusted input. Nothing in a template reaches the host: there are no
// attributes beyond the listed methods. The parser bounds nesting
// (maxNesting); the evaluator bounds each render by Limits — steps, call
// depth, output bytes and allocated bytes — checked where the work happens,
// so a hostile template fails with an error matching ErrLimit, never a
// stack overflow, a hang or an out-of-memory kill. Errors (*Error) give the
// line and column, the construct, and what was expected or went wrong.
package tmpl
