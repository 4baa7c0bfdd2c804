package convert

// The command-line face of Options: nanoserve convert's flags.

import (
	"flag"
	"strings"

	"nanoserve/tensor"
)

// RegisterFlags adds a flag for each option but Log to fs.
func (o *Options) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Type, "type", "", "matrix float type: f32, f16 or bf16 (default: keep the source's)")
	fs.StringVar(&o.Quantize, "quantize", "", "quantize as a llama.cpp file type: "+strings.Join(QuantizeNames(), ", "))
	fs.StringVar(&o.Tokenizer, "tokenizer", "", "tokenizer file or folder (required for llama2.c checkpoints)")
	fs.StringVar(&o.Name, "name", "", "general.name (default: the input's name)")
	fs.IntVar(&o.Threads, "threads", tensor.PhysicalCores(), "worker threads for quantization")
}
