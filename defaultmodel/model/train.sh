#!/usr/bin/env bash
# Trains the built-in model from scratch: the one documented command of
# defaultmodel/model/README.md. Run it from the repository root:
#
#   bash defaultmodel/model/train.sh
#
# Four runs of `nanoserve train` on $(go env GOROOT)/src, under two hours on
# two idle cores. Resumable: interrupt it at any point and run it again; a
# stage continues from its checkpoint in $WORK (default /tmp/nanoserve-train)
# and a finished stage is not repeated.
#
#  base  a 4-layer model from random weights: half the chunks fill-in-the-
#        middle, whole 1024-token contexts, 10000 steps, cosine 5e-3 -> 5e-4.
#  grow  the base grown to 6 layers (new blocks copy their neighbour with
#        zeroed residual outputs, so it starts as the base) and only the new
#        blocks trained, FIM-heavy: 192-token chunks, 70% FIM, mostly suffix
#        first, the middle's first token weighted 50.
#  all   every weight trained, whole contexts, 50% FIM, low learning rate.
#  fim   a short FIM-heavy pass (80% FIM, 192-token chunks): the built-in
#        model, written to $OUT only if the release gate promotes it over the
#        trigram baseline and the model already at $OUT.
#
# The intermediate stages are gated against the base; one that is not
# promoted (the grow stage usually is not: it predicts left to right a little
# worse) still feeds the next stage from its .candidate file.
#
# NANOSERVE names a nanoserve binary to run instead of building one
# (cmd/nanoserve's TestTrainScript runs the script so, with a stand-in).
set -euo pipefail
WORK=${WORK:-/tmp/nanoserve-train}
OUT=${OUT:-defaultmodel/model/nanoserve-go.gguf}
mkdir -p "$WORK"
if [ -z "${NANOSERVE:-}" ]; then
	NANOSERVE=$WORK/nanoserve
	go build -o "$NANOSERVE" ./cmd/nanoserve
fi
common=(--corpus "$(go env GOROOT)/src" --ext .go
	--dim 128 --heads 4 --kv-heads 2 --ffn 384 --ctx 1024 --vocab 1024
	--batch 4 --seed 1 --threads 2 --eval-every 500 --eval-tokens 16384
	--final-eval-tokens 200000 --quiet)
fimheavy=(--fim-spm-rate 0.9 --fim-line-start 0.7 --fim-weight 5 --fim-first-weight 50 --fim-chunk 192)

# done_as OUT: the model a finished stage wrote (promoted or not), or nothing.
done_as() {
	if [ -f "$1" ]; then echo "$1"; elif [ -f "$1.candidate" ]; then echo "$1.candidate"; fi
}

# stage OUT ARGS...: one resumable run; a gate refusal is not a failure.
stage() {
	local out=$1
	shift
	[ -n "$(done_as "$out")" ] && return 0
	"$NANOSERVE" train "${common[@]}" --out "$out" "$@" || [ -f "$out.candidate" ]
}

stage "$WORK/base.gguf" --layers 4 --fim-rate 0.5 \
	--steps 10000 --lr 5e-3 --min-lr 5e-4 --warmup 200 \
	--checkpoint "$WORK/base.ckpt" --checkpoint-every 250 --resume
base=$(done_as "$WORK/base.gguf")

stage "$WORK/grow.gguf" --init-from "$base" --prev "$base" --layers 6 --freeze-init \
	--fim-rate 0.7 "${fimheavy[@]}" --steps 1200 --lr 2e-3 --min-lr 2e-4 --warmup 100 \
	--checkpoint "$WORK/grow.ckpt" --checkpoint-every 200 --resume

stage "$WORK/all.gguf" --init-from "$(done_as "$WORK/grow.gguf")" --prev "$base" --layers 6 \
	--fim-rate 0.5 --fim-spm-rate 0.9 --fim-line-start 0.7 --fim-weight 2 --fim-first-weight 20 \
	--steps 2400 --lr 4e-4 --min-lr 4e-5 --warmup 50 \
	--checkpoint "$WORK/all.ckpt" --checkpoint-every 200 --resume

"$NANOSERVE" train "${common[@]}" --out "$OUT" --init-from "$(done_as "$WORK/all.gguf")" --layers 6 \
	--fim-rate 0.8 "${fimheavy[@]}" --steps 500 --lr 3e-4 --min-lr 3e-5 --warmup 30 \
	--checkpoint "$WORK/fim.ckpt" --checkpoint-every 100 --resume
