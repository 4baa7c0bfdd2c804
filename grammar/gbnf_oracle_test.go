package grammar

import (
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"strconv"
	"testing"
)

const arithGBNF = `# integer arithmetic
root   ::= expr
expr   ::= term (ws [-+] ws term)*
term   ::= factor (ws "*" ws factor)*
factor ::= num | "(" ws expr ws ")" | "-" factor
num    ::= [0-9]{1,3}
ws     ::= " "?
`

// evalArith is the oracle: a hand-written recursive-descent evaluator
// (mod 2^61 arithmetic; only parse success matters for validity).
func evalArith(s string) (int64, error) {
	p := &arith{s: s}
	v, err := p.expr()
	if err == nil && p.i != len(p.s) {
		err = fmt.Errorf("trailing %q", p.s[p.i:])
	}
	return v, err
}

type arith struct {
	s string
	i int
}

func (p *arith) ws() {
	if p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

func (p *arith) expr() (int64, error) {
	v, err := p.term()
	for err == nil {
		save := p.i
		p.ws()
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			op := p.s[p.i]
			p.i++
			p.ws()
			var w int64
			if w, err = p.term(); op == '+' {
				v += w
			} else {
				v -= w
			}
			continue
		}
		p.i = save
		break
	}
	return v, err
}

func (p *arith) term() (int64, error) {
	v, err := p.factor()
	for err == nil {
		save := p.i
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == '*' {
			p.i++
			p.ws()
			var w int64
			w, err = p.factor()
			v *= w
			continue
		}
		p.i = save
		break
	}
	return v, err
}

func (p *arith) factor() (int64, error) {
	if p.i >= len(p.s) {
		return 0, fmt.Errorf("unexpected end")
	}
	switch c := p.s[p.i]; {
	case c == '(':
		p.i++
		p.ws()
		v, err := p.expr()
		if err != nil {
			return 0, err
		}
		p.ws()
		if p.i >= len(p.s) || p.s[p.i] != ')' {
			return 0, fmt.Errorf("missing )")
		}
		p.i++
		return v, nil
	case c == '-':
		p.i++
		v, err := p.factor()
		return -v, err
	case c >= '0' && c <= '9':
		j := p.i
		for j < len(p.s) && j-p.i < 3 && p.s[j] >= '0' && p.s[j] <= '9' {
			j++
		}
		v, _ := strconv.ParseInt(p.s[p.i:j], 10, 64)
		p.i = j
		return v, nil
	}
	return 0, fmt.Errorf("unexpected %q", p.s[p.i])
}

const jsonGBNF = `root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws
array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws
string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws
ws ::= | " " | "\n" [ \t]{0,20}
`

// goSubsetGBNF: a tiny Go file — package clause, then functions of
// assignments and returns over identifiers and integer literals.
const goSubsetGBNF = `root    ::= "package main\n" decl*
decl    ::= "\nfunc " ident "(" params? ") int {\n" stmt* "\treturn " exprg "\n}\n"
params  ::= ident ( ", " ident )* " int"
stmt    ::= "\t" ident " := " exprg "\n\t_ = " ident "\n"
exprg   ::= operand ( " " [-+*] " " operand )*
operand ::= ident | [1-9] [0-9]{0,3} | "(" exprg ")"
ident   ::= [a-z] [a-z0-9]{0,5}
`

func TestGBNFOracles(t *testing.T) {
	for _, which := range []int{0, 1} {
		tv := realVocab(t, which)
		cases := []struct {
			name, src string
			check     func(string) error
		}{
			{"arith", arithGBNF, func(s string) error { _, err := evalArith(s); return err }},
			{"json", jsonGBNF, func(s string) error {
				var v map[string]any
				return json.Unmarshal([]byte(s), &v)
			}},
			{"go", goSubsetGBNF, func(s string) error {
				_, err := parser.ParseFile(nilFset(), "x.go", s, 0)
				return err
			}},
		}
		for _, tc := range cases {
			t.Run(tv.name+"/"+tc.name, func(t *testing.T) {
				g, err := ParseGBNF(tc.src)
				if err != nil {
					t.Fatal(err)
				}
				c, err := Compile(g, tv.v)
				if err != nil {
					t.Fatal(err)
				}
				rng := rand.New(rand.NewPCG(uint64(which), 7))
				for k := 0; k < 12; k++ {
					budget := c.MinTokens() + rng.IntN(60)
					out := walk(t, c, tv, budget, rng, k%3 == 2)
					if err := tc.check(string(out)); err != nil {
						t.Fatalf("budget %d: output %q rejected by the oracle: %v", budget, out, err)
					}
				}
			})
		}
	}
}

func nilFset() *token.FileSet { return token.NewFileSet() }
