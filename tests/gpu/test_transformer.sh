#!/usr/bin/env bash
# GPU test (label gpu): the transformer workload's forward pass against a CPU
# reference, as a CUDA graph and eagerly (tests/gpu/transformer_check.cu).
set -euo pipefail
"${GPUSHARE_TEST_HELPERS:?}/transformer_check" --no-time
echo "1 passed, 0 failed"
