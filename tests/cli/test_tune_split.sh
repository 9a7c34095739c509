#!/usr/bin/env bash
# The thread percentage of mps-split as an axis, on the CPU with the fake MPS
# control daemon: the test worker's speed is known from its configuration
# (test_worker --by-config: under mps-split each request also takes
# x(1 + |P - 50| / 50) at CUDA_MPS_ACTIVE_THREAD_PERCENTAGE P, so at 4
# workers and batch 4 50% is best with 533 items/s, the default share 25%
# gives 356, 100% 267; at batch 1 333, 222 and 167).
#   - tune: the default candidates (auto: 1x,2x,100) are probed, each at its
#     percentage (the workers' environment), recorded under distinct keys;
#     the pick is the known best percentage and its bench command carries
#     it; a budget-cut tune resumes with none run twice and the same pick;
#     bad lists and a list without mps-split are refused;
#   - sweep --thread-percentage: distinct cells and records, the report
#     shows each set percentage apart, --resume keeps the recorded list and
#     refuses another, and the option without mps-split is refused.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?}" "${GPUSHARE_WORKER:?}"
HELPERS=${GPUSHARE_TEST_HELPERS:-}
if [[ -z "$HELPERS" || ! -x "$HELPERS/test_worker" || ! -x "$HELPERS/fake_mps_control" ]]; then
	echo "SKIP: no test_worker or fake_mps_control"
	exit 0
fi

tmp=$(mktemp -d /tmp/gpushare-tune-split-test.XXXXXX)
cleanup() {
	# A daemon left by an interrupted run lives under our XDG_RUNTIME_DIR.
	fake_mps_quit_left
	rm -rf "$tmp"
}
trap cleanup EXIT
ln -s "$GPUSHARE_WORKER" "$tmp/gpushare-worker"
export GPUSHARE_WORKER="$tmp/gpushare-worker"
export CUDA_MPS_PIPE_DIRECTORY="$tmp/no-daemon"
export GPUSHARE_MPS_CONTROL="$HELPERS/fake_mps_control"
private_xdg
ln -s "$HELPERS/test_worker" "$tmp/tw"

# shellcheck disable=SC2054  # commas inside the list values
TUNE=(tune --strategy mps-split --workers 4 --batch 1,4 --duration 600ms --warmup 30ms --max-repeats 3)
CMD=(-- "$tmp/tw" --by-config --warmup 1)

# Checks of a tune's directory and JSON: argv DOC PROBES RESULTS.
check_py='
import json, sys, collections
doc = json.load(open(sys.argv[1]))
probes = [json.loads(l) for l in open(sys.argv[2])]
full = [json.loads(l) for l in open(sys.argv[3])]
cands = doc["candidates"]
got = sorted((c["batch"], c["thread_percentage"]) for c in cands)
assert got == [(1, 25), (1, 50), (1, 100), (4, 25), (4, 50), (4, 100)], got
for f in (probes, full):
    seen = collections.Counter((r["cell"]["key"], r["repeat"]) for r in f)
    assert max(seen.values()) == 1, seen            # no run twice
keys = sorted({p["cell"]["key"].split("|", 1)[1] for p in probes})
assert keys == ["mps-split|w4|b1", "mps-split|w4|b1|t100", "mps-split|w4|b1|t50",
                "mps-split|w4|b4", "mps-split|w4|b4|t100", "mps-split|w4|b4|t50"], keys
for p in probes + full:
    pct = p["cell"].get("thread_percentage")
    key = p["cell"]["key"]
    assert (pct is None) == ("|t" not in key), p["cell"]
    want = pct if pct is not None else 25                  # missing: the default share 100/4
    assert p["bench"]["config"]["thread_percentage"] == ([pct] if pct is not None else []), p["bench"]["config"]
    seen = {w.get("thread_percentage_set") for w in p["bench"]["results"][0]["workers"]}
    assert seen == {want}, (key, seen)                    # what the workers ran with
best = [c for c in cands if c["best"]]
assert len(best) == 1 and (best[0]["batch"], best[0]["thread_percentage"]) == (4, 50), best
assert doc["best"].endswith("|mps-split|w4|b4|t50"), doc["best"]
assert "--strategy mps-split --workers 4 --batch 4 --thread-percentage 50 -- " in doc["bench_command"], doc["bench_command"]
assert doc["farm_command"] is None, doc["farm_command"]
assert "--shape \x27command:" in doc["plan_command"] and "(mps-split threads 50%)\x27 --batch 4 --strategy mps-split" in doc["plan_command"], doc["plan_command"]
'

echo "== tune: the percentages are candidates, recorded apart, the pick's command carries its percentage"
run "${TUNE[@]}" --out "$tmp/a" --json "${CMD[@]}"
if [[ $rc -eq 10 ]]; then
	# A probe's window is an eighth of --duration (75 ms): beside CPU hogs a
	# worker once finished nothing in it (recorded as partial, exit 10), which
	# is the machine's doing, not tune's. One more tune must then get it right.
	echo "note: a run was partial or failed on this machine (rc 10); once more"
	rm -rf "$tmp/a"
	run "${TUNE[@]}" --out "$tmp/a" --json "${CMD[@]}"
fi
if [[ $rc -eq 0 ]] && python3 -c "$check_py" "$tmp/out" "$tmp/a/probes.jsonl" "$tmp/a/results.jsonl" \
	&& [[ $(wc -l <"$tmp/a/probes.jsonl") -eq 6 ]]; then
	ok "tune: 6 candidates (3 percentages x 2 batches) probed once each, keys apart, the pick t50% b4"
else fail "tune: rc $rc $(cat "$tmp/err") $(cat "$tmp/out")"; fi
grep -q "gpushare: tune: probe [0-9]* mps-split w4 b4 t100%: " "$tmp/err" \
	&& grep -q "gpushare: tune: probe [0-9]* mps-split w4 b1 t25%: " "$tmp/err" \
	&& ok "progress names each probe's percentage" || fail "progress: $(cat "$tmp/err")"
run report "$tmp/a" -q
[[ $rc -eq 0 ]] && grep -qF "(mps-split threads 50%)" "$tmp/a/report.md" \
	&& ok "the report shows the runs at 50% apart" || fail "report: rc $rc $(cat "$tmp/err")"
no_workers_left "tune"

echo "== tune --budget, then --resume (same options)"
# budget_then_resume: a budget-cut tune into $tmp/c, then its resume; rc
# and n1 (the probes recorded before the resume) for the checks below.
budget_then_resume() {
	rm -rf "$tmp/c"
	run "${TUNE[@]}" --out "$tmp/c" --budget 1s --json "${CMD[@]}"
	rc_budget=$rc
	n1=$(wc -l <"$tmp/c/probes.jsonl")
	run "${TUNE[@]}" --out "$tmp/c" --resume --json "${CMD[@]}"
}
budget_then_resume
if [[ $rc_budget -eq 10 || $rc -eq 10 ]]; then
	# A failed or partial run (a probe that finished nothing beside CPU hogs)
	# is recorded and not run again by --resume: start over once.
	echo "note: a run was partial or failed on this machine (rc $rc_budget, $rc); once more"
	budget_then_resume
fi
[[ $rc_budget -eq 0 && $n1 -ge 1 && $n1 -lt 6 ]] && ok "--budget 1s: $n1 probes" \
	|| fail "--budget: rc $rc_budget n1 $n1 $(cat "$tmp/err")"
if [[ $rc -eq 0 ]] && python3 -c "$check_py" "$tmp/out" "$tmp/c/probes.jsonl" "$tmp/c/results.jsonl" \
	&& python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["runs_skipped"] == int(sys.argv[2]), d["runs_skipped"]' \
		"$tmp/out" "$n1"; then
	ok "--resume: carries on from $n1 recorded probes, none twice, the same pick"
else fail "--resume: rc $rc $(cat "$tmp/err") $(cat "$tmp/out")"; fi
run "${TUNE[@]}" --out "$tmp/c" --resume -q "${CMD[@]}"
grep -qE "^(Pick: mps-split w4 b4 t50%, |Tie between mps-split w4 b4 t50% and )" "$tmp/out" \
	&& grep -q "^Run it: gpushare bench --strategy mps-split --workers 4 --batch 4 --thread-percentage 50 -- " "$tmp/out" \
	&& grep -q "^Jobs this way: none: gpushare farm gives each mps-split slot the default share 100/N (25% here), not the pick's 50%" "$tmp/out" \
	&& grep -q "mps-split w4 b4 t100%" "$tmp/out" \
	&& ok "text: the pick and its command with the percentage, no farm command and why" \
	|| fail "text: rc $rc $(cat "$tmp/out") $(cat "$tmp/err")"

echo "== tune: bad thread percentages"
for bad in "--thread-percentage 0" "--thread-percentage 101" "--thread-percentage abc" "--thread-percentage 50,50" \
	"--strategy timeslice,mps --thread-percentage 50"; do
	# shellcheck disable=SC2086
	run tune --out "$tmp/bad" --workload spin $bad
	[[ $rc -eq 2 ]] && ok "tune '$bad' -> 2: $(head -1 "$tmp/err")" || fail "tune '$bad' -> $rc $(cat "$tmp/err")"
done
grep -q "mps-split" "$tmp/err" && ok "without mps-split: the refusal names it" || fail "refusal: $(cat "$tmp/err")"
[[ ! -e "$tmp/bad/results.jsonl" && ! -e "$tmp/bad/probes.jsonl" ]] && ok "nothing written" || fail "written"

echo "== sweep --thread-percentage: distinct cells, the report shows them, --resume keeps the list"
# shellcheck disable=SC2054
SPIN=(sweep --workload spin --request-us 200us --duration 150ms --warmup 30ms --warmup-requests 1
	--strategy mps,mps-split --workers 2 --repeats 1)
run "${SPIN[@]}" --thread-percentage 1x,100,30 --out "$tmp/s"
if [[ $rc -eq 0 ]] && python3 - "$tmp/s/results.jsonl" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
keys = sorted(r["cell"]["key"] for r in recs)
assert keys == ["spin|mps-split|w2|b1", "spin|mps-split|w2|b1|t100", "spin|mps-split|w2|b1|t30", "spin|mps|w2|b1"], keys
for r in recs:
    assert r["status"] == "ok", r["error"]
    pct = r["cell"].get("thread_percentage")
    assert pct == {"spin|mps-split|w2|b1|t100": 100, "spin|mps-split|w2|b1|t30": 30}.get(r["cell"]["key"]), r["cell"]
PY
then ok "sweep: mps, mps-split at the default 50%, at 100% and at 30%: 4 cells, 4 records"
else fail "sweep: rc $rc $(cat "$tmp/err")"; fi
grep -q "gpushare: sweep: [0-9]/4 spin mps-split w2 b1 t30% #1: " "$tmp/err" \
	&& grep -q "gpushare: sweep: [0-9]/4 spin mps-split w2 b1 #1: " "$tmp/err" \
	&& ok "progress names a set percentage" || fail "progress: $(cat "$tmp/err")"
grep -q "spin (mps-split threads 30%)" "$tmp/s/report.md" && grep -q "spin (mps-split threads 100%)" "$tmp/s/report.md" \
	&& ok "the report shows the set percentages apart" || fail "report.md: $(grep -n "spin" "$tmp/s/report.md" | head)"
run sweep --out "$tmp/s" --resume -q
[[ $rc -eq 0 ]] && [[ $(wc -l <"$tmp/s/results.jsonl") -eq 4 ]] \
	&& ok "--resume alone: the recorded grid, all 4 recorded, none run again" || fail "resume: rc $rc $(cat "$tmp/err")"
run sweep --out "$tmp/s" --resume -q --thread-percentage 1x,100
[[ $rc -eq 2 ]] && grep -q "ran with --thread-percentage 1x,100,30, this one asks for --thread-percentage 1x,100" "$tmp/err" \
	&& ok "--resume with another list -> 2, naming it" || fail "resume other list: rc $rc $(cat "$tmp/err")"
run "${SPIN[@]}" --strategy mps,timeslice --thread-percentage 50 --out "$tmp/s2" -q
[[ $rc -eq 2 ]] && grep -q "mps-split" "$tmp/err" && [[ ! -s "$tmp/s2/results.jsonl" ]] \
	&& ok "sweep --thread-percentage without mps-split -> 2: $(head -1 "$tmp/err")" || fail "no split: rc $rc $(cat "$tmp/err")"
no_workers_left "sweep"
finish tune_split
