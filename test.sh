#!/usr/bin/env bash
# The project's test command (README): build pure Go, vet, unit tests, race
# tests on the concurrent packages, then the shared acceptance checks.
set -euo pipefail
cd "$(dirname "$0")"
export GOFLAGS=${GOFLAGS:-}
echo "== build (CGO_ENABLED=0)"
CGO_ENABLED=0 go build ./...
echo "== vet"
go vet ./...
echo "== gofmt"
test -z "$(gofmt -l . | tee /dev/stderr)"
echo "== tests"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
go test -count=1 ./... 2>&1 | tee "$log"
[ "${PIPESTATUS[0]}" -eq 0 ]
pkgs=$(grep -c '^ok' "$log" || true)
echo "== race (the packages with goroutines: worker pool, batched forward, engine)"
CGO_ENABLED=1 go test -count=1 -race -run 'TestMatMulParity|TestPoolManyJobs|TestMatMulQuantTypes' ./tensor/
CGO_ENABLED=1 go test -count=1 -race -run 'TestBatchedVsSequential|TestCacheParityLlama2c|TestRewind|TestSlidingWindow' ./model/
CGO_ENABLED=1 go test -count=1 -race ./engine/ ./kvcache/ ./sample/ ./server/
echo "== bad input (internal/badinput against a live nanoserve serve on loopback, the built-in model)"
bindir=$(mktemp -d)
trap 'rm -f "$log"; rm -rf "$bindir"' EXIT
go build -o "$bindir/nanoserve" ./cmd/nanoserve
go run ./internal/badinput --bin "$bindir/nanoserve"
if command -v qemu-aarch64 >/dev/null; then
  echo "== arm64 (NEON kernels and the pure-Go paths, under qemu)"
  bash tensor/testdata/arm64.sh
else
  echo "== arm64: skipped (no qemu-aarch64; .ci/run installs qemu-user)"
fi
if [ -d ../shared/checks ]; then
  echo "== shared acceptance checks"
  python3 ../shared/checks/goldens.py
  python3 ../shared/checks/tokenizers.py
  python3 ../shared/checks/gguf_goldens.py
fi
echo "nanoserve: $pkgs passed, 0 failed"
