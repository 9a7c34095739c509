#!/usr/bin/env bash
# Torture, class "signals at each phase": SIGHUP and SIGQUIT (besides SIGINT
# and SIGTERM) for sweep, report and exporter. A sweep stopped by any of them,
# right at its start or mid-run, ends with exit 130, stops the private MPS
# daemon it started, removes its run directory, leaves only whole records,
# and --resume carries on. A report killed mid-write leaves no half file, and
# the next report removes its temporary files. The exporter stops cleanly.
# (bench's own SIGHUP handling is tested with bench.) A farm started with
# SIGCHLD ignored by its parent still records its failed jobs as failed, and
# one started with SIGTERM blocked still stops on SIGTERM, and one under
# nohup does not stop on SIGHUP.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?}" "${GPUSHARE_WORKER:?}" "${GPUSHARE_TEST_HELPERS:?}"
H=$GPUSHARE_TEST_HELPERS
tmp=$(mktemp -d /tmp/gpushare-torture-sig.XXXXXX)
pids=()
cleanup() {
	kill_pids
	fake_mps_quit_left
	rm -rf "$tmp"
}
trap cleanup EXIT
ln -s "$GPUSHARE_WORKER" "$tmp/gpushare-worker"
export GPUSHARE_WORKER="$tmp/gpushare-worker"
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY FAKE_MPS_START_FAIL FAKE_MPS_READY_DELAY_MS
private_xdg
export GPUSHARE_MPS_CONTROL=$H/fake_mps_control GPUSHARE_NVML_LIBRARY=$H/libfakenvml.so

# shellcheck disable=SC2054 # commas inside option values
SWEEP=(sweep --workload spin --request-us 100us --duration 150ms --warmup 10ms --warmup-requests 1 -q --no-report
	--strategy timeslice,mps --workers 1,2 --repeats 2 --gpu 1)
whole_records() {
	python3 -c '
import json, sys
for l in open(sys.argv[1]):
    json.loads(l)' "$1" 2>/dev/null
}
fake_daemons() { # how many fake MPS daemons of this test run
	local p n=0
	for p in $(pgrep -x fake_mps_contro || true); do
		{ tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null | grep -q "CUDA_MPS_PIPE_DIRECTORY=$tmp/" && n=$((n + 1))
	done
	echo "$n"
}
no_fake_daemons() { [[ $(fake_daemons) -eq 0 ]]; }

for sig in HUP QUIT INT TERM; do
	for phase in start mid; do
		out=$tmp/o-$sig-$phase
		"$GPUSHARE" "${SWEEP[@]}" --out "$out" >"$tmp/s.out" 2>"$tmp/s.err" &
		pid=$!
		if [[ $phase == start ]]; then
			# "At start": once its handlers are in place (the lock file
			# of the results directory comes after them), however slow
			# the machine is; before that the signal's default action
			# would be tested, not gpushare.
			wait_for 600 0.05 test -e "$out/.gpushare-sweep.lock" || true
		else
			wait_for 300 0.05 test -s "$out/results.jsonl" || true
		fi
		kill -"$sig" "$pid"
		rc=0
		wait "$pid" || rc=$?
		check "SIG$sig at $phase: exit 130 (got $rc: $(head -c 200 "$tmp/s.err"))" test "$rc" -eq 130
		# (counted again at each try: the daemon stops after the sweep)
		wait_for 20 0.1 no_fake_daemons || true
		check "SIG$sig at $phase: no MPS daemon left ($(fake_daemons))" test "$(fake_daemons)" -eq 0
		check "SIG$sig at $phase: no run directory left" test -z "$(ls -d "$tmp"/xdg/gpushare/sweep-* 2>/dev/null)"
		if [[ -s "$out/results.jsonl" ]]; then
			check "SIG$sig at $phase: only whole records" whole_records "$out/results.jsonl"
		fi
		if [[ $phase == mid ]]; then
			run "${SWEEP[@]}" --out "$out" --resume
			check "SIG$sig at $phase: --resume completes (exit $rc)" test "$rc" -eq 0
			n=$(wc -l <"$out/results.jsonl")
			check "SIG$sig at $phase: 8 records after resume ($n)" test "$n" -eq 8
		fi
	done
done

echo "== report stopped mid-write"
mkdir "$tmp/big"
python3 - "$tmp/o-HUP-mid/results.jsonl" "$tmp/big/results.jsonl" <<'EOF'
import json, sys
base = json.loads(open(sys.argv[1]).readline())
with open(sys.argv[2], "w") as out:
    for s in range(4):
        for w in (1, 2, 3, 4, 5, 6, 7, 8):
            r = json.loads(json.dumps(base))
            r["cell"]["shape"] = "spin:request-us=%dus" % (s + 1)
            r["cell"]["workers"] = w
            out.write(json.dumps(r) + "\n")
EOF
# 32 runs: about 200 plot files. The signal comes once the first plot is
# in place: while the others are written (report.md and summary.json are
# by then, report.html not yet). The report runs with the signal's default
# disposition: a background job of a script starts with SIGQUIT (and
# SIGINT) ignored, and an ignored SIGQUIT would let it finish untouched.
# The temporary files a killed report leaves stay for the next report.
for sig in HUP QUIT; do
	rm -f "$tmp/big"/report.* "$tmp/big"/summary.*
	[[ -d "$tmp/big/plots" ]] && find "$tmp/big/plots" -type f ! -name '.*' -delete
	(
		trap - QUIT INT
		ulimit -c 0
		exec "$GPUSHARE" report "$tmp/big" -q >/dev/null 2>&1
	) &
	pid=$!
	wait_for 1000 0.02 compgen -G "$tmp/big/plots/*.png" >/dev/null || true
	kill -"$sig" "$pid" 2>/dev/null || true
	rc=0
	wait "$pid" 2>/dev/null || rc=$?
	echo "   (SIG$sig during report: exit $rc, $(find "$tmp/big/plots" -type f 2>/dev/null | wc -l) plot files written)"
	for f in report.md summary.json report.html; do
		if [[ -e "$tmp/big/$f" ]]; then
			case $f in
			summary.json) python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$tmp/big/$f" ;;
			report.html) tail -c 20 "$tmp/big/$f" | grep -q "</html>" ;;
			report.md) test -s "$tmp/big/$f" ;;
			esac && ok "SIG$sig during report: $f is whole" || fail "SIG$sig during report: $f is half written"
		fi
	done
done
echo "   ($(find "$tmp/big" -name '.*.tmp-*' | wc -l) temporary files left by the killed reports)"
run report "$tmp/big" -q
check "the next report succeeds (exit $rc)" test "$rc" -eq 0
check "and removes the temporary files of the killed ones" test -z "$(find "$tmp/big" -name '.*.tmp-*')"

echo "== exporter"
# Each exporter writes its own file: a file shared by the four would let the
# next one's wait see the last one's "serving" before its shell has even
# opened it, and the signal would hit a process that has no handler yet.
for sig in HUP QUIT INT TERM; do
	err=$tmp/e-$sig.err
	"$GPUSHARE" exporter --listen 127.0.0.1:0 >/dev/null 2>"$err" &
	pid=$!
	if ! wait_for 200 0.05 grep -q serving "$err"; then
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		fail "exporter SIG$sig: never said it serves: $(cat "$err")"
		continue
	fi
	kill -"$sig" "$pid"
	rc=0
	wait "$pid" || rc=$?
	[[ $rc -eq 0 ]] && grep -q "stopped by SIG$sig" "$err" && ok "exporter: SIG$sig stops it cleanly (exit 0)" \
		|| fail "exporter SIG$sig: exit $rc: $(cat "$err")"
done

echo "== a disposition inherited from the parent: SIGCHLD ignored"
# The kernel would reap every child itself and every exit status would be
# lost (failed jobs recorded ok): gpushare restores the default at start.
printf 'sh -c "exit 3"\ntrue\nfalse\n' >"$tmp/chld-jobs"
set +e
python3 -c '
import os, signal, sys
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
os.execv(sys.argv[1], sys.argv[1:])' "$GPUSHARE" farm --dir "$tmp/chld" --strategy timeslice --slots 2 -q \
	"$tmp/chld-jobs" >"$tmp/chld.out" 2>"$tmp/chld.err"
rc=$?
set -e
[[ $rc -eq 8 ]] && ok "farm under an ignored SIGCHLD: exit 8 (some jobs failed)" || fail "farm under an ignored SIGCHLD: exit $rc (want 8): $(cat "$tmp/chld.err")"
counts=$("$GPUSHARE" farm status "$tmp/chld" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
s = d.get("summary", d)
print(s["done"], s["failed"])')
[[ $counts == "1 2" ]] && ok "farm under an ignored SIGCHLD: 1 done, 2 failed" || fail "farm under an ignored SIGCHLD: done, failed = $counts (want 1 2)"

echo "== a mask inherited from the parent: SIGTERM and SIGINT blocked"
# They would stay pending and the farm would never stop: gpushare unblocks
# the signals it stops on.
printf 'sleep 60\nsleep 60\n' >"$tmp/mask-jobs"
python3 -c '
import os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
os.execv(sys.argv[1], sys.argv[1:])' "$GPUSHARE" farm --dir "$tmp/mask" --strategy timeslice --slots 2 -q \
	"$tmp/mask-jobs" >"$tmp/mask.out" 2>"$tmp/mask.err" &
pid=$!
pids+=("$pid")
if ! wait_for 100 0.05 catches "$pid" TERM; then
	fail "farm with SIGTERM blocked by its parent: never caught SIGTERM: $(cat "$tmp/mask.err")"
else
	sleep 0.5
	kill -TERM "$pid"
	if wait_for 100 0.1 bash -c '! kill -0 "$1" 2>/dev/null' sh "$pid"; then
		rc=0
		wait "$pid" || rc=$?
		[[ $rc -eq 130 ]] && ok "farm with SIGTERM blocked by its parent: SIGTERM stops it (exit 130)" \
			|| fail "farm with SIGTERM blocked by its parent: exit $rc (want 130): $(cat "$tmp/mask.err")"
	else
		fail "farm with SIGTERM blocked by its parent: still running 10 s (x load) after SIGTERM"
		kill -KILL "$pid" 2>/dev/null || true
	fi
fi

echo "== nohup: an ignored SIGHUP stays ignored"
printf 'sleep 1\nsleep 1\n' >"$tmp/hup-jobs"
nohup "$GPUSHARE" farm --dir "$tmp/hup" --strategy timeslice --slots 2 -q "$tmp/hup-jobs" >"$tmp/hup.out" \
	2>"$tmp/hup.err" </dev/null &
pid=$!
pids+=("$pid")
if wait_for 100 0.05 catches "$pid" TERM; then
	kill -HUP "$pid" 2>/dev/null || true
	rc=0
	wait "$pid" || rc=$?
	[[ $rc -eq 0 ]] && ok "farm under nohup: SIGHUP ignored, every job done (exit 0)" \
		|| fail "farm under nohup: SIGHUP gave exit $rc (want 0): $(cat "$tmp/hup.err")"
else
	fail "farm under nohup: never caught SIGTERM: $(cat "$tmp/hup.err")"
fi

finish "torture (signals)"
