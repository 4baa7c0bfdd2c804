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
	fs := newFlags("serve")
	var mf modelFlags
	mf.register(fs)
	fs.IntVar(&mf.ctxSize, "ctx", 0, "context length in tokens (same as --ctx-size; 0: the model's)")
	host := fs.String("host", "127.0.0.1", "address to listen on (0.0.0.0: all interfaces)")
	port := fs.Int("port", 8080, "TCP port")
	maxSeqs := fs.Int("max-seqs", 0, "sequences the engine batches at once (0: the engine's default)")
	kvTokens := fs.Int("kv-cache-tokens", 0, "KV cache positions shared by all running sequences (0: max-seqs × context,\n"+
		"within a 2 GiB budget, never less than one context)")
	maxQueue := fs.Int("max-queue", 0, "requests that may wait for a batch slot before more get 429 (0: the engine's default)")
	apiKey := fs.String("api-key", "", "require \"Authorization: Bearer KEY\" on /v1/ (default: $NANOSERVE_API_KEY)")
	servedName := fs.String("served-name", "", "another model name clients may use (the file's base name is always accepted)")
	tmplPath := fs.String("chat-template", "", "chat template: a Jinja file or a tokenizer_config.json (default: the model's own)")
	toolFormat := fs.String("tool-call-format", "auto", "how the model writes tool calls: auto (from the chat template), hermes (Qwen),\n"+
		"llama3-json, mistral, or none (requests with tools get 400 unless tool_choice is \"none\")")
	maxBody := fs.Int64("max-body", 4<<20, "largest request body in bytes")
	drain := fs.Duration("drain", 30*time.Second, "on SIGINT/SIGTERM, how long in-flight requests may take to finish")
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
	if *servedName != "" && *servedName != names[0] {
		names = append(names, *servedName)
	}
	opts := server.Options{ModelNames: names, APIKey: *apiKey, MaxBodyBytes: *maxBody, Logger: log, ToolFormat: tf}
	tmpl, err := loadChatTemplate(*tmplPath, m, mf.model)
	switch {
	case err == nil:
		opts.Template, opts.TemplateOptions = tmpl.t, tmpl.opts
	case errors.Is(err, chat.ErrNoTemplate) && *tmplPath == "":
		log.Warn("the model has no chat template: /v1/chat/completions will answer 400 (pass --chat-template)")
	default:
		return err
	}
	cacheTokens := *kvTokens
	if cacheTokens <= 0 {
		cacheTokens = defaultCacheTokens(m.ContextLen, mf.ctxSize, *maxSeqs, m.KVBytesPerToken())
	}
	eng, err := engine.New(m, engine.Options{CtxSize: mf.ctxSize, MaxSeqs: *maxSeqs, MaxQueue: *maxQueue, CacheTokens: cacheTokens})
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
	log.Info("nanoserve serving", "url", "http://"+ln.Addr().String()+"/v1", "model", strings.Join(names, ", "),
		"context", eng.CtxSize(), "max_seqs", eng.Options().MaxSeqs,
		"kv_cache_tokens", eng.Options().CacheTokens, "kv_cache_mib", eng.CacheBytes()>>20, "threads", mf.threads, "chat", opts.Template != nil, "tool_calls", tf, "auth", *apiKey != "")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		log.Info("shutting down: finishing requests in flight", "drain", drain.String())
		stop() // a second signal kills the process
	}()
	if err := srv.Serve(ctx, ln, *drain); err != nil {
		return err
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

// defaultCacheTokens sizes the shared KV cache of a server: room for every
// batch slot to hold a full context (maxSeqs × ctx positions), capped at
// 2 GiB of KV memory, and never below one context (the engine's floor: a
// request that fits the context can always finish). A server whose
// sequences share one context's worth of blocks would preempt constantly.
func defaultCacheTokens(modelCtx, ctx, maxSeqs int, bytesPerToken int64) int {
	if ctx <= 0 {
		ctx = modelCtx
	}
	if maxSeqs <= 0 {
		maxSeqs = engine.DefaultMaxSeqs
	}
	budget := int((2 << 30) / max(bytesPerToken, 1))
	return max(min(maxSeqs*ctx, budget), ctx)
}
