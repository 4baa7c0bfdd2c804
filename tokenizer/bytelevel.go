package tokenizer

// newByteLevel builds a byte-level BPE model (GPT-2, Llama-3, Qwen) from v.
// (Stub: the byte-level helper owns and replaces this file.)
func newByteLevel(v *Vocab) (model, error) { return nil, errNotImplemented }
