#!/usr/bin/env bash
# Runs package tensor's tests for arm64 on any Linux machine, under qemu
# user-mode emulation: once on a core with every extension (-cpu max: NEON
# kernels with SDOT) and once on a Cortex-A53 (ARMv8.0: NEON without the
# dot-product extension, so the SMULL/SADALP integer dots), plus go vet for
# GOARCH=arm64. Installs qemu-user with apt-get when qemu-aarch64 is
# missing (as root). Extra arguments go to the test binary, e.g.
#   tensor/testdata/arm64.sh -test.run 'NEON|Parity' -test.v
# Timings are emulated: benchmarks under qemu measure nothing useful.
set -euo pipefail
cd "$(dirname "$0")/../.."   # module root

if ! command -v qemu-aarch64 >/dev/null; then
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user >/dev/null
fi

GOARCH=arm64 go vet ./tensor
bin=$(mktemp -d)/tensor_arm64.test
trap 'rm -rf "$(dirname "$bin")"' EXIT
CGO_ENABLED=0 GOARCH=arm64 go test -c -o "$bin" ./tensor

# The test binary runs in the package directory, as go test would run it.
cd tensor
echo "== qemu-aarch64 -cpu max (ASIMD + dotprod): all tests (-short)"
qemu-aarch64 -cpu max "$bin" -test.short -test.count=1 "$@"
echo "== qemu-aarch64 -cpu cortex-a53 (ASIMD, no dotprod): kernel tests"
qemu-aarch64 -cpu cortex-a53 "$bin" -test.short -test.count=1 \
	-test.run 'NEON|Parity|MatMulQuant|DotQ|Dequant|QuantizeActs' "$@"
