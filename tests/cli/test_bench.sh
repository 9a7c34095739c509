#!/usr/bin/env bash
# End-to-end tests of `gpushare bench` with the spin workload (no GPU):
# strategies timeslice, sequential and streams (mps with the fake control
# program when it exists), JSON and CSV output, a worker crash mid-run, an
# interrupt, an init failure as CUDA error 808, bad options, and the refusal
# of timeslice while an MPS daemon answers. Every case checks that no worker
# is left behind.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?}" "${GPUSHARE_WORKER:?}"
HELPERS=${GPUSHARE_TEST_HELPERS:-}

tmp=$(mktemp -d /tmp/gpushare-bench-test.XXXXXX)
daemon_dir=
cleanup() {
	if [[ -n "$daemon_dir" && -n "$HELPERS" ]]; then
		fake_mps_quit "$daemon_dir/pipe"
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

# A private name for the worker, so pgrep finds only this test's workers.
ln -s "$GPUSHARE_WORKER" "$tmp/gpushare-worker"
export GPUSHARE_WORKER="$tmp/gpushare-worker"
# Workers must never find a daemon by accident (the timeslice check looks here).
export CUDA_MPS_PIPE_DIRECTORY="$tmp/no-daemon"
unset GPUSHARE_MPS_CONTROL

no_workers_left() {
	local what=$1 i
	for i in 1 2 3 4 5 6 7 8 9 10; do
		pgrep -f "$tmp/gpushare-worker" >/dev/null || { ok "$what: no worker left"; return 0; }
		sleep 0.2
	done
	fail "$what: workers left: $(pgrep -af "$tmp/gpushare-worker" || true)"
}

SPIN=(bench --workload spin --duration 1s --warmup 200ms --request-us 200us --quiet)

echo "== timeslice, sequential, streams with 3 workers: JSON"
run "${SPIN[@]}" --workers 3 --strategy timeslice,sequential,streams --json --out "$tmp/doc.json"
if [[ $rc -ne 0 ]]; then fail "json run exited $rc: $(cat "$tmp/err")"; fi
if python3 - "$tmp/out" "$tmp/doc.json" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
assert json.load(open(sys.argv[2])) .keys() == doc.keys(), "--out differs from stdout"
for k in ("metadata", "config", "results", "partial", "interrupted", "ceiling"):
    assert k in doc, "missing " + k
m = doc["metadata"]
for k in ("gpushare_version", "date", "host", "gpu", "driver_version", "command_line"):
    assert k in m, "metadata missing " + k
assert m["date"].endswith("Z") and "T" in m["date"], m["date"]
assert m["command_line"][:2] == ["gpushare", "bench"], m["command_line"]
assert doc["config"]["workers"] == 3 and doc["config"]["workload"] == "spin"
assert [r["strategy"] for r in doc["results"]] == ["timeslice", "sequential", "streams"]
assert not doc["partial"] and not doc["interrupted"]
for r in doc["results"]:
    a = r["aggregate"]
    assert len(r["workers"]) == 3, r["strategy"]
    for w in r["workers"]:
        assert w["requests"] > 0, (r["strategy"], w)
        assert w["p50_seconds"] > 0 and w["max_seconds"] >= w["p99_seconds"] >= w["p50_seconds"]
        assert w["exit_code"] == 0 and not w["failed"], w
    assert a["requests"] == sum(w["requests"] for w in r["workers"])
    tot = sum(w["requests_per_second"] for w in r["workers"])
    if r["strategy"] == "sequential":
        # one at a time: total over the sum of the windows
        expect = a["requests"] / sum(w["window_seconds"] for w in r["workers"])
        assert abs(a["requests_per_second"] - expect) <= 1e-6 * expect, (a, expect)
    else:
        assert abs(a["requests_per_second"] - tot) <= 0.01 * tot, (r["strategy"], a["requests_per_second"], tot)
    assert 0 < a["fairness"] <= 1
    # streams: one process for all slots
    if r["strategy"] == "streams":
        assert len({w["pid"] for w in r["workers"]}) == 1
    else:
        assert len({w["pid"] for w in r["workers"]}) == 3
print("json checks passed")
EOF
then ok "JSON fields, request counts, aggregate = sum of workers"; else fail "JSON checks"; fi
no_workers_left "json run"
if [[ -n "${GPUSHARE_SOURCE_DIR:-}" ]] && python3 -c 'import jsonschema' 2>/dev/null; then
	python3 - "$GPUSHARE_SOURCE_DIR/docs/bench-schema.json" "$tmp/doc.json" <<'EOF2' \
		&& ok "JSON valid against docs/bench-schema.json" || fail "JSON does not match the schema"
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
jsonschema.Draft202012Validator(schema).validate(json.load(open(sys.argv[2])))
EOF2
else
	missing_tool "schema validation: python3 jsonschema not installed (Debian package python3-jsonschema)"
fi

echo "== CSV: header and N+1 rows per strategy"
run "${SPIN[@]}" --workers 2 --strategy timeslice,streams --csv
if [[ $rc -ne 0 ]]; then fail "csv run exited $rc: $(cat "$tmp/err")"; fi
if python3 - "$tmp/out" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for s in ("timeslice", "streams"):
    mine = [r for r in rows if r["strategy"] == s]
    assert len(mine) == 3, (s, len(mine))
    assert [r["row"] for r in mine].count("aggregate") == 1
    agg = [r for r in mine if r["row"] == "aggregate"][0]
    assert int(agg["requests"]) == sum(int(r["requests"]) for r in mine if r["row"] == "worker")
    assert all(int(r["requests"]) > 0 for r in mine)
print("csv checks passed")
EOF
then ok "CSV header and rows"; else fail "CSV checks"; fi
head -1 "$tmp/out" | grep -q '^strategy,row,worker,' && ok "CSV header line" || fail "CSV header line"

echo "== table output"
run "${SPIN[@]}" --workers 2 --strategy timeslice --verbose
[[ $rc -eq 0 ]] && grep -q '^timeslice ' "$tmp/out" && grep -q 'worker 1 ' "$tmp/out" \
	&& ok "table with per-worker lines" || fail "table: rc=$rc $(cat "$tmp/out" "$tmp/err")"

echo "== a worker crashes mid-run"
# Warm-up (3 requests + 200 ms at 200 us) is about 1000 requests: fail after it.
run "${SPIN[@]}" --workers 3 --strategy timeslice --warmup 0s --fail-after 300 --fail-mode crash --json
[[ $rc -eq 10 ]] && ok "crash: exit 10" || fail "crash: exit $rc (expected 10): $(cat "$tmp/err")"
grep -Eq 'worker [0-9]+ .*signal 11' "$tmp/err" && ok "crash: worker and signal named" \
	|| fail "crash: message: $(cat "$tmp/err")"
if python3 - "$tmp/out" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
r = doc["results"][0]
assert doc["partial"] and r["partial"], "not marked partial"
assert r["failure"]["worker"] in (0, 1, 2), r["failure"]
assert any(w["failed"] and w["signal"] == 11 for w in r["workers"]), r["workers"]
assert r["aggregate"]["requests"] > 0, "measured requests were not kept"
EOF
then ok "crash: partial results kept and marked"; else fail "crash: JSON"; fi
no_workers_left "crash"

echo "== SIGINT mid-run"
set +e
"$GPUSHARE" bench --workload spin --duration 20s --warmup 100ms --request-us 200us --quiet \
	--workers 3 --strategy timeslice,streams --json >"$tmp/out" 2>"$tmp/err" &
pid=$!
set -e
for i in $(seq 50); do
	[[ $(pgrep -fc "$tmp/gpushare-worker" || true) -ge 3 ]] && break
	sleep 0.1
done
sleep 0.8
kill -INT "$pid"
set +e; wait "$pid"; rc=$?; set -e
[[ $rc -eq 130 ]] && ok "SIGINT: exit 130" || fail "SIGINT: exit $rc: $(cat "$tmp/err")"
if python3 - "$tmp/out" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["interrupted"], "not marked interrupted"
assert len(doc["results"]) == 1 and doc["results"][0]["interrupted"]
assert doc["results"][0]["aggregate"]["requests"] > 0
EOF
then ok "SIGINT: what was measured is printed, marked interrupted"; else fail "SIGINT: JSON: $(head -c 300 "$tmp/out")"; fi
no_workers_left "SIGINT"

echo "== init failure as CUDA error 808"
run "${SPIN[@]}" --workers 2 --strategy timeslice --init-fail on
[[ $rc -eq 9 ]] && ok "808: exit 9" || fail "808: exit $rc"
grep -q 'worker [0-9]*: too many MPS clients (CUDA error 808)' "$tmp/err" && ok "808: message" \
	|| fail "808: message: $(cat "$tmp/err")"
no_workers_left "808"

echo "== request failure (error mode) mid-run"
run "${SPIN[@]}" --workers 2 --strategy streams --warmup 0s --fail-after 300 --fail-mode error
[[ $rc -eq 10 ]] && grep -q 'worker [0-9]' "$tmp/err" && ok "error mode: exit 10, worker named" \
	|| fail "error mode: exit $rc: $(cat "$tmp/err")"

echo "== bad options"
bad() {
	local want=$1 pattern=$2; shift 2
	run bench --workload spin --duration 1s --quiet "$@"
	if [[ $rc -ne $want ]]; then
		fail "'$*': exit $rc (expected $want)"
	elif [[ $(wc -l <"$tmp/err") -ne 1 ]] || ! grep -q -- "$pattern" "$tmp/err"; then
		fail "'$*': message: $(cat "$tmp/err")"
	else
		ok "'$*' -> $want: $(cat "$tmp/err")"
	fi
}
bad 2 "unknown strategy 'bogus'" --strategy timeslice,bogus
bad 2 "'0'" --workers 0
bad 2 "'abc' is not a whole number" --workers abc
bad 2 "--duration '-1'" --duration -1
bad 2 "--thread-percentage '0'" --strategy mps-split --thread-percentage 0
bad 2 "--thread-percentage '101'" --strategy mps-split --thread-percentage 101
bad 2 "--thread-percentage 'abc'" --strategy mps-split --thread-percentage abc
bad 2 "--thread-percentage '10,20,30'" --strategy mps-split --workers 2 --thread-percentage 10,20,30
bad 2 "unknown option '--bogus'" --bogus 3
bad 2 "--request-us" --request-us lots
bad 2 "unknown workload 'nope'" --workload nope
bad 2 "not both" --requests 10 --duration 2s
bad 11 "/nonexistent-dir-$$" --out "/nonexistent-dir-$$/x.json"
no_workers_left "bad options"

echo "== timeslice refused while an MPS daemon answers"
if [[ -n "$HELPERS" && -x "$HELPERS/fake_mps_control" ]]; then
	daemon_dir="$tmp/daemon"
	fake_mps_start "$daemon_dir/pipe" "$daemon_dir/log"
	export GPUSHARE_MPS_CONTROL="$HELPERS/fake_mps_control"
	CUDA_MPS_PIPE_DIRECTORY="$daemon_dir/pipe" run "${SPIN[@]}" --strategy timeslice
	[[ $rc -eq 5 ]] && grep -q "gpushare mps stop --pipe-dir $daemon_dir/pipe" "$tmp/err" \
		&& ok "timeslice refused: exit 5, says how to stop the daemon" \
		|| fail "timeslice refusal: exit $rc: $(cat "$tmp/err")"
	echo "== mps and mps-split with the fake control program"
	run "${SPIN[@]}" --workers 2 --strategy mps,mps-split --thread-percentage 30,60 --json
	if [[ $rc -eq 0 ]] && python3 - "$tmp/out" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
m, s = doc["results"]
assert m["mps"]["daemon_started"] and s["mps"]["daemon_started"]
assert [w["thread_percentage_set"] for w in s["workers"]] == [30, 60]
assert all(w["requests"] > 0 for r in doc["results"] for w in r["workers"])
EOF
	then ok "mps, mps-split ran with a private daemon"; else fail "mps: exit $rc $(cat "$tmp/err")"; fi
	echo "== --mps-pipe-dir uses the running daemon and leaves it running"
	run "${SPIN[@]}" --workers 2 --strategy mps --mps-pipe-dir "$daemon_dir/pipe"
	[[ $rc -eq 0 ]] && ok "--mps-pipe-dir: exit 0" || fail "--mps-pipe-dir: exit $rc $(cat "$tmp/err")"
	pid=$(cat "$daemon_dir/pipe/nvidia-cuda-mps-control.pid")
	kill -0 "$pid" && ok "--mps-pipe-dir: daemon still running" || fail "--mps-pipe-dir: daemon was stopped"
	echo "== a SIGKILLed gpushare leaves its MPS daemon; the next run stops it"
	private_xdg
	"$GPUSHARE" "${SPIN[@]}" --workers 2 --strategy mps --duration 30s >/dev/null 2>&1 &
	gpid=$!
	pidglob="$tmp/xdg/gpushare/bench-*/mps/pipe/nvidia-cuda-mps-control.pid"
	wait_for 100 0.1 compgen -G "$pidglob" >/dev/null || fail "killed run: no daemon appeared"
	sleep 0.5
	kill -KILL "$gpid"
	wait "$gpid" 2>/dev/null || true
	pidfile=$(compgen -G "$pidglob" | head -1)
	left=$(cat "$pidfile" 2>/dev/null || echo 0)
	kill -0 "$left" 2>/dev/null && ok "killed run: its daemon $left is still running" \
		|| fail "killed run: expected its daemon to outlive it"
	run "${SPIN[@]}" --workers 1 --strategy sequential
	[[ $rc -eq 0 ]] || fail "run after the kill: exit $rc $(cat "$tmp/err")"
	wait_for 50 0.1 bash -c "! kill -0 $left 2>/dev/null || grep -q '^Z' <(awk '{print \$3}' /proc/$left/stat 2>/dev/null)" \
		&& ok "next run stopped the left-over daemon" || fail "left-over daemon $left still running"
	compgen -G "$tmp/xdg/gpushare/bench-*" >/dev/null && fail "killed run's directory was not removed" \
		|| ok "killed run's directory removed"
	unset GPUSHARE_MPS_CONTROL
	no_workers_left "mps"
else
	missing_tool "MPS checks: no fake_mps_control in GPUSHARE_TEST_HELPERS"
fi

echo "== mig needs a driver"
run "${SPIN[@]}" --strategy mig
if [[ -e /dev/nvidiactl ]]; then
	echo "SKIP: mig check on a machine with a driver"
else
	[[ $rc -eq 3 ]] && ok "mig without a driver: exit 3" || fail "mig without driver: exit $rc $(cat "$tmp/err")"
fi

finish bench
