#!/usr/bin/env bash
# sbs_serve.sh — nanoserve serve and llama-server side by side under the same
# load (issue 36's proof item): one server at a time on the same GGUF file,
# `nanoserve bench serve` at each client count, then a table of aggregate
# output tok/s and median TTFT / TPOT.
#
#   bench/sbs_serve.sh                      # TinyLlama-shaped Q4_K_M, 1 4 8 16 clients
#   CLIENTS="1 4" PROMPTS_PER_CLIENT=2 OUTPUT_LEN=16 bench/sbs_serve.sh   # a quick check
#
# Settings (environment):
#   MODEL               GGUF file (default: the synthetic tinyllama-1.1b q4_k_m of
#                       `nanoserve bench --synthetic`, written to /tmp/nanoserve-bench if missing)
#   CLIENTS             client counts, each a bench serve --concurrency (default "1 4 8 16")
#   PROMPTS_PER_CLIENT  timed requests per client (default 4; at least 8 requests per point)
#   INPUT_LEN           words per synthetic prompt (default 32)
#   OUTPUT_LEN          tokens per request, EOS ignored (default 128)
#   THREADS             threads of each server (default 2)
#   SLOTS               llama-server -np and nanoserve --max-seqs (default 8)
#   CTX                 context per sequence (default 1024; llama-server gets -c SLOTS·CTX)
#   PORT                port the servers listen on (default 18480)
#   SERVERS             which to run, in order (default "nanoserve llama-server")
#   NANOSERVE           nanoserve binary (default: built from this checkout into a temp dir)
#   LLAMA_SERVER        llama-server binary (default ~/.cache/llamacpp/llama.cpp/build/bin/llama-server)
#   OUT                 directory for the per-run JSON and server logs (default: a temp dir)
#
# Each client count gets its own prompts (bench serve --seed = the count): with
# one seed for all, the 4-client run's first 8 prompts were the 1-client run's,
# already in both servers' prompt caches, and its TTFT measured cache hits
# (llama-server evaluates 1 token of a cached prompt, nanoserve up to a block).
# 32 words are about 220 tokens on the synthetic vocabulary, so the 1-client
# TTFT is that prompt's prefill.
#
# Each server runs alone: started, waited for, measured at every client count
# (bench serve sends one untimed warm-up request first), stopped. Run it on a
# quiet machine; the load average at each point's start is in the table.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
CLIENTS=${CLIENTS:-"1 4 8 16"}
PROMPTS_PER_CLIENT=${PROMPTS_PER_CLIENT:-4}
INPUT_LEN=${INPUT_LEN:-32}
OUTPUT_LEN=${OUTPUT_LEN:-128}
THREADS=${THREADS:-2}
SLOTS=${SLOTS:-8}
CTX=${CTX:-1024}
PORT=${PORT:-18480}
SERVERS=${SERVERS:-"nanoserve llama-server"}
LLAMA_SERVER=${LLAMA_SERVER:-$HOME/.cache/llamacpp/llama.cpp/build/bin/llama-server}
OUT=${OUT:-$(mktemp -d /tmp/sbs_serve.XXXXXX)}
mkdir -p "$OUT"

if [[ -z ${NANOSERVE:-} ]]; then
	NANOSERVE=$OUT/nanoserve
	(cd "$here" && CGO_ENABLED=0 go build -o "$NANOSERVE" ./cmd/nanoserve)
fi
if [[ -z ${MODEL:-} ]]; then
	MODEL=/tmp/nanoserve-bench/tinyllama-1.1b-q4_k_m-1.gguf
	if [[ ! -f $MODEL ]]; then # bench writes (and caches) the synthetic file
		"$NANOSERVE" bench --synthetic tinyllama-1.1b --type q4_k_m -p 1 -n 1 -r 1 \
			--depths none --gen-lens none --bw-mib 0 --peak=false >/dev/null
	fi
fi
[[ -f $MODEL ]] || { echo "sbs_serve: no model file $MODEL" >&2; exit 1; }

pid=
stop() {
	if [[ -n $pid ]]; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		pid=
	fi
}
trap stop EXIT

# start SERVER: runs it in the background and waits until it answers.
start() {
	local log=$OUT/$1.log
	case $1 in
	nanoserve)
		"$NANOSERVE" serve --model "$MODEL" --host 127.0.0.1 --port "$PORT" --threads "$THREADS" \
			--max-seqs "$SLOTS" --ctx-size "$CTX" --no-webui >"$log" 2>&1 &
		;;
	llama-server)
		[[ -x $LLAMA_SERVER ]] || { echo "sbs_serve: no llama-server at $LLAMA_SERVER" >&2; return 1; }
		"$LLAMA_SERVER" -m "$MODEL" --host 127.0.0.1 --port "$PORT" -t "$THREADS" -tb "$THREADS" \
			-np "$SLOTS" -c $((SLOTS * CTX)) >"$log" 2>&1 &
		;;
	*)
		echo "sbs_serve: unknown server $1" >&2
		return 1
		;;
	esac
	pid=$!
	for _ in $(seq 600); do
		if curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null 2>&1 &&
			curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; then
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || { echo "sbs_serve: $1 exited; see $log" >&2; tail -5 "$log" >&2; return 1; }
		sleep 0.5
	done
	echo "sbs_serve: $1 did not come up in 5 minutes; see $log" >&2
	return 1
}

if curl -s -o /dev/null "http://127.0.0.1:$PORT/" 2>/dev/null; then
	echo "sbs_serve: something already listens on port $PORT (set PORT)" >&2
	exit 1
fi

echo "model $MODEL; clients $CLIENTS; $PROMPTS_PER_CLIENT requests per client (at least 8), input $INPUT_LEN words, output $OUTPUT_LEN tokens; $THREADS threads, $SLOTS slots; results in $OUT" >&2
for server in $SERVERS; do
	start "$server"
	for c in $CLIENTS; do
		n=$((c * PROMPTS_PER_CLIENT))
		((n < 8)) && n=8
		echo "$server: $c clients, $n requests" >&2
		"$NANOSERVE" bench serve --base-url "http://127.0.0.1:$PORT" --concurrency "$c" --num-prompts "$n" --seed "$c" \
			--input-len "$INPUT_LEN" --output-len "$OUTPUT_LEN" --json >"$OUT/$server-c$c.json" ||
			echo "sbs_serve: bench serve failed for $server at $c clients" >&2
	done
	stop
done

python3 - "$OUT" "$SERVERS" "$CLIENTS" <<'EOF'
import json, os, sys
out, servers, clients = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
rows = {}
for s in servers:
    for c in clients:
        p = os.path.join(out, f"{s}-c{c}.json")
        try:
            rows[s, c] = json.load(open(p))
        except (OSError, ValueError):
            rows[s, c] = None
print(f"| clients | server | done/failed | output tok/s | median TTFT ms | median TPOT ms | load avg |")
print(f"|---|---|---|---|---|---|---|")
for c in clients:
    for s in servers:
        r = rows[s, c]
        if r is None:
            print(f"| {c} | {s} | no result | | | | |")
            continue
        print(f"| {c} | {s} | {r['completed']}/{r['failed']} | {r['output_throughput']:.1f} | "
              f"{r['ttft']['median_ms']:.0f} | {r['tpot']['median_ms']:.1f} | {r['loadavg_start'][0]:.2f} |")
    if len(servers) == 2 and all(rows[s, c] for s in servers):
        a, b = (rows[s, c] for s in servers)
        if b["output_throughput"] > 0 and a["ttft"]["median_ms"] > 0:
            print(f"| {c} | {servers[0]} / {servers[1]} | | {a['output_throughput'] / b['output_throughput']:.2f}× | "
                  f"{b['ttft']['median_ms'] / a['ttft']['median_ms']:.2f}× faster | | |")
EOF
