package main

// nanoserve serve: the OpenAI-compatible HTTP server (package server) over
// one engine. SIGINT or SIGTERM stops accepting connections and lets the
// requests in flight finish (up to --drain), then exits.

import (
	"context"
	"errors"
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

	"nanoserve/defaultmodel"
	"nanoserve/host"
	"nanoserve/hub"
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
	f, fs := newServeFlags()
	if err := f.parse(fs, args); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	entries, err := f.entries()
	if err != nil {
		return err
	}
	src := f.source(log, len(entries))
	var specs []server.ModelSpec
	for _, me := range entries {
		specs = append(specs, src.Spec(me))
	}
	pull := func(ctx context.Context, name string) (server.ModelSpec, error) {
		return pullSpec(ctx, src, name, f.mf.revision)
	}
	opts := f.options(log)
	if err := gcpEnv(os.Getenv, f.port, &opts); err != nil {
		return err
	}
	server.Version = versionString()
	srv, err := server.NewRouter(server.RouterOptions{Options: opts, Models: specs, MaxLoaded: *f.modelsMax, MemoryBudget: f.budget, Pull: pull, PullRef: hubPullRef})
	if err != nil {
		return err
	}
	defer srv.Close()
	served := make([]string, len(entries))
	for i, me := range entries {
		served[i] = me.Names[0]
	}
	return listenAndServe(ctx, stop, srv, hostAddrs(*f.listenHost, strconv.Itoa(*f.port)), *f.drain, log, listening,
		"models", strings.Join(served, ", "), "models_max", *f.modelsMax, "kv_cache_memory", *f.kvMemory, "kv_cache_type", strings.ToLower(f.mf.kv.String()),
		"prefix_cache", !*f.noPrefix, "spec", f.sf.mode, "threads", f.mf.threads, "auth", *f.apiKey != "")
}

// listenAndServe binds addrs (every --host address), loads the models
// named at start, logs that the server serves (with attrs) and serves
// until ctx ends, draining for at most drain. It binds before loading: a port in use fails at once, not
// after a load of minutes; connections that arrive while the models load
// wait in the listen backlog.
func listenAndServe(ctx context.Context, stop func(), srv *server.Front, addrs []string, drain time.Duration, log *slog.Logger,
	listening func(net.Addr), attrs ...any) error {
	ln, err := listenAll(addrs)
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

// pullSpec answers Ollama's /api/pull of hf.co/ORG/REPO[:QUANT]: pulled
// like --model, then served from src under that name (and the hub
// reference).
func pullSpec(ctx context.Context, src *host.Source, name, revision string) (server.ModelSpec, error) {
	p, ref, err := pullHub(ctx, name, revision)
	if err != nil {
		return server.ModelSpec{}, err
	}
	names := host.Names(name, p)
	if !slices.Contains(names, ref) {
		names = append(names, ref)
	}
	return src.Spec(host.Served{Path: p, Names: names}), nil
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
