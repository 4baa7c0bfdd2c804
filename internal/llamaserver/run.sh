#!/usr/bin/env bash
# Runs llama.cpp's server test suite (tools/server/tests of the llama.cpp
# source) against `nanoserve serve` through the argument shim, one test file
# at a time, and prints pass / fail / not-run counts per file.
#
#   internal/llamaserver/run.sh                      # every unit/test_*.py
#   internal/llamaserver/run.sh test_tokenize test_basic   # some files
#   internal/llamaserver/run.sh -k 'test_foo' test_completion  # pytest -k
#
# Environment: LLAMACPP_SRC (default ~/.cache/llamacpp/llama.cpp), SHARED
# (default ../shared), WORK (default /tmp/nanoserve-llamacpp-suite), PORT
# (default 18480: not 8080, which other servers may hold), PYTEST_TIMEOUT
# (seconds per test, default 300), PYTHON (default /usr/bin/python3, where
# Debian's python3-pytest is), NOBUILD=1 to reuse the built binaries.
# The suite is not copied into the repository: it runs from a copy under
# $WORK (its tests write a tmp/ folder beside themselves), whose
# ../../../models points at the source's models/ (templates).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
SRC=${LLAMACPP_SRC:-$HOME/.cache/llamacpp/llama.cpp}
SHARED=$(cd "${SHARED:-$ROOT/../shared}" && pwd)
WORK=${WORK:-/tmp/nanoserve-llamacpp-suite}
PY=${PYTHON:-/usr/bin/python3}
export PORT=${PORT:-18480}
K=()
if [ "${1:-}" = "-k" ]; then K=(-k "$2"); shift 2; fi

mkdir -p "$WORK/bin" "$WORK/results"
if [ "${NOBUILD:-0}" != 1 ]; then
	CGO_ENABLED=0 go build -o "$WORK/bin/nanoserve" ./cmd/nanoserve
	CGO_ENABLED=0 go build -o "$WORK/bin/llama-server" ./internal/llamaserver/shim
fi
T="$WORK/llama.cpp/tools/server/tests"
rm -rf "$T"
mkdir -p "$WORK/llama.cpp/tools/server"
cp -r "$SRC/tools/server/tests" "$T"
ln -sfn "$SRC/models" "$WORK/llama.cpp/models"

export LLAMA_SERVER_BIN_PATH="$WORK/bin/llama-server" NANOSERVE_BIN="$WORK/bin/nanoserve"
export NANOSERVE_SHARED="$SHARED" LLAMACPP_SRC="$SRC"
export PYTHONPATH="$ROOT/internal/llamaserver/testdata/pystub${PYTHONPATH:+:$PYTHONPATH}"

files=("$@")
if [ ${#files[@]} -eq 0 ]; then
	for f in "$T"/unit/test_*.py; do files+=("$(basename "$f" .py)"); done
fi
for f in "${files[@]}"; do
	f=$(basename "$f" .py)
	echo "== $f" >&2
	(cd "$T" && timeout 1800 "$PY" -m pytest -p no:cacheprovider -q -m "not slow" \
		--timeout="${PYTEST_TIMEOUT:-300}" "${K[@]}" \
		--junitxml="$WORK/results/$f.xml" "unit/$f.py" >"$WORK/results/$f.log" 2>&1) || true
	tail -1 "$WORK/results/$f.log" >&2
done
"$PY" "$ROOT/internal/llamaserver/testdata/summary.py" "$WORK/results"
