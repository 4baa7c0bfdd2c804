package host

// A served model's manifest: what /v1/models, /api/tags and /api/show
// report, with the weights' hash.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"nanoserve/chat"
	"nanoserve/gguf"
	"nanoserve/llamacpp"
	"nanoserve/model"
)

// Manifest describes a served model: what /v1/models, /api/tags and
// /api/show report.
type Manifest struct {
	Architecture   string `json:"architecture"`
	Format         string `json:"format"`       // gguf, hf or llama2c
	Quantization   string `json:"quantization"` // a GGUF's general.file_type as llama-quantize names it (Q4_K_M, Q8_0, F16), else the weight matrices' most common type
	Parameters     int64  `json:"parameters"`
	ContextLength  int    `json:"context_length"` // positions the model was trained for
	Tokenizer      string `json:"tokenizer"`      // kind and vocabulary size
	WeightsSHA256  string `json:"weights_sha256"` // one file: its sha256; several: of their sha256s in load order
	TemplateSHA256 string `json:"template_sha256,omitempty"`
	SizeBytes      int64  `json:"size_bytes"` // of the weight files
	// RecurrentStateBytes is one sequence's recurrent state (hybrid models:
	// Qwen3.5, LFM2), held beside its KV blocks under --kv-cache-memory; 0
	// for attention-only models.
	RecurrentStateBytes int64     `json:"recurrent_state_bytes,omitempty"`
	ModifiedAt          time.Time `json:"modified_at"`
}

// NewManifest describes a loaded model. The weights' sha256 is read from the
// Hugging Face cache's blob name when the file is a cached LFS blob, else
// computed.
func NewManifest(m *model.Model, tmpl *chat.Template) (*Manifest, error) {
	man := &Manifest{Architecture: m.Arch, Format: m.Format, Parameters: m.ParamCount(), ContextLength: m.ContextLen,
		RecurrentStateBytes: m.StateBytes(),
		Tokenizer:           fmt.Sprintf("%s (%d tokens)", m.Tokenizer.Kind(), m.Tokenizer.Size())}
	counts := map[string]int{}
	for _, t := range m.Tensors {
		if len(t.Shape) == 2 {
			counts[t.Type.String()]++
		}
	}
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		if counts[k] > counts[man.Quantization] {
			man.Quantization = k
		}
	}
	if ft, ok := ggufFileType(m); ok { // a K-quant mix is named as llama-quantize named it
		man.Quantization = strings.ToUpper(ft.Name)
	}
	var sums []string
	for _, f := range m.Files {
		st, err := os.Stat(f)
		if err != nil {
			return nil, err
		}
		man.SizeBytes += st.Size()
		if t := st.ModTime(); t.After(man.ModifiedAt) {
			man.ModifiedAt = t
		}
		sum, err := fileSHA256(f)
		if err != nil {
			return nil, err
		}
		sums = append(sums, sum)
	}
	switch len(sums) {
	case 0:
	case 1:
		man.WeightsSHA256 = sums[0]
	default:
		h := sha256.Sum256([]byte(strings.Join(sums, "\n")))
		man.WeightsSHA256 = hex.EncodeToString(h[:])
	}
	if man.ModifiedAt.IsZero() {
		man.ModifiedAt = time.Unix(0, 0)
	}
	if tmpl != nil {
		h := sha256.Sum256([]byte(tmpl.Source()))
		man.TemplateSHA256 = hex.EncodeToString(h[:])
	}
	return man, nil
}

var blobName = regexp.MustCompile(`^[0-9a-f]{64}$`)

// fileSHA256 is a file's sha256: its name when it is a Hugging Face cache
// blob (the hub verified it on download), else computed.
func fileSHA256(path string) (string, error) {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		if b := filepath.Base(real); blobName.MatchString(b) && filepath.Base(filepath.Dir(real)) == "blobs" {
			return b, nil
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hashing %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ggufFileType is a GGUF model's general.file_type, when the file names
// one nanoserve knows.
func ggufFileType(m *model.Model) (llamacpp.FileType, bool) {
	if m.Format != "gguf" || len(m.Files) == 0 {
		return llamacpp.FileType{}, false
	}
	f, err := gguf.Open(m.Files[0])
	if err != nil {
		return llamacpp.FileType{}, false
	}
	defer f.Close()
	id, err := f.Uint("general.file_type")
	if err != nil || id > math.MaxUint32 {
		return llamacpp.FileType{}, false
	}
	return llamacpp.FileTypeByID(uint32(id))
}
