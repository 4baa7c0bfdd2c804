package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"nanoserve/defaultmodel"
	"nanoserve/model"
	"nanoserve/train"
)

// trainScript is the one command that trains the built-in model.
const trainScript = "defaultmodel/model/train.sh" // from the repository root

// fakeTrain stands in for the nanoserve binary in train.sh: it records each
// `train` run's arguments (one per line) in $LOG/<n>, then writes the run's
// --out, or only its .candidate and fails if the file's base name is in
// $REJECT (the release gate said no), or writes nothing and fails if it is
// in $CRASH.
const fakeTrain = `#!/usr/bin/env bash
set -e
[ "$1" = train ] || exit 2
shift
n=$(ls "$LOG" | wc -l)
printf '%s\n' "$@" > "$LOG/$n"
out=
while [ $# -gt 0 ]; do
	if [ "$1" = --out ]; then out=$2; fi
	shift
done
name=$(basename "$out" .gguf)
case " $CRASH " in *" $name "*) exit 1 ;; esac
case " $REJECT " in *" $name "*) : > "$out.candidate"; exit 1 ;; esac
: > "$out"
`

// runScript runs train.sh with the stand-in binary in dir (WORK is
// dir/work, OUT dir/out.gguf) and returns the argument lists of the train
// runs logged in dir so far, in order, and the script's exit error.
func runScript(t *testing.T, dir string, env ...string) ([][]string, error) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("train.sh needs bash: %v", err)
	}
	fake := filepath.Join(dir, "nanoserve")
	if err := os.WriteFile(fake, []byte(fakeTrain), 0o755); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "log")
	if err := os.MkdirAll(log, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bash, trainScript)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "NANOSERVE="+fake, "LOG="+log,
		"WORK="+filepath.Join(dir, "work"), "OUT="+filepath.Join(dir, "out.gguf"))
	cmd.Env = append(cmd.Env, env...)
	outb, runErr := cmd.CombinedOutput()
	if len(outb) > 0 {
		t.Logf("train.sh: %s", outb)
	}
	ents, err := os.ReadDir(log)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]int, 0, len(ents))
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			t.Fatalf("log %s", e.Name())
		}
		names = append(names, n)
	}
	sort.Ints(names)
	var runs [][]string
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(log, strconv.Itoa(n)))
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"))
	}
	return runs, runErr
}

// parseRuns parses each run's flags as `nanoserve train` would.
func parseRuns(t *testing.T, runs [][]string) []train.Options {
	t.Helper()
	opts := make([]train.Options, len(runs))
	for i, args := range runs {
		o, err := parseTrainFlags(args)
		if err != nil {
			t.Fatalf("train.sh run %d: %v (args %q)", i+1, err, args)
		}
		opts[i] = o
	}
	return opts
}

// comparable clears the options that name files on the machine that ran
// the command (corpus root, outputs, checkpoints) and the run's plumbing.
func comparable(o train.Options) train.Options {
	o.Corpus, o.Out, o.Prev, o.InitFrom, o.Checkpoint, o.Command, o.Log = nil, "", "", "", "", "", nil
	return o
}

// TestTrainScript: defaultmodel/model/train.sh — the one documented command
// that trains the built-in model — run with a stand-in binary makes train
// runs that pass train's flag checks, starts from random weights, chains
// each run to the one before (through a .candidate when the gate refused an
// intermediate stage), stops at a failed run, skips finished stages when run
// again, and is what the shipped model's manifest records: its last run's
// flags and, in its lineage, every earlier run's. So the README's command
// and the embedded weights cannot drift apart unnoticed.
func TestTrainScript(t *testing.T) {
	dir := t.TempDir()
	runs, err := runScript(t, dir)
	if err != nil {
		t.Fatalf("train.sh: %v", err)
	}
	opts := parseRuns(t, runs)
	if len(opts) < 2 {
		t.Fatalf("train.sh made %d train runs", len(opts))
	}
	if opts[0].InitFrom != "" {
		t.Errorf("train.sh: the first run starts from %s, not from random weights", opts[0].InitFrom)
	}
	for i := 1; i < len(opts); i++ {
		if opts[i].InitFrom != opts[i-1].Out {
			t.Errorf("train.sh run %d starts from %q, not run %d's output %q", i+1, opts[i].InitFrom, i, opts[i-1].Out)
		}
	}
	last := opts[len(opts)-1]
	if want := filepath.Join(dir, "out.gguf"); last.Out != want || last.Prev != "" {
		t.Errorf("train.sh's last run writes %q gated against %q, want $OUT (%q) gated against itself", last.Out, last.Prev, want)
	}

	// Run again: the finished stages are not repeated, the last one resumes.
	if again, err := runScript(t, dir); err != nil || len(again) != len(runs)+1 {
		t.Errorf("train.sh run again: %v, %d more runs, want 1", err, len(again)-len(runs))
	}

	// An intermediate stage the gate refused still feeds the next one.
	for i := 0; i < len(opts)-1; i++ {
		name := strings.TrimSuffix(filepath.Base(opts[i].Out), ".gguf")
		d := t.TempDir()
		rr, err := runScript(t, d, "REJECT="+name)
		if err != nil || len(rr) != len(runs) {
			t.Fatalf("REJECT=%s: %v after %d runs, want success after %d", name, err, len(rr), len(runs))
		}
		o := parseRuns(t, rr)
		if o[i+1].InitFrom != o[i].Out+".candidate" {
			t.Errorf("REJECT=%s: run %d starts from %q, want the refused %q", name, i+2, o[i+1].InitFrom, o[i].Out+".candidate")
		}
		// A run that fails without a model stops the script.
		d = t.TempDir()
		if rr, err := runScript(t, d, "CRASH="+name); err == nil || len(rr) != i+1 {
			t.Errorf("CRASH=%s: exit %v after %d runs, want a failure after %d", name, err, len(rr), i+1)
		}
	}
	// The last stage refused is the command's failure.
	if _, err := runScript(t, t.TempDir(), "REJECT=out"); err == nil {
		t.Errorf("REJECT=out: train.sh succeeded though its model was not promoted")
	}

	p, err := defaultmodel.Path()
	if err != nil {
		t.Fatalf("the built-in model: %v", err)
	}
	man, ok, err := train.ReadManifest(p)
	if err != nil || !ok {
		t.Fatalf("built-in model's manifest: ok %v, %v", ok, err)
	}
	// The manifest's command, then each ancestor's, newest first.
	cmds := []string{man.Command}
	for rest := man.InitFrom; rest != ""; {
		_, after, ok := strings.Cut(rest, "): nanoserve train ")
		if !ok {
			break
		}
		cmd, more, _ := strings.Cut(after, "; ")
		cmds = append(cmds, "nanoserve train "+cmd)
		_, rest, _ = strings.Cut(more, "which was fine-tuned from ")
	}
	if len(cmds) != len(opts) {
		t.Fatalf("the built-in model records %d training runs, train.sh makes %d:\n%s", len(cmds), len(opts), strings.Join(cmds, "\n"))
	}
	for i, c := range cmds {
		stage := len(opts) - 1 - i
		got, err := parseTrainFlags(strings.Fields(strings.TrimPrefix(c, "nanoserve train ")))
		if err != nil {
			t.Fatalf("recorded command %q: %v", c, err)
		}
		if g, w := comparable(got), comparable(opts[stage]); !reflect.DeepEqual(g, w) {
			t.Errorf("the built-in model's run %d was\n  %s\nnot train.sh's run %d:\n  %q", stage+1, c, stage+1, runs[stage])
		}
	}
	// The shape the script trains is the shape shipped.
	m, err := model.Load(p, model.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	sh, c := last.Shape, m.Config
	if want, got := [6]int{sh.Dim, sh.Layers, sh.Heads, sh.KVHeads, sh.Hidden, sh.Ctx}, [6]int{c.Dim, c.Layers, c.Heads, c.KVHeads, c.HiddenDim, c.ContextLen}; want != got {
		t.Errorf("train.sh trains dim/layers/heads/kv-heads/ffn/ctx %v, the built-in model has %v", want, got)
	}
}
