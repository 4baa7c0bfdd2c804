package train

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"

	"nanoserve/tokenizer"
)

// checkpoint is everything needed to continue training exactly: the
// parameters, the AdamW moments and step, the tokenizer, and the loss
// curve so far. Batches are drawn from an RNG seeded by (seed, step), so no
// RNG state needs saving.
//
// File layout: "NSCKPT1\n", uint32 header length, JSON header, then params,
// M and V as little-endian float32 (each of the header's NParams).
type checkpoint struct {
	Config       Config
	Vocab        tokenizer.Vocab
	CorpusSHA256 string
	Step         int
	Losses       []float64
	NParams      int
	Params, M, V []float32 `json:"-"`
}

const ckMagic = "NSCKPT1\n"

func (c *checkpoint) save(path string) error {
	c.NParams = len(c.Params)
	hdr, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("train: checkpoint: %w", err)
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("train: checkpoint: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString(ckMagic)
	binary.Write(w, binary.LittleEndian, uint32(len(hdr)))
	w.Write(hdr)
	var b [4]byte
	for _, s := range [][]float32{c.Params, c.M, c.V} {
		for _, x := range s {
			binary.LittleEndian.PutUint32(b[:], math.Float32bits(x))
			w.Write(b[:])
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("train: checkpoint: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("train: checkpoint: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("train: checkpoint: %w", err)
	}
	return nil
}

// loadCheckpoint reads a checkpoint; a missing file gives an error
// wrapping os.ErrNotExist.
func loadCheckpoint(path string) (*checkpoint, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("train: checkpoint: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	magic := make([]byte, len(ckMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != ckMagic {
		return nil, fmt.Errorf("train: checkpoint %s: not a nanoserve checkpoint", path)
	}
	var n uint32
	if err := binary.Read(r, binary.LittleEndian, &n); err != nil || n > 1<<30 {
		return nil, fmt.Errorf("train: checkpoint %s: bad header length", path)
	}
	hdr := make([]byte, n)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, fmt.Errorf("train: checkpoint %s: truncated header", path)
	}
	c := &checkpoint{}
	if err := json.Unmarshal(hdr, c); err != nil {
		return nil, fmt.Errorf("train: checkpoint %s: header: %w", path, err)
	}
	if _, want := c.Config.Layout(); c.NParams != want || c.Config.Validate() != nil {
		return nil, fmt.Errorf("train: checkpoint %s: %d parameters for shape %+v", path, c.NParams, c.Config)
	}
	buf := make([]byte, 4*c.NParams)
	for _, dst := range []*[]float32{&c.Params, &c.M, &c.V} {
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, fmt.Errorf("train: checkpoint %s: truncated weights", path)
		}
		s := make([]float32, c.NParams)
		for i := range s {
			s[i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:]))
		}
		*dst = s
	}
	return c, nil
}
