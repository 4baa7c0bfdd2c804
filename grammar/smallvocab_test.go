package grammar

func byteVocab(extra ...string) (*Vocab, []int) {
	var toks [][]byte
	for b := 0; b < 256; b++ {
		toks = append(toks, []byte{byte(b)})
	}
	for _, e := range extra {
		toks = append(toks, []byte(e))
	}
	toks = append(toks, []byte("</s>"))
	eos := len(toks) - 1
	v, err := NewVocab(toks, nil, []int{eos})
	if err != nil {
		panic(err)
	}
	return v, []int{eos}
}
