#!/usr/bin/env bash
# Configure and build gpushare. Usage: scripts/build.sh BUILD_DIR [cmake args...]
# The CUDA workloads are built when nvcc is found (PATH or /usr/local/cuda).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:?build dir}
shift
cuda=()
nvcc=$(command -v nvcc || true)
[[ -z "$nvcc" && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
[[ -n "$nvcc" ]] && cuda=(-DCMAKE_CUDA_COMPILER="$nvcc")
cmake -S . -B "$B" "${cuda[@]}" "$@" >"$B.configure.log" 2>&1 || { cat "$B.configure.log"; exit 1; }
cmake --build "$B" -j"$(nproc)"
