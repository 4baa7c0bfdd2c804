package main

// nanoserve serve: the OpenAI-compatible HTTP server (package server) over
// one engine. SIGINT or SIGTERM stops accepting connections and lets the
// requests in flight finish (up to --drain), then exits.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"nanoserve/chat"
	"nanoserve/defaultmodel"
	"nanoserve/engine"
	"nanoserve/host"
	"nanoserve/hub"
	"nanoserve/kvcache"
	"nanoserve/server"
)

func runServe(args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve(ctx, stop, args, nil)
}

// serve runs the server until ctx ends (stop releases the signal handler
// so a second signal kills the process); listening, if set, is told the
// address once the port is open.
func serve(ctx context.Context, stop func(), args []string, listening func(net.Addr)) error {
	fs := newFlags("serve")
	var mf modelFlags
	var sf specFlags
	mf.registerRest(fs)
	var models, aliases stringList
	fs.Var(&models, "model", modelUsage+";\nrepeatable: one server serves every model, each request routed by its \"model\" field")
	fs.Var(&aliases, "alias", "NAME=MODEL: another name for a served model (MODEL: any of its names; repeatable)")
	modelsDir := fs.String("models-dir", "", "also serve every model in this folder (GGUF files, Hugging Face folders), each loaded on its first request")
	modelsMax := fs.Int("models-max", 0, "most models loaded at once; past it the least recently used is unloaded once idle (0: no limit)")
	modelsMemory := fs.String("models-memory", "", "most memory the loaded models (weights and KV cache) may hold together, as --kv-cache-memory (default: no limit)")
	sf.register(fs)
	fs.IntVar(&mf.ctxSize, "ctx", 0, "context length in tokens (same as --ctx-size; 0: the model's)")
	listenHost := fs.String("host", "127.0.0.1", "address to listen on (0.0.0.0: all interfaces)")
	port := fs.Int("port", 8080, "TCP port")
	maxSeqs := fs.Int("max-seqs", 0, "sequences the engine batches at once (0: the engine's default)")
	kvMemory := fs.String("kv-cache-memory", host.DefaultKVMemory, "KV cache memory: bytes (4GiB, 512MiB) or a share of the machine's memory (25%);\n"+
		"the cache holds max-seqs full contexts within it, and the default context shrinks to fit")
	kvTokens := fs.Int("kv-cache-tokens", 0, "KV cache positions shared by all running sequences, overriding --kv-cache-memory (0: from it)")
	noPrefix := fs.Bool("no-prefix-cache", false, "never reuse KV blocks of other requests' prompts (every prompt is prefilled in full; for measuring the prefix cache)")
	maxQueue := fs.Int("max-queue", 0, "requests that may wait for a batch slot before more get 429 (0: the engine's default)")
	apiKey := fs.String("api-key", "", "require the key (\"Authorization: Bearer KEY\" or \"X-Api-Key: KEY\") on every path but /health, /ready\n"+
		"and /metrics (default: $NANOSERVE_API_KEY)")
	metricsAuth := fs.Bool("metrics-auth", false, "put /metrics behind --api-key too")
	servedName := fs.String("served-name", "", "the first model's id, the name responses report (the file's base name, with or without extension, is always accepted too)")
	tmplPath := fs.String("chat-template", "", "chat template: a Jinja file or a tokenizer_config.json (default: the model's own)")
	toolFormat := fs.String("tool-call-format", "auto", "how the model writes tool calls: auto (from the chat template), hermes (Qwen),\n"+
		"llama3-json, mistral, or none (requests with tools get 400 unless tool_choice is \"none\")")
	maxBody := fs.Int64("max-body", 4<<20, "largest request body in bytes")
	drain := fs.Duration("drain", 30*time.Second, "on SIGINT/SIGTERM, how long in-flight requests may take to finish;\n"+
		"then the rest are cancelled, each stream ending with an error event and [DONE]")
	headerTimeout := fs.Duration("read-header-timeout", 10*time.Second, "time a client has to send a request's headers")
	bodyTimeout := fs.Duration("body-timeout", time.Minute, "time a client has to send a request's body (then 408)")
	idleTimeout := fs.Duration("idle-timeout", 2*time.Minute, "time a keep-alive connection may wait for its next request")
	spmInfill := fs.Bool("spm-infill", false, "FIM prompts suffix first (llama-server's --spm-infill; for /infill and completions' suffix); a model trained suffix first, like the built-in one, is always prompted so")
	reqTimeout := fs.Duration("request-timeout", 10*time.Minute, "most time one generation request may take, arrival to last token (0: no limit)")
	healthStall := fs.Duration("health-stall", 5*time.Minute, "/health answers 503 when the engine loop has not stepped for this long (longer than your slowest step)")
	var cors stringList
	fs.Var(&cors, "cors-origin", "allow browser calls from this origin (repeatable; \"*\": any; default: CORS off, and a request\n"+
		"whose Origin is neither loopback nor listed is a 403)")
	var allowedHosts stringList
	fs.Var(&allowedHosts, "allowed-hosts", "on a connection to a loopback address, also accept these Host names (repeatable or\n"+
		"comma-separated; \".example.com\": it and its subdomains; \"*\": any); others get 403 (DNS-rebinding guard)")
	registerGrammarFlags(fs)
	var lf llamaFlags
	lf.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: nanoserve serve [flags]\n\nServes POST /v1/completions, POST /v1/chat/completions, GET /v1/models, /health and /metrics.\n\nflags:")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("unexpected argument %q (use --model PATH)", pos[0])
	}
	if *apiKey == "" {
		*apiKey = os.Getenv("NANOSERVE_API_KEY")
	}
	tf, err := chat.ParseToolFormat(*toolFormat)
	if err != nil {
		return fmt.Errorf("--tool-call-format: %w", err)
	}
	for _, c := range []struct {
		name string
		v    int64
		min  int64
		want string
	}{
		{"port", int64(*port), 0, "want a TCP port in [0, 65535] (0: any free port)"},
		{"max-seqs", int64(*maxSeqs), 0, "want a number of sequences (0: the engine's default)"},
		{"kv-cache-tokens", int64(*kvTokens), 0, "want a number of positions (0: from --kv-cache-memory)"},
		{"max-queue", int64(*maxQueue), 0, "want a number of requests (0: the engine's default)"},
		{"models-max", int64(*modelsMax), 0, "want a number of models (0: no limit)"},
		{"max-body", *maxBody, 1, "want a size in bytes, at least 1"},
		{"drain", int64(*drain), 0, "want a duration, 0 or more"},
		{"read-header-timeout", int64(*headerTimeout), 1, "want a positive duration"},
		{"body-timeout", int64(*bodyTimeout), 1, "want a positive duration"},
		{"idle-timeout", int64(*idleTimeout), 1, "want a positive duration"},
		{"request-timeout", int64(*reqTimeout), 0, "want a duration (0: no limit)"},
		{"health-stall", int64(*healthStall), 1, "want a positive duration"},
	} {
		if c.v < c.min || c.name == "port" && c.v > 65535 {
			v := any(c.v)
			if f := fs.Lookup(c.name); f != nil {
				v = f.Value.String()
			}
			return errFlag(c.name, v, c.want)
		}
	}
	memAvail := host.AvailableMemory()
	kvBytes, err := host.ParseMemory(*kvMemory, memAvail)
	if err != nil {
		return err
	}
	if err := sf.check(); err != nil {
		return err
	}
	if err := lf.check(); err != nil {
		return err
	}
	var budget int64
	if *modelsMemory != "" {
		if budget, err = host.ParseMemory(*modelsMemory, memAvail); err != nil {
			return fmt.Errorf("--models-memory: %w", err)
		}
	}
	if mf.threads < 1 {
		return errFlag("threads", mf.threads, "want at least 1 worker thread")
	}
	if mf.ctxSize < 0 {
		return errFlag("ctx", mf.ctxSize, "want a context length in tokens (0: the model's)")
	}
	// The KV cache type is parsed here, once, into mf: each model's loader
	// works on a copy of mf, so what its load parses would not reach the
	// engine options and the log below.
	if mf.kv, err = kvcache.ParseType(mf.kvType); err != nil {
		return errFlag("kv-cache-type", mf.kvType, "want f32, f16 or q8_0")
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	entries, err := serveModels(models, *modelsDir, mf.revision)
	if err != nil {
		return err
	}
	// --served-name and llama-server's --alias NAME are the first model's
	// id (the name responses and /v1/models report).
	ids, aliases := modelIDs(aliases)
	if *servedName != "" {
		ids = append([]string{*servedName}, ids...)
	}
	if len(ids) > 0 {
		entries[0].Names = nameFirst(entries[0].Names, ids)
	}
	if err := host.ApplyAliases(entries, aliases); err != nil {
		return err
	}
	// The KV cache memory is shared by the models loaded at once.
	atOnce := len(entries)
	if *modelsMax > 0 {
		atOnce = min(atOnce, *modelsMax)
	}
	seqs := *maxSeqs
	if seqs <= 0 {
		seqs = engine.DefaultMaxSeqs
	}
	ml := &modelLoader{mf: mf, sf: &sf, log: log, tmplPath: *tmplPath, tf: tf,
		kv: host.KVInputs{Memory: kvBytes / int64(atOnce), MemoryFlag: *kvMemory, Ctx: mf.ctxSize, MaxSeqs: seqs, Tokens: *kvTokens},
		eo: engine.Options{MaxSeqs: seqs, MaxQueue: *maxQueue, NoPrefixCache: *noPrefix, KVType: mf.kv}}
	var specs []server.ModelSpec
	for _, me := range entries {
		specs = append(specs, ml.spec(me))
	}
	opts := server.Options{APIKey: *apiKey, MetricsAuth: *metricsAuth, MaxBodyBytes: *maxBody, Logger: log,
		ReadHeaderTimeout: *headerTimeout, BodyTimeout: *bodyTimeout, IdleTimeout: *idleTimeout,
		RequestTimeout: *reqTimeout, HealthStall: *healthStall, CORSOrigins: cors, AllowedHosts: splitList(allowedHosts), SPMInfill: *spmInfill}
	lf.apply(&opts)
	server.Version = versionString()
	srv, err := server.NewRouter(server.RouterOptions{Options: opts, Models: specs, MaxLoaded: *modelsMax, MemoryBudget: budget, Pull: ml.pull, PullRef: hubPullRef})
	if err != nil {
		return err
	}
	defer srv.Close()
	served := make([]string, len(entries))
	for i, me := range entries {
		served[i] = me.Names[0]
	}
	return listenAndServe(ctx, stop, srv, net.JoinHostPort(*listenHost, strconv.Itoa(*port)), *drain, log, listening,
		"models", strings.Join(served, ", "), "models_max", *modelsMax, "kv_cache_memory", *kvMemory, "kv_cache_type", strings.ToLower(mf.kv.String()),
		"prefix_cache", !*noPrefix, "spec", sf.mode, "threads", mf.threads, "auth", *apiKey != "")
}

// listenAndServe binds addr, loads the models named at start, logs that
// the server serves (with attrs) and serves until ctx ends, draining for
// at most drain. It binds before loading: a port in use fails at once, not
// after a load of minutes; connections that arrive while the models load
// wait in the listen backlog.
func listenAndServe(ctx context.Context, stop func(), srv *server.Front, addr string, drain time.Duration, log *slog.Logger,
	listening func(net.Addr), attrs ...any) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if err := srv.Preload(ctx); err != nil {
		ln.Close()
		return err
	}
	log.Info("nanoserve serving", append([]any{"version", versionString(), "url", "http://" + ln.Addr().String() + "/v1"}, attrs...)...)
	if listening != nil {
		listening(ln.Addr())
	}
	go func() {
		<-ctx.Done()
		log.Info("shutting down: finishing requests in flight", "drain", drain.String())
		stop() // a second signal kills the process
	}()
	if err := srv.Serve(ctx, ln, drain); err != nil {
		if !errors.Is(err, server.ErrDrainCancelled) {
			return err
		}
		// Each cancelled request got its final error; the shutdown itself
		// went as designed, so the exit status is still 0.
		log.Warn("drain timeout: " + err.Error())
	}
	log.Info("stopped")
	return nil
}

// modelLoader is how serve loads each model: the flags every model's load
// shares, and its share of --kv-cache-memory.
type modelLoader struct {
	mf       modelFlags
	sf       *specFlags
	log      *slog.Logger
	tmplPath string
	tf       chat.ToolFormat
	kv       host.KVInputs
	eo       engine.Options
}

// spec is the served model me: loaded by loadServed, described by
// describeServed.
func (ml *modelLoader) spec(me host.Served) server.ModelSpec {
	lf := ml.mf
	lf.model = me.Path
	return server.ModelSpec{Names: me.Names, Preload: me.Named, Load: func() (*server.LoadedModel, error) {
		return loadServed(&lf, me, ml.log, ml.tmplPath, ml.tf, ml.kv, ml.eo, ml.sf)
	}, Describe: func() (*server.Manifest, error) { return describeServed(&lf, me, ml.tmplPath) }}
}

// pull answers Ollama's /api/pull of hf.co/ORG/REPO[:QUANT]: pulled like
// --model, then served under that name (and the hub reference).
func (ml *modelLoader) pull(ctx context.Context, name string) (server.ModelSpec, error) {
	p, ref, err := pullHub(ctx, name, ml.mf.revision)
	if err != nil {
		return server.ModelSpec{}, err
	}
	names := host.Names(name, p)
	if !slices.Contains(names, ref) {
		names = append(names, ref)
	}
	return ml.spec(host.Served{Path: p, Names: names}), nil
}

// hubPullRef is the hub reference an /api/pull name names.
func hubPullRef(name string) (string, error) {
	r, err := hub.ParseRef(strings.TrimPrefix(strings.TrimPrefix(name, "hf.co/"), "huggingface.co/"))
	if err != nil {
		return "", err
	}
	return r.String(), nil
}

// splitList splits each comma-separated value of a repeatable flag.
func splitList(vs []string) []string {
	var out []string
	for _, v := range vs {
		for f := range strings.SplitSeq(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				out = append(out, f)
			}
		}
	}
	return out
}

// servedModelName is the name /v1/models reports: the model file's (or
// directory's) base name, or the built-in model's file name.
func servedModelName(path string) string {
	if path == "" {
		return strings.TrimSuffix(defaultmodel.FileName, filepath.Ext(defaultmodel.FileName))
	}
	return filepath.Base(filepath.Clean(path))
}

// serveTemplate decides what serve does with the chat template it found:
// a template that loads is used even if it fails on a sample conversation
// (a warning; each chat request then gets a 400); a model without a
// template chats in ChatML (a warning, as llama-server falls back to it);
// a model whose own template nests too deep to compile still serves
// completions (a warning; chat answers 400). A template the user named with
// --chat-template (explicit) that cannot be used stops serve. It returns
// the template to use, nil for none.
func serveTemplate(tmpl *chat.Prompter, err error, explicit bool, log *slog.Logger) (*chat.Prompter, error) {
	switch {
	case err == nil:
		if err := tmpl.Template.Probe(tmpl.Options); err != nil {
			log.Warn("the chat template fails on a sample conversation; /v1/chat/completions will answer 400", "err", err)
		}
		return tmpl, nil
	case errors.Is(err, chat.ErrNoTemplate) && !explicit:
		// As llama-server: a model without a template chats in ChatML.
		log.Warn("the model has no chat template: chat uses ChatML (pass --chat-template for the model's own layout)")
		return chat.ChatML("", "")
	case errors.Is(err, chat.ErrTemplateLimit) && !explicit:
		log.Warn("the model's chat template cannot be used: /v1/chat/completions will answer 400 (pass --chat-template)", "err", err)
		return nil, nil
	}
	return nil, err
}
