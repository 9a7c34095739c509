#!/usr/bin/env bash
# Torture, class "concurrent writers": two sweeps into one --out at once (one
# runs, the other is refused: exit 6, no duplicated record), a sweep killed
# with SIGKILL leaves no lock behind, reports written into one directory at
# once stay whole, four `mps start --pipe-dir P` at once start one daemon
# (the others find it running) and four `mps stop` at once all succeed.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?}" "${GPUSHARE_WORKER:?}" "${GPUSHARE_TEST_HELPERS:?}"
H=$GPUSHARE_TEST_HELPERS
tmp=$(mktemp -d /tmp/gpushare-torture-conc.XXXXXX)
pids=()
cleanup() {
	kill_pids
	fake_mps_quit "$tmp/p/pipe" "$tmp/p/log"
	for d in $(daemons_of "$tmp/p/pipe"); do kill -9 "$d" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
ln -s "$GPUSHARE_WORKER" "$tmp/gpushare-worker"
export GPUSHARE_WORKER="$tmp/gpushare-worker"
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY GPUSHARE_MPS_CONTROL FAKE_MPS_START_FAIL FAKE_MPS_NO_QUIT
private_xdg

SPIN=(sweep --workload spin --request-us 100us --duration 100ms --warmup 10ms --warmup-requests 1 -q --no-report)

# The fake daemons serving pipe directory $1 (by their environment).
daemons_of() {
	local p
	for p in /proc/[0-9]*; do
		[[ "$(cat "$p/comm" 2>/dev/null)" == fake_mps_contro* ]] || continue
		{ tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -qx "CUDA_MPS_PIPE_DIRECTORY=$1" && echo "${p#/proc/}"
	done
	return 0
}

echo "== two sweeps into one --out at the same time"
"$GPUSHARE" "${SPIN[@]}" --strategy sequential,timeslice --workers 1,2 --repeats 1 --out "$tmp/o" \
	>"$tmp/s1.out" 2>"$tmp/s1.err" &
s1=$!
pids+=("$s1")
wait_for 100 0.05 test -e "$tmp/o/.gpushare-sweep.lock" || true
sleep 0.1
set +e
"$GPUSHARE" "${SPIN[@]}" --strategy sequential,timeslice --workers 1,2 --repeats 1 --out "$tmp/o" --resume \
	>"$tmp/s2.out" 2>"$tmp/s2.err"
rc2=$?
wait "$s1"
rc1=$?
set -e
check "the first sweep completes (exit $rc1)" test "$rc1" -eq 0
[[ $rc2 -eq 6 ]] && grep -q "in use by another sweep (pid $s1)" "$tmp/s2.err" \
	&& ok "the second is refused naming the first (exit 6)" || fail "second sweep: exit $rc2: $(cat "$tmp/s2.err")"
n=$(wc -l <"$tmp/o/results.jsonl")
check "4 records for 4 runs, none twice (got $n)" test "$n" -eq 4

echo "== a sweep killed with SIGKILL holds no lock"
"$GPUSHARE" "${SPIN[@]}" --strategy sequential --workers 1 --repeats 20 --out "$tmp/k" >/dev/null 2>&1 &
k=$!
wait_for 200 0.05 test -s "$tmp/k/results.jsonl" || true
kill -9 "$k"
wait "$k" 2>/dev/null || true
run "${SPIN[@]}" --strategy sequential --workers 1 --repeats 20 --out "$tmp/k" --resume
check "--resume after SIGKILL takes the directory over (exit $rc)" test "$rc" -eq 0

echo "== four reports into one directory at once"
for i in 1 2 3 4; do
	"$GPUSHARE" report "$tmp/o" -q >/dev/null 2>"$tmp/r$i.err" &
	pids+=($!)
done
rrc=0
for p in "${pids[@]: -4}"; do wait "$p" || rrc=$?; done
check "all four reports exit 0 (last failure $rrc)" test "$rrc" -eq 0
check "summary.json is whole" python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$tmp/o/summary.json"
check "no temporary file left" test -z "$(find "$tmp/o" -name '.*.tmp-*')"

echo "== four 'mps start --pipe-dir P' at once"
export GPUSHARE_MPS_CONTROL=$H/fake_mps_control GPUSHARE_NVML_LIBRARY=$H/libfakenvml.so
export FAKE_MPS_READY_DELAY_MS=300
P=$tmp/p/pipe
L=$tmp/p/log
starts=()
for i in 1 2 3 4; do
	"$GPUSHARE" mps start --pipe-dir "$P" --log-dir "$L" --gpus 1 >"$tmp/m$i.out" 2>"$tmp/m$i.err" &
	starts+=($!)
done
src=0
for p in "${starts[@]}"; do wait "$p" || src=$?; done
unset FAKE_MPS_READY_DELAY_MS
check "every start exits 0 (last failure $src: $(cat "$tmp"/m*.err))" test "$src" -eq 0
sleep 0.3
nd=$(daemons_of "$P" | wc -l)
check "exactly one daemon runs ($nd)" test "$nd" -eq 1
na=$(cat "$tmp"/m*.out | grep -c "already running" || true)
check "three starts found it running ($na)" test "$na" -eq 3

echo "== four 'mps stop' at once"
stops=()
for i in 1 2 3 4; do
	timeout 30 "$GPUSHARE" mps stop --pipe-dir "$P" --log-dir "$L" --timeout 5s >"$tmp/t$i.out" 2>"$tmp/t$i.err" &
	stops+=($!)
done
trc=0
for p in "${stops[@]}"; do wait "$p" || trc=$?; done
check "every stop exits 0 (last failure $trc: $(cat "$tmp"/t*.err))" test "$trc" -eq 0
sleep 0.3
nd=$(daemons_of "$P" | wc -l)
check "no daemon left ($nd)" test "$nd" -eq 0

finish "torture (concurrent)"
