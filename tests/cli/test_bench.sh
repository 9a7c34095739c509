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
assert r["status"] == "failed" and "signal 11" in r["reason"], (r["status"], r["reason"])
assert r["failure"]["worker"] in (0, 1, 2), r["failure"]
assert any(w["failed"] and w["signal"] == 11 for w in r["workers"]), r["workers"]
# A strategy that did not finish has no aggregate figures (never a zero) ...
assert all(r["aggregate"][k] is None for k in ("requests", "items_per_second", "p99_seconds", "fairness"))
assert doc["summary"][0]["status"] == "failed" and doc["summary"][0]["items_per_second"] is None
# ... and what each worker measured is kept.
assert sum(w["requests"] for w in r["workers"]) > 0, "measured requests were not kept"
EOF
then ok "crash: strategy failed, no aggregate figures, workers' measurements kept"; else fail "crash: JSON"; fi
no_workers_left "crash"

echo "== SIGINT mid-run"
set +e
"$GPUSHARE" bench --workload spin --duration 60s --warmup 100ms --request-us 200us \
	--workers 3 --strategy timeslice,streams --json >"$tmp/out" 2>"$tmp/err" &
pid=$!
set -e
# Interrupted once the window has begun and requests were counted (its
# progress lines on stderr say so; a loaded machine may take seconds to
# start three workers).
wait_for 300 0.1 grep -qE "timeslice: measuring .* [1-9][0-9]* requests" "$tmp/err" || true
kill -INT "$pid"
set +e; wait "$pid"; rc=$?; set -e
[[ $rc -eq 130 ]] && ok "SIGINT: exit 130" || fail "SIGINT: exit $rc: $(cat "$tmp/err")"
if python3 - "$tmp/out" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["interrupted"], "not marked interrupted"
assert len(doc["results"]) == 2, [(r["strategy"], r["status"], r["reason"]) for r in doc["results"]]
t, s = doc["results"]
assert t["interrupted"] and t["status"] == "failed" and t["aggregate"]["requests"] is None, (t["status"], t["reason"])
# what each worker measured is kept (on a loaded machine the window may not have begun yet)
assert all(isinstance(w["requests"], int) for w in t["workers"]), [w["requests"] for w in t["workers"]]
assert sum(w["total_requests"] for w in t["workers"]) > 0, [w["total_requests"] for w in t["workers"]]
assert s["strategy"] == "streams" and s["status"] == "skipped" and s["reason"] == "not run: interrupted", s["reason"]
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
# Whole numbers are digits only, for every option alike.
bad 2 "invalid --batch '+2'" --batch +2
bad 2 "invalid --repeats '+2'" --repeats +2
bad 2 "invalid --workers '+2'" --workers +2
bad 2 "invalid --repeats '0'" --repeats 0
bad 2 "invalid --target-noise 'x'" --target-noise x
bad 2 "--max-repeats 2 is below --repeats 3" --repeats 3 --target-noise 5% --max-repeats 2
bad 11 "/nonexistent-dir-$$" --out "/nonexistent-dir-$$/x.json"
no_workers_left "bad options"

echo "== no MPS control program: found before anything runs; every strategy skipped, nothing reads as zero"
GPUSHARE_MPS_CONTROL=/nonexistent/nvidia-cuda-mps-control run "${SPIN[@]}" --duration 300ms --workers 2 \
	--strategy timeslice,mps,sequential --json
[[ $rc -eq 4 ]] && ok "missing control program: exit 4" || fail "missing control program: exit $rc $(cat "$tmp/err")"
if python3 - "$tmp/out" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
assert [r["strategy"] for r in doc["results"]] == ["timeslice", "mps", "sequential"]
for r in doc["results"]:
    assert r["status"] == "skipped" and "no file '/nonexistent/nvidia-cuda-mps-control'" in r["reason"], r
    assert r["failure"] is None
    for k in ("requests", "requests_per_second", "items_per_second", "p50_seconds", "p99_seconds", "fairness"):
        assert r["aggregate"][k] is None, k
    assert all(w["pid"] is None and w["requests"] is None for w in r["workers"])
assert [s["status"] for s in doc["summary"]] == ["skipped"] * 3
assert all(s["items_per_second"] is None for s in doc["summary"])
assert doc["relative"] is None
EOF
then ok "missing control program: JSON has every strategy skipped with the reason, null figures"; else fail "missing control program: JSON"; fi
cp "$tmp/out" "$tmp/failed.json"
if [[ -n "${GPUSHARE_SOURCE_DIR:-}" ]] && python3 -c 'import jsonschema' 2>/dev/null; then
	python3 - "$GPUSHARE_SOURCE_DIR/docs/bench-schema.json" "$tmp/failed.json" <<'EOF2' \
		&& ok "skipped strategies: JSON valid against docs/bench-schema.json" || fail "skipped JSON does not match the schema"
import json, sys, jsonschema
jsonschema.Draft202012Validator(json.load(open(sys.argv[1]))).validate(json.load(open(sys.argv[2])))
EOF2
fi
GPUSHARE_MPS_CONTROL=/nonexistent/nvidia-cuda-mps-control run "${SPIN[@]}" --duration 300ms --workers 2 \
	--strategy timeslice,mps,sequential --csv
if python3 - "$tmp/out" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["strategy"] for r in rows] == ["timeslice", "mps", "sequential"], rows
for r in rows:
    assert r["row"] == "aggregate" and r["status"] == "skipped" and r["failed"] == "true", r
    for k in ("requests", "requests_per_second", "items_per_second", "p50_seconds", "p99_seconds", "fairness"):
        assert r[k] == "", (k, r[k])
EOF
then ok "missing control program: CSV has empty cells, not zeros"; else fail "missing control program: CSV $(cat "$tmp/out")"; fi
GPUSHARE_MPS_CONTROL=/nonexistent/nvidia-cuda-mps-control run "${SPIN[@]}" --duration 300ms --workers 2 \
	--strategy timeslice,mps,sequential
# Nothing ran: no table that would repeat the reason per row; one line with a hint.
[[ ! -s "$tmp/out" ]] && [[ $(wc -l <"$tmp/err") -eq 1 ]] \
	&& grep -q "no file '/nonexistent/nvidia-cuda-mps-control'.*--strategy timeslice" "$tmp/err" \
	&& ok "missing control program: the reason said once, with a hint, no table of skipped rows" \
	|| fail "missing control program: table $(cat "$tmp/out" "$tmp/err")"

echo "== a strategy that fails mid-way: failed, the ones after it skipped"
run "${SPIN[@]}" --duration 300ms --warmup 0s --workers 2 --strategy timeslice,streams,sequential --fail-after 50 --json
python3 - "$tmp/out" <<'EOF' && ok "failed strategy: status failed with the reason, null aggregate; later strategies still run" \
	|| fail "failed strategy: exit $rc $(head -c 400 "$tmp/out")"
import json, sys
doc = json.load(open(sys.argv[1]))
st = [(r["strategy"], r["status"]) for r in doc["results"]]
# a worker failing mid-run fails that strategy; bench goes on with the next one
assert st[0] == ("timeslice", "failed"), st
r = doc["results"][0]
assert "simulated failure" in r["reason"] and r["aggregate"]["items_per_second"] is None, r["reason"]
assert doc["summary"][0]["status"] == "failed" and doc["summary"][0]["items_per_second"] is None
EOF

echo "== --repeats: interleaved runs, spread, intervals that say their coverage"
run "${SPIN[@]}" --duration 150ms --warmup 30ms --workers 1 --strategy timeslice,sequential --repeats 2 --json
if [[ $rc -eq 0 ]] && python3 - "$tmp/out" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["repeats"] == 2
assert [(r["strategy"], r["repeat"]) for r in doc["results"]] == \
    [("timeslice", 0), ("sequential", 0), ("timeslice", 1), ("sequential", 1)], "not interleaved"
for s in doc["summary"]:
    t = s["items_per_second"]
    runs = [r["aggregate"]["items_per_second"] for r in doc["results"] if r["strategy"] == s["strategy"]]
    assert s["runs"] == 2 and s["runs_ok"] == 2 and t["n"] == 2
    assert t["min"] == min(runs) and t["max"] == max(runs) and abs(t["mean"] - sum(runs) / 2) < 1e-6 * t["mean"]
    assert t["stddev"] is not None and t["coverage"] == 0.5, t   # two runs: [min, max] covers 50%
c = doc["relative"]["comparisons"][0]["throughput"]
assert c["verdict"] in ("tie", "higher", "lower") and c["method"] == "welch-log", c
if c["order_verdict"] != "tie":
    assert c["order_confidence"] == 0.25, c      # the order rule: two 50% intervals
if c["verdict"] == "tie":
    assert c["significant"] is False and c["t_lo"] <= 1 <= c["t_hi"], c
else:
    assert c["significant"] is True and c["p_value"] < 0.05 and not (c["t_lo"] <= 1 <= c["t_hi"]), c
EOF
then ok "--repeats 2: interleaved, each repeat and the spread in JSON, 50% coverage, the t test's verdict"; else fail "--repeats 2 JSON: $(cat "$tmp/err")"; fi
run "${SPIN[@]}" --duration 150ms --warmup 30ms --workers 1 --strategy timeslice,sequential --repeats 2
grep -q "50% interval" "$tmp/out" && ! grep -q "95% interval" "$tmp/out" && grep -q "times the throughput of timeslice" "$tmp/out" \
	&& ok "--repeats 2: the table states 50% intervals, never 95%" || fail "--repeats 2 table: $(cat "$tmp/out")"
run "${SPIN[@]}" --duration 150ms --warmup 30ms --workers 1 --strategy timeslice,sequential --repeats 1 --json
python3 - "$tmp/out" <<'EOF' && ok "--repeats 1: no interval, no stddev, no verdict (null)" || fail "--repeats 1 JSON"
import json, sys
doc = json.load(open(sys.argv[1]))
t = doc["summary"][0]["items_per_second"]
assert t["n"] == 1 and t["stddev"] is None and t["lo"] is None and t["hi"] is None and t["coverage"] is None, t
c = doc["relative"]["comparisons"][0]["throughput"]
assert c["verdict"] == "unknown" and c["significant"] is None and c["confidence"] is None and c["ratio"] > 0, c
EOF
run "${SPIN[@]}" --duration 100ms --warmup 20ms --workers 1 --strategy timeslice,sequential --repeats 6 --csv
if [[ $rc -eq 0 ]] && python3 - "$tmp/out" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
aggs = [r for r in rows if r["row"] == "aggregate"]
assert sorted({int(r["repeat"]) for r in aggs}) == list(range(6)) and len(aggs) == 12
for s in ("timeslice", "sequential"):
    v = sorted(float(r["items_per_second"]) for r in aggs if r["strategy"] == s)
    summ = {r["row"]: r for r in rows if r["strategy"] == s and r["repeat"] == ""}
    assert set(summ) == {"mean", "stddev", "min", "max", "median", "lo", "hi"}, summ.keys()
    # six runs: the interval is [min, max], coverage 1 - 2/64 (96.875%)
    assert float(summ["lo"]["items_per_second"]) == v[0] and float(summ["hi"]["items_per_second"]) == v[-1]
    assert abs(float(summ["median"]["items_per_second"]) - (v[2] + v[3]) / 2) <= 1e-6 * v[2]
EOF
then ok "--repeats 6: each repeat and the summary rows in CSV"; else fail "--repeats 6 CSV: $(cat "$tmp/err")"; fi
run "${SPIN[@]}" --duration 100ms --warmup 20ms --workers 1 --strategy timeslice,sequential --repeats 6
grep -q "96.8% interval" "$tmp/out" && ok "--repeats 6: 96.8% intervals stated" || fail "--repeats 6 table: $(cat "$tmp/out")"

run "${SPIN[@]}" --duration 100ms --warmup 20ms --workers 1 --strategy sequential --repeats 2 --target-noise 50% \
	--max-repeats 8 --json
python3 - "$tmp/out" <<'EOF' && ok "--target-noise: repeats until a >= 95% interval is within the target (6..8 runs)" \
	|| fail "--target-noise: exit $rc $(head -c 300 "$tmp/out")"
import json, sys
doc = json.load(open(sys.argv[1]))
t = doc["summary"][0]["items_per_second"]
assert 6 <= doc["repeats"] <= 8 and t["n"] == doc["repeats"], (doc["repeats"], t["n"])
if doc["repeats"] < 8:
    assert t["coverage"] >= 0.95 and (t["hi"] - t["lo"]) / 2 / t["median"] <= 0.5, t
EOF

echo "== spin honours --batch: the ceiling's E_N is reported"
# What E_N comes to (near 1 here: one item costs request-us whatever the
# batch) is a ratio of two rates measured one after the other, which load
# from elsewhere moves: bench/timing_cpu.sh measures it (docs/benchmarks.md).
# Here only what does not depend on the machine's load.
run "${SPIN[@]}" --duration 400ms --workers 2 --batch 3 --strategy sequential --ceiling --json
python3 - "$tmp/out" <<'EOF' && ok "spin --batch 3 --ceiling: E_N present, finite, positive; a request of 3 items takes 3 x 200 us or more" \
	|| fail "spin --ceiling: $(head -c 600 "$tmp/out")"
import json, math, sys
doc = json.load(open(sys.argv[1]))
r = doc["results"][0]
assert doc["ceiling"] and r["workers"][0]["items_per_request"] == 3
e = r["aggregate"]["efficiency"]
assert isinstance(e, (int, float)) and math.isfinite(e) and e > 0, e
# a lower bound the workload guarantees (3 spins of 200 us; 10% for the histogram's buckets)
assert r["aggregate"]["p50_seconds"] >= 0.9 * 600e-6, r["aggregate"]["p50_seconds"]
EOF

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
	# The run's keeper: gpushare's child that runs gpushare's own binary (the
	# workers run gpushare-worker).
	keeper_of() {
		local c
		for c in $(pgrep -P "$1"); do
			[[ $(readlink "/proc/$c/exe" 2>/dev/null) == "$(readlink -f "$GPUSHARE")" ]] && echo "$c"
		done
		return 0
	}
	pidglob="$tmp/xdg/gpushare/bench-*/mps/pipe/nvidia-cuda-mps-control.pid"
	# Start a 30 s mps run; sets gpid, keeper and left (its daemon's pid).
	start_killable() {
		"$GPUSHARE" "${SPIN[@]}" --workers 2 --strategy mps --duration 30s >/dev/null 2>&1 &
		gpid=$!
		wait_for 100 0.1 compgen -G "$pidglob" >/dev/null || fail "killed run: no daemon appeared"
		sleep 0.5
		keeper=$(keeper_of "$gpid")
		left=$(cat "$(compgen -G "$pidglob" | head -1)" 2>/dev/null || echo 0)
		[[ -n "$keeper" && "$left" -gt 0 ]] && ok "a run with its keeper ($keeper) and its daemon ($left)" \
			|| fail "expected a keeper (got '$keeper') and a daemon (got '$left')"
	}
	echo "== a SIGKILLed gpushare: its keeper stops its MPS daemon and removes its directory"
	private_xdg
	start_killable
	kill -KILL "$gpid"
	wait "$gpid" 2>/dev/null || true
	wait_for 100 0.1 pid_gone "$left" && ok "the keeper stopped the killed run's daemon" \
		|| fail "the killed run's daemon $left still runs"
	wait_for 100 0.1 bash -c "! compgen -G '$tmp/xdg/gpushare/bench-*' >/dev/null" \
		&& ok "the keeper removed the killed run's directory" || fail "the killed run's directory is still there"
	wait_for 100 0.1 bash -c "! kill -0 $keeper 2>/dev/null" && ok "the keeper ended" || fail "the keeper $keeper still runs"
	echo "== gpushare and its keeper both SIGKILLed: the daemon stays; the next run stops it"
	start_killable
	kill -KILL "$keeper" "$gpid"
	wait "$gpid" 2>/dev/null || true
	sleep 0.5
	kill -0 "$left" 2>/dev/null && ok "killed run and keeper: its daemon $left is still running" \
		|| fail "killed run and keeper: expected its daemon to outlive them"
	run "${SPIN[@]}" --workers 1 --strategy sequential
	[[ $rc -eq 0 ]] || fail "run after the kill: exit $rc $(cat "$tmp/err")"
	wait_for 50 0.1 pid_gone "$left" && ok "next run stopped the left-over daemon" || fail "left-over daemon $left still running"
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
