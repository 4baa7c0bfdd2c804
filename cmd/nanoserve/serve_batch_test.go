package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestServeBatchSize: --batch-size (llama-server's) is the prefill chunk:
// a prompt of T tokens streams 1 + ceil(T/4) return_progress reports at
// --batch-size 4 (one at admission, one per step). Without the flag the
// default chunk takes the prompt in one step.
func TestServeBatchSize(t *testing.T) {
	reports := func(base string) (n, total int) {
		body := `{"prompt":"` + strings.Repeat("the quick brown fox jumps over the lazy dog ", 3) + `","n_predict":1,"stream":true,"return_progress":true,"cache_prompt":false}`
		resp, err := http.Post(base+"/completion", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var ev struct {
				Progress *struct{ Total, Cache int } `json:"prompt_progress"`
			}
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && json.Unmarshal([]byte(data), &ev) == nil && ev.Progress != nil {
				n, total = n+1, ev.Progress.Total-ev.Progress.Cache
			}
		}
		return n, total
	}
	runServer(t, []string{"--batch-size", "4", "--no-prefix-cache"}, func(base string) {
		if n, total := reports(base); total < 8 || n != 1+(total+3)/4 {
			t.Errorf("--batch-size 4: %d reports for %d tokens", n, total)
		}
	})
	runServer(t, []string{"--no-prefix-cache"}, func(base string) {
		if n, total := reports(base); total < 8 || n != 2 {
			t.Errorf("default: %d reports for %d tokens", n, total)
		}
	})
}
