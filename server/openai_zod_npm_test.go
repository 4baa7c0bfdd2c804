package server

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"nanoserve/chat"
	"nanoserve/engine"
	"nanoserve/internal/testshared"
	"nanoserve/model"
)

// zodNPMVersion is the Zod release installed beside the openai client.
const zodNPMVersion = "4.6.7"

// TestOpenAIZodStructuredOutput: the official openai npm client's
// zodResponseFormat with z.string().email(), z.number().multipleOf(0.5)
// and z.string().datetime() (a schema carrying format and pattern side by
// side, and multipleOf) against a live server: every reply is parsed by
// the client with Zod itself, and validates under the schema the client
// sent (formats asserted) with the validator the grammar tests use.
func TestOpenAIZodStructuredOutput(t *testing.T) {
	dir := npmClientDir(t, "openai", openaiNPMVersion, "openai_zod_client.mjs")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "zod", "package.json")); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--prefix", dir, "openai@"+openaiNPMVersion, "zod@"+zodNPMVersion)
		if out, err := cmd.CombinedOutput(); err != nil {
			needTool(t, "npm install zod@%s failed (is the npm registry reachable?): %v\n%s", zodNPMVersion, err, out)
		}
	}
	// A context with room for the longest answer the schema allows (~310
	// tokens: the formats are bounded), so that it ends by closing the
	// object, never at max_tokens (the client refuses a "length" reply).
	tmpl, err := chat.Parse(testTemplate)
	if err != nil {
		t.Fatal(err)
	}
	spec := ModelSpec{Names: []string{"mha"}, Preload: true, Load: func() (*LoadedModel, error) {
		dir := testshared.Dir(t)
		m, err := model.Load(dir+"/models/llama2c/tiny_mha.bin", model.Options{Tokenizer: dir + "/models/llama2c/llama2-tokenizer.bin", Threads: 1})
		if err != nil {
			return nil, err
		}
		eng, err := engine.New(m, engine.Options{CtxSize: 512})
		if err != nil {
			m.Close()
			return nil, err
		}
		return &LoadedModel{Engine: eng, Options: modelOptions(Options{Template: tmpl, Manifest: &Manifest{Architecture: m.Arch, ContextLength: m.ContextLen}}),
			Bytes: testModelBytes, Close: func() { eng.Close(); m.Close() }}, nil
	}}
	ts := newTestRouter(t, RouterOptions{Models: []ModelSpec{spec}}, nil)
	if err := ts.front.Preload(context.Background()); err != nil {
		t.Fatal(err)
	}
	const runs = 6
	out := runNode(t, dir, "openai_zod_client.mjs", ts.url+"/v1", "mha", "6")
	var got struct {
		Schema  json.RawMessage
		Results []struct {
			Content string
			Parsed  map[string]any
			Finish  string
			Error   string
			Status  int
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(got.Schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("zod.json", doc); err != nil {
		t.Fatal(err)
	}
	v, err := c.Compile("zod.json")
	if err != nil {
		t.Fatalf("the validator rejects the schema Zod sent %s: %v", got.Schema, err)
	}
	if len(got.Results) != runs {
		t.Fatalf("%d results, want %d: %s", len(got.Results), runs, out)
	}
	for i, r := range got.Results {
		if r.Error != "" {
			t.Errorf("run %d: the client failed (status %d): %s", i+1, r.Status, r.Error)
			continue
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(r.Content)))
		if err != nil {
			t.Errorf("run %d: content %q: %v", i+1, r.Content, err)
			continue
		}
		if err := v.Validate(inst); err != nil {
			t.Errorf("run %d: %s does not validate: %v", i+1, r.Content, err)
		}
		if r.Parsed["email"] == nil || r.Parsed["step"] == nil || r.Parsed["when"] == nil || r.Finish != "stop" {
			t.Errorf("run %d: parsed %v, finish %q", i+1, r.Parsed, r.Finish)
		}
		t.Logf("run %d: %s", i+1, r.Content)
	}
}
