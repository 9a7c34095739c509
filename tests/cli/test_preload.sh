#!/usr/bin/env bash
# --preload (no GPU): a Python worker started once, its workers forked at its
# first gpushare call. Checks that it starts once for a whole sweep, that
# every worker gets its own run's environment (batch, index, the strategy's
# MPS variables under the stand-in daemon) and not the server's, that a
# worker's exit status is its run's, that a command which cannot be
# preloaded (a thread before the first call, an exit) falls back to starting
# as usual with a warning, that a server killed mid-sweep is started again,
# that tune keeps a run's workers warm for the next run of the same
# environment (protocols 1 and 2; --fresh-workers forks each), and that
# nothing is left after SIGINT or SIGKILL of gpushare.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?}" "${GPUSHARE_TEST_HELPERS:?}" "${GPUSHARE_SOURCE_DIR:?}"
HELPERS=$GPUSHARE_TEST_HELPERS

tmp=$(mktemp -d /tmp/gpushare-preload-test.XXXXXX)
cleanup() {
	pkill -KILL -f "$tmp/|^sleep 301$" 2>/dev/null || true
	fake_mps_quit_left
	if [[ -d "$tmp/mps" ]]; then
		CUDA_MPS_PIPE_DIRECTORY=$tmp/mps "$HELPERS/fake_mps_control" <<<quit >/dev/null 2>&1 || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
# The runs' own MPS daemons live under $tmp (a killed tune leaves its daemon
# for the next run to stop; cleanup quits it).
private_xdg

# A private path to the worker, so that pgrep finds only this test's processes.
cp "$GPUSHARE_SOURCE_DIR/tests/helpers/py_preload.py" "$tmp/w.py"
mkdir -p "$tmp/python"
cp "$GPUSHARE_SOURCE_DIR/python/gpushare_client.py" "$tmp/python/"
sed -i "s|os.path.join(os.path.dirname(os.path.abspath(__file__)), \"..\", \"..\", \"python\")|\"$tmp/python\"|" "$tmp/w.py"
W=(python3 "$tmp/w.py")
export CUDA_MPS_PIPE_DIRECTORY="$tmp/no-daemon"
export GPUSHARE_MPS_CONTROL="$HELPERS/fake_mps_control"

# In this shell (a 'bash -c' would find itself).
gone() { ! pgrep -f "$1" >/dev/null; }
none_left() {
	local what=$1
	if wait_for 25 0.2 gone "$tmp/|^sleep 301\$"; then
		ok "$what: nothing left"
	else
		fail "$what: processes left: $(pgrep -af "$tmp/|^sleep 301\$" || true)"
		pkill -KILL -f "$tmp/|^sleep 301\$" || true
	fi
}

starts() { grep -c '^start ' "$1" || true; }

SW=(sweep --no-report --duration 200ms --warmup 50ms --start-timeout 60s)

echo "== one start for a whole sweep; each worker has its run's environment"
run "${SW[@]}" --out "$tmp/s1" --strategy timeslice,mps-split --workers 1,2 --batch 1,3 --repeats 1 --preload \
	-- "${W[@]}" --log "$tmp/log1" --import-s 0.5
[[ $rc -eq 0 ]] && ok "sweep --preload: exit 0" || fail "sweep --preload: exit $rc: $(tail -c 800 "$tmp/err")"
check "the command started once for 8 runs" test "$(starts "$tmp/log1")" -eq 1
check "12 workers (4 runs x 1 + 4 runs x 2)" test "$(grep -c '^worker ' "$tmp/log1")" -eq 12
check "notice: loaded, and forks from it" grep -q "preload: python3 (pid [0-9]*) loaded in .* s; each run forks its workers from it" "$tmp/err"
server=$(sed -n 's/^start //p' "$tmp/log1")
python3 - "$tmp/log1" "$server" <<'PY' && ok "workers: forked from the server, distinct, with each run's batch, index and MPS share; no preload socket" || fail "workers: $(cat "$tmp/log1")"
import collections, sys
lines = [l.split() for l in open(sys.argv[1]) if l.startswith("worker ")]
server = sys.argv[2]
pids = [l[1] for l in lines]
assert len(set(pids)) == len(pids) and server not in pids, pids
assert all(l[2] == server for l in lines), "parent is not the server"
kv = [dict(x.split("=", 1) for x in l[3:]) for l in lines]
assert all(k["preload_fd"] == "0" for k in kv)
assert collections.Counter(k["batch"] for k in kv) == {"1": 6, "3": 6}, kv
assert collections.Counter(k["worker"] for k in kv) == {"0/1": 4, "0/2": 4, "1/2": 4}, kv
split = [k for k in kv if k["pct"] != "-"]
# mps-split runs: 1 worker at 100%, 2 workers at 50% each; every one with the daemon's pipe directory
assert collections.Counter(k["pct"] for k in split) == {"100": 2, "50": 4}, split
assert all(k["pipe"].endswith("pipe") or "mps" in k["pipe"] for k in split), split
assert all(k["pipe"] == "-" or k["pct"] != "-" or True for k in kv)
PY
python3 - "$tmp/s1/results.jsonl" <<'PY' && ok "8 runs recorded ok" || fail "results: $(head -c 600 "$tmp/s1/results.jsonl")"
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
assert len(runs) == 8 and all(r["status"] == "ok" for r in runs), [r["status"] for r in runs]
assert all(r["bench"]["config"]["preload"] and r["bench"]["preloaded"] for r in runs), "recorded as preloaded"
PY
none_left "sweep --preload"

echo "== without --preload: one start per worker (what --preload saves)"
run "${SW[@]}" --out "$tmp/s0" --strategy timeslice --workers 1,2 --repeats 1 -- "${W[@]}" --log "$tmp/log0"
check "without --preload: 3 starts for 3 workers" test "$(starts "$tmp/log0")" -eq 3

echo "== bench --preload: a worker's exit status is its run's"
run bench -q --strategy timeslice --workers 2 --duration 200ms --warmup 50ms --preload -- "${W[@]}" --log "$tmp/log2" \
	--exit-after-ready 7
[[ $rc -ne 0 ]] && grep -q "exited with status 7" "$tmp/err" && ok "a forked worker's exit 7 fails the run (exit $rc)" \
	|| fail "exit 7: exit $rc: $(tail -c 600 "$tmp/err")"
none_left "bench, failing workers"

echo "== a command that cannot be preloaded starts as usual, with a warning"
run "${SW[@]}" --out "$tmp/s3" -q --strategy timeslice --workers 2 --repeats 1 --preload -- "${W[@]}" --log "$tmp/log3" --thread
[[ $rc -eq 0 ]] && ok "a thread before the first call: the runs still succeed" || fail "thread: exit $rc: $(tail -c 600 "$tmp/err")"
check "  ... warning says why, even with -q" grep -q "warning: --preload: the command cannot be preloaded: the program runs 2 Python threads" "$tmp/err"
check "  ... the refused server and then each worker started (3 starts)" test "$(starts "$tmp/log3")" -eq 3
check "  ... recorded as asked for and not preloaded" python3 -c '
import json, sys
r = json.loads(open(sys.argv[1]).readline())
assert r["bench"]["config"]["preload"] is True and r["bench"]["preloaded"] is False' "$tmp/s3/results.jsonl"
run "${SW[@]}" --out "$tmp/s4" -q --strategy timeslice --workers 1 --repeats 2 --preload -- "${W[@]}" --log "$tmp/log4" \
	--exit-if-preload 3
[[ $rc -eq 0 ]] && ok "an exit before the first call: the runs still succeed" || fail "exit before: exit $rc: $(tail -c 600 "$tmp/err")"
check "  ... warning: exited with status 3 before its first gpushare call" \
	grep -q "warning: --preload: the command exited with status 3 before its first gpushare call" "$tmp/err"
check "  ... tried once, not again at the second run (3 starts)" test "$(starts "$tmp/log4")" -eq 3
none_left "refusals"

echo "== usage"
run bench --preload --workload spin --duration 100ms
[[ $rc -eq 2 ]] && grep -q "apply to a command given after '--'" "$tmp/err" && ok "--preload without a command: exit 2" \
	|| fail "--preload without a command: exit $rc $(cat "$tmp/err")"
run bench --preload --mode job -- true
[[ $rc -eq 2 ]] && grep -q "preload forks request-mode workers" "$tmp/err" && ok "--preload --mode job: exit 2" \
	|| fail "--preload --mode job: exit $rc $(cat "$tmp/err")"

echo "== the server killed mid-sweep is started again"
"$GPUSHARE" "${SW[@]}" --out "$tmp/s5" --strategy timeslice --workers 1 --repeats 6 --duration 1s --preload \
	-- "${W[@]}" --log "$tmp/log5" >"$tmp/out" 2>"$tmp/err" &
pid=$!
wait_for 300 0.05 grep -q "loaded in" "$tmp/err" || true
wait_for 300 0.05 bash -c "[ \"\$(grep -c '^worker ' '$tmp/log5' 2>/dev/null)\" -ge 2 ]" || true
kill -KILL "$(sed -n '1s/^start //p' "$tmp/log5")" || true
rc=0
wait "$pid" || rc=$?
check "  ... warning: the preloaded command was killed; started again" \
	grep -q "warning: --preload: the preloaded command (pid [0-9]*) was killed by signal 9 (SIGKILL); starting it again" "$tmp/err"
check "  ... 2 starts" test "$(starts "$tmp/log5")" -eq 2
python3 - "$tmp/s5/results.jsonl" <<'PY' && ok "  ... 6 runs recorded, at most one failed, the last ok" || fail "  ... results: $(cut -c1-200 "$tmp/s5/results.jsonl")"
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
bad = [r for r in runs if r["status"] != "ok"]
assert len(runs) == 6 and len(bad) <= 1 and runs[-1]["status"] == "ok", [
    (r["status"], r.get("error"), [(x.get("reason"), x.get("failure")) for x in r["bench"]["results"]] if r.get("bench") else None)
    for r in runs]
PY
none_left "server killed"

echo "== tune --preload keeps a run's workers warm for the next run of the same environment"
TU=(tune --no-report --json --strategy timeslice,mps --workers 1,2,3 --duration 200ms --warmup 50ms --max-repeats 2
	--start-timeout 60s)
for v in 1 2; do
	extra=()
	[[ $v == 2 ]] && extra=(--v2)
	run "${TU[@]}" --out "$tmp/t$v" --preload -- "${W[@]}" --log "$tmp/logt$v" "${extra[@]}"
	[[ $rc -eq 0 ]] && ok "tune --preload (protocol $v): exit 0" || fail "tune --preload (protocol $v): exit $rc: $(tail -c 800 "$tmp/err")"
	python3 - "$tmp/logt$v" "$tmp/t$v" <<'PY' && ok "  ... probes on kept workers: 6 forks for 12 workers' probes; round 2 backwards; every run's workers numbered 0..N-1" || fail "  ... $(tail -c 1500 "$tmp/logt$v")"
import json, sys
log, d = sys.argv[1], sys.argv[2]
lines = [l.split() for l in open(log)]
assert sum(1 for l in lines if l[0] == "start") == 1
forks = [l for l in lines if l[0] == "worker"]
runs = [l for l in lines if l[0] == "run"]
probes = [json.loads(l) for l in open(d + "/probes.jsonl")]
full = [json.loads(l) for l in open(d + "/results.jsonl")]
assert len(probes) == 6 and all(r["status"] == "ok" for r in probes + full), [r["status"] for r in probes + full]
n_probe = sum(r["cell"]["workers"] for r in probes)
n_full = sum(r["cell"]["workers"] for r in full)
assert len(runs) == n_probe + n_full, (len(runs), n_probe, n_full)
# The probe round: each strategy's 3 workers forked once, then 2 and 1 of them kept.
probe_forks = n_runs = 0
for l in lines:  # the forks before the probe round's last worker measured
    probe_forks += l[0] == "worker"
    n_runs += l[0] == "run"
    if n_runs == n_probe:
        break
assert probe_forks == 6, (probe_forks, [r["cell"]["key"] for r in probes])
assert len(forks) < len(runs), (len(forks), len(runs))
# Every other full round runs backwards (it starts where the last one ended).
r0 = [r["cell"]["key"] for r in full if r["repeat"] == 0]
r1 = [r["cell"]["key"] for r in full if r["repeat"] == 1]
assert [k for k in reversed(r0) if k in r1] == r1, (r0, r1)
# Each run's workers (in log order, runs one after another) are 0..N-1 of N.
i = 0
for r in probes + full:
    n = r["cell"]["workers"]
    got = sorted(int(l[2].split("=")[1].split("/")[0]) for l in runs[i:i + n])
    assert got == list(range(n)) and all(l[2].endswith("/%d" % n) for l in runs[i:i + n]), (r["cell"]["key"], runs[i:i + n])
    i += n
PY
done
none_left "tune --preload, workers kept"
run "${TU[@]}" --out "$tmp/t3" --preload --fresh-workers -- "${W[@]}" --log "$tmp/logt3"
[[ $rc -eq 0 ]] && ok "tune --preload --fresh-workers: exit 0" || fail "--fresh-workers: exit $rc: $(tail -c 800 "$tmp/err")"
check "  ... one fork per worker and run" test "$(grep -c '^worker ' "$tmp/logt3")" -eq "$(grep -c '^run ' "$tmp/logt3")"

echo "== kept workers end with gpushare: SIGKILL mid-tune"
"$GPUSHARE" "${TU[@]}" --out "$tmp/t4" --duration 1s --preload -- "${W[@]}" --log "$tmp/logt4" >"$tmp/out" 2>"$tmp/err" &
pid=$!
wait_for 300 0.05 bash -c "[ \"\$(grep -c '^run ' '$tmp/logt4' 2>/dev/null)\" -ge 6 ]" || true
kill -KILL "$pid"
wait "$pid" || true
if wait_for 25 0.2 gone "$tmp/w.py"; then
	ok "SIGKILL mid-tune: the server and its kept workers gone"
else
	fail "SIGKILL mid-tune: left: $(pgrep -af "$tmp/" || true)"
fi

echo "== nothing outlives gpushare: SIGINT, then SIGKILL, mid-run (workers leave background processes)"
for sig in INT KILL; do
	: >"$tmp/log6"
	"$GPUSHARE" "${SW[@]}" --out "$tmp/s6-$sig" --strategy timeslice --workers 2 --repeats 3 --duration 5s --preload \
		-- "${W[@]}" --log "$tmp/log6" --background >"$tmp/out" 2>"$tmp/err" &
	pid=$!
	wait_for 300 0.05 bash -c "[ \"\$(grep -c '^worker ' '$tmp/log6' 2>/dev/null)\" -ge 2 ]" || true
	sleep 0.5
	kill "-$sig" "$pid"
	rc=0
	wait "$pid" || rc=$?
	if [[ $sig == INT ]]; then
		[[ $rc -eq 130 ]] && ok "SIGINT: exit 130" || fail "SIGINT: exit $rc: $(tail -c 400 "$tmp/err")"
	fi
	# The background sleeps are in the workers' groups: an orderly stop (SIGINT)
	# ends them; after SIGKILL of gpushare its workers die with it (as commands
	# started without --preload do) and what they left in the background is
	# not followed.
	if [[ $sig == INT ]]; then
		none_left "SIGINT"
	else
		if wait_for 25 0.2 gone "$tmp/w.py"; then
			ok "SIGKILL: the server and its workers gone"
		else
			fail "SIGKILL: left: $(pgrep -af "$tmp/" || true)"
		fi
	fi
	pkill -KILL -f "^sleep 301$" 2>/dev/null || true
done

finish preload
