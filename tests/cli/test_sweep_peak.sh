#!/usr/bin/env bash
# End-to-end test of `gpushare sweep --load open --find-peak` with the spin
# workload (no GPU): every cell searches the highest rate within the bound,
# and the answers match what is known analytically. A spin request sleeps
# 5 ms (a deterministic service), arrivals are uniform: W workers under
# timeslice serve W / 5 ms = 200 W per second; sequential runs the workers
# one after another, each alone at the full rate, so 200/s whatever W. The
# report tabulates the peaks per strategy and worker count and names
# timeslice with 2 workers; --resume skips the searches already recorded and
# refuses other search settings; a search a failing worker cut short is
# partial, never a peak; a rate list with --find-peak is refused.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?}" "${GPUSHARE_WORKER:?}"

tmp=$(mktemp -d /tmp/gpushare-sweep-peak-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
ln -s "$GPUSHARE_WORKER" "$tmp/gpushare-worker"
export GPUSHARE_WORKER="$tmp/gpushare-worker"
export CUDA_MPS_PIPE_DIRECTORY="$tmp/no-daemon"
unset GPUSHARE_MPS_CONTROL

# The search as test_openloop.sh checks bench --find-peak: p90 (a busy test
# machine's hiccups must not decide the answer), 20 tail samples (200
# requests a step), 10% resolution. The test holds a peak to what the
# workload guarantees: at most 3% above the capacity (5 ms sleeps: 200/s a
# worker). How close below it the search lands depends on the machine's load
# (beside the CPU hog one worker failed p90 <= 50 ms at 163/s, 18% below):
# a figure for bench/, not a test's bound.
SW=(sweep --workload spin --sleep on --request-us 5ms --strategy timeslice,sequential --workers 1,2
	--warmup 200ms --load open --arrival uniform --rate 150 --find-peak --slo p90=50ms --resolution 0.1
	--tail-samples 20 --duration 500ms --repeats 1)

# peaks_ok FILE: every record found a peak, at most the known capacity
# (plus the 3% a sleep's rounding allows); prints the records that did not.
peaks_ok() {
	TIME_FACTOR=$TIME_FACTOR python3 - "$1" <<'EOF'
import json, os, sys
bad = 0
recs = [json.loads(l) for l in open(sys.argv[1])]
for d in recs:
    c = d["cell"]
    cap = 200.0 * (c["workers"] if c["strategy"] == "timeslice" else 1)
    p = d["bench"]["results"][0]["peak"]
    # Only the upper bound is the workload's own (a 5 ms sleeper serves at
    # most 200/s): how far below it a busy machine's peak falls is a timing
    # figure, not a test's (it fell 18% below beside the CPU hog).
    if d["status"] != "ok" or not p["found"] or not (0 < p["rate_per_second"] <= cap * 1.03):
        bad += 1
        print("  %s w%d: status %s, peak %s, capacity %g; steps %s" % (c["strategy"], c["workers"], d["status"],
              p and p["rate_per_second"], cap, p and [(s["rate_per_second"], s["pass"]) for s in p["steps"]]))
sys.exit(0 if bad == 0 and len(recs) == 4 else 1)
EOF
}

echo "== sweep --find-peak: a search per strategy and worker count"
out=$tmp/peak
run "${SW[@]}" --out "$out"
if [[ $rc -eq 0 ]] && ! peaks_ok "$out/results.jsonl" >/dev/null; then
	# A shared test machine can freeze a worker for tens of milliseconds
	# and fail one step far below capacity; such a step is not the
	# search's fault. One more sweep must then get it right.
	echo "note: a search missed ($(peaks_ok "$out/results.jsonl" || true)); once more"
	out=$tmp/peak2
	run "${SW[@]}" --out "$out"
fi
[[ $rc -eq 0 ]] && ok "sweep: exit 0" || fail "sweep: exit $rc: $(cat "$tmp/err")"
check "four records, each found a peak of at most W / 5 ms (timeslice) or 1 / 5 ms (sequential)" \
	peaks_ok "$out/results.jsonl"
check "records: the cell is a peak search, its settings recorded" python3 -c 'import json, sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    assert d["cell"]["key"].endswith("|peak") and "rate_per_second" not in d["cell"], d["cell"]
    ps = d["peak_search"]
    assert ps["slo"] == {"quantile": 0.9, "bound_seconds": 0.05} and ps["first_rate_per_second"] == 150, ps
    assert ps["resolution"] == 0.1 and ps["tail_samples"] == 20, ps' "$out/results.jsonl"
# How far each search climbs follows the machine's load (beside CPU hogs a
# 5 ms sleeper's peak fell to 82/s): the checks below hold the progress, the
# tables and the answer to what the records say, and hold the analytic answer
# (timeslice with 2 workers highest) only where every peak came within 25% of
# its capacity.
check "progress: a line for each step of each search, as recorded" python3 - "$out/results.jsonl" "$tmp/err" <<'EOF'
import json, re, sys
err = open(sys.argv[2], errors="replace").read()
for l in open(sys.argv[1]):
    d = json.loads(l)
    c = d["cell"]
    cell = "spin %s w%d b1 #1" % (c["strategy"], c["workers"])
    seen = {int(m) for m in re.findall(re.escape(cell) + r": peak search step (\d+) at [0-9.]+k?/s", err)}
    steps = len(d["bench"]["results"][0]["peak"]["steps"])
    assert seen == set(range(1, steps + 1)), (cell, sorted(seen), steps)
EOF
check "progress: each search's answer" grep -Eq "spin sequential w1 b1 #1: peak [0-9.]+/s \(missed at [0-9.]+/s\), [0-9]+ steps" \
	"$tmp/err"

echo "== the report: peaks per strategy and worker count, the highest named"
check "report.md: the table, strategies as rows, worker counts as columns" \
	grep -q "^| strategy | 1 worker | 2 workers |$" "$out/report.md"
check "report.md: a row per strategy, the best and its ties in bold, as summary.json says" \
	python3 - "$out/summary.json" "$out/report.md" <<'EOF'
import json, re, sys
t = json.load(open(sys.argv[1]))["peak_search"][0]
md = open(sys.argv[2]).read()
bold = {(t["best"]["strategy"], t["best"]["workers"])} | {(c["strategy"], c["workers"]) for c in t["tied"]}
for strat in ("timeslice", "sequential"):
    m = re.search(r"^\| %s \| (.*) \| (.*) \|$" % strat, md, re.M)
    assert m, strat
    for w in (1, 2):
        cellmd = m.group(w)
        assert re.fullmatch(r"(\*\*)?[0-9.]+k?/s \(1 run\)(\*\*)?", cellmd), cellmd
        assert cellmd.startswith("**") == ((strat, w) in bold), (strat, w, cellmd, bold)
EOF
check "recommendation: the best cell by the records, in report.md and printed by the sweep" \
	python3 - "$out/summary.json" "$out/report.md" "$tmp/out" "$out/results.jsonl" <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))["peak_search"][0]
peaks = {(c["strategy"], c["workers"]): c["median_per_second"] for c in t["cells"]}
best = (t["best"]["strategy"], t["best"]["workers"])
assert peaks[best] == max(peaks.values()), (best, peaks)
assert "- **Highest rate within p90 <= 50.0 ms (batch 1, peak search):** %s." % t["text"] in open(sys.argv[2]).read()
assert "highest rate within p90 <= 50.0 ms (batch 1): %s." % t["text"] in open(sys.argv[3]).read()
near = True
for l in open(sys.argv[4]):
    c = json.loads(l)["cell"]
    cap = 200.0 * (c["workers"] if c["strategy"] == "timeslice" else 1)
    near = near and peaks[(c["strategy"], c["workers"])] >= 0.75 * cap
if near:
    assert best == ("timeslice", 2) and not t["tied"], t
    assert t["text"].startswith("timeslice, 2 workers at "), t["text"]
else:
    print("note: a peak fell more than 25% below its capacity (a loaded machine): the analytic answer is not held")
EOF
check "report.html: the table" grep -q "<h2>Highest rate within the bound (peak search)</h2>" "$out/report.html"
check "summary.json: the table with its best cell" python3 -c 'import json, sys
t = json.load(open(sys.argv[1]))["peak_search"]
assert len(t) == 1 and t[0]["best"]["strategy"] in ("timeslice", "sequential") and t[0]["best"]["workers"] in (1, 2), t
assert sorted((c["strategy"], c["workers"]) for c in t[0]["cells"]) == [("sequential", 1), ("sequential", 2),
    ("timeslice", 1), ("timeslice", 2)], t
assert all(c["runs"] == 1 and c["median_per_second"] > 0 for c in t[0]["cells"]), t' "$out/summary.json"
check "no throughput tables for the searches" bash -c '! grep -q "Aggregate throughput" "$1"' _ "$out/report.md"
no_workers_left "sweep --find-peak"

echo "== --resume: recorded searches are skipped; other search settings are refused"
run "${SW[@]}" --out "$out" --resume -q
[[ $rc -eq 0 && $(wc -l <"$out/results.jsonl") -eq 4 ]] && ok "--resume: nothing searched again" \
	|| fail "--resume: exit $rc, $(wc -l <"$out/results.jsonl") records: $(cat "$tmp/err")"
SW_P99=("${SW[@]/p90=50ms/p99=50ms}")
run "${SW_P99[@]}" --out "$out" --resume -q
[[ $rc -eq 2 ]] && grep -q "ran with --slo p90=50ms, this one asks for --slo p99=50ms" "$tmp/err" &&
	ok "--resume with another --slo refused, naming the difference" \
	|| fail "--resume --slo p99: exit $rc: $(cat "$tmp/err")"
SW_RES=("${SW[@]/0.1/0.05}")
run "${SW_RES[@]}" --out "$out" --resume -q
[[ $rc -eq 2 ]] && grep -q "ran with --resolution 0.1, this one asks for --resolution 0.05" "$tmp/err" &&
	ok "--resume with another --resolution refused, naming the difference" \
	|| fail "--resume --resolution: exit $rc: $(cat "$tmp/err")"
[[ $(wc -l <"$out/results.jsonl") -eq 4 ]] && ok "refused resumes wrote nothing" \
	|| fail "refused resumes wrote records"

echo "== a worker failing mid-search: the run is partial, its peak not shown"
# Each step starts fresh workers; the 2 s window offers 200 requests at
# 100/s (passes: half the 5 ms sleeper's capacity, so even a loaded machine's
# longer sleeps meet the bound) and 400 at 200/s: the worker fails at its
# 300th. (At 150/s a machine running two test suites at once missed the
# bound in the first step, and the search went down, never failing; at a
# load average of 25 so did 100/s against a 50 ms bound: the bound is 1 s,
# which only the failure can miss.)
run sweep --out "$tmp/cut" --workload spin --sleep on --request-us 5ms --fail-after 300 --strategy timeslice \
	--workers 1 --warmup 200ms --load open --arrival uniform --rate 100 --find-peak --slo p90=1s \
	--resolution 0.1 --tail-samples 20 --duration 2s --repeats 1
[[ $rc -eq 10 ]] && ok "cut search: exit 10" || fail "cut search: exit $rc: $(cat "$tmp/err")"
check "cut search: recorded as partial" grep -q '"status":"partial"' "$tmp/cut/results.jsonl"
check "cut search: the table says failed, not a rate, and why" grep -qE '^\| timeslice \| failed \(1\): .*a worker failed.* \|$' "$tmp/cut/report.md"
check "cut search: the recommendation says no search succeeded" grep -q "no search succeeded" "$tmp/cut/report.md"
no_workers_left "cut search"

echo "== tune --slo: the pick's bench command carries the search's open-loop options"
run tune --out "$tmp/tslo" --workload spin --sleep on --request-us 5ms --strategy timeslice --workers 1 \
	--warmup 100ms --arrival uniform --rate 50 --slo p90=50ms --resolution 0.2 --tail-samples 10 --duration 500ms \
	--json -q
if [[ $rc -eq 0 || $rc -eq 10 ]] && python3 - "$tmp/out" <<'EOF'
import json, sys
cmd = json.load(open(sys.argv[1]))["bench_command"]
for want in ("--load open --rate 50 --find-peak --slo p90=50ms", "--arrival uniform", "--resolution 0.2",
             "--tail-samples 10"):
    assert want in cmd, (want, cmd)
EOF
then ok "tune --slo: Run it carries --arrival, --resolution and --tail-samples"
else fail "tune --slo: exit $rc: $(cat "$tmp/err" "$tmp/out")"; fi
no_workers_left "tune --slo"

echo "== tune --slo --budget: a peak search starts no step past the budget"
# The first step (100/s: 100 arrivals in 1 s, then its drain) fits in 4 s;
# the doubling steps after it do not: the search stops there and says so.
run tune --out "$tmp/tbud" --workload spin --sleep on --request-us 5ms --strategy timeslice --workers 1 \
	--warmup 100ms --arrival uniform --rate 100 --slo p90=50ms --resolution 0.2 --tail-samples 10 --duration 500ms \
	--budget 4s --json -q
if [[ $rc -eq 0 || $rc -eq 10 ]] && grep -q '"note":"stopped: the budget ran out before the step at' "$tmp/tbud/probes.jsonl"
then ok "tune --slo --budget 4s: the search stopped at the budget"
else fail "tune --slo --budget: exit $rc: $(cat "$tmp/err") $(grep -o '"note":"[^"]*"' "$tmp/tbud/probes.jsonl")"; fi
no_workers_left "tune --slo --budget"

echo "== refused combinations"
bad() { # bad TEXT ARGS...
	local text=$1
	shift
	run sweep --out "$tmp/bad" --workload spin --strategy timeslice --workers 1 "$@"
	[[ $rc -eq 2 ]] && grep -q -- "$text" "$tmp/err" && [[ $(wc -l <"$tmp/err") -eq 1 ]] && ok "refused: $*" \
		|| fail "$*: exit $rc (want 2): $(cat "$tmp/err")"
}
bad "find-peak takes one --rate" --load open --rate 100,200 --find-peak --slo p99=5ms
bad "needs --slo" --load open --rate 100 --find-peak
bad "--target-noise does not apply to --find-peak" --load open --rate 100 --find-peak --slo p99=5ms --target-noise 5%
bad "needs --load open" --rate 100 --find-peak --slo p99=5ms
[[ ! -s "$tmp/bad/results.jsonl" ]] && ok "refused sweeps recorded nothing" || fail "a refused sweep recorded runs"
no_workers_left "refused"

finish "sweep --find-peak"
