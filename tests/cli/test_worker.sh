#!/usr/bin/env bash
# End-to-end tests of gpushare-worker without the launcher: region_driver
# (tests/helpers/region_driver.c) creates the shared region, starts the worker
# with the descriptor, plays the parent's side of the protocol and prints the
# slots as key=value lines. The spin workload needs no GPU. Timing bounds are
# loose on purpose: the test machine may have 2 busy cores.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE_WORKER:?set GPUSHARE_WORKER}"
: "${GPUSHARE_TEST_HELPERS:?set GPUSHARE_TEST_HELPERS}"
DRIVER="$GPUSHARE_TEST_HELPERS/region_driver"
export GPUSHARE_WORKER
unset CUDA_MPS_ACTIVE_THREAD_PERCENTAGE CUDA_MPS_PINNED_DEVICE_MEM_LIMIT

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# drive ARGS... : run the driver, output in $tmp/out, its stderr (and the
# worker's) in $tmp/err.
drive() {
	"$DRIVER" "$@" >"$tmp/out" 2>"$tmp/err" || { echo "region_driver failed: $(cat "$tmp/err")"; exit 1; }
}
get() { sed -n "s/^$1=//p" "$tmp/out" | head -n 1; }

expect_eq() { # what key expected
	local got
	got=$(get "$2")
	if [[ "$got" == "$3" ]]; then ok "$1: $2=$got"; else fail "$1: $2 is '$got', expected '$3'"; fi
}
expect_range() { # what key lo hi
	local got
	got=$(get "$2")
	if [[ "$got" =~ ^[0-9]+$ ]] && ((got >= $3 && got <= $4)); then
		ok "$1: $2=$got in [$3, $4]"
	else
		fail "$1: $2 is '$got', expected in [$3, $4]"
	fi
}
expect_match() { # what key substring
	local got
	got=$(get "$2")
	if [[ "$got" == *"$3"* ]]; then ok "$1: $2 contains '$3'"; else fail "$1: $2 is '$got', expected to contain '$3'"; fi
}
expect_stderr() { # what substring
	if grep -qF -- "$2" "$tmp/err"; then ok "$1: stderr names '$2'"; else fail "$1: stderr lacks '$2': $(cat "$tmp/err")"; fi
}

echo "== spin, one thread: requests fill the window, p50 near request-us x batch"
# window 400 ms of 1 ms requests: at most 401 recorded; at least 10% on a busy machine.
drive --window-ms 400 --warmup-ms 50 -- --slot 0 --workload spin --opt request-us=125us --batch 8
expect_eq "1 thread" exit 0
expect_eq "1 thread" barrier ready
expect_eq "1 thread" slot.0.state DONE
expect_range "1 thread" slot.0.requests 40 401
expect_eq "1 thread" slot.0.hist_count "$(get slot.0.requests)"
expect_eq "1 thread" slot.0.in_window 1
# a request spins its 1 ms at least; the upper bound is a quiet machine's
# 2 ms, times the load (a loaded run saw 2.09 ms beside six CPU hogs)
expect_range "1 thread" slot.0.p50_ns 1000000 $((2000000 * TIME_FACTOR))
expect_range "1 thread" slot.0.min_ns 1000000 $((2000000 * TIME_FACTOR))
expect_range "1 thread" slot.0.total_requests "$(get slot.0.requests)" 1000
expect_eq "1 thread" slot.0.items_per_request 8
expect_eq "1 thread" slot.0.device_name cpu
expect_eq "1 thread" slot.0.sm_count -1
expect_eq "1 thread" slot.0.thread_percentage -1
expect_eq "1 thread" slot.0.mem_limit ""
if [[ -s "$tmp/err" ]]; then fail "worker printed on success: $(cat "$tmp/err")"; else ok "silent on success"; fi

echo "== spin, three threads in one process"
drive --slots 3 --window-ms 400 -- --slot 0 --threads 3 --workload spin --opt request-us=2ms
expect_eq "3 threads" exit 0
pid0=$(get slot.0.pid)
for i in 0 1 2; do
	expect_eq "3 threads" "slot.$i.state" DONE
	expect_range "3 threads" "slot.$i.requests" 10 201
	expect_eq "3 threads" "slot.$i.in_window" 1
	expect_range "3 threads" "slot.$i.p50_ns" 2000000 $((10000000 * TIME_FACTOR))
	expect_eq "3 threads" "slot.$i.pid" "$pid0"
done

echo "== threads use slots I..I+T-1 only"
drive --slots 4 --barrier-first 1 --barrier-count 2 --window-ms 100 -- --slot 1 --threads 2 --workload spin
expect_eq "slot offset" exit 0
expect_eq "slot offset" slot.0.state EMPTY
expect_eq "slot offset" slot.1.state DONE
expect_eq "slot offset" slot.2.state DONE
expect_eq "slot offset" slot.3.state EMPTY

echo "== requests mode: exactly requests_per_worker recorded per slot"
drive --slots 2 --requests 25 --warmup-ms 10 -- --slot 0 --threads 2 --workload spin --opt request-us=200us
expect_eq "requests mode" exit 0
expect_eq "requests mode" slot.0.requests 25
expect_eq "requests mode" slot.1.requests 25
expect_eq "requests mode" slot.1.state DONE

echo "== warm-up requests run before READY; STOP at the barrier ends the worker cleanly"
drive --no-go -- --slot 0 --workload spin --warmup-requests 7
expect_eq "warm-up" exit 0
expect_eq "warm-up" slot.0.state DONE
expect_eq "warm-up" slot.0.total_requests 7
expect_eq "warm-up" slot.0.requests 0
drive --no-go --header-warmup 5 -- --slot 0 --workload spin
expect_eq "header warm-up" slot.0.total_requests 5

echo "== limits in effect: the MPS variables the worker sees"
CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25 CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=2G \
	drive --window-ms 50 -- --slot 0 --workload spin
expect_eq "env" slot.0.thread_percentage 25
expect_eq "env" slot.0.mem_limit "0=2G"

echo "== fail-after: FAILED with a message, exit 4"
drive --window-ms 2000 -- --slot 0 --workload spin --opt fail-after=20
expect_eq "fail-after" exit 4
expect_eq "fail-after" slot.0.state FAILED
expect_eq "fail-after" slot.0.error_code -15
expect_match "fail-after" slot.0.message "simulated failure after 20 requests"
expect_eq "fail-after" slot.0.total_requests 20
expect_stderr "fail-after" "simulated failure"

echo "== fail-after with fail-mode=crash: killed by SIGSEGV, slot left RUNNING"
drive --window-ms 2000 -- --slot 0 --workload spin --opt fail-after=20 --opt fail-mode=crash
expect_eq "crash" exit 139
expect_eq "crash" slot.0.state RUNNING

echo "== fail-mode=hang: STOP is not seen, SIGTERM ends it within its grace"
drive --window-ms 100 --grace-ms 1500 -- --slot 0 --workload spin --opt fail-after=100 --opt fail-mode=hang
expect_eq "hang" sigterm 1
expect_eq "hang" sigkill 0
expect_eq "hang" exit 0
expect_eq "hang" slot.0.state DONE

echo "== SIGTERM while measuring, no STOP: FAILED 'interrupted', exit 128+15"
drive --window-ms 5000 --sigterm-at-ms 200 -- --slot 0 --workload spin
expect_eq "sigterm" exit 143
expect_eq "sigterm" slot.0.state FAILED
expect_eq "sigterm" slot.0.message interrupted
expect_eq "sigterm" slot.0.error_code -16
expect_range "sigterm" slot.0.requests 1 100000

echo "== SIGINT: handled like SIGTERM, unless the launcher ignores it for the worker"
drive --window-ms 5000 --sigint-at-ms 200 -- --slot 0 --workload spin
expect_eq "sigint" exit 130
expect_eq "sigint" slot.0.message interrupted
(
	trap '' INT   # inherited as ignored, as gpushare bench does for its workers
	drive --window-ms 600 --sigint-at-ms 200 -- --slot 0 --workload spin
)
expect_eq "sigint ignored" exit 0
expect_eq "sigint ignored" slot.0.state DONE

echo "== init-fail: CUDA error 808 without a GPU, exit 3"
drive -- --slot 0 --workload spin --opt init-fail=on
expect_eq "init-fail" exit 3
expect_eq "init-fail" barrier failed
expect_eq "init-fail" slot.0.state FAILED
expect_eq "init-fail" slot.0.cuda_error 808
expect_eq "init-fail" slot.0.error_code -19
expect_match "init-fail" slot.0.message "too many MPS clients"

echo "== unknown workload, bad option values: exit 2, slot FAILED with the reason"
drive -- --slot 0 --workload nope
expect_eq "unknown workload" exit 2
expect_eq "unknown workload" slot.0.state FAILED
expect_match "unknown workload" slot.0.message "unknown workload 'nope'"
expect_stderr "unknown workload" "unknown workload 'nope'"
drive -- --slot 0 --workload spin --opt request-us=abc
expect_eq "bad value" exit 2
expect_match "bad value" slot.0.message "request-us"
drive -- --slot 0 --workload spin --opt size=1024
expect_eq "unknown option" exit 2
expect_eq "unknown option" slot.0.error_code -13
expect_match "unknown option" slot.0.message "no option 'size'"
drive -- --slot 0 --workload transformer --opt heads=5
expect_eq "hidden % heads" exit 2
expect_match "hidden % heads" slot.0.message "multiple of heads"

echo "== a CUDA workload in a build without CUDA"
if "$GPUSHARE_WORKER" --list | grep -qx matmul; then
	echo "skipped: this gpushare-worker has the CUDA workloads"
else
	drive -- --slot 0 --workload matmul
	expect_eq "no CUDA" exit 3
	expect_eq "no CUDA" slot.0.state FAILED
	expect_match "no CUDA" slot.0.message "built without CUDA"
	expect_stderr "no CUDA" "built without CUDA"
fi
"$GPUSHARE_WORKER" --list | grep -qx spin && ok "--list names spin" || fail "--list lacks spin"

echo "== region problems: exit 5"
drive --corrupt magic -- --slot 0 --workload spin
expect_eq "bad magic" exit 5
expect_stderr "bad magic" "magic"
drive --corrupt version -- --slot 0 --workload spin
expect_eq "bad version" exit 5
expect_stderr "bad version" "version"
drive --slots 2 --timeout-ms 5000 -- --slot 1 --threads 2 --workload spin
expect_eq "slot range" exit 5
expect_stderr "slot range" "out of range"
drive --no-fd -- --region-fd 0 --slot 0 --workload spin </dev/null
expect_eq "not a region" exit 5

echo "== bad command lines: exit 2 and one line naming the problem"
bad_cmdline() { # expected-substring args...
	local want=$1 rc=0
	shift
	"$GPUSHARE_WORKER" "$@" >"$tmp/o" 2>"$tmp/e" </dev/null || rc=$?
	if ((rc == 2)) && grep -qF -- "$want" "$tmp/e" && (($(wc -l <"$tmp/e") == 1)) && [[ ! -s "$tmp/o" ]]; then
		ok "'$*' -> exit 2: $(cat "$tmp/e")"
	else
		fail "'$*' -> exit $rc, stderr '$(cat "$tmp/e")' (wanted exit 2 naming '$want')"
	fi
}
bad_cmdline "--region-fd"
bad_cmdline "--slot" --region-fd 3 --workload spin
bad_cmdline "--workload" --region-fd 3 --slot 0
bad_cmdline "--slot" --region-fd 3 --slot abc --workload spin
bad_cmdline "--region-fd" --region-fd -1 --slot 0 --workload spin
bad_cmdline "--threads" --region-fd 3 --slot 0 --threads 0 --workload spin
bad_cmdline "--batch" --region-fd 3 --slot 0 --batch 0 --workload spin
bad_cmdline "--bogus" --region-fd 3 --slot 0 --workload spin --bogus
bad_cmdline "name=value" --region-fd 3 --slot 0 --workload spin --opt request-us
bad_cmdline "needs a value" --region-fd 3 --slot 0 --workload
bad_cmdline "unexpected argument" --region-fd 3 --slot 0 --workload spin extra

finish worker
