#!/usr/bin/env bash
# End-to-end tests of `gpushare bench -- CMD` (command mode, no GPU): request
# mode with the C test worker (include/gpushare/client.h) and with a Python
# worker (python/gpushare_client.py), the environment each worker gets, job
# mode with a program that never heard of gpushare (/bin/sleep) and with one
# that fails, a command that does not exist, the streams refusal, and workers
# that exit early, exit non-zero, never say ready, write garbage or flood.
# Every case checks the exit status and the message; every run checks that
# no command is left behind.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?}" "${GPUSHARE_TEST_HELPERS:?}" "${GPUSHARE_SOURCE_DIR:?}"
HELPERS=$GPUSHARE_TEST_HELPERS

tmp=$(mktemp -d /tmp/gpushare-cmd-test.XXXXXX)
daemon_dir=
cleanup() {
	if [[ -n "$daemon_dir" ]]; then
		fake_mps_quit "$daemon_dir/pipe"
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

# A private name for the test worker, so pgrep finds only this test's commands.
ln -s "$HELPERS/test_worker" "$tmp/tw"
TW=$tmp/tw
export CUDA_MPS_PIPE_DIRECTORY="$tmp/no-daemon"
unset GPUSHARE_MPS_CONTROL

none_left() {
	local what=$1 i
	for i in 1 2 3 4 5 6 7 8 9 10; do
		pgrep -f "$tmp/" >/dev/null || return 0
		sleep 0.2
	done
	fail "$what: processes left: $(pgrep -af "$tmp/" || true)"
	pkill -KILL -f "$tmp/" || true
}

rc=0
run() {
	rc=0
	"$GPUSHARE" bench -q "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	none_left "$*"
}

# expect STATUS MESSAGE-REGEX WHAT -- bench args
expect() {
	local status=$1 msg=$2 what=$3
	shift 3
	run "$@"
	if [[ $rc -eq $status ]] && grep -Eq -- "$msg" "$tmp/err"; then
		ok "$what: exit $status, '$msg'"
	else
		fail "$what: exit $rc (want $status); stderr: $(head -c 600 "$tmp/err")"
	fi
}

FAST=(--strategy timeslice --workers 3 --duration 1s --warmup 0.2s)

echo "== request mode, C client: timeslice and sequential, environment"
run "${FAST[@]}" --strategy timeslice,sequential --batch 4 --json -- "$TW" --request-us 2000 --env-out "$tmp/env"
if [[ $rc -eq 0 ]] && python3 - "$tmp/out" "$tmp/env" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["config"]["workload"] == "command", d["config"]
assert d["config"]["command"][1:] == ["--request-us", "2000", "--env-out", sys.argv[2]], d["config"]["command"]
assert d["config"]["command_mode"] == "request"
assert not d["partial"]
for r in d["results"]:
    for w in r["workers"]:
        # 2 ms requests: at most 500/s (how near it comes depends on the
        # machine's load: bench/timing_cpu.sh measures it).
        assert 0 < w["requests_per_second"] <= 510, (r["strategy"], w)
        assert w["items"] == 4 * w["requests"], w
        assert not w["failed"], w
lines = open(sys.argv[2]).read().split("\n")
envs = [dict(kv.split("=", 1) for kv in l.split()) for l in lines if l]
assert len(envs) == 6, envs  # 3 concurrent + 3 sequential
assert sorted(e["GPUSHARE_WORKER"] for e in envs) == ["0", "0", "1", "1", "2", "2"], envs
for e in envs:
    assert e["GPUSHARE_WORKERS"] == "3" and e["GPUSHARE_BATCH"] == "4" and e["GPUSHARE_MODE"] == "request", e
    assert e["GPUSHARE_REPORT_FD"].isdigit(), e
    assert e["CUDA_MPS_PIPE_DIRECTORY"].endswith("/no-mps"), e  # never a daemon by accident
EOF
then ok "request mode: every worker measured, GPUSHARE_* set"; else fail "request mode: exit $rc $(head -c 600 "$tmp/err")"; fi

echo "== request mode, --requests R stops each command after R recorded requests"
run --strategy timeslice --workers 2 --requests 50 --warmup 0 --json -- "$TW" --request-us 500
if [[ $rc -eq 0 ]] && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert [w["requests"] for w in d["results"][0]["workers"]] == [50, 50], d["results"][0]["workers"]' "$tmp/out"
then ok "--requests 50: 50 per worker"; else fail "--requests: exit $rc $(head -c 600 "$tmp/err")"; fi

echo "== request mode, Python client; its own timing agrees with gpushare's"
run --strategy timeslice --workers 2 --duration 1.5s --warmup 0.3s --json -- \
	python3 "$GPUSHARE_SOURCE_DIR/tests/helpers/py_worker.py" --request-ms 5 --self "$tmp/self"
if [[ $rc -eq 0 ]] && python3 - "$tmp/out" "$tmp/self" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
ws = d["results"][0]["workers"]
own = {}
for l in open(sys.argv[2]):
    f = l.split()
    own[int(f[1])] = float(f[7])
assert len(own) == 2, own
for w in ws:
    assert w["requests"] > 0, w
    r = own[w["index"]]
    # The script counts its own requests over the same window, on its own clock reads.
    assert abs(r - w["requests_per_second"]) <= 0.05 * w["requests_per_second"], (r, w["requests_per_second"])
print("gpushare", [round(w["requests_per_second"], 1) for w in ws], "script", own)
EOF
then ok "python worker: measured, within 5% of its own count"; else fail "python worker: exit $rc $(head -c 600 "$tmp/err")"; fi

echo "== request mode, Python client that gives up"
expect 10 "worker [12] \(pid [0-9]+\) failed: the command \(pid [0-9]+\) failed: raised on purpose" "python fail" \
	"${FAST[@]}" --workers 2 -- python3 "$GPUSHARE_SOURCE_DIR/tests/helpers/py_worker.py" --raise-after 50 --request-ms 1

echo "== job mode: /bin/sleep knows nothing about gpushare"
run --strategy timeslice --workers 2 --mode job --jobs 4 --json -- /bin/sleep 0.05
if [[ $rc -eq 0 ]] && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
r = d["results"][0]
assert d["config"]["command_mode"] == "job" and d["config"]["warmup_seconds"] == 0, d["config"]
assert r["aggregate"]["requests"] == 8, r["aggregate"]
assert 0.05 <= r["aggregate"]["p50_seconds"] < 1.0, r["aggregate"]
assert 0.05 <= r["aggregate"]["min_seconds"] <= r["aggregate"]["max_seconds"], r["aggregate"]   # the shortest job, exact
assert 0.2 <= r["aggregate"]["window_seconds"] < 4.0, r["aggregate"]   # the makespan of 4 jobs
' "$tmp/out"
then ok "job mode: 8 jobs, wall time >= 50 ms each, makespan >= 0.2 s"; else fail "job mode: exit $rc $(head -c 600 "$tmp/err")"; fi
run --strategy timeslice,sequential --workers 2 --mode job --jobs 3 -- /bin/sleep 0.01
if [[ $rc -eq 0 ]] && grep -q "jobs: 6 in a makespan of" "$tmp/out" && grep -q "3 jobs per worker" "$tmp/out"; then
	ok "job mode table: makespan line"; else fail "job mode table: exit $rc $(cat "$tmp/out" "$tmp/err")"; fi
# 6 jobs: a count column, jobs/s and seconds per job in the header, a p50 but
# no p99 or p99.9 (they would be the maximum), and hyperfine's figures.
row=$(grep '^timeslice ' "$tmp/out" || true)
check "job mode table: the header counts jobs, jobs/s, s/job" \
	grep -Eq '^strategy +workers +jobs +jobs/s +items/s +p50 s/job +p99 s/job +p99.9 s/job ' "$tmp/out"
check "job mode table: 6 jobs, a p50, '-' for p99 and p99.9 ($row)" \
	bash -c "[[ '$row' =~ ^timeslice\ +2\ +6\ +[0-9.k]+\ +[0-9.k]+\ +[0-9.]+\ [mu]?s\ +-\ +-\ +[0-9.]+ ]]"
check "job mode table: mean ± σ, min … max and the count, saying p99 needs 100 jobs" \
	grep -Eq '^  time per job: mean ± σ [0-9.]+ [mu]?s ± [0-9.]+ [mu]?s, min … max [0-9.]+ [mu]?s … [0-9.]+ [mu]?s, 6 jobs \(too few for p99, 100 needed; p99.9, 1000\)$' "$tmp/out"
check "job mode table: no req/s" bash -c "! grep -q 'req/s' '$tmp/out'"
run --strategy timeslice --workers 2 --mode job --jobs 60 -- /bin/true
check "job mode table: 120 jobs give a p99 but no p99.9 ($(grep '^timeslice ' "$tmp/out"))" \
	bash -c "grep -Eq '^timeslice +2 +120 +[0-9.k]+ +[0-9.k]+ +[0-9.]+ [mu]?s +[0-9.]+ [mu]?s +- ' '$tmp/out' && grep -q ', 120 jobs (too few for p99.9, 1000 needed)$' '$tmp/out'"

echo "== job mode for a duration, with the environment"
# A job of 20 ms of work takes its start-up too (157-219 ms measured under
# ASan on a busy machine): the bounds follow each worker's own job time, not
# a quiet machine's.
# A window of TIME_FACTOR seconds (tests/cli/lib.sh): on a loaded machine a
# job's process takes a while to start, and each worker must finish one.
run --strategy timeslice --workers 2 --mode job --duration "${TIME_FACTOR}s" --json -- "$TW" --job --request-us 20000 --env-out "$tmp/jenv"
if [[ $rc -eq 0 ]] && python3 - "$tmp/out" "$tmp/jenv" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["results"][0]
window = r["aggregate"]["window_seconds"]
for w in r["workers"]:
    # At least one job, and no more than 20 ms jobs could fill the window.
    assert 1 <= w["requests"] <= window / 0.02 + 1, (w, window)
envs = [dict(kv.split("=", 1) for kv in l.split()) for l in open(sys.argv[2]) if l.strip()]
assert all(e["GPUSHARE_REPORT_FD"] == "-" and e["GPUSHARE_MODE"] == "job" for e in envs), envs
import collections
jobs = collections.Counter(int(e["GPUSHARE_JOB"]) for e in envs)
# Each of the 2 workers numbers its jobs 0, 1, ... without a gap.
assert jobs[0] == 2 and set(jobs) == set(range(max(jobs) + 1)) and max(jobs.values()) <= 2, jobs
EOF
then ok "job mode --duration: jobs counted, GPUSHARE_JOB numbered"; else fail "job --duration: exit $rc $(head -c 600 "$tmp/err")"; fi

echo "== job mode: a job that fails"
expect 10 "worker [12] .*job 2 \(pid [0-9]+\) exited with status 3" "failing job" \
	--strategy timeslice --workers 2 --mode job --jobs 5 -- "$TW" --job --request-us 1000 --fail-job 2 --exit-code 3

echo "== errors before anything starts"
expect 2 "cannot run command 'no-such-command-gpushare': 'no-such-command-gpushare' not found in PATH" \
	"missing command" "${FAST[@]}" -- no-such-command-gpushare --flag
[[ ! -s "$tmp/out" ]] && ok "missing command: nothing measured" || fail "missing command printed results"
expect 2 "is not a regular file" "a directory as command" "${FAST[@]}" -- /tmp
expect 2 "streams strategy cannot run a command" "streams" --strategy timeslice,streams -- "$TW"
expect 2 "no command after '--'" "empty command" "${FAST[@]}" --
expect 2 "--jobs needs --mode job" "--jobs in request mode" "${FAST[@]}" --jobs 3 -- "$TW"
expect 2 "give --workload or a command" "--workload with a command" --workload spin -- "$TW"
expect 2 "--mode, --jobs and --preload apply to a command" "--mode without a command" --mode job --workload spin

echo "== misbehaving commands: reported, stopped; the others carry on"
check_others() {
	local what=$1 bad=$2
	python3 - "$tmp/out" "$bad" <<'EOF' && ok "$what: the other workers measured" || fail "$what: others: $(cat "$tmp/out")"
import json, sys
d = json.load(open(sys.argv[1]))
bad = int(sys.argv[2])
assert d["partial"], d
r = d["results"][0]
assert r["failure"]["worker"] == bad, r["failure"]
for w in r["workers"]:
    if w["index"] == bad:
        assert w["failed"], w
    else:
        assert not w["failed"] and w["requests"] > 0, w
EOF
}
expect 10 "worker 2 \(pid [0-9]+\) failed: the command \(pid [0-9]+\) exited with status 3 mid-run" "non-zero exit mid-run" \
	"${FAST[@]}" --json -- "$TW" --request-us 1000 --exit-after 50 --exit-code 3 --only-worker 1
check_others "non-zero exit" 1
check "  how it ended said once (got: $(cat "$tmp/err"))" test "$(grep -o 'exited with status 3' "$tmp/err" | wc -l)" = 1
expect 10 "worker 3 .*exited with status 0 before the end of the run" "early exit 0" \
	"${FAST[@]}" --json -- "$TW" --request-us 1000 --exit-after 50 --only-worker 2
check_others "early exit" 2
expect 10 "worker 2 .*protocol error from the command .*not printable text; it was stopped" "garbage" \
	"${FAST[@]}" --json -- "$TW" --request-us 1000 --garbage --only-worker 1
check_others "garbage" 1
expect 10 "worker 1 .*protocol error .*longer than 256 bytes" "flood" \
	"${FAST[@]}" --json -- "$TW" --request-us 1000 --flood --only-worker 0
check_others "flood" 0
expect 10 "worker 2 .*did not exit within .* of 'stop'" "ignores stop" \
	"${FAST[@]}" --json -- "$TW" --request-us 1000 --ignore-stop --only-worker 1
expect 8 "worker 2 \(pid [0-9]+\) failed to start: the command \(pid [0-9]+\) exited with status 4 before it said ready" \
	"exit before ready" "${FAST[@]}" -- "$TW" --exit-now --exit-code 4 --only-worker 1
expect 8 "failed to start: protocol error .*first message must be 'hello 1'" "no hello" \
	"${FAST[@]}" -- "$TW" --no-hello --only-worker 2
SECONDS=0
expect 12 "worker 1 was not ready after 1 s \(--start-timeout\)" "never ready" \
	"${FAST[@]}" --start-timeout 1s -- "$TW" --never-ready --only-worker 0
[[ $SECONDS -le $((4 * TIME_FACTOR)) ]] && ok "never ready: stopped promptly (${SECONDS}s, bound 4 s x $TIME_FACTOR)" \
	|| fail "never ready took ${SECONDS}s"

echo "== interrupt: SIGINT stops the commands, partial results printed"
"$GPUSHARE" bench -q --strategy timeslice --workers 2 --duration 30s --warmup 0 -- "$TW" >"$tmp/out" 2>"$tmp/err" &
pid=$!
# Once its handler is in place and both commands run (a loaded machine may
# take longer than any fixed pause), and a little into the measurement.
wait_for 100 0.05 catches "$pid" INT || true
wait_for 200 0.05 bash -c "[ \"\$(pgrep -fc -- '^$TW')\" -ge 2 ]" || true
sleep 1
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
none_left "interrupt"
[[ $rc -eq 130 ]] && grep -q "interrupted" "$tmp/out" && ok "interrupt: exit 130" || fail "interrupt: exit $rc $(cat "$tmp/err")"

if [[ -x "$HELPERS/fake_mps_control" ]]; then
	echo "== mps-split with the fake control program: the client environment reaches the command"
	export GPUSHARE_MPS_CONTROL="$HELPERS/fake_mps_control"
	run --strategy mps-split --workers 2 --duration 0.5s --warmup 0.1s --thread-percentage 30,60 -- \
		"$TW" --env-out "$tmp/menv"
	if [[ $rc -eq 0 ]] && grep -q "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30$" "$tmp/menv" \
		&& grep -q "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=60$" "$tmp/menv" && ! grep -q "no-mps" "$tmp/menv"; then
		ok "mps-split: limits and the daemon's pipe directory reach the command"
	else
		fail "mps-split: exit $rc $(head -c 600 "$tmp/err") $(cat "$tmp/menv" 2>/dev/null)"
	fi
	unset GPUSHARE_MPS_CONTROL
fi

finish command-mode
