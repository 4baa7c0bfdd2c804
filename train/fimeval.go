package train

// Fill-in-the-middle evaluation: how well a model fills a gap in held-out
// Go files, the way an editor asks.
//
// Cases (FIMCases, seeded): "line" blanks one line's text after its
// indentation (prefix ends at the cursor, suffix starts with the newline);
// "block" blanks the body of a block opened by a line ending in "{" (one to
// eight lines; prefix ends after "{\n", suffix starts at the closing line).
// Every system completes greedily under the same rules: a line case stops
// at the first newline (at most 32 tokens); a block case stops at the first
// later non-blank line indented less than the body's first line — the
// editor's n_indent — (at most 96 tokens); a FIM model also stops at its
// end-of-middle token. Scores: exact match (trailing whitespace ignored)
// and character similarity 1 − Levenshtein(got, want) / max(len) over
// runes, averaged per kind.
//
// Systems: a model with the suffix (FIM prompt, PSM, llama-server's budget
// for its context), a model left to right (the prefix only), and the
// interpolated Kneser-Ney trigram left to right.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"nanoserve/kvcache"
	"nanoserve/llamacpp"
	"nanoserve/model"
	"nanoserve/tokenizer"
)

// FIMCase is one gap to fill.
type FIMCase struct {
	Doc, Kind              string // Kind: "line" or "block"
	Prefix, Middle, Suffix string
	Indent                 int // block: indentation of the body's first line
}

// Case limits.
const (
	fimLineTokens  = 32
	fimBlockTokens = 96
	fimMaxLines    = 8
	fimCtxChars    = 4096 // prefix/suffix characters kept around the gap before tokenizing
)

// FIMCases draws n cases from docs with seed: alternately line and block
// cases, each from a random document that has one.
func FIMCases(docs []Doc, n int, seed uint64) []FIMCase {
	rng := rand.New(rand.NewPCG(seed, 0xf1))
	var out []FIMCase
	for tries := 0; len(out) < n && tries < 50*n; tries++ {
		d := docs[rng.IntN(len(docs))]
		lines := lineSpans(d.Text)
		if len(lines) < 3 {
			continue
		}
		if len(out)%2 == 0 {
			i := 1 + rng.IntN(len(lines)-2)
			l := lines[i]
			from := l.start + indentOf(d.Text[l.start:l.end])
			if len(strings.TrimSpace(d.Text[from:l.end])) < 4 {
				continue
			}
			out = append(out, FIMCase{Doc: d.Name, Kind: "line", Prefix: d.Text[:from], Middle: d.Text[from:l.end], Suffix: d.Text[l.end:]})
			continue
		}
		opens := slices.DeleteFunc(blockBodies(d.Text, lines), func(ab [2]int) bool {
			return strings.Count(d.Text[ab[0]:ab[1]], "\n") > fimMaxLines
		})
		if len(opens) == 0 {
			continue
		}
		ab := opens[rng.IntN(len(opens))]
		a, b := ab[0], ab[1]
		out = append(out, FIMCase{Doc: d.Name, Kind: "block", Prefix: d.Text[:a], Middle: d.Text[a:b], Suffix: d.Text[b:],
			Indent: indentOf(d.Text[a:b])})
	}
	return out
}

// Done reports whether generated text completes the case, and cuts it
// to the answer: a line case at its first newline, a block case before the
// first later non-blank line indented less than the body.
func (c *FIMCase) Done(text string) (string, bool) {
	if c.Kind == "line" {
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			return text[:i], true
		}
		return text, false
	}
	for i := 0; ; {
		j := strings.IndexByte(text[i:], '\n')
		if j < 0 {
			return text, false
		}
		ls := i + j + 1
		rest := text[ls:]
		k := strings.IndexByte(rest, '\n')
		if k < 0 {
			// The line is not finished: decided once it has non-blank text.
			if strings.TrimSpace(rest) != "" && indentOf(rest) < c.Indent {
				return text[:ls], true
			}
			return text, false
		}
		line := rest[:k]
		if strings.TrimSpace(line) != "" && indentOf(line) < c.Indent {
			return text[:ls], true
		}
		i = ls
	}
}

// MaxTokens is the case's generation limit.
func (c *FIMCase) MaxTokens() int {
	if c.Kind == "line" {
		return fimLineTokens
	}
	return fimBlockTokens
}

// Similarity is 1 − Levenshtein(a, b)/max(len(a), len(b)) over runes (1
// for two empty strings).
func Similarity(a, b string) float64 {
	ra, rb := []rune(a), []rune(b)
	if len(ra) == 0 && len(rb) == 0 {
		return 1
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			sub := prev[j-1]
			if ra[i-1] != rb[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return 1 - float64(prev[len(rb)])/float64(max(len(ra), len(rb)))
}

// FIMScore is one system's result on one kind of case.
type FIMScore struct {
	N          int
	Exact, Sim float64 // means
}

// Completer fills a case, returning the raw generated text (Done cuts it).
type Completer func(c *FIMCase) (string, error)

// EvalFIM scores complete on cases, by kind.
func EvalFIM(cases []FIMCase, complete Completer) (map[string]FIMScore, error) {
	sum := map[string]FIMScore{}
	for i := range cases {
		c := &cases[i]
		text, err := complete(c)
		if err != nil {
			return nil, err
		}
		got, _ := c.Done(text)
		s := sum[c.Kind]
		s.N++
		a, b := strings.TrimRight(got, " \t\n"), strings.TrimRight(c.Middle, " \t\n")
		if a == b {
			s.Exact++
		}
		s.Sim += Similarity(a, b)
		sum[c.Kind] = s
	}
	for k, s := range sum {
		s.Exact /= float64(s.N)
		s.Sim /= float64(s.N)
		sum[k] = s
	}
	return sum, nil
}

// Greedy decodes a served model greedily on a private cache.
type Greedy struct {
	M     *model.Model
	Tok   *tokenizer.Tokenizer
	SPM   bool   // WithSuffix lays the prompt out suffix first (llama-server's --spm-infill)
	Path  string // the model file
	cache *kvcache.Cache
}

// LoadGreedy loads a model file for greedy decoding.
func LoadGreedy(path string, threads int) (*Greedy, error) {
	m, err := model.Load(path, model.Options{Threads: threads})
	if err != nil {
		return nil, err
	}
	if m.Tokenizer == nil {
		m.Close()
		return nil, fmt.Errorf("train: model %s carries no tokenizer", path)
	}
	c, err := m.NewCache(m.ContextLen)
	if err != nil {
		m.Close()
		return nil, err
	}
	return &Greedy{M: m, Tok: m.Tokenizer, Path: path, cache: c}, nil
}

// Close frees the model.
func (g *Greedy) Close() { g.M.Close() }

// Generate continues prompt greedily: at most max tokens, until an
// end-of-generation token or until done says the text is complete. A
// prompt longer than the context minus max keeps its end. The prefix,
// suffix, middle and repository markers are never chosen (no layout lets
// a model write them), and control tokens are not text.
func (g *Greedy) Generate(prompt []int, maxTok int, done func(string) bool) (string, error) {
	ctx := g.M.ContextLen
	f := g.Tok.FIM()
	never := map[int]bool{}
	for _, o := range []tokenizer.OptID{f.Pre, f.Suf, f.Mid, f.Rep} {
		if o.OK {
			never[o.ID] = true
		}
	}
	text := func(ids []int) string {
		return g.Tok.DecodeWith(ids, tokenizer.DecodeOptions{Special: tokenizer.SpecialSkip})
	}
	if keep := ctx - maxTok; len(prompt) > keep {
		prompt = prompt[len(prompt)-keep:]
	}
	s := &kvcache.Seq{}
	defer g.cache.Release(s)
	if err := g.cache.Reserve(s, len(prompt)+maxTok); err != nil {
		return "", err
	}
	var ids []int
	b := model.Batch{}
	for i, t := range prompt {
		b.Tokens, b.Pos, b.Seq, b.Output = append(b.Tokens, t), append(b.Pos, i), append(b.Seq, s), append(b.Output, i == len(prompt)-1)
	}
	pos := len(prompt)
	for range maxTok {
		lg, err := g.M.Forward(b, g.cache)
		if err != nil {
			return "", err
		}
		row := lg[len(lg)-g.M.Vocab:]
		best := -1
		for j, v := range row {
			if !never[j] && (best < 0 || v > row[best]) {
				best = j
			}
		}
		if g.Tok.IsEOG(best) {
			break
		}
		ids = append(ids, best)
		if done(text(ids)) {
			break
		}
		b = model.Batch{Tokens: []int{best}, Pos: []int{pos}, Seq: []*kvcache.Seq{s}, Output: []bool{true}}
		pos++
	}
	return text(ids), nil
}

// clip keeps the end of the prefix and the start of the suffix.
func clip(c *FIMCase) (prefix, suffix string) {
	prefix, suffix = c.Prefix, c.Suffix
	if len(prefix) > fimCtxChars {
		prefix = prefix[runeStart(prefix, len(prefix)-fimCtxChars):]
	}
	if len(suffix) > fimCtxChars {
		suffix = suffix[:runeStart(suffix, fimCtxChars)]
	}
	return prefix, suffix
}

func doneFor(c *FIMCase) func(string) bool {
	return func(s string) bool { _, ok := c.Done(s); return ok }
}

// WithSuffix completes with the FIM prompt (PSM) under llama-server's
// budget for the model's context, as /infill builds it: a batch of
// ctx − max − 2 tokens, because llama-server's split can give the FIM
// part one token more than the batch (and BOS one more), and a prompt
// longer than ctx − max would lose its first tokens — the <|fim_prefix|>
// marker — to Generate's cut.
func (g *Greedy) WithSuffix(c *FIMCase) (string, error) {
	ids, err := g.fimPrompt(c)
	if err != nil {
		return "", err
	}
	return g.Generate(ids, c.MaxTokens(), doneFor(c))
}

func (g *Greedy) fimPrompt(c *FIMCase) ([]int, error) {
	prefix, suffix := clip(c)
	ctx, mx := g.M.ContextLen, c.MaxTokens()
	return llamacpp.InfillPrompt(g.Tok, llamacpp.InfillInput{Prefix: prefix, Suffix: suffix},
		llamacpp.InfillBudget{Batch: ctx - mx - 2, Predict: mx, Ctx: ctx}, g.SPM)
}

// LeftToRight completes from the prefix alone.
func (g *Greedy) LeftToRight(c *FIMCase) (string, error) {
	prefix, _ := clip(c)
	return g.Generate(g.Tok.Encode(prefix, false), c.MaxTokens(), doneFor(c))
}

// KNCompleter completes left to right with the trigram: the most probable
// next token given the last two, until done or max tokens.
func KNCompleter(kn *KN3, tk *tokenizer.Tokenizer) Completer {
	return func(c *FIMCase) (string, error) {
		prefix, _ := clip(c)
		p := tk.Encode(prefix, false)
		u, v := int32(-1), int32(-1)
		if len(p) >= 2 {
			u = int32(p[len(p)-2])
		}
		if len(p) >= 1 {
			v = int32(p[len(p)-1])
		}
		var ids []int
		for range c.MaxTokens() {
			best, bp := 0, math.Inf(-1)
			for w := range kn.V {
				if q := kn.Prob(u, v, int32(w)); q > bp {
					best, bp = w, q
				}
			}
			if tk.IsEOG(best) {
				break
			}
			ids = append(ids, best)
			if _, ok := c.Done(tk.Decode(ids)); ok {
				break
			}
			u, v = v, int32(best)
		}
		return tk.Decode(ids), nil
	}
}
