#!/usr/bin/env bash
# Every test that runs without a GPU: install what the build and the tests
# need, build with warnings as errors under AddressSanitizer and
# UndefinedBehaviorSanitizer (CUDA files are compiled too when nvcc is
# present), and run ctest without the `gpu` label. GPU tests: tests/gpu/run.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
scripts/build.sh build-test -DCMAKE_BUILD_TYPE=Debug -DGPUSHARE_WERROR=ON -DGPUSHARE_SANITIZE=ON
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest --test-dir build-test -LE gpu -j"$(nproc)" --output-on-failure
# Short libFuzzer runs of the worker-message parser and the results loader
# when clang offers it.
if command -v clang >/dev/null &&
	cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DGPUSHARE_FUZZ=ON -DGPUSHARE_CUDA=OFF >/dev/null 2>&1 &&
	cmake --build build-fuzz -j"$(nproc)" --target fuzz_proto fuzz_results >/dev/null 2>&1; then
	ctest --test-dir build-fuzz -L fuzz --output-on-failure
else
	echo "SKIP: fuzzing (clang with libFuzzer not available)"
fi
# On a machine with an NVIDIA GPU and nvcc, the `gpu` tests too.
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 &&
	{ command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]]; }; then
	tests/gpu/run.sh build-gpu
else
	echo "SKIP: gpu tests (no NVIDIA GPU here; run tests/gpu/run.sh on a GPU machine)"
fi
