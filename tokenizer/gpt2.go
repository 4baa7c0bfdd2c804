package tokenizer

// GPT-2 vocabulary folders: encoder.json + vocab.bpe (OpenAI's release), or
// the same content as vocab.json + merges.txt (Hugging Face GPT-2 folders,
// possibly with tokenizer_config.json beside). encoder.json maps each token
// (in GPT-2's byte alphabet) to its id; vocab.bpe lists merges "left right"
// by rank after a "#version" line. <|endoftext|> (50256 in GPT-2) is both
// BOS and EOS, a Control token: as text it is only matched when special
// tokens are parsed.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// gpt2DirFiles returns the vocabulary and merges files of a GPT-2 folder.
func gpt2DirFiles(dir string) (vocab, merges string, err error) {
	for _, p := range [][2]string{{"encoder.json", "vocab.bpe"}, {"vocab.json", "merges.txt"}} {
		v, m := filepath.Join(dir, p[0]), filepath.Join(dir, p[1])
		if fileExists(v) && fileExists(m) {
			return v, m, nil
		}
	}
	return "", "", fmt.Errorf("tokenizer: %s holds neither encoder.json+vocab.bpe nor vocab.json+merges.txt", dir)
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// loadGPT2Dir loads a GPT-2 vocabulary folder.
func loadGPT2Dir(dir string) (*Tokenizer, error) {
	v, err := gpt2DirVocab(dir)
	if err != nil {
		return nil, err
	}
	return FromVocab(v)
}

// gpt2DirVocab reads a GPT-2 folder into a Vocab.
func gpt2DirVocab(dir string) (Vocab, error) {
	vocabPath, mergesPath, err := gpt2DirFiles(dir)
	if err != nil {
		return Vocab{}, err
	}
	vocabData, err := os.ReadFile(vocabPath)
	if err != nil {
		return Vocab{}, fmt.Errorf("tokenizer: %w", err)
	}
	mergesData, err := os.ReadFile(mergesPath)
	if err != nil {
		return Vocab{}, fmt.Errorf("tokenizer: %w", err)
	}
	cfg, err := readHFConfig(dir)
	if err != nil {
		return Vocab{}, err
	}
	v, err := parseGPT2(vocabData, mergesData, cfg)
	if err != nil {
		return Vocab{}, fmt.Errorf("tokenizer: %s: %w", dir, err)
	}
	return v, nil
}

// parseGPT2 builds a Vocab from encoder.json and vocab.bpe contents; cfg
// (may be nil) names special tokens.
func parseGPT2(vocabData, mergesData []byte, cfg *hfConfig) (Vocab, error) {
	d := &jsonReader{b: string(vocabData)}
	var entries []hfEntry
	n := 0
	d.object(func(tok string) {
		id := d.integer()
		if d.err == nil && (id < 0 || id >= maxVocabID) {
			d.fail("token %q has id %d out of range", tok, id)
		}
		entries = append(entries, hfEntry{tok, int(id)})
		n = max(n, int(id)+1)
	})
	d.end()
	if d.err != nil {
		return Vocab{}, fmt.Errorf("vocabulary: %w", d.err)
	}
	if cfg != nil {
		for id := range cfg.Added {
			if id >= 0 && id < maxVocabID {
				n = max(n, id+1)
			}
		}
	}
	if n == 0 {
		return Vocab{}, errors.New("empty vocabulary")
	}
	if n > 2*len(entries)+1024 {
		return Vocab{}, fmt.Errorf("token ids up to %d for %d tokens", n-1, len(entries))
	}
	v := Vocab{Model: "gpt2", Pre: "gpt2", Tokens: make([]string, n), Types: make([]TokenType, n)}
	set := make([]bool, n)
	for _, e := range entries {
		if set[e.id] {
			return Vocab{}, fmt.Errorf("id %d used by two tokens", e.id)
		}
		set[e.id] = true
		v.Tokens[e.id], v.Types[e.id] = e.tok, TypeNormal
	}
	if cfg != nil {
		for id, a := range cfg.Added {
			if id < 0 || id >= n {
				continue
			}
			set[id] = true
			v.Tokens[id] = a.Content
			v.Types[id] = TypeUserDefined
			if a.Special {
				v.Types[id] = TypeControl
			}
		}
	}
	for id := range v.Tokens {
		if !set[id] {
			v.Tokens[id], v.Types[id] = fmt.Sprintf("[PAD%d]", id), TypeUnused
		}
	}
	// Special tokens: the configured names, else <|endoftext|>.
	name := func(s string) string {
		if s == "" {
			return "<|endoftext|>"
		}
		return s
	}
	var bosName, eosName, padName string
	if cfg != nil {
		bosName, eosName, padName = cfg.BOS, cfg.EOS, cfg.PAD
	}
	bosName, eosName = name(bosName), name(eosName)
	for id, t := range v.Tokens {
		if v.Types[id] == TypeUnused {
			continue
		}
		if t == bosName || t == eosName || t == padName {
			v.Types[id] = TypeControl
		}
		if t == bosName {
			v.BOS = Some(id)
		}
		if t == eosName {
			v.EOS = Some(id)
		}
		if padName != "" && t == padName {
			v.PAD = Some(id)
		}
	}
	if cfg != nil {
		v.AddBOS = cfg.AddBOS != nil && *cfg.AddBOS && v.BOS.OK
		v.AddEOS = cfg.AddEOS != nil && *cfg.AddEOS && v.EOS.OK
		for _, id := range cfg.GenEOS {
			if id >= 0 && id < n && (!v.EOS.OK || id != v.EOS.ID) {
				v.EOG = append(v.EOG, id)
			}
		}
	}

	// Merges: one "left right" per line after an optional "#version" line.
	lines := strings.Split(string(mergesData), "\n")
	v.Merges = make([]string, 0, len(lines))
	for i, ln := range lines {
		ln = strings.TrimSuffix(ln, "\r")
		if len(ln) == 0 || (i == 0 && strings.HasPrefix(ln, "#version")) {
			continue
		}
		sp := strings.IndexByte(ln, ' ')
		if sp <= 0 || sp == len(ln)-1 || strings.IndexByte(ln[sp+1:], ' ') >= 0 {
			return Vocab{}, fmt.Errorf("merges line %d %q is not \"left right\"", i+1, ln)
		}
		v.Merges = append(v.Merges, ln)
	}
	compactStrings(v.Tokens)
	return v, nil
}
