#!/usr/bin/env bash
# Torture, class "malformed arguments and misleading messages": duplicate keys
# (--mem-limit 0=1G,0=2G, spin:request-us=5us:request-us=6us), empty list
# items (--gpus ,,,), an unknown value shown as unknown (not -1%) in the bench
# table, `mps status --pipe-dir P` showing P's daemon's log and not the
# default one, a start timeout whose message does not send the user to a
# removed run directory, "cannot be executed" for a control program that
# exists, and messages that do not say the same thing twice.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?}" "${GPUSHARE_WORKER:?}" "${GPUSHARE_TEST_HELPERS:?}"
H=$GPUSHARE_TEST_HELPERS
tmp=$(mktemp -d /tmp/gpushare-torture-inputs.XXXXXX)
pipes=()
cleanup() {
	local p
	for p in "${pipes[@]}"; do fake_mps_quit "$p"; done
	fake_mps_quit_left
	rm -rf "$tmp"
}
trap cleanup EXIT
ln -s "$GPUSHARE_WORKER" "$tmp/gpushare-worker"
export GPUSHARE_WORKER="$tmp/gpushare-worker"
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY FAKE_MPS_START_FAIL FAKE_MPS_READY_DELAY_MS FAKE_NVML_NOT_SUPPORTED
private_xdg
export GPUSHARE_MPS_CONTROL=$H/fake_mps_control GPUSHARE_NVML_LIBRARY=$H/libfakenvml.so
DEF_PIPE=$tmp/xdg/gpushare/mps/pipe
pipes+=("$DEF_PIPE")

expect() { # expect STATUS TEXT DESCRIPTION
	if [[ $rc -eq $1 ]] && grep -q -- "$2" "$tmp/err"; then ok "$3"; else
		fail "$3: exit $rc (want $1 and '$2'): $(head -c 400 "$tmp/err")"; fi
}

echo "== duplicate keys and empty items"
run mps start --gpus 1 --mem-limit 0=1G,0=2G
expect 2 "given twice" "mps start --mem-limit 0=1G,0=2G: exit 2"
run mps start --gpus 1 --mem-limit 0=1G,,1=2G
expect 2 "empty item" "mps start --mem-limit 0=1G,,1=2G: exit 2"
run mps start --gpus ,,,
expect 2 "empty item" "mps start --gpus ,,,: exit 2"
[[ ! -e "$DEF_PIPE/nvidia-cuda-mps-control.pid" ]] && ok "no daemon started for --gpus ,,," || fail "a daemon started"
run sweep --workload spin:request-us=5us:request-us=6us --duration 50ms --warmup 10ms --repeats 1 --strategy sequential --workers 1 -q --no-report --out "$tmp/s"
expect 2 "given twice" "sweep spin:request-us=5us:request-us=6us: exit 2"
run sweep --workload spin:request-us=abc --out "$tmp/s"
expect 2 "'abc' is not a duration" "request-us=abc: the reason is given"
if grep -q "(in 'spin:request-us=abc')" "$tmp/err" && grep -q "invalid --workload 'spin:request-us=abc'" "$tmp/err"; then
	fail "the shape is named twice: $(cat "$tmp/err")"
else ok "the shape is named once"; fi

echo "== unknown is unknown in the table"
FAKE_NVML_NOT_SUPPORTED=nvmlDeviceGetUtilizationRates run bench --workload spin --duration 300ms --warmup 10ms \
	--workers 1 --strategy timeslice --gpu 0
if grep -q "gpu: util" "$tmp/out"; then
	! grep -q -- "-1%" "$tmp/out" && grep -q "utilization not measured" "$tmp/out" && ok "utilization not measured, not -1%" \
		|| fail "table: $(grep "gpu:" "$tmp/out")"
else
	fail "no telemetry line: $(cat "$tmp/out" "$tmp/err")"
fi

echo "== mps status --pipe-dir P shows P's log, not the default daemon's"
run mps start --gpus 1
check "default daemon started (exit $rc)" test "$rc" -eq 0
echo "DEFAULT-DAEMON-LOG-LINE" >>"$tmp/xdg/gpushare/mps/log/control.log"
mkdir -m 0700 "$tmp/p2" "$tmp/l2"
pipes+=("$tmp/p2")
run mps start --gpus 1 --pipe-dir "$tmp/p2" --log-dir "$tmp/l2"
check "second daemon started (exit $rc)" test "$rc" -eq 0
echo "SECOND-DAEMON-LOG-LINE" >>"$tmp/l2/control.log"
run mps status --pipe-dir "$tmp/p2" --log 5
! grep -q "DEFAULT-DAEMON-LOG-LINE" "$tmp/out" && ok "not the default daemon's log" \
	|| fail "status --pipe-dir showed the default daemon's log"
grep -q "^  log dir  $tmp/l2\$" "$tmp/out" && ok "its own daemon's log directory (from its environment)" \
	|| fail "status --pipe-dir: $(cat "$tmp/out")"
fake_mps_quit "$tmp/p2"

echo "== a control program that exists but cannot be executed"
cp "$H/fake_mps_control" "$tmp/noexec"
chmod 0644 "$tmp/noexec"
GPUSHARE_MPS_CONTROL=$tmp/noexec run mps start --pipe-dir "$tmp/p3" --log-dir "$tmp/l3"
expect 4 "cannot be executed" "not executable: said so (exit 4), not 'not found'"
mkdir -m 0700 "$tmp/ctl-dir"
for c in "mps start --pipe-dir $tmp/p3 --log-dir $tmp/l3" "farm --dir $tmp/f3 --range 1..2 -- true"; do
	# shellcheck disable=SC2086  # the command's words
	GPUSHARE_MPS_CONTROL=$tmp/ctl-dir run $c
	expect 4 "not a regular file" "a directory as the control program: ${c%% --*}: exit 4, not 7 (no GPU)"
done

echo "== a start timeout does not send the user to a removed directory"
mkdir -m 0700 "$tmp/p4" "$tmp/l4"
pipes+=("$tmp/p4")
FAKE_MPS_READY_DELAY_MS=$((1500 * TIME_FACTOR)) run mps start --gpus 1 --pipe-dir "$tmp/p4" --log-dir "$tmp/l4" \
	--timeout $((300 * TIME_FACTOR))ms
expect 12 "control.log" "mps start timeout: the log's last lines are quoted, or said to be empty (exit 12)"
fake_mps_quit "$tmp/p4"
sleep $((2 * TIME_FACTOR))
fake_mps_quit "$tmp/p4"

echo "== messages say things once"
run mps status --pipe-dir "$tmp/none"
run mps set --thread-percentage 20 --pipe-dir "$tmp/none"
if grep -q "no MPS control daemon running: no MPS control daemon" "$tmp/err"; then
	fail "repeated: $(cat "$tmp/err")"
else ok "mps set without a daemon: said once ($(cat "$tmp/err"))"; fi
GPUSHARE_MPS_CONTROL=/nonexistent/ctl run mps start --pipe-dir "$tmp/p5" --log-dir "$tmp/l5"
if grep -q "not found: '/nonexistent/ctl' not found" "$tmp/err"; then fail "repeated: $(cat "$tmp/err")"; else
	ok "missing control program: said once ($(cat "$tmp/err"))"; fi

finish "torture (inputs)"
