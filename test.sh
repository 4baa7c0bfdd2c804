#!/usr/bin/env bash
# The project's test command (README): build pure Go, vet, unit tests, race
# tests on the concurrent packages, then the shared acceptance checks. The
# closing line counts tests ("nanoserve: N passed, N failed"); the lines
# before it say how many skipped and why, group by group.
set -euo pipefail
cd "$(dirname "$0")"
export GOFLAGS=${GOFLAGS:-}
skipped_groups=()
echo "== build (CGO_ENABLED=0)"
CGO_ENABLED=0 go build ./...
echo "== vet"
go vet ./...
echo "== gofmt"
# (Not `gofmt -l . | tee /dev/stderr`: tee opens /dev/stderr afresh, which
# truncates a log file that stdout and stderr share, `./test.sh > log 2>&1`,
# and the shell's next write lands past the new end: NUL bytes.)
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
  echo "gofmt: these files need formatting:" >&2
  echo "$unformatted" >&2
  exit 1
fi
echo "== tests"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/testsummary" ./internal/testsummary
set +e
go test -count=1 -json ./... > "$tmp/log" 2>&1
"$tmp/testsummary" -counts "$tmp/counts" -skips "$tmp/skips" < "$tmp/log"
units_rc=$?
set -e
read -r passed failed skipped < "$tmp/counts"
echo "== race (the packages with goroutines: worker pool, batched forward, engine)"
# race PKG PATTERN runs the tests PATTERN selects under the race detector,
# and fails when one of its top-level |-separated alternatives (its test
# name, before any /subtest part) matches no test of PKG, so a renamed test
# cannot silently drop out of the race run.
race() {
  local pkg=$1 pat=$2 list alt
  list=$(go test -list '.*' "$pkg" | grep '^Test' || true)
  for alt in $(awk -v p="$pat" 'BEGIN { d = 0; s = ""
      for (i = 1; i <= length(p); i++) { c = substr(p, i, 1)
        if (c == "(") d++; if (c == ")") d--
        if (c == "|" && d == 0) { print s; s = "" } else s = s c }
      print s }'); do
    if ! grep -Eq "${alt%%/*}" <<<"$list"; then
      echo "test.sh: race pattern $alt matches no test in $pkg" >&2
      return 1
    fi
  done
  CGO_ENABLED=1 go test -count=1 -race -run "$pat" "$pkg"
}
race ./tensor/ 'TestMatMulParity|TestPoolManyJobs|TestPoolFor|TestMatMulQuantTypes'
race ./model/ 'TestBatchedVsSequential|TestCacheParityLlama2c|TestRewind|TestSlidingWindow|TestArchParity/(qwen3moe|gemma3)'
CGO_ENABLED=1 go test -count=1 -race ./engine/ ./kvcache/ ./sample/ ./server/
echo "== bad input (internal/badinput against a live nanoserve serve on loopback, the built-in model)"
go build -o "$tmp/nanoserve" ./cmd/nanoserve
go run ./internal/badinput --bin "$tmp/nanoserve"
if command -v qemu-aarch64 >/dev/null; then
  echo "== arm64 (NEON kernels and the pure-Go paths, under qemu)"
  bash tensor/testdata/arm64.sh
else
  echo "== arm64: SKIPPED (no qemu-aarch64; .ci/run installs qemu-user)"
  skipped_groups+=("arm64 suite (NEON kernels under qemu): no qemu-aarch64 on this machine")
fi
if [ -d ../shared/checks ]; then
  echo "== shared acceptance checks"
  python3 ../shared/checks/goldens.py
  python3 ../shared/checks/tokenizers.py
  # llama.cpp's own tokenizer tests: every vocabulary, every case (issue 31).
  python3 ../shared/checks/llamacpp_vocab.py
  python3 ../shared/checks/gguf_goldens.py
  # The newer architectures (issues 12, 30, 31): every one listed is implemented.
  python3 ../shared/checks/gguf_goldens.py ../shared/testdata/gguf-archs --only qwen3,qwen3moe,mixtral,gemma2,gemma3,phi3,llama3,smollm3,gpt-oss,gemma4,qwen35,lfm2
  # One model in every quantization type llama-quantize makes without an
  # importance matrix (issue 31): F16 exact, the rest load, run, prompt ids equal.
  python3 ../shared/checks/gguf_quants.py
else
  echo "== shared acceptance checks: SKIPPED (no ../shared)"
  skipped_groups+=("shared acceptance checks (goldens, tokenizers, llamacpp_vocab, gguf_goldens, gguf_quants): ../shared not found")
fi
echo "== web UI in headless Chromium (cmd/nanoserve TestWebUIBrowser against a live serve, TestWebUIReasoningAndTools against a scripted API; the screenshot is kept)"
webui_shots=${NANOSERVE_WEBUI_SHOTS:-${TMPDIR:-/tmp}/nanoserve-webui-shots}
rm -f "$webui_shots/webui-conversation.png"
NANOSERVE_WEBUI_SHOTS="$webui_shots" go test -count=1 -run 'TestWebUIBrowser$|TestWebUIReasoningAndTools$' -v ./cmd/nanoserve/ | grep -E '^(=== RUN|--- |PASS|FAIL|ok|    )'
if [ -f "$webui_shots/webui-conversation.png" ]; then
  echo "screenshot of the conversation: $webui_shots/webui-conversation.png"
else
  echo "web UI: no screenshot (the test skipped: no chromium; .ci/run installs it)"
fi
echo "== summary"
echo "tests: $passed passed, $failed failed, $skipped skipped (go test; the race, bad-input, arm64 and shared runs above stop this script on failure)"
if [ "$skipped" -gt 0 ]; then
  echo "skipped tests by reason:"
  cat "$tmp/skips"
fi
for g in ${skipped_groups[@]+"${skipped_groups[@]}"}; do
  echo "skipped group: $g"
done
echo "nanoserve: $passed passed, $failed failed"
exit "$units_rc"
