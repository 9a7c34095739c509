#!/usr/bin/env bash
# Every test that runs without a GPU: install what the build and the tests
# need, build with warnings as errors under AddressSanitizer and
# UndefinedBehaviorSanitizer (CUDA files are compiled too when nvcc is
# present), run ctest without the `gpu` label, then a short libFuzzer run.
# GPU tests: tests/gpu/run.sh (run here too on a machine with a GPU and nvcc).
# A test tool that is missing prints "SKIP (missing tool): ..."; under CI=true
# it is a failure instead. The SKIP lines of every test are listed at the end,
# then the seconds each stage took.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage's seconds, printed at the end however the script ends.
stages=()
stage_name=
stage_t0=0
stage() { # stage NAME: the previous stage ends, NAME begins ("" for none)
	local now
	now=$(date +%s)
	[[ -n $stage_name ]] && stages+=("$(printf '%-72s %5d s' "$stage_name" $((now - stage_t0)))")
	stage_name=$1
	stage_t0=$now
}
t_start=$(date +%s)
hog=
on_exit() {
	if [[ -n $hog ]]; then kill "$hog" 2>/dev/null || true; fi
	stage ""
	echo "== test.sh: where the time went"
	printf '  %s\n' "${stages[@]}"
	printf '  %-72s %5d s\n' "total" $(($(date +%s) - t_start))
}
trap on_exit EXIT
stage "setup.sh --test (packages)"
scripts/setup.sh --test
# The tests run the distribution's python3, whose modules (jsonschema, venv)
# scripts/setup.sh installs, even where another python3 comes first in PATH.
export PATH=/usr/bin:$PATH
stage "build-test (Debug, ASan/UBSan, the tests)"
scripts/build.sh build-test -DCMAKE_BUILD_TYPE=Debug -DGPUSHARE_WERROR=ON -DGPUSHARE_SANITIZE=ON \
	-DGPUSHARE_REQUIRE_TESTS=ON
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
# Two more builds run beside the first ctest pass, at the lowest CPU
# priority (nice 19): most CLI tests wait (on their workloads' sleeps, on
# daemons, on deadlines), and the builds take the CPU time they leave.
#  - the C code as the GPU machines build it (Release, gcc -O2 with
#    _FORTIFY_SOURCE, which warns of truncations -O0 does not see): no
#    warning;
#  - the libFuzzer harnesses (clang), run at the end. Every fuzz.* test of
#    tests/CMakeLists.txt needs its target named here.
mkdir -p build-release
nice -n 19 scripts/build.sh build-release -DCMAKE_BUILD_TYPE=Release -DGPUSHARE_WERROR=ON -DGPUSHARE_CUDA=OFF \
	-DCMAKE_C_FLAGS=-D_FORTIFY_SOURCE=3 -DBUILD_TESTING=OFF >build-release/build.log 2>&1 &
release_build=$!
fuzz_build=
if command -v clang >/dev/null; then
	mkdir -p build-fuzz
	nice -n 19 bash -c 'cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DGPUSHARE_FUZZ=ON -DGPUSHARE_CUDA=OFF \
		-DGPUSHARE_REQUIRE_TESTS=ON && cmake --build build-fuzz --target fuzz_proto fuzz_results fuzz_journal \
		fuzz_slurm_env fuzz_plan_yaml fuzz_probes fuzz_device_file fuzz_account -j"$(nproc)"' \
		>build-fuzz/build.log 2>&1 &
	fuzz_build=$!
fi
# Two tests per CPU at a time: most CLI tests wait. Those that keep a CPU
# busy or read rates from their workers, the unit tests and the checks count
# as two (PROCESSORS in tests/CMakeLists.txt): they run as many at a time as
# one per CPU. The long ones start first (COST). GPUSHARE_TEST_JOBS sets
# another number (the CPUs: one test per CPU, as before).
jobs=${GPUSHARE_TEST_JOBS:-$((2 * $(nproc)))}
stage "ctest: every test but the gpu ones, -j$jobs (the two builds beside it, niced)"
ctest --test-dir build-test -LE gpu -j"$jobs" --output-on-failure --no-tests=error || status=1
stage "the Release and fuzzing builds: what was left of them"
if ! wait "$release_build"; then
	cat build-release/build.log
	echo "FAIL: the Release build (-D_FORTIFY_SOURCE=3, warnings as errors) failed (log above, kept in build-release/build.log)"
	status=1
fi
fuzz_built=false
if [[ -n $fuzz_build ]]; then
	if wait "$fuzz_build"; then
		fuzz_built=true
	else
		cat build-fuzz/build.log
		echo "FAIL: the fuzzing build failed (log above, kept in build-fuzz/build.log)"
		status=1
	fi
fi
# ctest shows only the output of failed tests; the SKIP lines of passing ones
# are in its log.
skips=$(grep -h '^SKIP' build-test/Testing/Temporary/LastTest.log 2>/dev/null || true)
missing_tool() {
	if [[ "${CI:-}" == true ]]; then
		echo "FAIL: $1 (CI=true: every test tool must be installed)"
		status=1
	else
		echo "SKIP (missing tool): $1"
	fi
}
# The CLI tests again beside a CPU hog (stress-ng, one worker per CPU): their
# wall-clock bounds follow the machine's load (TIME_FACTOR in
# tests/cli/lib.sh), and they must pass, and clean up, on a busy machine too.
if command -v stress-ng >/dev/null; then
	echo "== the CLI tests again, beside stress-ng --cpu $(nproc) (one CPU hog per CPU)"
	stage "ctest -L cli beside stress-ng --cpu $(nproc), -j$jobs"
	# The hog: stopped however this step ends (on_exit).
	stress-ng --cpu "$(nproc)" --timeout 3600s --quiet &
	hog=$!
	sleep 2
	# The hog doubles the load from the start; the 1-minute load average
	# lags, so the tests' TIME_FACTOR is set, not measured.
	GPUSHARE_TEST_TIME_FACTOR=4 ctest --test-dir build-test -L cli -LE gpu -j"$jobs" --output-on-failure \
		--no-tests=error || { echo "FAIL: the CLI tests beside a CPU hog"; status=1; }
	kill "$hog" 2>/dev/null || true
	wait "$hog" 2>/dev/null || true
	hog=
else
	missing_tool "the CLI tests under load: stress-ng not installed (Debian package stress-ng)"
fi
# Short libFuzzer runs of the worker-message parser, the results loader, the farm journal reader, a
# job's Slurm environment, plan's YAML read back by libyaml, tune's probe files, plan's
# --device-file expression and the accounting records (built beside the first pass above).
# Each run is bounded by its own -max_total_time: one per CPU at a time, each with a CPU to itself.
if [[ $fuzz_built == true ]]; then
	stage "ctest -L fuzz (libFuzzer runs, $(nproc) at a time)"
	ctest --test-dir build-fuzz -L fuzz -j"$(nproc)" --output-on-failure --no-tests=error || status=1
elif [[ -z $fuzz_build ]]; then
	missing_tool "fuzzing: clang not installed (Debian packages clang, libclang-rt-dev)"
fi
# On a machine with an NVIDIA GPU and nvcc, the `gpu` tests too.
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 &&
	{ command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]]; }; then
	stage "tests/gpu/run.sh"
	tests/gpu/run.sh build-gpu || status=1
else
	echo "SKIP: gpu tests (no NVIDIA GPU here; run tests/gpu/run.sh on a GPU machine)"
fi
stage ""
if [[ -n "$skips" ]]; then
	echo "== skipped inside the tests:"
	echo "$skips"
fi
if [[ "${CI:-}" == true && "$skips" == *"SKIP (missing tool)"* ]]; then
	echo "FAIL: a test skipped for a missing tool (CI=true)"
	status=1
fi
exit "$status"
