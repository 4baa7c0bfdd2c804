package main

// The grammar-bomb section (issue 29): structured-output constraints built
// to eat the machine — cycles through allOf and $defs (left recursion),
// 100k choices, GBNF alternatives and enum values, 10k required
// properties, deep nesting, a chain of definitions inlined twice per level —
// sent to a second `nanoserve serve` with the default body limit (the main
// section's server takes 64 KiB bodies; these are 1-2 MB). Every answer
// must come (no hang: each has a deadline), none may be a 5xx, a request
// sent beside the heaviest compile must still answer promptly, and the
// server's resident memory must stay bounded: its peak (VmHWM) and its
// growth after the section are reported and checked.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Bounds on the grammar-bomb server's memory (the default grammar limits
// count 256 MiB per compile; one compile runs at a time on 2 CPUs).
const (
	bombPeakGrowth  = 1 << 30   // VmHWM - RSS before the section
	bombFinalGrowth = 512 << 20 // RSS after - RSS before
	bombDeadline    = 60 * time.Second
)

type bomb struct {
	name, path, body string
	ok200            bool // a 200 is acceptable (the constraint fits the default limits)
	msg              string
}

func bombs() []bomb {
	chat, cmpl := "/v1/chat/completions", "/v1/completions"
	user := `"messages":[{"role":"user","content":"x"}],"max_tokens":8`
	var b []bomb
	for _, c := range []struct{ name, schema string }{
		{"allOf $ref #", `{"allOf":[{"$ref":"#"}]}`},
		{"allOf via $defs", `{"$defs":{"a":{"allOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`},
		{"allOf mutual definitions", `{"definitions":{"a":{"allOf":[{"$ref":"#/definitions/b"}]},"b":{"allOf":[{"$ref":"#/definitions/a"}]}},"allOf":[{"$ref":"#/definitions/a"}]}`},
		{"anyOf of allOf cycles", `{"anyOf":[{"allOf":[{"$ref":"#"}]},{"allOf":[{"$ref":"#"}]}]}`},
		{"property through allOf cycle", `{"type":"object","properties":{"x":{"allOf":[{"$ref":"#"}]}}}`},
	} {
		b = append(b,
			bomb{name: "response_format " + c.name, path: chat, body: `{` + user + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":` + c.schema + `}}}`, msg: "cycle"},
			bomb{name: "guided_json " + c.name, path: cmpl, body: `{"prompt":"x","max_tokens":8,"guided_json":` + c.schema + `}`, msg: "cycle"},
			bomb{name: "ollama format " + c.name, path: "/api/generate", body: `{"prompt":"x","stream":false,"options":{"num_predict":8},"format":` + c.schema + `}`, msg: "cycle"})
	}
	var choices []string
	var gbnf strings.Builder
	gbnf.WriteString("root ::= ")
	var enum []string
	for i := range 100_000 {
		choices = append(choices, fmt.Sprintf("choice number %d", i))
		if i > 0 {
			gbnf.WriteString(" | ")
		}
		fmt.Fprintf(&gbnf, `"alt%d"`, i)
		enum = append(enum, fmt.Sprintf("value-%d", i))
	}
	js := func(v any) string { s, _ := json.Marshal(v); return string(s) }
	props := map[string]any{}
	var req []string
	for i := range 10_000 {
		n := fmt.Sprintf("p%d", i)
		props[n] = map[string]any{"type": "string"}
		req = append(req, n)
	}
	deep := func(n int) string {
		return strings.Repeat(`{"type":"array","items":`, n) + `{"type":"integer"}` + strings.Repeat("}", n)
	}
	var defs []string
	defs = append(defs, `"d0":{"type":"integer"}`)
	for i := 1; i <= 40; i++ {
		defs = append(defs, fmt.Sprintf(`"d%d":{"type":"object","properties":{"a":{"allOf":[{"$ref":"#/$defs/d%d"}]},"b":{"allOf":[{"$ref":"#/$defs/d%d"}]}}}`, i, i-1, i-1))
	}
	fan := `{"$defs":{` + strings.Join(defs, ",") + `},"allOf":[{"$ref":"#/$defs/d40"}]}`
	b = append(b,
		bomb{name: "guided_choice 100k items", path: cmpl, body: `{"prompt":"x","max_tokens":8,"guided_choice":` + js(choices) + `}`, ok200: true},
		bomb{name: "grammar 100k alternatives", path: cmpl, body: `{"prompt":"x","max_tokens":8,"grammar":` + js(gbnf.String()) + `}`, ok200: true},
		bomb{name: "enum 100k values", path: chat, body: `{` + user + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":` + js(map[string]any{"enum": enum}) + `}}}`, ok200: true},
		bomb{name: "10k required properties", path: cmpl, body: `{"prompt":"x","max_tokens":8,"json_schema":` + js(map[string]any{"type": "object", "properties": props, "required": req}) + `}`, ok200: true},
		bomb{name: "190 nested arrays", path: cmpl, body: `{"prompt":"x","max_tokens":8,"json_schema":` + deep(190) + `}`, ok200: true},
		bomb{name: "300 nested arrays", path: cmpl, body: `{"prompt":"x","max_tokens":8,"json_schema":` + deep(300) + `}`, msg: "nested too deeply"},
		bomb{name: "allOf chain inlined twice per level ×40", path: cmpl, body: `{"prompt":"x","max_tokens":8,"json_schema":` + fan + `}`, ok200: true},
		bomb{name: "GBNF nested repetitions", path: cmpl, body: `{"prompt":"x","max_tokens":8,"grammar":"root ::= ((((\"a\"{0,10000}){0,10000}){0,10000}){0,10000})"}`, ok200: true},
	)
	return b
}

// grammarBombs runs the section against its own server; it returns an
// error when a case failed or the memory bounds were passed.
func grammarBombs(bin, modelPath, dir string, verbose bool) error {
	srv, err := startServe(bin, modelPath, dir, "serve-bombs.log", "--chat-template", filepath.Join(dir, "template.jinja"), "--threads", "1")
	if err != nil {
		return err
	}
	defer srv.stop()
	base, pid, exited, logPath := srv.base, srv.pid, srv.exited, srv.logPath
	// Warm the model (a first request) so RSS before counts its weights.
	post(base, "/v1/completions", `{"prompt":"x","max_tokens":2}`, bombDeadline)
	rss0 := procKB(pid, "VmRSS")

	failed, fivexx, hangs := 0, 0, 0
	var slowest time.Duration
	slowName := ""
	cs := bombs()
	var heavy bomb
	for _, c := range cs {
		if strings.HasPrefix(c.name, "guided_choice 100k") {
			heavy = c
		}
	}
	for _, c := range cs {
		start := time.Now()
		status, body, err := post(base, c.path, c.body, bombDeadline)
		d := time.Since(start)
		if d > slowest {
			slowest, slowName = d, c.name
		}
		var problem string
		switch {
		case err != nil:
			hangs++
			problem = "no answer within " + bombDeadline.String() + ": " + err.Error()
		case status >= 500:
			fivexx++
			problem = fmt.Sprintf("status %d: %.200s", status, body)
		case status == 200 && !c.ok200:
			problem = fmt.Sprintf("status 200, want a 4xx: %.200s", body)
		case status != 200 && status != 400:
			problem = fmt.Sprintf("status %d, want 400: %.200s", status, body)
		case status == 400 && c.msg != "" && !strings.Contains(string(body), c.msg):
			problem = fmt.Sprintf("the 400 does not say %q: %.300s", c.msg, body)
		}
		if problem != "" {
			failed++
			fmt.Printf("FAIL grammar bomb %s: %s\n", c.name, problem)
		} else if verbose {
			fmt.Printf("ok   grammar bomb %s: %d in %v: %.120s\n", c.name, status, d.Round(time.Millisecond), body)
		}
		select {
		case err := <-exited:
			tail, _ := os.ReadFile(logPath)
			return fmt.Errorf("the server died during grammar bomb %q: %v\nserver log:\n%s", c.name, err, tail)
		default:
		}
	}

	// A heavy compile whose client leaves, and a normal request beside a
	// heavy compile: the normal one answers without waiting for it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	postCtx(ctx, base, heavy.path, heavy.body)
	cancel()
	go post(base, heavy.path, heavy.body, bombDeadline)
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	status, body, err := post(base, "/v1/completions", `{"prompt":"func main() {","max_tokens":3}`, bombDeadline)
	beside := time.Since(start)
	if err != nil || status != 200 {
		failed++
		fmt.Printf("FAIL grammar bomb: a normal request beside a heavy compile: %d %v %.200s\n", status, err, body)
	}
	time.Sleep(2 * time.Second) // let the heavy one finish
	alive := false
	if resp, err := http.Get(base + "/health"); err == nil {
		alive = resp.StatusCode == 200
		resp.Body.Close()
	}
	rss1, peak := procKB(pid, "VmRSS"), procKB(pid, "VmHWM")
	memOK := rss0 < 0 || (peak-rss0)*1024 <= bombPeakGrowth && (rss1-rss0)*1024 <= bombFinalGrowth
	fmt.Printf("badinput grammar bombs: %d cases, %d failed, %d 5xx, %d hangs; slowest %v (%s); a normal request beside a heavy compile %v; "+
		"server RSS %s before, peak %s, %s after (bounds: peak +%d MiB, after +%d MiB); alive after: %v\n",
		len(cs)+2, failed, fivexx, hangs, slowest.Round(time.Millisecond), slowName, beside.Round(time.Millisecond),
		mib(rss0), mib(peak), mib(rss1), bombPeakGrowth>>20, bombFinalGrowth>>20, alive)
	if failed > 0 || fivexx > 0 || hangs > 0 || !memOK || !alive {
		return errors.New("grammar-bomb check failed")
	}
	return nil
}

func post(base, path, body string, deadline time.Duration) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	return postCtx(ctx, base, path, body)
}

func postCtx(ctx context.Context, base, path, body string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", base+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, []byte(b.String()), nil
}

// procKB reads a "Name: N kB" line of /proc/PID/status (-1: unavailable).
func procKB(pid int, name string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return -1
}

func mib(kb int64) string {
	if kb < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%d MiB", kb>>10)
}
