package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"nanoserve/gguf"
	"nanoserve/model"
	"nanoserve/tokenizer"
)

// tokFlags name the tokenizer of tokenize/detokenize: --tokenizer, else
// the tokenizer of --model, else the built-in model's.
type tokFlags struct {
	tokenizer, model, revision string
}

func (tf *tokFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&tf.tokenizer, "tokenizer", "", "tokenizer: tokenizer.model, tokenizer.bin, tokenizer.json, GGUF file or folder (default: --model's)")
	fs.StringVar(&tf.model, "model", "", "model whose tokenizer to use: GGUF file, Hugging Face directory or hub REPO[:QUANT] (default: the built-in model)")
	fs.StringVar(&tf.revision, "revision", "main", "hub revision for --model REPO[:QUANT]")
}

// load reads the tokenizer the flags name. model.LoadTokenizer reads GGUF
// metadata (the first file of a split holds it) and otherwise calls
// tokenizer.Load (files and Hugging Face folders).
func (tf *tokFlags) load() (*tokenizer.Tokenizer, error) {
	path := tf.tokenizer
	switch {
	case path != "":
	case tf.model != "":
		p, _, err := resolveModel(tf.model, tf.revision)
		if err != nil {
			return nil, err
		}
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && !gguf.IsFile(p) {
			return nil, fmt.Errorf("%s carries no tokenizer (a llama2.c checkpoint?): pass --tokenizer PATH", tf.model)
		}
		path = p
	default:
		p, err := builtinModelPath()
		if err != nil {
			return nil, fmt.Errorf("%w: pass --tokenizer PATH or --model M", err)
		}
		path = p
	}
	return model.LoadTokenizer(path)
}

// runTokenize encodes text to ids:
//
//	nanoserve tokenize [--tokenizer PATH | --model M] [--jsonl] [--parse-special] [--bos] [TEXT...]
//
// The tokenizer is --tokenizer's, else --model's, else the built-in model's.
// Without --jsonl it encodes TEXT (the arguments joined by spaces) or, with
// none, all of stdin, and prints the ids space-separated on one line. With
// --jsonl each stdin line is {"text": ...} and each output line {"ids": [...]}.
// No BOS/EOS is added unless --bos/--eos.
func runTokenize(args []string) error {
	fs := newFlags("tokenize")
	var tf tokFlags
	tf.register(fs)
	jsonl := fs.Bool("jsonl", false, "read {\"text\":...} lines from stdin, write {\"ids\":[...]} lines")
	parseSpecial := fs.Bool("parse-special", false, "match special-token text (e.g. <s>, <|im_end|>) in the input as special tokens")
	bos := fs.Bool("bos", false, "prepend BOS if the model adds one")
	eos := fs.Bool("eos", false, "append EOS if the model adds one")
	pieces := fs.Bool("pieces", false, "print token texts instead of ids (not with --jsonl)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	tok, err := tf.load()
	if err != nil {
		return err
	}
	encode := func(text string) []int {
		ids := make([]int, 0, 16)
		if b, ok := tok.BOS(); *bos && ok && tok.AddBOS() {
			ids = append(ids, b)
		}
		ids = append(ids, tok.Encode(text, *parseSpecial)...)
		if e, ok := tok.EOS(); *eos && ok && tok.AddEOS() {
			ids = append(ids, e)
		}
		return ids
	}
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	defer out.Flush()

	if !*jsonl {
		var text string
		if len(pos) > 0 {
			text = strings.Join(pos, " ")
		} else {
			b, err := io.ReadAll(os.Stdin)
			if err != nil {
				return err
			}
			text = string(b)
		}
		ids := encode(text)
		for i, id := range ids {
			if i > 0 {
				out.WriteByte(' ')
			}
			if *pieces {
				out.WriteString(strconv.Quote(tok.Token(id)))
			} else {
				out.WriteString(strconv.Itoa(id))
			}
		}
		out.WriteByte('\n')
		return out.Flush()
	}

	in := bufio.NewReaderSize(os.Stdin, 1<<16)
	for lineNo := 1; ; lineNo++ {
		line, rerr := in.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var req struct {
				Text *string `json:"text"`
			}
			if err := json.Unmarshal(line, &req); err != nil {
				return fmt.Errorf("stdin line %d: %w", lineNo, err)
			}
			if req.Text == nil {
				return fmt.Errorf("stdin line %d: no \"text\" field", lineNo)
			}
			b, err := json.Marshal(struct {
				IDs []int `json:"ids"`
			}{encode(*req.Text)})
			if err != nil {
				return err
			}
			out.Write(b)
			out.WriteByte('\n')
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return rerr
		}
	}
	return out.Flush()
}

// runDetokenize decodes ids to text:
//
//	nanoserve detokenize --tokenizer PATH [--jsonl] [--special render|skip] [ID...]
//
// Without --jsonl it decodes the ids given as arguments or, with none, all
// whitespace-separated ids on stdin, and prints the text as is. With
// --jsonl each stdin line is {"ids": [...]} and each output line {"text": ...}.
func runDetokenize(args []string) error {
	fs := newFlags("detokenize")
	var tf tokFlags
	tf.register(fs)
	jsonl := fs.Bool("jsonl", false, "read {\"ids\":[...]} lines from stdin, write {\"text\":...} lines")
	special := fs.String("special", "", "control tokens: \"render\" as text or \"skip\" (default: the tokenizer's own rule)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	var opts tokenizer.DecodeOptions
	switch *special {
	case "":
	case "render":
		opts.Special = tokenizer.SpecialRender
	case "skip":
		opts.Special = tokenizer.SpecialSkip
	default:
		return fmt.Errorf("--special %q: want render or skip", *special)
	}
	tok, err := tf.load()
	if err != nil {
		return err
	}
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	defer out.Flush()

	if !*jsonl {
		fields := pos
		if len(fields) == 0 {
			b, err := io.ReadAll(os.Stdin)
			if err != nil {
				return err
			}
			fields = strings.Fields(string(b))
		}
		ids := make([]int, 0, len(fields))
		for _, f := range fields {
			id, err := strconv.Atoi(strings.Trim(f, "[],"))
			if err != nil {
				return fmt.Errorf("bad token id %q", f)
			}
			ids = append(ids, id)
		}
		if err := checkIDs(tok, ids); err != nil {
			return err
		}
		out.WriteString(tok.DecodeWith(ids, opts))
		return out.Flush()
	}

	in := bufio.NewReaderSize(os.Stdin, 1<<16)
	for lineNo := 1; ; lineNo++ {
		line, rerr := in.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var req struct {
				IDs []int `json:"ids"`
			}
			if err := json.Unmarshal(line, &req); err != nil {
				return fmt.Errorf("stdin line %d: %w", lineNo, err)
			}
			if err := checkIDs(tok, req.IDs); err != nil {
				return fmt.Errorf("stdin line %d: %w", lineNo, err)
			}
			// Encoder: HTML characters stay as they are ("<s>", not "\u003cs\u003e").
			enc := json.NewEncoder(out)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(struct {
				Text string `json:"text"`
			}{tok.DecodeWith(req.IDs, opts)}); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return rerr
		}
	}
	return out.Flush()
}

func checkIDs(tok *tokenizer.Tokenizer, ids []int) error {
	for _, id := range ids {
		if id < 0 || id >= tok.Size() {
			return fmt.Errorf("token id %d outside the vocabulary (size %d)", id, tok.Size())
		}
	}
	return nil
}
