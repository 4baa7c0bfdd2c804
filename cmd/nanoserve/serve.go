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
	"strconv"
	"strings"
	"syscall"
	"time"

	"nanoserve/chat"
	"nanoserve/defaultmodel"
	"nanoserve/engine"
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
	mf.register(fs)
	sf.register(fs)
	fs.IntVar(&mf.ctxSize, "ctx", 0, "context length in tokens (same as --ctx-size; 0: the model's)")
	host := fs.String("host", "127.0.0.1", "address to listen on (0.0.0.0: all interfaces)")
	port := fs.Int("port", 8080, "TCP port")
	maxSeqs := fs.Int("max-seqs", 0, "sequences the engine batches at once (0: the engine's default)")
	kvMemory := fs.String("kv-cache-memory", defaultKVMemory, "KV cache memory: bytes (4GiB, 512MiB) or a share of the machine's memory (25%);\n"+
		"the cache holds max-seqs full contexts within it, and the default context shrinks to fit")
	kvTokens := fs.Int("kv-cache-tokens", 0, "KV cache positions shared by all running sequences, overriding --kv-cache-memory (0: from it)")
	noPrefix := fs.Bool("no-prefix-cache", false, "never reuse KV blocks of other requests' prompts (every prompt is prefilled in full; for measuring the prefix cache)")
	maxQueue := fs.Int("max-queue", 0, "requests that may wait for a batch slot before more get 429 (0: the engine's default)")
	apiKey := fs.String("api-key", "", "require \"Authorization: Bearer KEY\" on /v1/ (default: $NANOSERVE_API_KEY)")
	servedName := fs.String("served-name", "", "another model name clients may use (the file's base name is always accepted)")
	tmplPath := fs.String("chat-template", "", "chat template: a Jinja file or a tokenizer_config.json (default: the model's own)")
	toolFormat := fs.String("tool-call-format", "auto", "how the model writes tool calls: auto (from the chat template), hermes (Qwen),\n"+
		"llama3-json, mistral, or none (requests with tools get 400 unless tool_choice is \"none\")")
	maxBody := fs.Int64("max-body", 4<<20, "largest request body in bytes")
	drain := fs.Duration("drain", 30*time.Second, "on SIGINT/SIGTERM, how long in-flight requests may take to finish;\n"+
		"then the rest are cancelled, each stream ending with an error event and [DONE]")
	headerTimeout := fs.Duration("read-header-timeout", 10*time.Second, "time a client has to send a request's headers")
	bodyTimeout := fs.Duration("body-timeout", time.Minute, "time a client has to send a request's body (then 408)")
	idleTimeout := fs.Duration("idle-timeout", 2*time.Minute, "time a keep-alive connection may wait for its next request")
	spmInfill := fs.Bool("spm-infill", false, "FIM prompts suffix first (llama-server's --spm-infill; for /infill and completions' suffix)")
	reqTimeout := fs.Duration("request-timeout", 10*time.Minute, "most time one generation request may take, arrival to last token (0: no limit)")
	healthStall := fs.Duration("health-stall", 5*time.Minute, "/health answers 503 when the engine loop has not stepped for this long (longer than your slowest step)")
	var cors stringList
	fs.Var(&cors, "cors-origin", "allow browser calls from this origin (repeatable; \"*\": any; default: CORS off)")
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
	memAvail := availableMemory()
	kvBytes, err := parseMemory(*kvMemory, memAvail)
	if err != nil {
		return err
	}
	if err := sf.check(); err != nil {
		return err
	}
	m, err := mf.load()
	if err != nil {
		return err
	}
	defer m.Close()
	if m.Tokenizer == nil {
		return errors.New("the model has no tokenizer (pass one with --tokenizer)")
	}

	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	names := []string{servedModelName(mf.model)}
	if mf.ref != "" { // a hub model answers to its reference first, its file name too
		names = []string{mf.ref, names[0]}
	}
	if *servedName != "" && *servedName != names[0] {
		names = append(names, *servedName)
	}
	opts := server.Options{ModelNames: names, APIKey: *apiKey, MaxBodyBytes: *maxBody, Logger: log,
		ReadHeaderTimeout: *headerTimeout, BodyTimeout: *bodyTimeout, IdleTimeout: *idleTimeout,
		RequestTimeout: *reqTimeout, HealthStall: *healthStall, CORSOrigins: cors, ToolFormat: tf, SPMInfill: *spmInfill}
	tmpl, err := loadChatTemplate(*tmplPath, m, mf.model)
	if tmpl, err = serveTemplate(tmpl, err, *tmplPath != "", log); err != nil {
		return err
	}
	if tmpl != nil {
		opts.Template, opts.TemplateOptions = tmpl.Template, tmpl.Options
	}
	seqs := *maxSeqs
	if seqs <= 0 {
		seqs = engine.DefaultMaxSeqs
	}
	plan, err := planKVCache(kvInputs{memory: kvBytes, memoryFlag: *kvMemory, bytesPerToken: m.KVBytesPerToken(mf.kv),
		modelCtx: m.ContextLen, ctx: mf.ctxSize, maxSeqs: seqs, tokens: *kvTokens})
	if err != nil {
		return err
	}
	if plan.warning != "" {
		log.Warn(plan.warning)
	}
	spec, closeDraft, err := sf.options(&mf, m, plan.cacheTokens)
	if err != nil {
		return err
	}
	defer closeDraft()
	eng, err := engine.New(m, engine.Options{CtxSize: plan.ctx, MaxSeqs: seqs, MaxQueue: *maxQueue, CacheTokens: plan.cacheTokens, NoPrefixCache: *noPrefix, Spec: spec, KVType: mf.kv})
	if err != nil {
		return err
	}
	defer eng.Close()
	srv, err := server.New(eng, opts)
	if err != nil {
		return err
	}
	addr := net.JoinHostPort(*host, strconv.Itoa(*port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if tf == "" && opts.Template != nil {
		tf = opts.Template.ToolFormat()
	}
	log.Info("nanoserve serving", "version", versionString(), "url", "http://"+ln.Addr().String()+"/v1", "model", strings.Join(names, ", "),
		"context", eng.CtxSize(), "max_seqs", eng.Options().MaxSeqs,
		"kv_cache_tokens", eng.Options().CacheTokens, "kv_cache_memory", *kvMemory, "kv_cache_type", mf.kv, "kv_cache_mib", eng.CacheBytes()>>20, "prefix_cache", !*noPrefix, "threads", mf.threads, "chat", opts.Template != nil, "tool_calls", tf, "auth", *apiKey != "")

	if listening != nil {
		listening(ln.Addr())
	}
	go func() {
		<-ctx.Done()
		log.Info("shutting down: finishing requests in flight", "drain", drain.String())
		stop() // a second signal kills the process
	}()
	if err := srv.Serve(ctx, ln, *drain); err != nil {
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
// template, or whose own template nests too deep to compile, still serves
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
		log.Warn("the model has no chat template: /v1/chat/completions will answer 400 (pass --chat-template)")
		return nil, nil
	case errors.Is(err, chat.ErrTemplateLimit) && !explicit:
		log.Warn("the model's chat template cannot be used: /v1/chat/completions will answer 400 (pass --chat-template)", "err", err)
		return nil, nil
	}
	return nil, err
}
