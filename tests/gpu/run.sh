#!/usr/bin/env bash
# Build gpushare with CUDA and run the `gpu` ctest label on a GPU machine.
# Usage: tests/gpu/run.sh [BUILD_DIR]   (default build-gpu)
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build-gpu}
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$nvcc" -DGPUSHARE_WERROR=ON >/dev/null
cmake --build "$B" -j"$(nproc)"
ctest --test-dir "$B" -L gpu --output-on-failure
