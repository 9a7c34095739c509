#!/usr/bin/env bash
# The accounting library's launch timing (the default where the process's
# driver gives CUDA events) without a GPU: the stand-in CUPTI plays scripted
# launches through the callback API (30% busy on device 0, 90% on device 1)
# and the stand-in driver (libfakecuda.so) stamps the events the library
# records around each. Checked: the records say how they were timed and give
# no memory figure (CUPTI's memory records need it attached all along), the
# busier device reads busier, CUPTI is attached for each window only (every
# attach is followed by a detach before the next), nothing is timed on a
# stream being captured into a graph, kernel timing when asked or when the
# process has no driver to give events, and what info --clients and the
# exporter make of a record without a memory figure.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/cli/lib_account.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib_account.sh"

tmp=$(mktemp -d /tmp/gpushare-account-launches-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

if ! account_built; then
	finish
	exit 0
fi

# drive DIR SECONDS [VAR=VALUE...]: the driver under the library with the
# stand-in driver loaded, launch timing unless the arguments say otherwise
# (in the sanitizer build, without LeakSanitizer's exit scan: its tracer
# crashes with SIGSEGV on this driver, whose dlopen'ed stand-ins keep
# thread-local data on the stand-in CUPTI's launching threads, which run to
# the exit; ASan and UBSan still watch the library)
drive() {
	local d=$1 s=$2
	shift 2
	under_library "$d" GPUSHARE_ACCOUNT_TIMING= GPUSHARE_CUDA_LIBRARY="$H/libfakecuda.so" \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" "$@" "$H/account_driver" "$s"
}
share() { awk '$1 == "busy_ns" { b = $2 } $1 == "window_ns" { w = $2 } END { if (w > 0) printf "%.3f", b / w }' "$1"; }

# ---- the record path ----
d=$tmp/rec
check "the driver runs under the library" drive "$d" 1.5 FAKE_CUPTI_KERNELS=0:300:700,1:900:100 \
	FAKE_CUPTI_MEMORY=1:1048576 FAKE_CUPTI_TRACE="$tmp/trace" SLURM_JOB_ID=4242
r0=$(find "$d" -name '*-0.rec')
r1=$(find "$d" -name '*-1.rec')
check "one record per GPU" test -n "$r0" -a -n "$r1"
check "the records say launch timing" test "$(field "$r0" timing)" = launches -a "$(field "$r1" timing)" = launches
check "no memory figure (no memory_bytes line)" test -z "$(field "$r1" memory_bytes)"
check "launches were timed on both GPUs" test "$(field "$r0" kernels)" -gt 0 -a "$(field "$r1" kernels)" -gt 0
check "the GPU named by UUID" test "$(field "$r0" gpu_uuid)" = GPU-5f0c1e2a-9b3d-4c7e-8a1f-2b3c4d5e6f70
check "the owner" test "$(field "$r1" slurm_job)" = 4242
s0=$(share "$r0")
s1=$(share "$r1")
echo "shares: device 0 $s0 (scripted 0.30), device 1 $s1 (scripted 0.90)"
check "the busier GPU reads busier, each share in (0, 1]" \
	awk -v a="$s0" -v b="$s1" 'BEGIN { exit !(a > 0 && a < b && b <= 1) }'
check "windows cover part of the wall time only" \
	awk -v w="$(field "$r0" window_ns)" -v t="$(field "$r0" wall_ns)" 'BEGIN { exit !(w > 0 && w < t) }'
check "a window's mean launch time and the fastest's" \
	test "$(field "$r1" window_mean_ns)" -gt 0 -a "$(field "$r1" best_mean_ns)" -gt 0
echo "CUPTI: $(grep -c '^subscribe$' "$tmp/trace") attaches, $(grep -c '^finalize$' "$tmp/trace") detaches"
check "CUPTI attached for more than one window" test "$(grep -c '^subscribe$' "$tmp/trace")" -ge 2
check "each attach detached before the next (the last may stay at exit)" python3 -c '
import sys
t = open(sys.argv[1]).read().split()
assert all(t[i] == ("subscribe" if i % 2 == 0 else "finalize") for i in range(len(t))), t
assert t.count("finalize") >= t.count("subscribe") - 1, t' "$tmp/trace"

# ---- a stream being captured into a graph gets no event ----
d=$tmp/capture
drive "$d" 0.6 FAKE_CUPTI_KERNELS=0:300:700 FAKE_CUDA_CAPTURING=1 FAKE_CUPTI_TRACE="$tmp/trace2"
check "capturing: CUPTI attached all the same" grep -q '^subscribe$' "$tmp/trace2"
check "capturing: no launch timed, no record" test -z "$(find "$d" -name '*.rec' 2>/dev/null)"

# ---- kernel timing: when asked, and without a driver that gives events ----
d=$tmp/kern
drive "$d" 0.6 FAKE_CUPTI_KERNELS=0:300:700 FAKE_CUPTI_MEMORY=0:4096 GPUSHARE_ACCOUNT_TIMING=kernels \
	FAKE_CUPTI_TRACE="$tmp/trace3"
r=$(find "$d" -name '*.rec')
check "GPUSHARE_ACCOUNT_TIMING=kernels: no timing line (kernels)" test -n "$r" -a -z "$(field "$r" timing)"
check "GPUSHARE_ACCOUNT_TIMING=kernels: memory" test "$(field "$r" memory_bytes)" = 4096
check "GPUSHARE_ACCOUNT_TIMING=kernels: the callback API unused" test ! -e "$tmp/trace3"
d=$tmp/nodriver
under_library "$d" GPUSHARE_ACCOUNT_TIMING= FAKE_CUPTI_KERNELS=0:300:700 "$H/account_driver" 0.6
r=$(find "$d" -name '*.rec')
check "no driver giving events: kernel timing" test -n "$r" -a -z "$(field "$r" timing)" -a "$(field "$r" kernels)" -gt 0

# ---- what the readers make of a record without a memory figure ----
d=$tmp/rec
export GPUSHARE_ACCOUNT_DIR=$d
run info --clients
check "info --clients (exit $rc)" test "$rc" -eq 0
check "info --clients: no memory shows - (between ATTAINED and SLOWDOWN)" grep -qE '^GPU-5f0c1e2a .*% +- +[0-9.]+x' "$tmp/out"
run info --clients --json
check "info --clients --json: memory null, timing launches" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["clients"]) == 2, d
assert all(c["memory_bytes"] is None and c["timing"] == "launches" for c in d["clients"]), d' "$tmp/out"
run exporter --once
check "exporter: shares served" test "$(grep -c '^gpushare_client_sm_share_ratio{' "$tmp/out")" -eq 2
check "exporter: no memory sample made up" test "$(grep -c '^gpushare_client_memory_bytes{' "$tmp/out")" -eq 0
if command -v promtool >/dev/null; then
	check "the exposition lints" promtool check metrics <"$tmp/out"
else
	missing_tool "promtool (Debian package prometheus)"
fi
unset GPUSHARE_ACCOUNT_DIR

finish account_launches
