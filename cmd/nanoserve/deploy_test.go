package main

// The deployment files (Dockerfile, deploy/*.yaml) checked against the
// server they deploy: the container's args are run through `serve` as they
// are (the model pulled from a stand-in hub), the probes' paths and the
// ports answer, the metric names the HPA and the endpoint picker read are
// served, and the binary builds static.

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"nanoserve/defaultmodel"
	"nanoserve/hub"
	"nanoserve/internal/fakehub"
)

// repoRoot is the module root (two levels up from cmd/nanoserve).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// manifests reads every YAML document under deploy/, by kind.
func manifests(t *testing.T) map[string][]map[string]any {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot(t), "deploy", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in deploy/: %v", err)
	}
	out := map[string][]map[string]any{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var doc map[string]any
			err := dec.Decode(&doc)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			kind, _ := doc["kind"].(string)
			if kind == "" || doc["apiVersion"] == nil {
				t.Fatalf("%s: a document without kind/apiVersion", f)
			}
			out[kind] = append(out[kind], doc)
		}
	}
	return out
}

// at walks a decoded YAML tree: keys for maps, ints for lists.
func at(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %v: not a map before %q", path, k)
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("at %v: no element %d", path, k)
			}
			v = l[k]
		}
	}
	return v
}

func str(v any) string { return fmt.Sprint(v) }

func one(t *testing.T, docs map[string][]map[string]any, kind string) map[string]any {
	t.Helper()
	if len(docs[kind]) != 1 {
		t.Fatalf("want one %s in deploy/, have %d", kind, len(docs[kind]))
	}
	return docs[kind][0]
}

// flagValue returns the value after --name in args.
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		if a == "--"+name && i+1 < len(args) {
			return args[i+1], true
		}
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// dockerfile parses the Dockerfile into instructions (keyword, rest),
// joining continuation lines.
func dockerfile(t *testing.T) [][2]string {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot(t), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][2]string
	var cur string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if cur == "" && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if s, ok := strings.CutSuffix(line, "\\"); ok {
			cur += s + " "
			continue
		}
		cur += line
		kw, rest, _ := strings.Cut(cur, " ")
		out = append(out, [2]string{strings.ToUpper(kw), strings.TrimSpace(rest)})
		cur = ""
	}
	return out
}

// execForm parses a JSON-array instruction (ENTRYPOINT ["a", "b"]).
func execForm(t *testing.T, s string) []string {
	t.Helper()
	var out []string
	if err := yaml.Unmarshal([]byte(s), &out); err != nil || !strings.HasPrefix(s, "[") {
		t.Fatalf("not exec form: %s", s)
	}
	return out
}

func TestDeployManifests(t *testing.T) {
	docs := manifests(t)
	dep := one(t, docs, "Deployment")
	pod := at(t, dep, "spec", "template", "spec")
	c := at(t, pod, "containers", 0)
	var args []string
	for _, a := range at(t, c, "args").([]any) {
		args = append(args, str(a))
	}
	if args[0] != "serve" {
		t.Fatalf("container args %v do not run serve", args)
	}
	port, ok := flagValue(args, "port")
	if !ok {
		t.Fatal("container args have no --port")
	}
	if host, _ := flagValue(args, "host"); host != "0.0.0.0" {
		t.Errorf("--host %q: the pod must listen on all interfaces", host)
	}
	// Ports: container, --port, Service, InferencePool, Dockerfile agree.
	cport := at(t, c, "ports", 0)
	portName := str(at(t, cport, "name"))
	if str(at(t, cport, "containerPort")) != port {
		t.Errorf("containerPort %v, --port %s", at(t, cport, "containerPort"), port)
	}
	svc := one(t, docs, "Service")
	if tp := str(at(t, svc, "spec", "ports", 0, "targetPort")); tp != portName && tp != port {
		t.Errorf("Service targetPort %s is neither %s nor %s", tp, portName, port)
	}
	pool := one(t, docs, "InferencePool")
	if tp := str(at(t, pool, "spec", "targetPorts", 0, "number")); tp != port {
		t.Errorf("InferencePool targetPorts %s, --port %s", tp, port)
	}
	podLabels := at(t, dep, "spec", "template", "metadata", "labels").(map[string]any)
	for k, v := range at(t, pool, "spec", "selector", "matchLabels").(map[string]any) {
		if podLabels[k] != v {
			t.Errorf("InferencePool selects %s=%v, pods are labelled %v", k, v, podLabels)
		}
	}
	for k, v := range at(t, svc, "spec", "selector").(map[string]any) {
		if podLabels[k] != v {
			t.Errorf("Service selects %s=%v, pods are labelled %v", k, v, podLabels)
		}
	}
	route := one(t, docs, "HTTPRoute")
	be := at(t, route, "spec", "rules", 0, "backendRefs", 0)
	if str(at(t, be, "kind")) != "InferencePool" || str(at(t, be, "name")) != str(at(t, pool, "metadata", "name")) ||
		str(at(t, be, "group")) != "inference.networking.k8s.io" {
		t.Errorf("HTTPRoute backend %v is not the InferencePool", be)
	}
	hpa := one(t, docs, "HorizontalPodAutoscaler")
	if str(at(t, hpa, "spec", "scaleTargetRef", "name")) != str(at(t, dep, "metadata", "name")) {
		t.Error("HPA does not scale the Deployment")
	}
	hpaMetric := str(at(t, hpa, "spec", "metrics", 0, "pods", "metric", "name"))
	if hpaMetric != "vllm:num_requests_waiting" {
		t.Errorf("HPA scales on %s, want vllm:num_requests_waiting", hpaMetric)
	}

	// Dockerfile: static build, distroless/scratch, non-root, same port, same binary.
	df := dockerfile(t)
	var froms []string
	var user, entry, cmd, expose string
	cgoOff := false
	for _, in := range df {
		switch in[0] {
		case "FROM":
			froms = append(froms, in[1])
		case "USER":
			user = in[1]
		case "ENTRYPOINT":
			entry = in[1]
		case "CMD":
			cmd = in[1]
		case "EXPOSE":
			expose = in[1]
		case "ENV":
			cgoOff = cgoOff || strings.Contains(in[1], "CGO_ENABLED=0")
		case "RUN":
			if strings.Contains(in[1], "go build") && !cgoOff && !strings.Contains(in[1], "CGO_ENABLED=0") {
				t.Error("the Dockerfile builds without CGO_ENABLED=0")
			}
		}
	}
	final := froms[len(froms)-1]
	if !strings.HasPrefix(final, "scratch") && !strings.HasPrefix(final, "gcr.io/distroless/static") {
		t.Errorf("final image %q is not scratch or distroless/static", final)
	}
	if u, _, _ := strings.Cut(user, ":"); u == "" || u == "0" || u == "root" {
		t.Errorf("USER %q: the image must not run as root", user)
	}
	if uid := str(at(t, pod, "securityContext", "runAsUser")); uid != strings.Split(user, ":")[0] {
		t.Errorf("runAsUser %s, Dockerfile USER %s", uid, user)
	}
	if expose != port {
		t.Errorf("EXPOSE %s, --port %s", expose, port)
	}
	if e := execForm(t, entry); len(e) != 1 || e[0] != "/nanoserve" {
		t.Errorf("ENTRYPOINT %v", e)
	}
	cmdArgs := execForm(t, cmd)
	if p, _ := flagValue(cmdArgs, "port"); p != port || cmdArgs[0] != "serve" {
		t.Errorf("CMD %v: want serve on port %s", cmdArgs, port)
	}

	// Run the container's args (model pulled from a stand-in hub) and the
	// image's CMD (built-in model), then probe what the manifests name.
	model, ok := flagValue(args, "model")
	if !ok {
		t.Fatal("container args have no --model")
	}
	ref, err := hub.ParseRef(model)
	if err != nil {
		t.Fatalf("--model %s: %v", model, err)
	}
	data, err := defaultmodel.Bytes()
	if err != nil {
		t.Skip(err)
	}
	h := fakehub.New()
	defer h.Close()
	file := strings.ToLower(filepath.Base(ref.Repo)) + "-" + strings.ToLower(ref.Quant) + ".gguf"
	h.Add(ref.Repo, &fakehub.Repo{Commit: strings.Repeat("7", 40), Files: map[string]fakehub.File{file: {Data: data, LFS: true}}})
	t.Setenv("HF_ENDPOINT", h.URL)
	t.Setenv("HF_HOME", t.TempDir())
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HF_HUB_OFFLINE", "")

	probes := map[string]string{}
	for _, p := range []string{"livenessProbe", "readinessProbe", "startupProbe"} {
		pr, ok := c.(map[string]any)[p]
		if !ok {
			if p != "startupProbe" {
				t.Errorf("container has no %s", p)
			}
			continue
		}
		if pp := str(at(t, pr, "httpGet", "port")); pp != portName && pp != port {
			t.Errorf("%s port %s", p, pp)
		}
		probes[p] = str(at(t, pr, "httpGet", "path"))
	}
	scrapePath := str(at(t, dep, "spec", "template", "metadata", "annotations", "prometheus.io/path"))
	for _, run := range [][]string{args, cmdArgs} {
		runServer(t, run[1:], func(base string) {
			for p, path := range probes {
				if code := get(t, base+path); code != http.StatusOK {
					t.Errorf("%s %s: HTTP %d", p, path, code)
				}
			}
			// Once the server registers /ready, readiness must use it.
			if code := get(t, base+"/ready"); code != http.StatusNotFound && probes["readinessProbe"] != "/ready" {
				t.Errorf("the server serves /ready (HTTP %d) but the readiness probe asks %s", code, probes["readinessProbe"])
			}
			body := getBody(t, base+scrapePath)
			for _, name := range []string{hpaMetric, "vllm:num_requests_running", "vllm:kv_cache_usage_perc", "vllm:cache_config_info"} {
				if !strings.Contains(body, "# TYPE "+name+" gauge\n") {
					t.Errorf("%s does not serve the gauge %s", scrapePath, name)
				}
			}
		})
	}
}

// runServer runs serve with args plus a loopback address on a free port
// (later flags win) and calls f with its base URL.
func runServer(t *testing.T, args []string, f func(base string)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, cancel, append(slices.Clone(args), "--host", "127.0.0.1", "--port", "0", "--threads", "1"),
			func(a net.Addr) { addrc <- a })
	}()
	select {
	case a := <-addrc:
		f("http://" + a.String())
	case err := <-done:
		t.Fatalf("serve %v: %v", args, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
}

func get(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func getBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestStaticBinary builds the binary as the Dockerfile does and checks the
// ELF file has no interpreter and no dynamic section.
func TestStaticBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	out := filepath.Join(t.TempDir(), "nanoserve")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-ldflags=-s -w", "-o", out, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build: %v\n%s", err, b)
	}
	checkStatic(t, out)
}

func checkStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s has a %s program header: not static", path, p.Type)
		}
	}
	if s := f.Section(".dynamic"); s != nil {
		t.Errorf("%s has a .dynamic section", path)
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("%s needs %v", path, libs)
	}
}
