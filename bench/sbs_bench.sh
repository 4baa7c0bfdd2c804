#!/usr/bin/env bash
# sbs_bench.sh — nanoserve bench and llama-bench side by side on the same
# synthetic GGUF files (issues 25/36's proof): per round and file, each tool
# measures pp128, pp512 and tg128 on 2 threads, the order alternating by
# round; bench/sbs_summary.py prints the medians as a table.
#
#   bench/sbs_bench.sh                          # the default cells, 3 rounds
#   CELLS="tinyllama-1.1b:q4_k_m" ROUNDS=3 bench/sbs_bench.sh
#
# Settings (environment):
#   CELLS        SHAPE:TYPE list (`nanoserve help bench` names the shapes and types)
#   ROUNDS       rounds (default 3)
#   NANOSERVE    nanoserve binary (default: built from this checkout)
#   LLAMA_BENCH  llama-bench (default ~/.cache/llamacpp/llama.cpp/build/bin/llama-bench,
#                what ../shared/tools/llamacpp-build.sh builds)
#   OUT          JSON lines, one per tool, file and round (default /tmp/sbs_bench.jsonl)
#   DROP         1 (default): drop the file's pages from the page cache before each
#                round's cell (GNU dd iflag=nocache) and read it back in whole, so
#                each round maps it from freshly placed memory and neither tool
#                pays the disk; 0: keep whatever placement the cache has
# Why DROP: on the shared VM where these tables are measured, the physical memory
# a file's cached pages happen to occupy moves decode speed by up to ±15% for as
# long as the pages stay cached (paired in-process runs, 2026-12-06: TinyLlama
# Q4_K_M decode from a long-cached mapping 1.155× slower than from a fresh copy of
# the same weights, equal after the cache was dropped and re-read; Q8_0 1.09×
# slower before, 1.09× faster after). Both tools map the same cached pages, so a
# round compares them fairly either way; dropping re-draws the placement every
# round, so the medians average over placements instead of inheriting one.
# Synthetic files are written once to /tmp/nanoserve-bench (a 1.1B file takes
# minutes to quantize). Run it with nothing else on the machine: the load
# average at each cell's start is recorded.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-3}
CELLS=${CELLS:-"tinyllama-1.1b:f16 tinyllama-1.1b:q8_0 tinyllama-1.1b:q4_k_m tinyllama-1.1b:q5_k_m tinyllama-1.1b:q6_k tinyllama-1.1b:iq4_xs tinyllama-1.1b:mxfp4 tinyllama-1.1b:iq4_nl tinyllama-1.1b:iq3_s llama2c-110m:f16 llama2c-110m:q8_0 llama2c-110m:q4_k_m qwen35-0.8b:f16 qwen35-0.8b:q8_0 qwen35-0.8b:q4_k_m"}
LLAMA_BENCH=${LLAMA_BENCH:-$HOME/.cache/llamacpp/llama.cpp/build/bin/llama-bench}
OUT=${OUT:-/tmp/sbs_bench.jsonl}
DROP=${DROP:-1}
if [[ -z ${NANOSERVE:-} ]]; then
	NANOSERVE=$(mktemp -d /tmp/sbs_bench.XXXXXX)/nanoserve
	(cd "$here" && CGO_ENABLED=0 go build -o "$NANOSERVE" ./cmd/nanoserve)
fi
[[ -x $LLAMA_BENCH ]] || { echo "sbs_bench: no llama-bench at $LLAMA_BENCH (../shared/tools/llamacpp-build.sh builds it)" >&2; exit 1; }
: >"$OUT"
for c in $CELLS; do # write the synthetic files first
	"$NANOSERVE" bench --synthetic "${c%%:*}" --type "${c##*:}" -p 8 -n 2 -r 1 --depths none --gen-lens none \
		--bw-mib 0 --peak=false --threads 2 >/dev/null
done
record() { # engine cell round load: wraps stdin's JSON
	python3 -c 'import json,sys; print(json.dumps({"engine":sys.argv[1],"cell":sys.argv[2],"round":int(sys.argv[3]),"load":float(sys.argv[4]),"res":json.load(sys.stdin)}))' "$@" >>"$OUT"
}
for r in $(seq 1 "$ROUNDS"); do
	for c in $CELLS; do
		f=/tmp/nanoserve-bench/${c%%:*}-${c##*:}-1.gguf
		if ((DROP)); then
			dd if="$f" iflag=nocache count=0 status=none
			# Read it back before either tool starts: a MoE file's experts that
			# the warm-up does not route to would otherwise come from disk
			# during the first tool's pp128 (the 35B-A3B-shaped F16 file, 8.7 GB:
			# 0.67-0.77x with nanoserve first, 1.90x with llama-bench first).
			cat "$f" >/dev/null
		fi
		load=$(cut -d' ' -f1 /proc/loadavg)
		ns() { "$NANOSERVE" bench --model "$f" -p 128,512 -n 128 -r 1 --threads 2 --depths none --gen-lens none \
			--bw-mib 1024 --peak=false --json 2>/dev/null | record nanoserve "$c" "$r" "$load"; }
		lb() { "$LLAMA_BENCH" -m "$f" -t 2 -p 128,512 -n 128 -r 1 -o json 2>/dev/null | record llama.cpp "$c" "$r" "$load"; }
		if ((r % 2)); then ns; lb; else lb; ns; fi
		echo "round $r $c load $load done $(date +%T)" >&2
	done
done
python3 "$here/bench/sbs_summary.py" "$OUT"
