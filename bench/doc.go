// Package bench measures inference speed the way llama.cpp's llama-bench
// does, and writes the synthetic models to measure it on.
//
// # What is measured
//
//   - ppN (prompt processing): one prefill of N random token ids into a
//     fresh sequence — batched Forward calls of at most Batch tokens, as the
//     engine runs a prompt — timed end to end; N / seconds is the rate and
//     the time itself the prefill latency.
//   - tgN (text generation): N single-token decode steps, each a Forward of
//     one token at the next position, after a prefill of Depth tokens
//     (untimed; 0 by default, as in llama-bench). N / seconds is the rate,
//     seconds / N the per-token decode latency.
//
// Each test runs once to warm up (page in the weights, grow buffers), then
// Reps times; results are mean ± sample standard deviation. Two sweeps
// trace curves rather than points: decode rate against context depth (one
// sequence is prefilled to each depth in turn; at each, SweepGen tokens are
// decoded and rewound Reps times), and against generated length (one
// decode from position 0 with a timestamp per step, reported as the
// cumulative and the windowed rate at each checkpoint).
//
// # Why decode is a bandwidth problem
//
// A decode step multiplies one activation vector by every weight matrix:
// each weight byte is read once for ~2 FLOPs, so the step takes at least
// (bytes read) / (memory bandwidth). The bytes read per token are all
// matrices except the token embedding, of which one row is read (a tied
// embedding is read whole, as the output matrix), plus the KV cache
// (2·layers·depth·kv_dim·4 bytes, reported separately). Probe measures the
// machine's read bandwidth with 1 and Threads workers streaming a buffer
// far larger than the last-level cache, so a report can say what share of
// the achievable bandwidth decoding reaches, and what the ceiling is:
// tok/s ≤ bandwidth / bytes per token. The probe runs once, before the
// tests; on a shared host the bandwidth left by other tenants moves
// by tens of percent within seconds, so the tg tests also read the
// model's own weights between their decode steps (pairedRead) and
// report the decode's share of that read, measured in the same seconds
// from the same memory (of read / paired_read_frac).
//
// # Why prefill is a compute problem
//
// A prefill multiplies many activation rows by each weight matrix, so
// the weights are read once per chunk and the limit is arithmetic:
// 2 ops per weight per token (an FMA, or an int8 multiply and add), plus
// attention's 4·ctx·q_dim per layer at each position (q·k and the
// weighted sum of v over the ctx positions it sees; norms, RoPE, softmax
// and activations are not counted). ProbePeak measures the machine's
// float32 FMA peak (twelve independent VFMADD231PS ymm chains, enough to
// cover FMA latency × throughput) and its int8 multiply-add peak (the
// quantized dot kernels' VPMADDUBSW, VPMADDWD, VPADDD chains), with 1
// and Threads workers; on CPUs without AVX2/FMA and other architectures
// it reports that there is no probe rather than a number. A pp test's
// share of peak is the time its work would take at the Threads-worker
// peaks — float ops (F32/F16/BF16 weights, dequantized types, attention)
// at the FMA peak, int8 ops (weights that tensor.IntegerDot multiplies
// against 8-bit activations) at the int8 peak — over the measured time.
//
// # Serving
//
// RunServe (`nanoserve bench serve`) measures a running OpenAI-compatible
// server from the client's side, as vLLM's `vllm bench serve` does:
// streaming requests at a fixed concurrency or with seeded Poisson
// arrivals, and per request the time to the first text chunk (TTFT), the
// gaps between chunks (ITL), the time per output token after the first
// (TPOT) and the end-to-end latency; serve.go defines each.
//
// # Synthetic models
//
// WriteSynthetic writes a GGUF file of a standard shape (TinyLlama-1.1B,
// SmolLM2-135M, GPT-2 124M, llama2.c 110M, or tiny test shapes) with
// seeded random weights in any weight type or llama.cpp-style K-quant mix.
// The file is a function of (shape, type, seed) alone: every chunk of
// every tensor has its own seed, so chunks are generated and quantized in
// parallel and the bytes — and so the sha256 — do not depend on the number
// of workers. Anyone can regenerate the exact model a number was measured
// on. Speed does not depend on the weight values, only on shapes and
// types, so random weights measure what real ones would.
package bench
