package llamaserver

import (
	"os"
	"slices"
	"strings"
	"testing"

	"nanoserve/chat"
)

const help = `Usage of serve:
  -alias value
    	NAME=MODEL
  -allow-long-context
    	allow
  -ctx-size int
    	context
  -max-seqs int
    	sequences
  -metrics
    	serve /metrics
  -model value
    	model
  -no-webui
    	no page
  -port int
    	port
  -host string
    	host
  -served-name string
    	id
  -slots
    	serve /slots
  -temp value
    	temperature
`

// TestTranslate maps the suite's tinyllama2 command line: the Hugging Face
// model to the local stand-in, renamed flags, flags nanoserve knows passed
// through, the rest dropped and reported.
func TestTranslate(t *testing.T) {
	known := ParseHelp(help)
	if !known["port"] || known["metrics"] || known["allow-long-context"] {
		t.Fatalf("ParseHelp = %v", known)
	}
	argv := strings.Fields("--port 8080 --temp 0.8 --seed 42 --host 127.0.0.1 --hf-repo ggml-org/test-model-stories260K " +
		"--batch-size 32 --no-slots --no-ui --metrics --alias tinyllama-2 --ctx-size 512 --parallel 2 --n-predict 64 --no-jinja")
	tr, err := Translate(argv, "/shared", known)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Fields("--model /shared/testdata/gguf/llama_gqa/llama_gqa-F16.gguf --port 8080 --temp 0.8 --host 127.0.0.1 " +
		"--slots=false --no-webui --metrics --alias tinyllama-2 --max-seqs 2 --ctx-size 256 --kv-cache-tokens 512 --allow-long-context")
	if !slices.Equal(tr.Args, want) {
		t.Errorf("Args = %q\nwant   %q", tr.Args, want)
	}
	if d := strings.Join(tr.Dropped, " "); d != "--seed 42 --batch-size 32 --n-predict 64 --no-jinja" {
		t.Errorf("Dropped = %q", d)
	}
	if tr, _ := Translate([]string{"--port", "1"}, "/shared", known); !slices.Contains(tr.Args, "--metrics=false") {
		t.Errorf("without --metrics: %q, want --metrics=false", tr.Args)
	}
	if got := contextArgs("256", "4", true); !slices.Equal(got, []string{"--max-seqs", "4", "--ctx-size", "256", "--kv-cache-tokens", "256"}) {
		t.Errorf("--kv-unified: %q", got)
	}
	if _, err := Translate([]string{"--hf-repo", "someone/unknown"}, "/shared", known); err == nil {
		t.Error("an unknown Hugging Face repo was accepted")
	}
	if _, err := Translate([]string{"--frobnicate"}, "/shared", known); err == nil {
		t.Error("an unknown flag was accepted")
	}
}

// TestBuiltinTemplates: llama-server's built-in command-r and llama3
// templates (what --chat-template NAME selects) render their own layout —
// trimmed contents, no preamble — not that of the Jinja files of the same
// models.
func TestBuiltinTemplates(t *testing.T) {
	TemplateDir = t.TempDir()
	msgs := []chat.Message{{Role: "system", Content: "You are a test."}, {Role: "user", Content: " Hi there\n"}}
	for name, want := range map[string]string{
		"command-r": "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>You are a test.<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|USER_TOKEN|>Hi there<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>",
		"llama3":    "<|start_header_id|>system<|end_header_id|>\n\nYou are a test.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
	} {
		p, ok := templateFile(name)
		if !ok {
			t.Fatalf("%s: no template", name)
		}
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		tmpl, err := chat.Parse(string(src))
		if err != nil {
			t.Fatal(err)
		}
		got, err := tmpl.Render(msgs, chat.Options{AddGenerationPrompt: true})
		if err != nil || got != want {
			t.Errorf("%s: %q %v\nwant %q", name, got, err, want)
		}
	}
}
