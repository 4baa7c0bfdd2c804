package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"nanoserve/defaultmodel"
)

// startServeChild runs `serve args...` in a child process (TestServeHelperProcess)
// and returns its base URL and the log lines written up to the "nanoserve
// serving" line. The child is stopped when the test ends.
func startServeChild(t *testing.T, args ...string) (string, []string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeHelperProcess$")
	cmd.Env = append(os.Environ(), "NANOSERVE_SERVE_ARGS="+strings.Join(args, "\x1f"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	var lines []string
	url := ""
	sc := bufio.NewScanner(stderr)
	for url == "" && sc.Scan() {
		line := sc.Text()
		lines = append(lines, line)
		if i := strings.Index(line, "url=http://"); i >= 0 {
			url = strings.TrimSuffix(strings.Fields(line[i+len("url="):])[0], "/v1")
		}
	}
	if url == "" {
		t.Fatalf("serve %v did not start:\n%s", args, strings.Join(lines, "\n"))
	}
	go io.Copy(io.Discard, stderr)
	return url, lines
}

// logValue is the value of key=... in the first line of lines holding msg.
func logValue(lines []string, msg, key string) string {
	for _, l := range lines {
		if !strings.Contains(l, "msg=\""+msg+"\"") {
			continue
		}
		for _, f := range strings.Fields(l) {
			if v, ok := strings.CutPrefix(f, key+"="); ok {
				return v
			}
		}
	}
	return ""
}

// `serve` used to ignore --kv-cache-type: the loader parsed the flag into a
// copy of the flag struct while the engine options (and the log) read the
// original, so every cache was f32 (the log said kv_cache_type=F32 with the
// default f16 and with q8_0) and took twice the --kv-cache-memory budget.
// Through the serve code path: the type and bytes in the log and in
// /v1/models are what the flags ask for, and the bytes fit the budget
// (before the fix: f32 and 2x the budget's bytes for the default f16).
func TestServeKVCacheType(t *testing.T) {
	if _, err := defaultmodel.Path(); err != nil {
		t.Skip(err)
	}
	const budget = 4 << 20
	bytesOf := map[string]int64{}
	for _, c := range []struct{ flag, want string }{{"", "f16"}, {"f32", "f32"}, {"q8_0", "q8_0"}} {
		args := []string{"--threads", "1", "--port", "0", "--max-seqs", "2", "--kv-cache-memory", strconv.Itoa(budget)}
		if c.flag != "" {
			args = append(args, "--kv-cache-type", c.flag)
		}
		url, lines := startServeChild(t, args...)
		if got := logValue(lines, "nanoserve serving", "kv_cache_type"); got != c.want {
			t.Errorf("--kv-cache-type %q: the serving line says kv_cache_type=%q, want %q\n%s", c.flag, got, c.want, strings.Join(lines, "\n"))
		}
		if got := logValue(lines, "model ready", "kv_cache_type"); got != c.want {
			t.Errorf("--kv-cache-type %q: the model line says kv_cache_type=%q, want %q", c.flag, got, c.want)
		}
		logBytes, _ := strconv.ParseInt(logValue(lines, "model ready", "kv_cache_bytes"), 10, 64)
		resp, err := http.Get(url + "/v1/models")
		if err != nil {
			t.Fatal(err)
		}
		var list struct {
			Data []struct {
				KVCacheType  string `json:"kv_cache_type"`
				KVCacheBytes int64  `json:"kv_cache_bytes"`
			}
		}
		err = json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		if err != nil || len(list.Data) != 1 {
			t.Fatalf("/v1/models: %v %+v", err, list)
		}
		card := list.Data[0]
		if card.KVCacheType != c.want || card.KVCacheBytes != logBytes || logBytes <= 0 {
			t.Errorf("--kv-cache-type %q: /v1/models says %s with %d bytes, the log %d bytes; want %s", c.flag, card.KVCacheType, card.KVCacheBytes, logBytes, c.want)
		}
		if logBytes > budget+budget/50 { // (the cache rounds its positions up to whole blocks)
			t.Errorf("--kv-cache-type %q: the cache holds %d bytes, over the --kv-cache-memory %d", c.flag, logBytes, budget)
		}
		bytesOf[c.want] = logBytes
	}
	t.Logf("KV cache bytes within %d: %v", budget, bytesOf)
}

// `serve` on a port in use loaded the model (minutes for a large one)
// before it failed to bind. It binds first: the error comes before any
// model is loaded.
func TestServeBindsBeforeLoad(t *testing.T) {
	if _, err := defaultmodel.Path(); err != nil {
		t.Skip(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeHelperProcess$")
	cmd.Env = append(os.Environ(), "NANOSERVE_SERVE_ARGS="+strings.Join([]string{"--threads", "1", "--port", port}, "\x1f"))
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("serve on a port in use succeeded:\n%s", out)
	}
	if !strings.Contains(string(out), "address already in use") {
		t.Errorf("serve on a port in use: the error does not say so:\n%s", out)
	}
	if strings.Contains(string(out), "model ready") {
		t.Errorf("serve loaded the model before failing to bind:\n%s", out)
	}
}
