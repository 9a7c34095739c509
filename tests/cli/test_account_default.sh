#!/usr/bin/env bash
# The accounting library loaded into what gpushare starts: farm jobs and exec
# ranks get CUDA_INJECTION64_PATH naming the library beside gpushare (a build
# tree) by default, not with --no-account or GPUSHARE_ACCOUNT=0 (--account
# beside --no-account is refused); bench workers, whose rate is what bench
# measures, only with --account or GPUSHARE_ACCOUNT=1; never over the user's
# own CUDA_INJECTION64_PATH; with the promise of
# N processes sharing a GPU without limits (1/N); and a farm's live
# metrics serve the clients its jobs recorded (the jobs are the accounting
# driver under the stand-in CUPTI).
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?set by ctest}" "${GPUSHARE_TEST_HELPERS:?set by ctest}"
H=$GPUSHARE_TEST_HELPERS
LIB=$(dirname "$GPUSHARE")/libgpushare-account.so
tmp=$(mktemp -d /tmp/gpushare-account-default-XXXXXX)
fpid=
cleanup() {
	[[ -n $fpid ]] && kill "$fpid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

if [[ ! -e $LIB ]]; then
	missing_tool "libgpushare-account.so was not built"
	finish
	exit 0
fi
private_xdg
export GPUSHARE_NVML_LIBRARY=$H/libfakenvml.so FAKE_NVML_GPUS=1 GPUSHARE_MPS_CONTROL=$H/fake_mps_control
unset CUDA_INJECTION64_PATH GPUSHARE_ACCOUNT GPUSHARE_ACCOUNT_LIB
# shellcheck disable=SC2016 # expanded by the job's shell
echo 'sh -c "echo inj=${CUDA_INJECTION64_PATH-unset}"' >"$tmp/jobs"

injected() { # injected DIR: what the farm's one job saw
	cat "$1"/out/*.out 2>/dev/null
}

# ---- farm jobs ----
run farm --dir "$tmp/f1" --strategy timeslice -q "$tmp/jobs"
check "farm (exit $rc)" test "$rc" -eq 0
check "a farm job loads the library by default" test "$(injected "$tmp/f1")" = "inj=$LIB"
run farm --dir "$tmp/f2" --strategy timeslice --account -q "$tmp/jobs"
check "farm --account: loaded" test "$(injected "$tmp/f2")" = "inj=$LIB"
run farm --dir "$tmp/f7" --strategy timeslice --no-account -q "$tmp/jobs"
check "farm --no-account: not loaded" test "$(injected "$tmp/f7")" = "inj=unset"
run farm --dir "$tmp/f8" --strategy timeslice --account --no-account -q "$tmp/jobs"
check "farm --account --no-account: refused (exit 2, one line)" test "$rc" -eq 2 -a "$(wc -l <"$tmp/err")" -eq 1 -a ! -e "$tmp/f8"
GPUSHARE_ACCOUNT=0 run farm --dir "$tmp/f9" --strategy timeslice -q "$tmp/jobs"
check "GPUSHARE_ACCOUNT=0: not loaded by default" test "$(injected "$tmp/f9")" = "inj=unset"
GPUSHARE_ACCOUNT=1 run farm --dir "$tmp/f6" --strategy timeslice -q "$tmp/jobs"
check "GPUSHARE_ACCOUNT=1: loaded" test "$(injected "$tmp/f6")" = "inj=$LIB"
GPUSHARE_ACCOUNT=0 run farm --dir "$tmp/f3" --strategy timeslice --account -q "$tmp/jobs"
check "GPUSHARE_ACCOUNT=0 wins over --account" test "$(injected "$tmp/f3")" = "inj=unset"
CUDA_INJECTION64_PATH=/the/users/own.so run farm --dir "$tmp/f4" --strategy timeslice --account -q "$tmp/jobs"
check "the user's own CUDA_INJECTION64_PATH is kept" test "$(injected "$tmp/f4")" = "inj=/the/users/own.so"
GPUSHARE_ACCOUNT_LIB=/nonexistent/lib.so run farm --dir "$tmp/f5" --strategy timeslice --account -q "$tmp/jobs"
check "no library there: nothing set" test "$(injected "$tmp/f5")" = "inj=unset"

# the promise: 1/N for N processes sharing a GPU without limits; under an
# MPS limit the library reads the limit itself
# shellcheck disable=SC2016 # expanded by the job's shell
printf '%s\n' 'sh -c "echo p=${GPUSHARE_ACCOUNT_PROMISED-unset}"' 'sh -c "echo p=${GPUSHARE_ACCOUNT_PROMISED-unset}"' \
	>"$tmp/jobs2"
run farm --dir "$tmp/p1" --strategy timeslice --slots 2 --account -q "$tmp/jobs2"
check "2 slots time-sliced: each promised 1/2" test "$(sort -u "$tmp"/p1/out/*.out)" = "p=0.500000"
run farm --dir "$tmp/p2" --strategy mps-split --slots 2 --account -q "$tmp/jobs2"
check "mps-split: no promise beside the limit" test "$(sort -u "$tmp"/p2/out/*.out)" = "p=unset"

# ---- exec ranks ----
rank() { env OMPI_COMM_WORLD_LOCAL_RANK=0 OMPI_COMM_WORLD_LOCAL_SIZE=1 OMPI_MCA_orte_ess_jobid="$1" "${@:2}"; }
set +e
rank 71 "$GPUSHARE" exec --dry-run --strategy timeslice --account >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
check "exec --dry-run (exit $rc)" test "$rc" -eq 0
check "exec --account: the rank loads the library" grep -q " CUDA_INJECTION64_PATH=$LIB\( \|$\)" "$tmp/out"
rank 72 "$GPUSHARE" exec --dry-run --strategy timeslice >"$tmp/out" 2>"$tmp/err" || true
check "an exec rank loads it by default" grep -q " CUDA_INJECTION64_PATH=$LIB\( \|$\)" "$tmp/out"
rank 73 "$GPUSHARE" exec --dry-run --strategy timeslice --no-account >"$tmp/out" 2>"$tmp/err" || true
check "exec --no-account: not loaded" test -z "$(grep CUDA_INJECTION64_PATH "$tmp/out" || true)"
set +e
rank 74 "$GPUSHARE" exec --dry-run --strategy timeslice --account --no-account >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
check "exec --account --no-account: refused (exit 2)" test "$rc" -eq 2

# ---- bench workers (a program of one's own, job mode) ----
run bench --strategy timeslice --workers 1 --mode job --jobs 1 --account -q -- \
	sh -c "echo inj=\${CUDA_INJECTION64_PATH-unset} >$tmp/bench1"
check "bench (exit $rc)" test "$rc" -eq 0
check "bench --account: the worker loads the library" test "$(cat "$tmp/bench1")" = "inj=$LIB"
run bench --strategy timeslice --workers 1 --mode job --jobs 1 -q -- \
	sh -c "echo inj=\${CUDA_INJECTION64_PATH-unset} >$tmp/bench2"
check "a bench worker does not load it by default" test "$(cat "$tmp/bench2")" = "inj=unset"

# ---- a farm's live metrics serve its jobs' clients ----
if ! command -v curl >/dev/null; then
	missing_tool "curl"
else
	export GPUSHARE_ACCOUNT_DIR=$tmp/rec GPUSHARE_CUPTI_LIBRARY=$H/libfakecupti.so GPUSHARE_ACCOUNT_PERIOD_MS=100 \
		GPUSHARE_ACCOUNT_DUTY=0.2 FAKE_CUPTI_KERNELS=0:300:700
	printf '%s 30\n%s 30\n' "$H/account_driver" "$H/account_driver" >"$tmp/drivers"
	port=$(free_port)
	"$GPUSHARE" farm --dir "$tmp/m" --strategy timeslice --slots 2 --account --metrics-listen "127.0.0.1:$port" -q \
		"$tmp/drivers" >/dev/null 2>&1 &
	fpid=$!
	served() {
		curl -sf "http://127.0.0.1:$port/metrics" -o "$tmp/metrics" &&
			test "$(grep -c '^gpushare_client_sm_share_ratio{.*farm_job="[12]"' "$tmp/metrics")" -eq 2
	}
	wait_for 100 0.1 served || true
	check "the farm's metrics serve its two jobs as clients" served
	kill "$fpid" 2>/dev/null || true
	wait "$fpid" 2>/dev/null || true
	fpid=
	unset GPUSHARE_ACCOUNT_DIR GPUSHARE_CUPTI_LIBRARY GPUSHARE_ACCOUNT_PERIOD_MS GPUSHARE_ACCOUNT_DUTY FAKE_CUPTI_KERNELS
fi
check "no driver left behind" test -z "$(pgrep -f "$H/account_driver 30" || true)"

finish account_default
