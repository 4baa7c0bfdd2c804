package tokenizer_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"nanoserve/internal/testshared"
	"nanoserve/llamacpp"
	"nanoserve/tokenizer"
)

// The vocabularies of llama.cpp's tokenizer tests, checked against
// llama.cpp's own cases (ggml-vocab-NAME.gguf.inp/.out) and against
// held-out cases
// (testdata/llamacpp_heldout/NAME.jsonl) whose ids come from
// testdata/llamacpp_ref.py, a Python reimplementation that reproduces all of
// llama.cpp's cases for them. Ids as llama_tokenize(add_special=false,
// parse_special=false). Issue 31 added falcon, deepseek-coder,
// deepseek-llm, qwen35, gemma-4 and bert-bge.
var llamaCppVocabs = []string{"falcon", "deepseek-coder", "deepseek-llm", "qwen35", "gemma-4", "bert-bge",
	"gpt-2", "mpt", "starcoder", "refact", "command-r", "llama-bpe", "qwen2", "llama-spm", "phi-3"}

func loadVocab(t *testing.T, name string) (*tokenizer.Tokenizer, string) {
	t.Helper()
	path := testshared.Path(t, "testdata/tokenizers/llamacpp-vocab/ggml-vocab-"+name+".gguf")
	tk, err := llamacpp.LoadTokenizer(path)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return tk, path
}

// readLlamaCppCases reads a .inp/.out pair as tests/test-tokenizer-0.cpp does.
func readLlamaCppCases(t *testing.T, gguf string) (texts []string, ids [][]int) {
	t.Helper()
	inp, err := os.ReadFile(gguf + ".inp")
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(gguf + ".out")
	if err != nil {
		t.Fatal(err)
	}
	const sep = "\n__ggml_vocab_test__\n"
	texts = strings.Split(string(inp), sep)
	if texts[len(texts)-1] == "" {
		texts = texts[:len(texts)-1]
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(texts) {
		t.Fatalf("%s: %d inputs, %d outputs", gguf, len(texts), len(lines))
	}
	for _, l := range lines {
		var row []int
		for _, f := range strings.Fields(l) {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			row = append(row, n)
		}
		ids = append(ids, row)
	}
	return texts, ids
}

func TestLlamaCppVocabs(t *testing.T) {
	for _, name := range llamaCppVocabs {
		t.Run(name, func(t *testing.T) {
			tk, path := loadVocab(t, name)
			texts, want := readLlamaCppCases(t, path)
			for i, s := range texts {
				if got := tk.Encode(s, false); !slices.Equal(got, want[i]) {
					t.Errorf("llama.cpp case %q: got %v, want %v", s, got, want[i])
				}
			}
			f, err := os.Open(filepath.Join("testdata", "llamacpp_heldout", name+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, 1<<20)
			n := 0
			for sc.Scan() {
				var c struct {
					Text string
					IDs  []int
				}
				if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
					t.Fatal(err)
				}
				n++
				if got := tk.Encode(c.Text, false); !slices.Equal(got, c.IDs) && !(len(got) == 0 && len(c.IDs) == 0) {
					t.Errorf("held-out %q: got %v, want %v", c.Text, got, c.IDs)
				}
			}
			if n < 150 {
				t.Errorf("%d held-out cases", n)
			}
		})
	}
}

// TestPhi3PlainEndOfSequence: phi-3's GGUF records </s> as user-defined;
// llama.cpp makes it a control token at load, so without special-token
// parsing the text "</s>" is text: "</" "s" ">" (no merge builds "</s>").
func TestPhi3PlainEndOfSequence(t *testing.T) {
	tk, _ := loadVocab(t, "phi-3")
	const text = "<s>[INST] Hello [/INST]</s>"
	got := tk.Encode(text, false)
	if slices.Contains(got, 2) || slices.Contains(got, 1) || !slices.Equal(got[len(got)-3:], []int{829, 29879, 29958}) {
		t.Errorf("plain: %v", got)
	}
	if d := tk.Decode(got); d != text {
		t.Errorf("plain decodes to %q", d)
	}
	parsed := tk.Encode(text, true)
	if parsed[0] != 1 || parsed[len(parsed)-1] != 2 {
		t.Errorf("parsed: %v", parsed)
	}
	if !tk.IsEOG(2) {
		t.Error("</s> does not end generation")
	}
	// llama.cpp's phi-3 rule: parsed special tokens take the whitespace after
	// them, except <unk>, <s>, <|endoftext|>.
	chat := tk.Encode("<|user|>\nHello<|end|>\n<|assistant|>\n", true)
	if !slices.Equal(chat, []int{32010, 15043, 32007, 32001}) {
		t.Errorf("chat: %v, want <|user|> ▁Hello <|end|> <|assistant|>", chat)
	}
	if got, want := tk.Encode("<s> y", true), append([]int{1}, tk.Encode(" y", false)...); !slices.Equal(got, want) {
		t.Errorf("<s> keeps its space: %v, want %v", got, want)
	}
}

// TestLlamaCppCheckPromptBytes: the byte bound never refuses a text that
// fits, for the new models and phi-3's whitespace-eating special tokens.
func TestLlamaCppCheckPromptBytes(t *testing.T) {
	texts := []string{"Hello, world!", "<|user|>" + strings.Repeat(" \n", 500) + "<|end|>", strings.Repeat(" ", 1000),
		"中文 é \xff\xfe", strings.Repeat("\n", 300), "<|channel>x<channel|>", strings.Repeat("unaffable", 100)}
	for _, name := range []string{"phi-3", "gemma-4", "bert-bge"} {
		tk, _ := loadVocab(t, name)
		for _, s := range texts {
			for _, special := range []bool{false, true} {
				n := len(tk.Encode(s, special))
				if err := tk.CheckPromptBytes(s, n); err != nil {
					t.Errorf("%s: CheckPromptBytes(%.30q, %d) = %v, but it encodes to %d tokens", name, s, n, err, n)
				}
			}
		}
	}
}
