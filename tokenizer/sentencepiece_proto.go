package tokenizer

// Reading a SentencePiece tokenizer.model: a serialised protobuf
// ModelProto, read here with a small hand-written wire-format reader.
//
// Wire format: a message is a sequence of fields, each a varint key
// (field_number<<3 | wire_type) followed by a value: wire type 0 a varint,
// 1 eight bytes, 2 a varint length and that many bytes (strings, bytes,
// nested messages), 5 four bytes. Fields we do not need are skipped.
//
// The fields read (sentencepiece_model.proto):
//
//	ModelProto      1 pieces (repeated SentencePiece), 2 trainer_spec, 3 normalizer_spec
//	SentencePiece   1 piece (string), 2 score (float), 3 type (enum, default NORMAL=1)
//	TrainerSpec     3 model_type (UNIGRAM=1 default, BPE=2), 35 byte_fallback,
//	                40 unk_id (0), 41 bos_id (1), 42 eos_id (2), 43 pad_id (-1), 44 unk_surface
//	NormalizerSpec  1 name, 2 precompiled_charsmap, 3 add_dummy_prefix (true),
//	                4 remove_extra_whitespaces (true), 5 escape_whitespaces (true)

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
)

// ErrBadModelFile wraps every error about a malformed tokenizer file.
var ErrBadModelFile = errors.New("tokenizer: malformed tokenizer file")

func badModel(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadModelFile, fmt.Sprintf(format, args...))
}

// pbReader reads protobuf wire format from a byte slice.
type pbReader struct {
	b   []byte
	off int
}

func (r *pbReader) done() bool { return r.off >= len(r.b) }

func (r *pbReader) varint() (uint64, error) {
	var x uint64
	for shift := uint(0); shift < 64; shift += 7 {
		if r.off >= len(r.b) {
			return 0, badModel("truncated varint at byte %d", r.off)
		}
		c := r.b[r.off]
		r.off++
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return x, nil
		}
	}
	return 0, badModel("varint too long at byte %d", r.off)
}

// field reads the next key and returns its number and wire type.
func (r *pbReader) field() (num int, wire int, err error) {
	k, err := r.varint()
	if err != nil {
		return 0, 0, err
	}
	num, wire = int(k>>3), int(k&7)
	if num == 0 {
		return 0, 0, badModel("field number 0 at byte %d", r.off)
	}
	return num, wire, nil
}

func (r *pbReader) bytes() ([]byte, error) {
	n, err := r.varint()
	if err != nil {
		return nil, err
	}
	if n > uint64(len(r.b)-r.off) {
		return nil, badModel("length %d at byte %d runs past the end (%d bytes)", n, r.off, len(r.b))
	}
	b := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return b, nil
}

func (r *pbReader) fixed32() (uint32, error) {
	if len(r.b)-r.off < 4 {
		return 0, badModel("truncated fixed32 at byte %d", r.off)
	}
	x := binary.LittleEndian.Uint32(r.b[r.off:])
	r.off += 4
	return x, nil
}

// skip skips a value of the given wire type.
func (r *pbReader) skip(wire int) error {
	switch wire {
	case 0:
		_, err := r.varint()
		return err
	case 1:
		if len(r.b)-r.off < 8 {
			return badModel("truncated fixed64 at byte %d", r.off)
		}
		r.off += 8
		return nil
	case 2:
		_, err := r.bytes()
		return err
	case 5:
		_, err := r.fixed32()
		return err
	}
	return badModel("unsupported wire type %d at byte %d", wire, r.off)
}

// wantWire checks a known field's wire type.
func wantWire(msg string, num, wire, want int) error {
	if wire != want {
		return badModel("%s field %d has wire type %d, want %d", msg, num, wire, want)
	}
	return nil
}

// spModelProto is what we keep of a ModelProto.
type spModelProto struct {
	pieces []string
	scores []float32
	types  []TokenType

	modelType    int64 // 1 unigram, 2 BPE, 3 word, 4 char
	byteFallback bool
	unkID        int64
	bosID        int64
	eosID        int64
	padID        int64
	unkSurface   *string

	normName     string
	charsmap     []byte
	addDummy     bool
	removeExtra  bool
	escapeSpaces bool
}

func parseModelProto(data []byte) (*spModelProto, error) {
	p := &spModelProto{
		modelType: 1, unkID: 0, bosID: 1, eosID: 2, padID: -1,
		addDummy: true, removeExtra: true, escapeSpaces: true,
	}
	r := &pbReader{b: data}
	for !r.done() {
		num, wire, err := r.field()
		if err != nil {
			return nil, err
		}
		switch num {
		case 1, 2, 3:
			if err := wantWire("ModelProto", num, wire, 2); err != nil {
				return nil, err
			}
			b, err := r.bytes()
			if err != nil {
				return nil, err
			}
			switch num {
			case 1:
				err = p.parsePiece(b)
			case 2:
				err = p.parseTrainer(b)
			case 3:
				err = p.parseNormalizer(b)
			}
			if err != nil {
				return nil, err
			}
		default:
			if err := r.skip(wire); err != nil {
				return nil, err
			}
		}
	}
	return p, nil
}

func (p *spModelProto) parsePiece(b []byte) error {
	r := &pbReader{b: b}
	var piece string
	var score float32
	ty := TypeNormal
	for !r.done() {
		num, wire, err := r.field()
		if err != nil {
			return err
		}
		switch num {
		case 1:
			if err := wantWire("SentencePiece", num, wire, 2); err != nil {
				return err
			}
			s, err := r.bytes()
			if err != nil {
				return err
			}
			piece = string(s)
		case 2:
			if err := wantWire("SentencePiece", num, wire, 5); err != nil {
				return err
			}
			x, err := r.fixed32()
			if err != nil {
				return err
			}
			score = math.Float32frombits(x)
		case 3:
			if err := wantWire("SentencePiece", num, wire, 0); err != nil {
				return err
			}
			x, err := r.varint()
			if err != nil {
				return err
			}
			if x < 1 || x > 6 {
				return badModel("piece %d has unknown type %d", len(p.pieces), x)
			}
			ty = TokenType(x)
		default:
			if err := r.skip(wire); err != nil {
				return err
			}
		}
	}
	p.pieces = append(p.pieces, piece)
	p.scores = append(p.scores, score)
	p.types = append(p.types, ty)
	return nil
}

func (p *spModelProto) parseTrainer(b []byte) error {
	r := &pbReader{b: b}
	for !r.done() {
		num, wire, err := r.field()
		if err != nil {
			return err
		}
		switch num {
		case 3, 35, 40, 41, 42, 43:
			if err := wantWire("TrainerSpec", num, wire, 0); err != nil {
				return err
			}
			x, err := r.varint()
			if err != nil {
				return err
			}
			v := int64(int32(x)) // int32 fields: negatives are sign-extended varints
			switch num {
			case 3:
				p.modelType = v
			case 35:
				p.byteFallback = x != 0
			case 40:
				p.unkID = v
			case 41:
				p.bosID = v
			case 42:
				p.eosID = v
			case 43:
				p.padID = v
			}
		case 44:
			if err := wantWire("TrainerSpec", num, wire, 2); err != nil {
				return err
			}
			s, err := r.bytes()
			if err != nil {
				return err
			}
			str := string(s)
			p.unkSurface = &str
		default:
			if err := r.skip(wire); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *spModelProto) parseNormalizer(b []byte) error {
	r := &pbReader{b: b}
	for !r.done() {
		num, wire, err := r.field()
		if err != nil {
			return err
		}
		switch num {
		case 1, 2:
			if err := wantWire("NormalizerSpec", num, wire, 2); err != nil {
				return err
			}
			s, err := r.bytes()
			if err != nil {
				return err
			}
			if num == 1 {
				p.normName = string(s)
			} else {
				p.charsmap = s
			}
		case 3, 4, 5:
			if err := wantWire("NormalizerSpec", num, wire, 0); err != nil {
				return err
			}
			x, err := r.varint()
			if err != nil {
				return err
			}
			switch num {
			case 3:
				p.addDummy = x != 0
			case 4:
				p.removeExtra = x != 0
			case 5:
				p.escapeSpaces = x != 0
			}
		default:
			if err := r.skip(wire); err != nil {
				return err
			}
		}
	}
	return nil
}

// ParseSentencePiece reads a SentencePiece BPE model (the bytes of a
// tokenizer.model file). BOS/EOS/UNK/PAD come from the trainer spec; AddBOS
// is set (Llama's convention; SentencePiece itself adds nothing).
//
// Only BPE models are supported. A precompiled normalisation charsmap
// (nmt_nfkc and similar) is ignored: Llama, Mistral, TinyLlama and Gemma use
// the identity normaliser.
func ParseSentencePiece(data []byte) (*Tokenizer, error) {
	v, o, err := parseSentencePieceVocab(data)
	if err != nil {
		return nil, err
	}
	return fromVocab(*v, o)
}

func parseSentencePieceVocab(data []byte) (*Vocab, *spOptions, error) {
	p, err := parseModelProto(data)
	if err != nil {
		return nil, nil, err
	}
	if len(p.pieces) == 0 {
		return nil, nil, badModel("SentencePiece model has no pieces")
	}
	if p.modelType != 2 {
		name := map[int64]string{1: "unigram", 3: "word", 4: "char"}[p.modelType]
		return nil, nil, fmt.Errorf("tokenizer: SentencePiece model type %d (%s) is not supported; only BPE (2) is", p.modelType, name)
	}
	n := int64(len(p.pieces))
	opt := func(id int64, want ...TokenType) OptID {
		if id < 0 || id >= n {
			return OptID{}
		}
		for _, w := range want {
			if p.types[id] == w {
				return Some(int(id))
			}
		}
		return OptID{}
	}
	v := &Vocab{
		Model:          "llama",
		Tokens:         p.pieces,
		Scores:         p.scores,
		Types:          p.types,
		UNK:            opt(p.unkID, TypeUnknown),
		BOS:            opt(p.bosID, TypeControl, TypeUserDefined),
		EOS:            opt(p.eosID, TypeControl, TypeUserDefined),
		PAD:            opt(p.padID, TypeControl, TypeUserDefined),
		AddSpacePrefix: p.addDummy,
	}
	v.AddBOS = v.BOS.OK
	bf := p.byteFallback
	o := &spOptions{
		removeExtraWhitespaces: p.removeExtra,
		noEscapeWhitespaces:    !p.escapeSpaces,
		byteFallback:           &bf,
	}
	if p.unkSurface != nil {
		o.unkSurface = *p.unkSurface
	}
	return v, o, nil
}

// LoadSentencePiece reads a SentencePiece tokenizer.model file.
func LoadSentencePiece(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	t, err := ParseSentencePiece(data)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return t, nil
}
