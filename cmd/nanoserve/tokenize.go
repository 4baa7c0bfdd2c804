package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
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
	if tf.tokenizer != "" {
		return model.LoadTokenizer(tf.tokenizer)
	}
	p, _, err := modelPath(tf.model, tf.revision)
	switch {
	case err != nil && tf.model == "":
		return nil, fmt.Errorf("%w: pass --tokenizer PATH or --model M", err)
	case err != nil:
		return nil, err
	}
	if fi, err := os.Stat(p); tf.model != "" && err == nil && !fi.IsDir() && !gguf.IsFile(p) {
		return nil, fmt.Errorf("%s carries no tokenizer (a llama2.c checkpoint?): pass --tokenizer PATH", tf.model)
	}
	return model.LoadTokenizer(p)
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
	o := tokenizer.EncodeOptions{ParseSpecial: *parseSpecial, BOS: *bos, EOS: *eos}
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	defer out.Flush()
	if *jsonl {
		if err := tok.EncodeJSONL(os.Stdin, out, o); err != nil {
			return stdinErr(err)
		}
		return out.Flush()
	}
	text := strings.Join(pos, " ")
	if len(pos) == 0 {
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return err
		}
		text = string(b)
	}
	tok.WriteIDs(out, tok.Tokens(text, o), *pieces)
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
	mode, err := tokenizer.ParseSpecialMode(*special)
	if err != nil {
		return fmt.Errorf("--special %q: want render or skip", *special)
	}
	opts := tokenizer.DecodeOptions{Special: mode}
	tok, err := tf.load()
	if err != nil {
		return err
	}
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	defer out.Flush()
	if *jsonl {
		if err := tok.DecodeJSONL(os.Stdin, out, opts); err != nil {
			return stdinErr(err)
		}
		return out.Flush()
	}
	fields := pos
	if len(fields) == 0 {
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return err
		}
		fields = strings.Fields(string(b))
	}
	ids, err := tok.ParseIDs(fields)
	if err != nil {
		return err
	}
	out.WriteString(tok.DecodeWith(ids, opts))
	return out.Flush()
}

// stdinErr names stdin in an error about one of its lines.
func stdinErr(err error) error {
	if _, ok := err.(*tokenizer.LineError); ok {
		return fmt.Errorf("stdin %w", err)
	}
	return err
}
