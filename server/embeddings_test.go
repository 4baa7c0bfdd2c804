package server

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
)

// TestEmbeddingsBase64: base64 decodes (little-endian float32) to exactly
// the float response.
func TestEmbeddingsBase64(t *testing.T) {
	ts := newTestServer(t, nil)
	type resp struct {
		Data []struct {
			Embedding any `json:"embedding"`
		} `json:"data"`
	}
	body := `{"model":%q,"input":["Once upon a time","Hi"]%s}`
	code, _, fb := ts.post(t, "/v1/embeddings", fmt.Sprintf(body, testModel, ""))
	if code != http.StatusOK {
		t.Fatalf("float: %d %s", code, fb)
	}
	code, _, bb := ts.post(t, "/v1/embeddings", fmt.Sprintf(body, testModel, `,"encoding_format":"base64"`))
	if code != http.StatusOK {
		t.Fatalf("base64: %d %s", code, bb)
	}
	f, b := decode[resp](t, fb), decode[resp](t, bb)
	if len(f.Data) != 2 || len(b.Data) != 2 {
		t.Fatalf("data: %s / %s", fb, bb)
	}
	for i := range f.Data {
		fl, _ := f.Data[i].Embedding.([]any)
		s, _ := b.Data[i].Embedding.(string)
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(fl) == 0 || len(raw) != 4*len(fl) {
			t.Fatalf("input %d: %d floats, %d base64 bytes (%v)", i, len(fl), len(raw), err)
		}
		for j, v := range fl {
			x := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:]))
			if x != float32(v.(float64)) { // JSON carries the float32's shortest text
				t.Fatalf("input %d component %d: base64 %g, float %g", i, j, x, v)
			}
		}
	}
}

func TestEmbeddingsErrors(t *testing.T) {
	ts := newTestServer(t, nil)
	width := ts.eng.Model().Dim
	cases := []struct {
		name, body  string
		status      int
		param, code string
		msg         string
	}{
		{"dimensions too large", fmt.Sprintf(`{"input":"hi","dimensions":%d}`, width+1), 400, "dimensions", "", "dimensions must be between 1 and"},
		{"dimensions zero", `{"input":"hi","dimensions":0}`, 400, "dimensions", "", "dimensions"},
		{"bad format", `{"input":"hi","encoding_format":"hex"}`, 400, "encoding_format", "", "encoding_format"},
		{"unknown model", `{"model":"nope","input":"hi"}`, 404, "model", "model_not_found", "does not exist"},
		{"no input", `{}`, 400, "input", "", "input is required"},
		{"bad token", `{"input":[1,100000]}`, 400, "input", "", "input[1] = 100000 is not a token id"},
		{"wrong type", `{"input":{"a":1}}`, 400, "input", "", "input must be"},
		{"too many inputs", `{"input":[` + strings.Repeat(`"a",`, 2048) + `"a"]}`, 400, "input", "", "2049 items; at most 2048"},
		{"too long", `{"input":[` + strings.Repeat("1,", 5000) + `1]}`, 400, "input", "context_length_exceeded", "maximum context length"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, err := http.Post(ts.url+"/v1/embeddings", "application/json", strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var sb strings.Builder
			buf := make([]byte, 4096)
			for {
				n, err := resp.Body.Read(buf)
				sb.Write(buf[:n])
				if err != nil {
					break
				}
			}
			checkError(t, resp, []byte(sb.String()), c.status, c.param, c.code, c.msg)
		})
	}
}
