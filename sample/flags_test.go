package sample

import (
	"flag"
	"strings"
	"testing"
)

// TestPolicyFlagValidation: generate's and chat's sampling flags below
// their "off" value are refused, naming the flag.
func TestPolicyFlagValidation(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--logprobs", "-7"}, "--logprobs -7"},
		{[]string{"--seed", "-5"}, "--seed -5"},
		{[]string{"--max-tokens", "-5"}, "max_tokens"},
		{[]string{"--top-k", "-3"}, "top_k"},
	} {
		fs := flag.NewFlagSet("generate", flag.ContinueOnError)
		var pf Flags
		pf.RegisterFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		if _, err := pf.Policy(nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want one naming %q", c.args, err, c.want)
		}
	}
}

// TestFlagsOverGenerationConfig: the model's generation_config gives the
// defaults; only the flags the command line set override them.
func TestFlagsOverGenerationConfig(t *testing.T) {
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	var f Flags
	f.RegisterFlags(fs)
	if err := fs.Parse([]string{"--top-k", "7", "--stop", "a", "--stop", "b"}); err != nil {
		t.Fatal(err)
	}
	p, err := f.Policy([]byte(`{"do_sample": true, "temperature": 0.6, "top_k": 20, "top_p": 0.95}`))
	if err != nil {
		t.Fatal(err)
	}
	if p.Temperature != 0.6 || p.TopK != 7 || p.TopP != 0.95 || strings.Join(p.Stop, ",") != "a,b" {
		t.Errorf("policy %+v: want temperature 0.6 and top_p 0.95 (the model's), top_k 7 and stops a,b (the flags')", p)
	}
	if !f.IsSet("top-k") || f.IsSet("top-p") {
		t.Errorf("IsSet: top-k %v, top-p %v; want true, false", f.IsSet("top-k"), f.IsSet("top-p"))
	}
}
