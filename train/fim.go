package train

// Fill-in-the-middle training data.
//
// With Options.FIMRate > 0 the training documents are first cut into
// chunks of about one context (at line ends), and then each chunk, with
// probability FIMRate, becomes a FIM sample ("context-level" FIM: the split
// happens after chunking, so prefix, middle and suffix share one context):
// the chunk is cut into prefix, middle and suffix (SplitFIM) and laid out
// exactly as llama-server's /infill lays out an editor's request
// (llamacpp.InfillPrompt, no budget), followed by the middle and the end
// token:
//
//	PSM: [PRE] prefix [SUF] suffix [MID] middle <|endoftext|>
//	SPM: [SUF] suffix [PRE] prefix [MID] middle <|endoftext|>   (--spm-infill)
//
// Half of the FIM samples are SPM. A quarter carry repository context, the
// way /infill's input_extra arrives: [REP] "myproject\n", then up to two
// other files of the same directory (Go: the same package) as
// [SEP] name "\n" text, then [SEP] "filename\n" before the FIM part. The
// other chunks stay plain text, so the model keeps completing left to
// right; the held-out evaluation is plain text only.
//
// Middles are biased toward what editors ask for (SplitFIM): the rest of a
// line (35%), one to four whole lines (25%), a block body between "{" and
// its closing line (20%), and a uniformly random span (20%); FIMData's
// BlockRate draws that share of block bodies first.

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"nanoserve/llamacpp"
	"nanoserve/tokenizer"
)

// FIMSpecial are the control tokens a FIM-trained tokenizer reserves after
// the end token.
var FIMSpecial = []string{tokenizer.FIMPrefix, tokenizer.FIMSuffix, tokenizer.FIMMiddle,
	tokenizer.FIMPad, tokenizer.FIMRepoName, tokenizer.FIMFileSep}

// FIMSplit is a text cut into prefix, middle and suffix: Prefix + Middle +
// Suffix is the text.
type FIMSplit struct {
	Prefix, Middle, Suffix string
	Kind                   string // "line", "lines", "block" or "span"
}

// lineSpan is one line of a text: [start, end) without its newline.
type lineSpan struct{ start, end int }

func lineSpans(s string) []lineSpan {
	var out []lineSpan
	for i := 0; i < len(s); {
		j := strings.IndexByte(s[i:], '\n')
		if j < 0 {
			out = append(out, lineSpan{i, len(s)})
			break
		}
		out = append(out, lineSpan{i, i + j})
		i += j + 1
	}
	return out
}

// indentOf returns the number of leading spaces and tabs of s.
func indentOf(s string) int {
	n := 0
	for n < len(s) && (s[n] == ' ' || s[n] == '\t') {
		n++
	}
	return n
}

// runeStart moves i back to the start of the UTF-8 sequence it is in.
func runeStart(s string, i int) int {
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

// BlockBody returns the body of the block opened by line i (which ends in
// "{"): from the start of line i+1 to the start of the first later line
// that is not blank and is indented no deeper than line i. ok is false if
// line i opens no block with a non-empty body.
func BlockBody(s string, lines []lineSpan, i int) (start, end int, ok bool) {
	l := lines[i]
	if !strings.HasSuffix(strings.TrimRight(s[l.start:l.end], " \t\r"), "{") || i+1 >= len(lines) {
		return 0, 0, false
	}
	ind := indentOf(s[l.start:l.end])
	for j := i + 1; j < len(lines); j++ {
		t := s[lines[j].start:lines[j].end]
		if strings.TrimSpace(t) != "" && indentOf(t) <= ind {
			if j == i+1 {
				return 0, 0, false
			}
			return lines[i+1].start, lines[j].start, true
		}
	}
	return 0, 0, false
}

// blockBodies lists the [start, end) of every block body in s (BlockBody
// of each line), in order.
func blockBodies(s string, lines []lineSpan) [][2]int {
	var out [][2]int
	for i := range lines {
		if a, b, ok := BlockBody(s, lines, i); ok {
			out = append(out, [2]int{a, b})
		}
	}
	return out
}

// SplitFIM cuts text into prefix, middle and suffix, choosing the kind of
// middle with rng (see the file comment). The middle is never empty for a
// text with a non-blank line.
//
// lineStart is the fraction of "rest of a line" middles whose cursor sits
// right after the indentation (where an editor asks at the start of a new
// line); the others start at a random character of the line. 0 draws no
// extra number, so the stream is the one the shipped model's base run saw.
//
// blockRate is the fraction of middles that are block bodies before the
// usual draw (which has its own 20%): more of them teach where a body ends
// — the end token after its last line, not after every line. 0 draws no
// extra number.
func SplitFIM(text string, rng *rand.Rand, lineStart, blockRate float64) FIMSplit {
	lines := lineSpans(text)
	cut := func(a, b int, kind string) FIMSplit {
		return FIMSplit{Prefix: text[:a], Middle: text[a:b], Suffix: text[b:], Kind: kind}
	}
	var nonBlank []int
	for i, l := range lines {
		if strings.TrimSpace(text[l.start:l.end]) != "" {
			nonBlank = append(nonBlank, i)
		}
	}
	if len(nonBlank) == 0 {
		a := rng.IntN(len(text) + 1)
		return cut(a, a, "span")
	}
	pickBlock := func() (FIMSplit, bool) {
		blocks := blockBodies(text, lines)
		if len(blocks) == 0 {
			return FIMSplit{}, false
		}
		bl := blocks[rng.IntN(len(blocks))]
		return cut(bl[0], bl[1], "block"), true
	}
	if blockRate > 0 && rng.Float64() < blockRate {
		if s, ok := pickBlock(); ok {
			return s
		}
	}
	r := rng.Float64()
	switch {
	case r < 0.35: // the rest of a line, from a cursor after its indentation
		l := lines[nonBlank[rng.IntN(len(nonBlank))]]
		from := l.start + indentOf(text[l.start:l.end])
		if lineStart > 0 && rng.Float64() < lineStart {
			return cut(from, l.end, "line")
		}
		a := runeStart(text, from+rng.IntN(l.end-from))
		return cut(a, l.end, "line")
	case r < 0.60: // one to four whole lines, from after the first one's indentation
		i := nonBlank[rng.IntN(len(nonBlank))]
		j := min(i+rng.IntN(4), len(lines)-1)
		a := lines[i].start + indentOf(text[lines[i].start:lines[i].end])
		b := lines[j].end
		if b < len(text) {
			b++ // the newline
		}
		return cut(a, b, "lines")
	case r < 0.80: // a block body
		if s, ok := pickBlock(); ok {
			return s
		}
	}
	a := runeStart(text, rng.IntN(len(text)))
	b := runeStart(text, a+1+rng.IntN(len(text)-a))
	if b <= a {
		b = len(text)
	}
	return cut(a, b, "span")
}

// chunkText cuts s into pieces of about n bytes at line ends; the pieces
// concatenate to s.
func chunkText(s string, n int) []string {
	var out []string
	for len(s) > n {
		j := strings.LastIndexByte(s[:n], '\n')
		if j < n/4 {
			j = n - 1
			if k := strings.IndexByte(s[n:], '\n'); k >= 0 {
				j = n + k
			}
		}
		out = append(out, s[:j+1])
		s = s[j+1:]
	}
	if len(s) > 0 {
		out = append(out, s)
	}
	return out
}

// FIMData configures FIMTokens.
type FIMData struct {
	Rate       float64 // fraction of chunks made FIM samples
	ChunkBytes int     // chunk size in bytes (about one context)
	Seed       uint64
	// SPMRate is the fraction of FIM samples laid out suffix first (0:
	// half, drawn as the low bit of the chunk's generator — how the
	// shipped model's data were drawn).
	SPMRate float64
	// LineStart and BlockRate are SplitFIM's lineStart and blockRate.
	LineStart, BlockRate float64
}

// fimRNG is the generator of one chunk: a function of the seed, document
// name and chunk index only, so the data do not depend on reading order.
func fimRNG(seed uint64, name string, chunk int) *rand.Rand {
	f := fnv.New64a()
	fmt.Fprintf(f, "fim\x00%s\x00%d", name, chunk)
	return rand.New(rand.NewPCG(seed, f.Sum64()))
}

// FIMTokens encodes docs into one training stream like Tokens, with FIM
// samples (see the file comment); the tokenizer must have FIM tokens, and
// eot ends every document and every middle. starts are the offsets where
// chunks begin: training windows start there, so a FIM sample (about one
// context long) is seen whole, its markers included. middle[i] says
// whether ids[i] is a FIM middle's token or the end token after one: the
// tokens a FIM sample teaches that plain text does not (Options.FIMWeight
// weighs them).
func FIMTokens(tk *tokenizer.Tokenizer, docs []Doc, d FIMData, eot int) (ids []int32, starts []int, middle []bool, err error) {
	if err := llamacpp.CheckFIM(tk); err != nil {
		return nil, nil, nil, fmt.Errorf("train: %w", err)
	}
	byDir := map[string][]int{}
	for i, doc := range docs {
		dir := filepath.Dir(doc.Name)
		byDir[dir] = append(byDir[dir], i)
	}
	var out []int32
	var mid []bool
	add := func(ids []int, nMid int) {
		for i, id := range ids {
			out = append(out, int32(id))
			mid = append(mid, i >= len(ids)-nMid)
		}
	}
	for di, doc := range docs {
		for ci, chunk := range chunkText(doc.Text, d.ChunkBytes) {
			starts = append(starts, len(out))
			rng := fimRNG(d.Seed, doc.Name, ci)
			if rng.Float64() >= d.Rate {
				add(tk.Encode(chunk, false), 0)
				continue
			}
			s := SplitFIM(chunk, rng, d.LineStart, d.BlockRate)
			in := llamacpp.InfillInput{Prefix: s.Prefix, Suffix: s.Suffix}
			var spm bool
			if d.SPMRate == 0 {
				spm = rng.IntN(2) == 1
			} else {
				spm = rng.Float64() < d.SPMRate
			}
			if rng.Float64() < 0.25 {
				in.Extra = fimExtra(docs, byDir[filepath.Dir(doc.Name)], di, d.ChunkBytes/2, rng)
				if in.Extra == nil {
					in.Extra = []llamacpp.InfillChunk{}
				}
			}
			sample, nMid, err := fimSample(tk, in, s.Middle, spm, eot)
			if err != nil {
				return nil, nil, nil, err
			}
			add(sample, nMid)
		}
		out = append(out, int32(eot))
		mid = append(mid, false)
	}
	return out, starts, mid, nil
}

// FIMChunkBytes is the chunk size that makes a FIM sample about 0.85 of
// a context of ctx tokens (room for the markers and the pieces' separate
// tokenization) at the tokenizer's bytes per token on docs (up to 1 MB).
func FIMChunkBytes(tk *tokenizer.Tokenizer, docs []Doc, ctx int) int {
	var nb, nt int
	for _, d := range docs {
		if nb >= 1<<20 {
			break
		}
		nb += len(d.Text)
		nt += len(tk.Encode(d.Text, false))
	}
	if nt == 0 {
		return 2 * ctx
	}
	return max(int(0.85*float64(ctx)*float64(nb)/float64(nt)), 16)
}

// fimSample is one FIM training sample: the infill prompt, the middle and
// the end token. An Extra that is nil means no repository context; empty
// means the repository and file markers without other files. nMid is the
// number of tokens at the end that are the middle and the end token.
func fimSample(tk *tokenizer.Tokenizer, in llamacpp.InfillInput, middle string, spm bool, eot int) (ids []int, nMid int, err error) {
	ids, err = llamacpp.InfillPrompt(tk, in, llamacpp.InfillBudget{}, spm)
	if err != nil {
		return nil, 0, fmt.Errorf("train: %w", err)
	}
	if in.Extra == nil {
		// Without repository context the sample starts at the FIM part:
		// drop the [REP] "myproject\n" [SEP] "filename\n" header.
		ids = ids[fimHeaderLen(tk):]
	}
	m := tk.Encode(middle, false)
	ids = append(ids, m...)
	return append(ids, eot), len(m) + 1, nil
}

// fimHeaderLen is the number of tokens InfillPrompt puts before the FIM
// part when there is no extra context.
func fimHeaderLen(tk *tokenizer.Tokenizer) int {
	f := tk.FIM()
	n := 0
	if f.Rep.OK {
		n += 1 + len(tk.Encode(llamacpp.InfillRepo+"\n", false))
	}
	if f.Sep.OK {
		n += 1 + len(tk.Encode(llamacpp.InfillFile+"\n", false))
	}
	return n
}

// fimExtra picks up to two other files of the same directory, each cut to
// at most max bytes (a random chunk of it).
func fimExtra(docs []Doc, same []int, self, maxBytes int, rng *rand.Rand) []llamacpp.InfillChunk {
	others := slices.DeleteFunc(slices.Clone(same), func(i int) bool { return i == self })
	var out []llamacpp.InfillChunk
	for k := rng.IntN(3); k > 0 && len(others) > 0; k-- {
		j := rng.IntN(len(others))
		d := docs[others[j]]
		others = slices.Delete(others, j, j+1)
		cs := chunkText(d.Text, maxBytes)
		out = append(out, llamacpp.InfillChunk{Filename: filepath.Base(d.Name), Text: cs[rng.IntN(len(cs))]})
	}
	return out
}
