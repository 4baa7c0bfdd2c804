package main

// The auth section: every route of the server's route table
// (server.Routes, so a route added later is walked too) × no key, wrong
// keys, the right key (as a Bearer token and as X-Api-Key), against the
// live server started with --api-key. A route that needs the key must
// answer 401 without it; with it, and on a public route (/health, /ready,
// /metrics) whatever is sent, anything but 401 or a 5xx. No request may
// hang (each has 30 s). Then a foreign Origin and a foreign Host must be
// refused (403) and a loopback Origin must not.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"nanoserve/server"
	"nanoserve/webui"
)

// authBodies are bodies each POST route accepts, or refuses with a 4xx,
// once the key is right (a route without one gets "{}"; /api/pull gets
// "{}", a 400, so the check never downloads).
var authBodies = map[string]string{
	"/v1/completions":      `{"prompt":"x","max_tokens":1}`,
	"/v1/chat/completions": `{"messages":[{"role":"user","content":"x"}],"max_tokens":1}`,
	"/v1/embeddings":       `{"input":"x"}`,
	"/infill":              `{"input_prefix":"func f() {","input_suffix":"}","n_predict":2,"stream":true}`,
	"/tokenize":            `{"content":"x"}`,
	"/detokenize":          `{"tokens":[1]}`,
	"/apply-template":      `{"messages":[{"role":"user","content":"x"}]}`,
	"/api/generate":        `{"prompt":"x","options":{"num_predict":1}}`,
	"/api/chat":            `{"messages":[{"role":"user","content":"x"}],"options":{"num_predict":1}}`,
	"/api/embed":           `{"input":"x"}`,
	"/api/embeddings":      `{"prompt":"x"}`,
}

// authSection runs the auth cases and prints a failed case per line and a
// summary; it returns the cases run, failed, 5xx answers and hangs.
func authSection(base string, verbose bool) (n, failed, fivexx, hangs int) {
	model := servedModel(base)
	keys := []struct{ name, header, value string }{
		{"no key", "", ""},
		{"wrong Bearer", "Authorization", "Bearer wrong-" + apiKey},
		{"wrong X-Api-Key", "X-Api-Key", apiKey + "x"},
		{"Basic", "Authorization", "Basic " + apiKey},
		{"Bearer", "Authorization", "Bearer " + apiKey},
		{"X-Api-Key", "X-Api-Key", apiKey},
	}
	routes := server.Routes(server.Options{WebUI: webui.Handler()}) // serve mounts the chat page unless --no-webui
	for _, rt := range routes {
		path := rt.Path
		if path == server.ModelPath {
			path = "/v1/models/" + model
		}
		if strings.HasPrefix(path, "/ui/") {
			path = "/ui/app.js" // one of the page's files
		}
		for _, method := range rt.Methods {
			for _, k := range keys {
				n++
				body := ""
				if method == http.MethodPost {
					body = "{}"
					if b, ok := authBodies[rt.Path]; ok {
						body = b
					}
				}
				code, msg, err := sendKey(base, method, path, body, k.header, k.value)
				name := fmt.Sprintf("auth: %s %s with %s", method, rt.Path, k.name)
				right := k.name == "Bearer" || k.name == "X-Api-Key"
				var problem string
				switch {
				case err != nil && strings.Contains(err.Error(), "deadline"):
					hangs++
					problem = "no answer within 30 s: " + err.Error()
				case err != nil:
					problem = "no answer: " + err.Error()
				case code >= 500:
					fivexx++
					problem = fmt.Sprintf("status %d (a server error): %.200s", code, msg)
				case (right || rt.Public) && code == http.StatusUnauthorized:
					problem = fmt.Sprintf("401 with the right key or on a public route: %.200s", msg)
				case !right && !rt.Public && (code != http.StatusUnauthorized || !strings.Contains(msg, "API key")):
					problem = fmt.Sprintf("status %d, want 401 naming the API key: %.200s", code, msg)
				}
				if problem != "" {
					failed++
					fmt.Printf("FAIL %s: %s\n", name, problem)
				} else if verbose {
					fmt.Printf("ok   %s: %d\n", name, code)
				}
			}
		}
	}
	// Browser requests from elsewhere (with the right key: the check is
	// not the key's): a foreign Origin, and a foreign Host on this
	// loopback connection (DNS rebinding), are 403; a loopback Origin is not.
	for _, c := range []struct{ header, value string }{{"Origin", "http://evil.example"}, {"Host", "attacker.example"}, {"Origin", "http://localhost:3000"}} {
		n++
		code, msg, err := sendHeader(base, "/v1/models", c.header, c.value)
		want403 := c.value != "http://localhost:3000"
		if err != nil || code >= 500 || want403 != (code == http.StatusForbidden) {
			failed++
			if code >= 500 {
				fivexx++
			}
			want := "403"
			if !want403 {
				want = "not 403"
			}
			fmt.Printf("FAIL auth: GET /v1/models with %s: %s: status %d (%v), want %s: %.200s\n", c.header, c.value, code, err, want, msg)
		}
	}
	fmt.Printf("badinput auth: %d routes × %d keys + 3 Origin/Host cases, %d cases, %d failed; %d 5xx, %d hangs\n", len(routes), len(keys), n, failed, fivexx, hangs)
	return n, failed, fivexx, hangs
}

// servedModel is the first model /v1/models lists ("" if none answers).
func servedModel(base string) string {
	code, body, err := sendKey(base, http.MethodGet, "/v1/models", "", "Authorization", "Bearer "+apiKey)
	var list struct{ Data []struct{ ID string } }
	if err != nil || code != 200 || json.Unmarshal([]byte(body), &list) != nil || len(list.Data) == 0 {
		return "none"
	}
	return list.Data[0].ID
}

// sendKey sends one request with one key header and reads the whole
// answer (a stream to its end) within 30 s.
func sendKey(base, method, path, body, header, value string) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if header != "" {
		req.Header.Set(header, value)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// sendHeader GETs path with the right key and one more header (Host sets
// the request's Host).
func sendHeader(base, path, header, value string) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+apiKey)
	if header == "Host" {
		req.Host = value
	} else {
		req.Header.Set(header, value)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}
