package grammar

import (
	"fmt"
	"strings"
)

// Composition: a grammar inside literal text. A tool call in Hermes/Qwen
// form is `<tool_call>\n` + a JSON value valid for the call's schema +
// `\n</tool_call>`, repeated for parallel calls; Mistral's is the control
// token [TOOL_CALLS] before a JSON array. Wrap builds that grammar from the
// value's grammar (any front end's: FromJSONSchema, ParseGBNF, ...), so the
// whole reply, wrapper included, is enforced.
//
// Control tokens. The automaton walks the bytes tokens spell, and a
// special token ([TOOL_CALLS], <|python_tag|>) spells none: NewVocab keeps
// it out of the trie, since a control token must never be produced by
// ordinary text that happens to look like it. A wrapper names such texts
// in ControlTokens; at Compile each occurrence becomes a terminal matched
// by token id when the vocabulary holds a special token with that text
// (Mask allows that one id, Accept advances over it), and plain text to
// spell when it does not (a model whose vocabulary lacks the token writes
// the text, which the tool-call parser reads the same way).

// Wrapper is the text around a composed value.
type Wrapper struct {
	Prefix, Suffix string
	// Repeat allows one or more occurrences of Prefix value Suffix, joined
	// by Separator; otherwise exactly one.
	Repeat    bool
	Separator string
	// ControlTokens are texts that, wherever they occur in Prefix, Suffix
	// or Separator, stand for one control token (see above).
	ControlTokens []string
}

// valueRule is the name Wrap gives the wrapped grammar's root; the wrapped
// grammar's other rules keep their names under valueRule + ".", which no
// front end produces (GBNF names are letters, digits and '-').
const valueRule = "value"

// Wrap returns the grammar of w.Prefix + an output of g + w.Suffix (one or
// more, joined by w.Separator, when w.Repeat). g is not modified.
func Wrap(g *Grammar, w Wrapper) (*Grammar, error) {
	for _, t := range w.ControlTokens {
		if t == "" {
			return nil, fmt.Errorf("grammar: empty control token text")
		}
	}
	out := &Grammar{root: "root"}
	rename := func(n string) string {
		if n == g.root {
			return valueRule
		}
		return valueRule + "." + n
	}
	for _, n := range g.order {
		if err := out.addRule(rename(n), renameRefs(g.rules[n], rename)); err != nil {
			return nil, err
		}
	}
	one := seq(textExpr(w.Prefix, w.ControlTokens), ref(valueRule), textExpr(w.Suffix, w.ControlTokens))
	body := one
	if w.Repeat {
		body = seq(one, star(seq(textExpr(w.Separator, w.ControlTokens), one)))
	}
	if err := out.addRule("root", body); err != nil {
		return nil, err
	}
	return out, out.check()
}

// textExpr is s as literals, with the occurrences of control token texts
// as control-token terminals (the earliest, then longest, match first).
func textExpr(s string, control []string) expr {
	var items []expr
	for s != "" {
		at, tok := -1, ""
		for _, t := range control {
			if i := strings.Index(s, t); i >= 0 && (at < 0 || i < at || (i == at && len(t) > len(tok))) {
				at, tok = i, t
			}
		}
		if at < 0 {
			items = append(items, lit(s))
			break
		}
		if at > 0 {
			items = append(items, lit(s[:at]))
		}
		items = append(items, tokExpr{tok})
		s = s[at+len(tok):]
	}
	return seqExpr{items}
}

// renameRefs copies e with every rule reference renamed.
func renameRefs(e expr, rename func(string) string) expr {
	switch e := e.(type) {
	case refExpr:
		return refExpr{rename(e.name)}
	case seqExpr:
		items := make([]expr, len(e.items))
		for i, x := range e.items {
			items[i] = renameRefs(x, rename)
		}
		return seqExpr{items}
	case altExpr:
		alts := make([]expr, len(e.alts))
		for i, x := range e.alts {
			alts[i] = renameRefs(x, rename)
		}
		return altExpr{alts}
	case repExpr:
		return repExpr{renameRefs(e.e, rename), e.min, e.max}
	}
	return e // leaves: literals, classes, bytes, control tokens
}
