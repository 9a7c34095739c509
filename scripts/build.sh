#!/usr/bin/env bash
# Configure and build gpushare. Usage: scripts/build.sh BUILD_DIR [cmake args...]
# The CUDA workloads are built when nvcc is found (PATH or /usr/local/cuda).
# The configure log is kept in BUILD_DIR/configure.log and printed when
# configuring fails; the compiler's messages go to stdout/stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:?build dir}
shift
cuda=()
nvcc=$(command -v nvcc || true)
[[ -z "$nvcc" && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
[[ -n "$nvcc" ]] && cuda=(-DCMAKE_CUDA_COMPILER="$nvcc")
mkdir -p "$B"
if ! cmake -S . -B "$B" "${cuda[@]}" "$@" >"$B/configure.log" 2>&1; then
	cat "$B/configure.log" >&2
	echo "build: configuring $B failed (log above, kept in $B/configure.log)" >&2
	exit 1
fi
if ! cmake --build "$B" -j"$(nproc)"; then
	echo "build: building $B failed (compiler messages above)" >&2
	exit 1
fi
