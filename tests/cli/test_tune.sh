#!/usr/bin/env bash
# End-to-end tests of `gpushare tune` on the CPU: a test worker whose speed
# is known from its configuration (test_worker --by-config: 2 workers at
# batch 4 are best, sequential at 4 workers and batch 1 worst), so tune must
# pick the known best and drop the known worst; --budget stops it and says
# so; --resume continues a cut-short tune with the same decisions and no run
# twice; gpushare report reads its directory; bad options are refused.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?}" "${GPUSHARE_WORKER:?}"
HELPERS=${GPUSHARE_TEST_HELPERS:-}
if [[ -z "$HELPERS" || ! -x "$HELPERS/test_worker" ]]; then
	echo "SKIP: no test_worker"
	exit 0
fi

tmp=$(mktemp -d /tmp/gpushare-tune-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
ln -s "$GPUSHARE_WORKER" "$tmp/gpushare-worker"
export GPUSHARE_WORKER="$tmp/gpushare-worker"
export CUDA_MPS_PIPE_DIRECTORY="$tmp/no-daemon"
private_xdg
ln -s "$HELPERS/test_worker" "$tmp/tw"

# shellcheck disable=SC2054  # commas inside the list values
TUNE=(tune --strategy timeslice,sequential --workers 1,2,4 --batch 1,4 --duration 200ms --warmup 30ms
	--max-repeats 3)
CMD=(-- "$tmp/tw" --by-config --warmup 1)

echo "== the known best is picked, the known worst dropped"
run "${TUNE[@]}" --out "$tmp/a" --json "${CMD[@]}"
if [[ $rc -eq 0 ]] && python3 - "$tmp/out" "$tmp/a/results.jsonl" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
best = [c for c in doc["candidates"] if c["best"]]
assert len(best) == 1 and (best[0]["strategy"], best[0]["workers"], best[0]["batch"]) == ("timeslice", 2, 4), best
worst = [c for c in doc["candidates"] if (c["strategy"], c["workers"], c["batch"]) == ("sequential", 4, 1)][0]
assert worst["dropped_after_round"] == 2 and not worst["racing"], worst
assert worst["at_drop"]["verdict"] == "lower" and worst["at_drop"]["method"] == "welch-log", worst
assert worst["best_vs_this"]["verdict"] == "higher" and worst["best_vs_this"]["t_lo"] > 1, worst
assert "--strategy timeslice --workers 2 --batch 4 -- " in doc["bench_command"], doc["bench_command"]
assert doc["farm_command"].startswith("gpushare farm --dir FARMDIR --slots 2 --strategy timeslice"), doc
lines = [json.loads(l) for l in open(sys.argv[2])]
assert len(lines) == doc["runs_done"] and doc["runs_done"] < 12 * 3, (len(lines), doc["runs_done"])
runs = {}
for l in lines:
    runs[l["cell"]["key"]] = runs.get(l["cell"]["key"], 0) + 1
assert all(v >= 2 for v in runs.values()) and len(runs) == 12, runs    # every candidate ran twice
PY
then ok "tune: picks timeslice w2 b4, drops sequential w4 b1 after round 2, fewer runs than the full grid"
else fail "tune pick: rc $rc $(cat "$tmp/err") $(cat "$tmp/out")"; fi
grep -q "gpushare: tune: dropped sequential w4 b1: " "$tmp/err" && grep -q "after round 1: 12 racing" "$tmp/err" \
	&& ok "progress: rounds and drops on stderr" || fail "progress: $(cat "$tmp/err")"
[[ -s "$tmp/a/report.md" ]] && ok "the report is written" || fail "no report.md"
run report "$tmp/a" -q
[[ $rc -eq 0 ]] && ok "gpushare report reads tune's directory" || fail "report: rc $rc $(cat "$tmp/err")"
no_workers_left "tune"

echo "== text output"
run "${TUNE[@]}" --out "$tmp/b" -q "${CMD[@]}"
grep -q "^Pick: timeslice w2 b4, " "$tmp/out" && grep -q "^  beat sequential w4 b1 .*the pick is .*higher" "$tmp/out" \
	&& grep -q "^Run it: gpushare bench --strategy timeslice --workers 2 --batch 4 -- " "$tmp/out" \
	&& [[ ! -s "$tmp/err" ]] && ok "text: the pick, what it beat, the command; -q: nothing on stderr" \
	|| fail "text: $(cat "$tmp/out") $(cat "$tmp/err")"

echo "== --budget, then --resume"
run "${TUNE[@]}" --out "$tmp/c" --budget 2s --json "${CMD[@]}"
n1=$(wc -l <"$tmp/c/results.jsonl")
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["budget_out"] is True and 0 < d["runs_done"] < 24, d["runs_done"]' "$tmp/out" && [[ $rc -eq 0 ]] \
	&& ok "--budget 2s: stopped after $n1 runs, says so" || fail "--budget: rc $rc $(cat "$tmp/out" "$tmp/err")"
run "${TUNE[@]}" --out "$tmp/c" --resume --json "${CMD[@]}"
if [[ $rc -eq 0 ]] && python3 - "$tmp/out" "$tmp/c/results.jsonl" "$n1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["runs_skipped"] == int(sys.argv[3]), (d["runs_skipped"], sys.argv[3])
best = [c for c in d["candidates"] if c["best"]][0]
assert (best["strategy"], best["workers"], best["batch"]) == ("timeslice", 2, 4), best
seen = set()
for l in open(sys.argv[2]):
    r = json.loads(l)
    k = (r["cell"]["key"], r["repeat"])
    assert k not in seen, k          # no run twice
    seen.add(k)
PY
then ok "--resume: carries on from the $n1 recorded runs, none twice, same pick"
else fail "--resume: rc $rc $(cat "$tmp/err")"; fi
run "${TUNE[@]}" --out "$tmp/c" --resume --json "${CMD[@]}"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["runs_done"] == 0, d["runs_done"]' "$tmp/out" && ok "--resume of a finished tune: the same decisions, no new run" \
	|| fail "--resume again: $(cat "$tmp/err")"

echo "== bad options"
for bad in "--repeats 3" "--target-noise 2%" "--workload spin,matmul" "--max-repeats 1" "--budget 0" "--slo p99=10ms"; do
	# shellcheck disable=SC2086
	run tune --out "$tmp/bad" $bad --workload spin
	[[ $rc -eq 2 ]] && ok "'$bad' -> 2: $(head -1 "$tmp/err")" || fail "'$bad' -> $rc $(cat "$tmp/err")"
done
run "${TUNE[@]}" --out "$tmp/a" "${CMD[@]}"
[[ $rc -eq 2 ]] && grep -q "give --resume" "$tmp/err" && ok "results present without --resume -> 2" || fail "present: $rc"
run tune --help
[[ $rc -eq 0 ]] && grep -q -- "--budget TIME" "$tmp/out" && ok "--help" || fail "--help"
no_workers_left "tune bad options"
finish tune
