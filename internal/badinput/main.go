// Command badinput is nanoserve's black-box bad-input check: it starts a
// real `nanoserve serve` on loopback (the built-in model unless --model),
// sends it well over a hundred (189) malformed, mistyped, out-of-range and
// protocol-level broken requests, and checks every answer:
//
//   - no 5xx, and the server process never dies (it still answers /health
//     and a valid request at the end);
//   - a field error is a 4xx whose error.param names the field and whose
//     message names it too;
//   - every other 4xx says what is wrong (an OpenAI-shaped error with a
//     message containing the case's keyword). Raw protocol errors that
//     net/http answers before any handler runs get a non-empty body; for
//     unparseable HTTP (a malformed request line, a bad Content-Length, a
//     header without a colon) that body is only "400 Bad Request".
//
// It prints one line per failed case and a summary with the counts, and
// exits 1 on any failure. test.sh runs it:
//
//	go build -o /tmp/nanoserve ./cmd/nanoserve && go run ./internal/badinput --bin /tmp/nanoserve
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// tcase is one request and what its answer must show.
type tcase struct {
	name   string
	method string // default POST
	path   string
	ctype  string // default application/json; "-": none
	auth   string // Authorization header; default the right key; "-": none
	body   string
	raw    string // if set, sent as is over TCP instead (a protocol-level case)
	status int    // exact status wanted (0: any 4xx)
	param  string // the field the error must name in param ("" : no field)
	msg    string // a keyword the message must contain (case-insensitive)
	closed bool   // raw: the server must close the connection (within the read timeouts) without an answer
}

const apiKey = "badinput-key"

// template is the chat template the server gets (the built-in model has none).
const template = `{% for m in messages %}<|{{ m.role }}|>{{ m.content }}
{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}`

func cases() []tcase {
	var cs []tcase
	add := func(c tcase) { cs = append(cs, c) }
	cmpl, chat := "/v1/completions", "/v1/chat/completions"

	// Field errors, on both endpoints where the field is shared.
	type fieldCase struct {
		field, value, msg string
	}
	common := []fieldCase{
		{"model", `5`, "string"},
		{"max_tokens", `0`, "at least 1"},
		{"max_tokens", `-5`, "at least 1"},
		{"max_tokens", `"ten"`, "integer"},
		{"max_tokens", `1.5`, "integer"},
		{"max_completion_tokens", `0`, "at least 1"},
		{"temperature", `"hot"`, "number"},
		{"temperature", `-1`, "temperature"},
		{"temperature", `1e999`, "number"},
		{"top_p", `1.5`, "top_p"},
		{"top_p", `-0.1`, "top_p"},
		{"top_p", `[]`, "number"},
		{"top_k", `-2`, ">= 0"},
		{"top_k", `1.5`, "integer"},
		{"min_p", `2`, "min_p"},
		{"min_p", `-1`, "min_p"},
		{"presence_penalty", `"x"`, "number"},
		{"frequency_penalty", `{}`, "number"},
		{"repetition_penalty", `0`, "repetition_penalty"},
		{"repetition_penalty", `-1`, "repetition_penalty"},
		{"seed", `"s"`, "integer"},
		{"seed", `1.5`, "integer"},
		{"stop", `5`, "string"},
		{"stop", `[1,2]`, "string"},
		{"stop", `{"a":1}`, "string"},
		{"stop_token_ids", `[-1]`, "token id"},
		{"stop_token_ids", `[99999999]`, "token id"},
		{"stop_token_ids", `"2"`, "array"},
		{"ignore_eos", `"yes"`, "boolean"},
		{"logit_bias", `{"abc":1}`, "token id"},
		{"logit_bias", `{"-1":1}`, "token id"},
		{"logit_bias", `{"99999999":1}`, "token id"},
		{"logit_bias", `[1]`, "object"},
		{"logit_bias", `{"1":"x"}`, "number"},
		{"n", `17`, "n must be in [1, 16]"},
		{"n", `0`, "n must be in [1, 16]"},
		{"n", `"1"`, "integer"},
		{"stream", `"yes"`, "boolean"},
		{"stream_options", `{"include_usage":true}`, "stream"},
		{"stream_options", `5`, "object"},
		{"user", `5`, "string"},
	}
	for _, ep := range []struct{ path, base string }{
		{cmpl, `"prompt":"x"`},
		{chat, `"messages":[{"role":"user","content":"x"}]`},
	} {
		for _, f := range common {
			add(tcase{name: ep.path + " " + f.field + "=" + f.value, path: ep.path,
				body: "{" + ep.base + `,"` + f.field + `":` + f.value + "}", status: 400, param: f.field, msg: f.msg})
		}
	}
	for _, f := range []fieldCase{
		{"prompt", `5`, "prompt"},
		{"prompt", `null`, "required"},
		{"prompt", `[]`, "prompt"},
		{"prompt", `["a",5]`, "prompt"},
		{"prompt", `[[1],[]]`, "empty"},
		{"prompt", `[-1]`, "not a token id"},
		{"prompt", `[99999999]`, "not a token id"},
		{"prompt", `[1,"a"]`, "prompt"},
		{"prompt", `{"text":"x"}`, "prompt"},
		{"logprobs", `-1`, "logprobs"},
		{"logprobs", `99`, "logprobs"},
		{"logprobs", `true`, "integer"},
		{"echo", `true`, "not supported"},
		{"echo", `"x"`, "boolean"},
		{"suffix", `5`, "must be a string"}, // (the built-in model has FIM tokens: a string suffix is served)
		{"best_of", `3`, "best_of"},
		{"token_healing", `"on"`, "boolean"},
		{"parse_special", `1`, "boolean"},
	} {
		body := `{"prompt":"x","` + f.field + `":` + f.value + "}"
		if f.field == "prompt" {
			body = `{"prompt":` + f.value + "}"
		}
		add(tcase{name: cmpl + " " + f.field + "=" + f.value, path: cmpl, body: body, status: 400, param: f.field, msg: f.msg})
	}
	add(tcase{name: cmpl + " no prompt", path: cmpl, body: `{"max_tokens":3}`, status: 400, param: "prompt", msg: "required"})
	add(tcase{name: cmpl + " unknown model", path: cmpl, body: `{"prompt":"x","model":"gpt-9"}`, status: 404, param: "model", msg: "does not exist"})
	add(tcase{name: chat + " unknown model", path: chat, body: `{"messages":[{"role":"user","content":"x"}],"model":"gpt-9"}`, status: 404, param: "model", msg: "does not exist"})
	longPrompt := strings.Repeat("func main() { return nil } ", 400)
	add(tcase{name: cmpl + " prompt longer than the context", path: cmpl, body: `{"prompt":"` + longPrompt + `"}`, status: 400, param: "prompt", msg: "maximum context length"})
	add(tcase{name: chat + " messages longer than the context", path: chat,
		body: `{"messages":[{"role":"user","content":"` + longPrompt + `"}]}`, status: 400, param: "messages", msg: "maximum context length"})

	for _, f := range []struct{ body, param, msg string }{
		{`{}`, "messages", "non-empty"},
		{`{"messages":[]}`, "messages", "non-empty"},
		{`{"messages":"hi"}`, "messages", "array"},
		{`{"messages":[1]}`, "messages", "object"},
		{`{"messages":[{"content":"x"}]}`, "messages[0].role", "required"},
		{`{"messages":[{"role":"tool","content":"x"}]}`, "messages[0].tool_call_id", "required"},
		{`{"messages":[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{x"}}]}]}`, "messages[0].tool_calls[0]", "JSON object"},
		{`{"messages":[{"role":5,"content":"x"}]}`, "messages.role", "string"},
		{`{"messages":[{"role":"user"}]}`, "messages[0].content", "required"},
		{`{"messages":[{"role":"user","content":5}]}`, "messages[0].content", "string"},
		{`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]}`, "messages[0].content[0].type", "not supported"},
		{`{"messages":[{"role":"user","content":[{"type":"text"}]}]}`, "messages[0].content[0].text", "required"},
		{`{"messages":[{"role":"user","content":"x"},{"role":"bot","content":"y"}]}`, "messages[1].role", "not supported"},
		{`{"messages":[{"role":"user","content":"x"}],"logprobs":"yes"}`, "logprobs", "boolean"},
		{`{"messages":[{"role":"user","content":"x"}],"top_logprobs":3}`, "top_logprobs", "requires logprobs"},
		{`{"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":99}`, "top_logprobs", "top_logprobs"},
		{`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"}]}`, "tools[0].function", "required"},
		{`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"always"}`, "tool_choice", "not supported"},
		{`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"g"}}}`, "tool_choice", "not among"},
		{`{"messages":[{"role":"user","content":"x"}],"functions":[{"name":"f"}],"tools":[{"type":"function","function":{"name":"f"}}]}`, "functions", "together"},
		{`{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"yaml"}}`, "response_format", "not supported"},
		{`{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","minProperties":2}}}}`, "response_format", "minProperties"},
		{`{"messages":[{"role":"user","content":"x"}],"grammar":"root ::= \"a"}`, "grammar", "unterminated string literal"},
		{`{"messages":[{"role":"user","content":"x"}],"use_beam_search":true}`, "use_beam_search", "not supported"},
		{`{"messages":[{"role":"user","content":"x"}],"response_format":"json"}`, "response_format", "object"},
	} {
		add(tcase{name: chat + " " + f.body, path: chat, body: f.body, status: 400, param: f.param, msg: f.msg})
	}

	// Bodies that are not a request object, on both endpoints.
	for _, path := range []string{cmpl, chat} {
		for _, b := range []struct {
			name, body, msg string
		}{
			{"empty body", ``, "empty"},
			{"whitespace body", "  \n ", "empty"},
			{"invalid JSON", `{"prompt":}`, "invalid JSON"},
			{"truncated JSON", `{"prompt":"x"`, "unexpected end"},
			{"array body", `[1,2]`, "JSON object"},
			{"string body", `"hello"`, "JSON object"},
			{"null body", `null`, "required"},
			{"trailing data", `{"prompt":"x"} {"prompt":"y"}`, "trailing"},
			{"single quotes", `{'prompt':'x'}`, "invalid JSON"},
			{"NaN literal", `{"prompt":"x","temperature":NaN}`, "invalid JSON"},
			{"binary garbage", "\x00\xff\xfe\x01", "invalid JSON"},
			{"invalid UTF-8 key", "{\"\xff\":1}", ""},
		} {
			c := tcase{name: path + " " + b.name, path: path, body: b.body, status: 400, msg: b.msg}
			if b.name == "null body" {
				c.param = "prompt"
				if path == chat {
					c.param, c.msg = "messages", "non-empty"
				}
			}
			if b.name == "invalid UTF-8 key" { // an unknown key: ignored, so the request lacks its prompt
				c.param, c.msg = "prompt", "required"
				if path == chat {
					c.param, c.msg = "messages", "non-empty"
				}
			}
			add(c)
		}
		add(tcase{name: path + " form body", path: path, ctype: "application/x-www-form-urlencoded", body: "prompt=hi&max_tokens=2",
			status: 415, msg: "Content-Type"})
		add(tcase{name: path + " multipart body", path: path, ctype: "multipart/form-data; boundary=x", body: "--x\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\nhi\r\n--x--\r\n",
			status: 415, msg: "multipart/form-data"})
		add(tcase{name: path + " text/plain body", path: path, ctype: "text/plain", body: "complete this", status: 415, msg: "text/plain"})
		add(tcase{name: path + " body over --max-body", path: path, body: `{"prompt":"` + strings.Repeat("a", 70000) + `"}`,
			status: 413, msg: "exceeds the limit"})
		add(tcase{name: path + " no API key", path: path, auth: "-", body: `{"prompt":"x"}`, status: 401, msg: "API key"})
		add(tcase{name: path + " wrong API key", path: path, auth: "Bearer nope", body: `{"prompt":"x"}`, status: 401, msg: "API key"})
		add(tcase{name: path + " Basic auth", path: path, auth: "Basic Zm9vOmJhcg==", body: `{"prompt":"x"}`, status: 401, msg: "API key"})
		add(tcase{name: path + " GET", path: path, method: "GET", status: 405, msg: "not allowed"})
		add(tcase{name: path + " PUT", path: path, method: "PUT", body: `{}`, status: 405, msg: "not allowed"})
	}
	add(tcase{name: "unknown path", path: "/v1/complete", body: `{}`, status: 404, msg: "no such endpoint"})
	add(tcase{name: "unknown model card", path: "/v1/models/gpt-9", method: "GET", status: 404, param: "model", msg: "does not exist"})
	add(tcase{name: "path traversal", path: "/v1/../../etc/passwd", method: "GET", status: 404, msg: "no such endpoint"})
	add(tcase{name: "POST /health", path: "/health", body: `{}`, status: 405, msg: "not allowed"})
	add(tcase{name: "DELETE /v1/models", path: "/v1/models", method: "DELETE", status: 405, msg: "not allowed"})

	// Protocol-level breakage, over raw TCP.
	hdr := "Host: localhost\r\nAuthorization: Bearer " + apiKey + "\r\nContent-Type: application/json\r\n"
	add(tcase{name: "raw: stalled body (Content-Length 1000, 10 bytes, silence)", raw: "POST /v1/completions HTTP/1.1\r\n" + hdr +
		"Content-Length: 1000\r\n\r\n{\"prompt\":", status: 408, msg: "did not arrive"})
	add(tcase{name: "raw: stalled chunked body (one chunk, then silence)", raw: "POST /v1/chat/completions HTTP/1.1\r\n" + hdr +
		"Transfer-Encoding: chunked\r\n\r\n5\r\n{\"mes\r\n", status: 408, msg: "did not arrive"})
	add(tcase{name: "raw: headers never finished (closed after --read-header-timeout)", raw: "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\n", closed: true})
	add(tcase{name: "raw: malformed request line", raw: "GARBAGE\r\n\r\n", status: 400}) // net/http answers these before any handler: "400 Bad Request", no reason
	add(tcase{name: "raw: bad Content-Length", raw: "POST /v1/completions HTTP/1.1\r\n" + hdr + "Content-Length: -5\r\n\r\n", status: 400})
	add(tcase{name: "raw: two Content-Lengths", raw: "POST /v1/completions HTTP/1.1\r\n" + hdr + "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello", status: 400})
	add(tcase{name: "raw: broken chunked body", raw: "POST /v1/completions HTTP/1.1\r\n" + hdr + "Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
		status: 400, msg: "chunk"})
	add(tcase{name: "raw: unsupported Transfer-Encoding", raw: "POST /v1/completions HTTP/1.1\r\n" + hdr + "Transfer-Encoding: gzip\r\n\r\n", status: 501, msg: "transfer encoding"})
	add(tcase{name: "raw: header over the limit", raw: "GET /health HTTP/1.1\r\nHost: localhost\r\nX-Big: " + strings.Repeat("a", 1<<21) + "\r\n\r\n", status: 431, msg: "too large"})
	add(tcase{name: "raw: HTTP/1.1 without Host", raw: "GET /health HTTP/1.1\r\n\r\n", status: 400, msg: "Host"})
	add(tcase{name: "raw: header without colon", raw: "GET /health HTTP/1.1\r\nHost: localhost\r\nbroken header\r\n\r\n", status: 400})
	add(tcase{name: "raw: unsupported HTTP version", raw: "GET /health HTTP/9.9\r\nHost: localhost\r\n\r\n", status: 505, msg: "version"})
	return cs
}

func main() {
	bin := flag.String("bin", "", "the nanoserve binary to test (required)")
	modelPath := flag.String("model", "", "model to serve (default: the built-in one)")
	verbose := flag.Bool("v", false, "print every case")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "badinput: --bin is required")
		os.Exit(2)
	}
	if err := run(*bin, *modelPath, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "badinput:", err)
		os.Exit(1)
	}
}

func run(bin, modelPath string, verbose bool) error {
	dir, err := os.MkdirTemp("", "badinput")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	tmpl := filepath.Join(dir, "template.jinja")
	if err := os.WriteFile(tmpl, []byte(template), 0o644); err != nil {
		return err
	}
	srv, err := startServe(bin, modelPath, dir, "serve.log", "--api-key", apiKey, "--chat-template", tmpl,
		"--max-body", "65536", "--body-timeout", "2s", "--read-header-timeout", "2s", "--threads", "1")
	if err != nil {
		return err
	}
	defer srv.stop()
	base, exited, logPath := srv.base, srv.exited, srv.logPath

	cs := cases()
	var failed, fivexx int
	statuses := map[int]int{}
	for _, c := range cs {
		status, problems := check(base, c)
		statuses[status]++
		if status >= 500 && c.status < 500 {
			fivexx++
		}
		if len(problems) > 0 {
			failed++
			fmt.Printf("FAIL %s: %s\n", c.name, strings.Join(problems, "; "))
		} else if verbose {
			fmt.Printf("ok   %s: %d\n", c.name, status)
		}
		select {
		case err := <-exited:
			tail, _ := os.ReadFile(logPath)
			return fmt.Errorf("the server died during %q: %v\nserver log:\n%s", c.name, err, tail)
		default:
		}
	}
	an, afailed, a5xx, ahangs := authSection(base, verbose)
	// Still alive and still serving.
	alive := true
	if resp, err := http.Get(base + "/health"); err != nil || resp.StatusCode != 200 {
		alive = false
	} else {
		resp.Body.Close()
	}
	req, _ := http.NewRequest("POST", base+"/v1/completions", strings.NewReader(`{"prompt":"func main() {","max_tokens":3}`))
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		alive = false
	} else {
		resp.Body.Close()
	}
	var codes []string
	for _, s := range []int{400, 401, 404, 405, 408, 413, 415, 431, 501, 505} {
		if statuses[s] > 0 {
			codes = append(codes, fmt.Sprintf("%d×%d", statuses[s], s))
		}
	}
	fmt.Printf("badinput: %d cases, %d passed, %d failed; %d unexpected 5xx, 0 crashes, server alive after: %v (%s)\n",
		len(cs), len(cs)-failed, failed, fivexx, alive, strings.Join(codes, " "))
	if failed > 0 || fivexx > 0 || !alive || afailed > 0 || a5xx > 0 || ahangs > 0 || an == 0 {
		return errors.New("bad-input check failed")
	}
	return grammarBombs(bin, modelPath, dir, verbose) // grammarbomb.go
}

// check sends one case and lists what is wrong with the answer.
func check(base string, c tcase) (int, []string) {
	var status int
	var body []byte
	var err error
	if c.raw != "" {
		status, body, err = sendRaw(strings.TrimPrefix(base, "http://"), c.raw)
	} else {
		status, body, err = send(base, c)
	}
	if c.closed {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return 0, nil
		}
		return status, []string{fmt.Sprintf("want the connection closed, got status %d, err %v", status, err)}
	}
	if err != nil {
		return 0, []string{"no answer: " + err.Error()}
	}
	var p []string
	if status >= 500 && status != c.status {
		p = append(p, fmt.Sprintf("status %d (a server error for bad input)", status))
	}
	if c.status != 0 && status != c.status {
		p = append(p, fmt.Sprintf("status %d, want %d", status, c.status))
	}
	if c.status == 0 && (status < 400 || status > 499) {
		p = append(p, fmt.Sprintf("status %d, want a 4xx", status))
	}
	var e struct {
		Error *struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
		} `json:"error"`
	}
	msg := string(body)
	if c.raw == "" {
		if json.Unmarshal(body, &e) != nil || e.Error == nil || e.Error.Message == "" || e.Error.Type == "" {
			return status, append(p, fmt.Sprintf("not an OpenAI error object: %.200q", body))
		}
		msg = e.Error.Message
		switch {
		case c.param != "" && (e.Error.Param == nil || *e.Error.Param != c.param):
			p = append(p, fmt.Sprintf("param %v, want %q (message %q)", deref(e.Error.Param), c.param, msg))
		case c.param != "" && !strings.Contains(msg, c.param):
			p = append(p, fmt.Sprintf("the message does not name the field %q: %q", c.param, msg))
		case c.param == "" && e.Error.Param != nil:
			p = append(p, fmt.Sprintf("param %q on a non-field error: %q", *e.Error.Param, msg))
		}
	} else if strings.TrimSpace(msg) == "" {
		p = append(p, "an empty error body")
	}
	if c.msg != "" && !strings.Contains(strings.ToLower(msg), strings.ToLower(c.msg)) {
		p = append(p, fmt.Sprintf("the message does not say %q: %.300q", c.msg, msg))
	}
	return status, p
}

func deref(s *string) string {
	if s == nil {
		return "null"
	}
	return strconv.Quote(*s)
}

func send(base string, c tcase) (int, []byte, error) {
	method := c.method
	if method == "" {
		method = "POST"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var body io.Reader
	if c.body != "" || method == "POST" {
		body = strings.NewReader(c.body)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+c.path, body)
	if err != nil {
		return 0, nil, err
	}
	switch c.ctype {
	case "":
		req.Header.Set("Content-Type", "application/json")
	case "-":
	default:
		req.Header.Set("Content-Type", c.ctype)
	}
	switch c.auth {
	case "":
		req.Header.Set("Authorization", "Bearer "+apiKey)
	case "-":
	default:
		req.Header.Set("Authorization", c.auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// sendRaw writes raw bytes and reads one HTTP response (bounded by 15 s;
// the stalled-body case takes the server's 2 s body timeout).
func sendRaw(addr, raw string) (int, []byte, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, nil, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(15 * time.Second))
	go io.WriteString(conn, raw) // a huge header may not be read in full before the answer
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, nil, fmt.Errorf("reading the response: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, bytes.TrimSpace(b), nil
}

// served is a `nanoserve serve` child process on a free loopback port.
type served struct {
	base    string       // http://127.0.0.1:PORT
	pid     int          // the child's pid (for its RSS)
	logPath string       // its stdout and stderr
	exited  <-chan error // receives when the child exits
	stop    func()       // SIGINT, then SIGKILL after 10 s; closes the log
}

// startServe runs bin serve --port P args... (and --model modelPath when
// set) with its output in dir/logName, and waits until /ready answers.
func startServe(bin, modelPath, dir, logName string, args ...string) (*served, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	// --strict-model-names: the unknown-model cases expect the 404 that a
	// single-model server otherwise skips (it answers any name, as
	// llama-server).
	args = append([]string{"serve", "--port", strconv.Itoa(port), "--strict-model-names"}, args...)
	if modelPath != "" {
		args = append(args, "--model", modelPath)
	}
	logPath := filepath.Join(dir, logName)
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	srv := &served{base: "http://127.0.0.1:" + strconv.Itoa(port), pid: cmd.Process.Pid, logPath: logPath, exited: exited}
	srv.stop = func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
		}
		logf.Close()
	}
	if err := waitReady(srv.base, exited); err != nil {
		srv.stop()
		tail, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("%v\nserver log:\n%s", err, tail)
	}
	return srv, nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls /ready for up to two minutes (the first start writes the
// built-in model to the cache directory).
func waitReady(base string, exited <-chan error) error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("the server exited at start: %v", err)
		default:
		}
		if resp, err := http.Get(base + "/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("the server was not ready within 2 minutes")
}
