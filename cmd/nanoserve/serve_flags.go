package main

// serve's flags: registered by newServeFlags, read and checked by parse
// (before any model is loaded), and what serve makes of them — the models
// to serve, the Source each loads from (host) and the server's Options.

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"nanoserve/chat"
	"nanoserve/defaultmodel"
	"nanoserve/engine"
	"nanoserve/host"
	"nanoserve/kvcache"
	"nanoserve/model"
	"nanoserve/server"
	"nanoserve/webui"
)

// serveFlags are serve's flags, and what parse makes of them.
type serveFlags struct {
	mf                                        modelFlags
	sf                                        specFlags
	models, aliases, cors, allowedHosts, tags stringList

	modelsDir, modelsMemory, listenHost, kvMemory, apiKey, servedName, tmplPath, toolFormat *string
	modelsMax, port, maxSeqs, kvTokens, maxQueue, batchSize                                 *int
	noPrefix, metricsAuth, spmInfill, noWebUI                                               *bool
	maxBody                                                                                 *int64
	drain, headerTimeout, bodyTimeout, idleTimeout, reqTimeout, healthStall                 *time.Duration
	reasoning                                                                               *server.ReasoningFlags
	llama                                                                                   *server.LlamaServerFlags

	// set by parse
	tf              chat.ToolFormat
	kvBytes, budget int64 // --kv-cache-memory and --models-memory in bytes
}

// newServeFlags registers serve's flags on a new flag set.
func newServeFlags() (*serveFlags, *flag.FlagSet) {
	f := &serveFlags{}
	fs := newFlags("serve")
	f.mf.registerRest(fs)
	fs.Var(&f.models, "model", modelUsage+";\nrepeatable: one server serves every model, each request routed by its \"model\" field")
	fs.Var(&f.aliases, "alias", "NAME=MODEL: another name for a served model (MODEL: any of its names; repeatable)")
	fs.Var(&f.tags, "tags", "TAG[,TAG]: labels of the first model, listed by /v1/models (llama-server's --tags; repeatable)")
	f.modelsDir = fs.String("models-dir", "", "also serve every model in this folder (GGUF files, Hugging Face folders), each loaded on its first request")
	f.modelsMax = fs.Int("models-max", 0, "most models loaded at once; past it the least recently used is unloaded once idle (0: no limit)")
	f.modelsMemory = fs.String("models-memory", "", "most memory the loaded models (weights and KV cache) may hold together, as --kv-cache-memory (default: no limit)")
	f.sf.register(fs)
	fs.IntVar(&f.mf.ctxSize, "ctx", 0, "context length in tokens (same as --ctx-size; 0: the model's)")
	f.listenHost = fs.String("host", "127.0.0.1", "address to listen on (0.0.0.0: all interfaces; a comma list: each of them, as llama-server)")
	f.port = fs.Int("port", 8080, "TCP port")
	f.maxSeqs = fs.Int("max-seqs", 0, "sequences the engine batches at once (0: the engine's default)")
	f.batchSize = fs.Int("batch-size", 0, "most prompt tokens one sequence prefills per engine step, as llama-server's --batch-size\n"+
		"(a longer prompt is processed in chunks of this size; 0: the engine's default)")
	f.kvMemory = fs.String("kv-cache-memory", host.DefaultKVMemory, "KV cache memory: bytes (4GiB, 512MiB) or a share of the machine's memory (25%);\n"+
		"the cache holds max-seqs full contexts within it, and the default context shrinks to fit")
	f.kvTokens = fs.Int("kv-cache-tokens", 0, "KV cache positions shared by all running sequences, overriding --kv-cache-memory (0: from it)")
	f.noPrefix = fs.Bool("no-prefix-cache", false, "never reuse KV blocks of other requests' prompts (every prompt is prefilled in full; for measuring the prefix cache)")
	f.maxQueue = fs.Int("max-queue", 0, "requests that may wait for a batch slot before more get 429 (0: the engine's default)")
	f.apiKey = fs.String("api-key", "", "require the key (\"Authorization: Bearer KEY\" or \"X-Api-Key: KEY\") on every path but /health, /ready\n"+
		"and /metrics (default: $NANOSERVE_API_KEY)")
	f.metricsAuth = fs.Bool("metrics-auth", false, "put /metrics behind --api-key too")
	f.servedName = fs.String("served-name", "", "the first model's id, the name responses report (the file's base name, with or without extension, is always accepted too)")
	f.tmplPath = fs.String("chat-template", "", "chat template: a Jinja file or a tokenizer_config.json (default: the model's own)")
	f.toolFormat = fs.String("tool-call-format", "auto", "how the model writes tool calls: auto (from the chat template; generic when it has no tool syntax),\n"+
		"hermes (Qwen), llama3-json, mistral, generic (tools described in the system message, the reply a JSON object),\n"+
		"or none (requests with tools get 400 unless tool_choice is \"none\")")
	f.reasoning = server.RegisterReasoningFlags(fs)
	f.maxBody = fs.Int64("max-body", 4<<20, "largest request body in bytes")
	f.drain = fs.Duration("drain", 30*time.Second, "on SIGINT/SIGTERM, how long in-flight requests may take to finish;\n"+
		"then the rest are cancelled, each stream ending with an error event and [DONE]")
	f.headerTimeout = fs.Duration("read-header-timeout", 10*time.Second, "time a client has to send a request's headers")
	f.bodyTimeout = fs.Duration("body-timeout", time.Minute, "time a client has to send a request's body (then 408)")
	f.idleTimeout = fs.Duration("idle-timeout", 2*time.Minute, "time a keep-alive connection may wait for its next request")
	f.spmInfill = fs.Bool("spm-infill", false, "FIM prompts suffix first (llama-server's --spm-infill; for /infill and completions' suffix); a model trained suffix first, like the built-in one, is always prompted so")
	f.reqTimeout = fs.Duration("request-timeout", 10*time.Minute, "most time one generation request may take, arrival to last token (0: no limit)")
	f.healthStall = fs.Duration("health-stall", 5*time.Minute, "/health answers 503 when the engine loop has not stepped for this long (longer than your slowest step)")
	fs.Var(&f.cors, "cors-origin", "allow browser calls from this origin (repeatable; \"*\": any; default: CORS off, and a request\n"+
		"whose Origin is neither loopback nor listed is a 403)")
	fs.Var(&f.allowedHosts, "allowed-hosts", "on a connection to a loopback address, also accept these Host names (repeatable or\n"+
		"comma-separated; \".example.com\": it and its subdomains; \"*\": any); others get 403 (DNS-rebinding guard)")
	f.noWebUI = fs.Bool("no-webui", false, "do not serve the web chat page at / (and its files under /ui/)")
	registerGrammarFlags(fs)
	f.llama = server.RegisterLlamaServerFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: nanoserve serve [flags]\n\nServes POST /v1/completions, POST /v1/chat/completions, GET /v1/models, /health, /metrics\nand a chat page at / (--no-webui turns it off).\n\nflags:")
		fs.PrintDefaults()
	}
	return f, fs
}

// parse reads args into f and checks them.
func (f *serveFlags) parse(fs *flag.FlagSet, args []string) error {
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("unexpected argument %q (use --model PATH)", pos[0])
	}
	if *f.apiKey == "" {
		*f.apiKey = os.Getenv("NANOSERVE_API_KEY")
	}
	f.tf, err = chat.ParseToolFormat(*f.toolFormat)
	if err != nil {
		return fmt.Errorf("--tool-call-format: %w", err)
	}
	if err := f.reasoning.Apply(&server.Options{}); err != nil {
		return err
	}
	for _, c := range []struct {
		name string
		v    int64
		min  int64
		want string
	}{
		{"port", int64(*f.port), 0, "want a TCP port in [0, 65535] (0: any free port)"},
		{"max-seqs", int64(*f.maxSeqs), 0, "want a number of sequences (0: the engine's default)"},
		{"batch-size", int64(*f.batchSize), 0, "want a number of tokens (0: the engine's default)"},
		{"kv-cache-tokens", int64(*f.kvTokens), 0, "want a number of positions (0: from --kv-cache-memory)"},
		{"max-queue", int64(*f.maxQueue), 0, "want a number of requests (0: the engine's default)"},
		{"models-max", int64(*f.modelsMax), 0, "want a number of models (0: no limit)"},
		{"max-body", *f.maxBody, 1, "want a size in bytes, at least 1"},
		{"drain", int64(*f.drain), 0, "want a duration, 0 or more"},
		{"read-header-timeout", int64(*f.headerTimeout), 1, "want a positive duration"},
		{"body-timeout", int64(*f.bodyTimeout), 1, "want a positive duration"},
		{"idle-timeout", int64(*f.idleTimeout), 1, "want a positive duration"},
		{"request-timeout", int64(*f.reqTimeout), 0, "want a duration (0: no limit)"},
		{"health-stall", int64(*f.healthStall), 1, "want a positive duration"},
	} {
		if c.v < c.min || c.name == "port" && c.v > 65535 {
			v := any(c.v)
			if fl := fs.Lookup(c.name); fl != nil {
				v = fl.Value.String()
			}
			return errFlag(c.name, v, c.want)
		}
	}
	memAvail := host.AvailableMemory()
	f.kvBytes, err = host.ParseMemory(*f.kvMemory, memAvail)
	if err != nil {
		return err
	}
	if err := f.sf.check(); err != nil {
		return err
	}
	if err := f.llama.Check(); err != nil {
		return err
	}
	if *f.modelsMemory != "" {
		if f.budget, err = host.ParseMemory(*f.modelsMemory, memAvail); err != nil {
			return fmt.Errorf("--models-memory: %w", err)
		}
	}
	if f.mf.threads < 1 {
		return errFlag("threads", f.mf.threads, "want at least 1 worker thread")
	}
	if f.mf.ctxSize < 0 {
		return errFlag("ctx", f.mf.ctxSize, "want a context length in tokens (0: the model's)")
	}
	// The KV cache type is parsed here, once, into mf: each model's loader
	// works on a copy of mf, so what its load parses would not reach the
	// engine options and the log below.
	if f.mf.kv, err = kvcache.ParseType(f.mf.kvType); err != nil {
		return errFlag("kv-cache-type", f.mf.kvType, "want f32, f16 or q8_0")
	}
	return nil
}

// entries are the models to serve and their names: the --model arguments
// (none: the built-in model), --models-dir, --served-name and --alias.
// --served-name and llama-server's --alias NAME are the first model's id
// (the name responses and /v1/models report).
func (f *serveFlags) entries() ([]host.Served, error) {
	entries, err := serveModels(f.models, *f.modelsDir, f.mf.revision)
	if err != nil {
		return nil, err
	}
	ids, aliases := host.ModelIDs(f.aliases)
	if *f.servedName != "" {
		ids = append([]string{*f.servedName}, ids...)
	}
	if len(ids) > 0 {
		entries[0].Names = host.NameFirst(entries[0].Names, ids)
		entries[0].Aliases = ids
	}
	if tags := splitList(f.tags); len(tags) > 0 && len(entries) > 0 {
		entries[0].Tags = tags
	}
	return entries, host.ApplyAliases(entries, aliases)
}

// source is how each of the models loads, with its share of
// --kv-cache-memory among the models loaded at once.
func (f *serveFlags) source(log *slog.Logger, models int) *host.Source {
	// The KV cache memory is shared by the models loaded at once.
	atOnce := models
	if *f.modelsMax > 0 {
		atOnce = min(atOnce, *f.modelsMax)
	}
	seqs := *f.maxSeqs
	if seqs <= 0 {
		seqs = engine.DefaultMaxSeqs
	}
	bp, _ := builtinModelPath()
	src := &host.Source{Model: model.Options{Tokenizer: f.mf.tokenizer, Threads: f.mf.threads, Context: f.mf.ctxSize, CopyWeights: f.mf.noMmap, MapWeights: f.mf.mmap},
		LongContext: f.mf.longCtx, ChatTemplate: *f.tmplPath, ToolFormat: f.tf, BuiltinPath: bp, BuiltinPolicy: defaultmodel.Policy(),
		KV:     host.KVInputs{Memory: f.kvBytes / int64(atOnce), MemoryFlag: *f.kvMemory, Ctx: f.mf.ctxSize, MaxSeqs: seqs, Tokens: *f.kvTokens},
		Engine: engine.Options{MaxSeqs: seqs, MaxQueue: *f.maxQueue, PrefillChunk: *f.batchSize, NoPrefixCache: *f.noPrefix, KVType: f.mf.kv, Grammar: grammarOptions},
		Draft:  host.Draft{Mode: f.sf.mode, K: f.sf.k, Fixed: f.sf.fixed, Path: f.sf.draft}, Log: log}
	return src
}

// options are the server's options.
func (f *serveFlags) options(log *slog.Logger) server.Options {
	opts := server.Options{APIKey: *f.apiKey, MetricsAuth: *f.metricsAuth, MaxBodyBytes: *f.maxBody, Logger: log,
		ReadHeaderTimeout: *f.headerTimeout, BodyTimeout: *f.bodyTimeout, IdleTimeout: *f.idleTimeout,
		RequestTimeout: *f.reqTimeout, HealthStall: *f.healthStall, CORSOrigins: f.cors, AllowedHosts: splitList(f.allowedHosts), SPMInfill: *f.spmInfill}
	f.reasoning.Apply(&opts) // checked by parse
	f.llama.Apply(&opts)
	if !*f.noWebUI {
		opts.WebUI = webui.Handler()
		log.Info("a chat page is served at / (--no-webui turns it off)")
	}
	return opts
}
