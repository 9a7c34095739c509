#!/usr/bin/env bash
# A mix of workloads sharing the GPU (`--workload A+B`), on the CPU with the
# spin workload asleep through its requests (so a loaded machine stretches
# them little) and the fake MPS control program:
#   - bench: each workload's workers and figures, the score (geometric mean
#     of their items/s) as the figure the strategies are compared by, the
#     split 30/70 as each worker's active thread percentage, JSON valid
#     against the schema, the table and CSV rows of each workload;
#   - a workload of the mix that ends no request fails the run (no score);
#   - every refusal of a mix (workers that do not divide, streams, --ceiling,
#     open loop, a split without a mix, a bad split, a bad member, an option
#     given twice) exits 2 with one line and runs nothing;
#   - sweep: a mix as a shape, its split as the thread percentage axis, the
#     records and the report;
#   - plan: the percentage a set-percentage shape's runs had (not 100/K);
#     a mix is refused (exit 14);
#   - tune: the split searched (auto: 25/75, 50/50, 75/25), and with a
#     workload whose speed follows its SM share (spin by-threads) the pick is
#     the split that gives it most, with the bench command that runs it.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?}" "${GPUSHARE_WORKER:?}"
HELPERS=${GPUSHARE_TEST_HELPERS:-}
if [[ -z "$HELPERS" || ! -x "$HELPERS/fake_mps_control" ]]; then
	echo "SKIP: no fake_mps_control"
	exit 0
fi

tmp=$(mktemp -d /tmp/gpushare-mix-test.XXXXXX)
cleanup() {
	fake_mps_quit_left
	rm -rf "$tmp"
}
trap cleanup EXIT
ln -s "$GPUSHARE_WORKER" "$tmp/gpushare-worker"
export GPUSHARE_WORKER="$tmp/gpushare-worker"
export CUDA_MPS_PIPE_DIRECTORY="$tmp/no-daemon"
export GPUSHARE_MPS_CONTROL="$HELPERS/fake_mps_control"
private_xdg

MIX='spin:request-us=300us:sleep=on+spin:request-us=900us:sleep=on'
BENCH=(bench --workload "$MIX" --duration 600ms --warmup 50ms --quiet)

echo "== bench: a mix of two workloads, each its workers, figures and share"
run "${BENCH[@]}" --workers 4 --strategy timeslice,mps-split --thread-percentage 30/70 --json
if [[ $rc -eq 0 ]] && python3 - "$tmp/out" "${GPUSHARE_SOURCE_DIR:-}" <<'EOF'
import json, math, os, sys
doc = json.load(open(sys.argv[1]))
cfg = doc["config"]
assert cfg["workload"] == "spin:request-us=300us:sleep=on+spin:request-us=900us:sleep=on", cfg["workload"]
assert cfg["workload_options"] == {}, cfg["workload_options"]
assert [m["spec"] for m in cfg["mix"]] == ["spin:request-us=300us:sleep=on", "spin:request-us=900us:sleep=on"]
assert [m["workload_options"]["request-us"] for m in cfg["mix"]] == ["300us", "900us"]
assert [m["workers"] for m in cfg["mix"]] == [2, 2] and [m["share_percent"] for m in cfg["mix"]] == [30, 70]
ts, sp = doc["results"]
assert [w["thread_percentage_set"] for w in sp["workers"]] == [15, 15, 35, 35], sp["workers"]
assert [m["thread_percentage_set"] for m in sp["mix"]] == [30, 70]
for r in (ts, sp):
    a, b = r["mix"]
    assert a["workers"] == 2 and b["workers"] == 2
    # 300 us against 900 us requests: how much more the first does is a
    # ratio of rates (bench/timing_cpu.sh); here each is measured.
    assert all(math.isfinite(m["items_per_second"]) and m["items_per_second"] > 0 for m in (a, b)), (a, b)
    assert a["items"] + b["items"] == r["aggregate"]["items"]
    score = math.sqrt(a["items_per_second"] * b["items_per_second"])
    assert abs(r["score"] - score) <= 1e-6 * score, (r["score"], score)
# The comparison is of the scores.
cmp = doc["relative"]["comparisons"]
assert doc["relative"]["reference"] == "timeslice" and len(cmp) == 1, doc["relative"]
got = json.dumps(cmp[0])
ratio = sp["score"] / ts["score"]
assert any(abs(v - ratio) <= 1e-6 * ratio for v in [cmp[0].get("ratio_mean", -1)] +
           [x.get("ratio", -1) for x in cmp[0].values() if isinstance(x, dict)]), (got, ratio)
if sys.argv[2]:
    import jsonschema
    jsonschema.validate(doc, json.load(open(os.path.join(sys.argv[2], "docs/bench-schema.json"))))
EOF
then ok "bench: each workload's workers, figures, score and 30/70 split (15,15,35,35)"
else fail "bench mix: exit $rc $(cat "$tmp/err")"; fi

run "${BENCH[@]}" --workers 2 --strategy timeslice
if [[ $rc -eq 0 ]] && grep -q '^a mix of 2 workloads' "$tmp/out" \
	&& grep -q '^  spin:request-us=300us:sleep=on (1 workers): ' "$tmp/out" \
	&& grep -q '^  spin:request-us=900us:sleep=on (1 workers): ' "$tmp/out" \
	&& grep -q "^  score .* (the geometric mean of the workloads' items/s)" "$tmp/out"; then
	ok "bench table: a line per workload and the score"
else
	fail "bench table: exit $rc: $(cat "$tmp/out" "$tmp/err")"
fi
run "${BENCH[@]}" --workers 2 --strategy timeslice --csv
if [[ $rc -eq 0 ]] && [[ $(grep -c '^timeslice,mix,' "$tmp/out") -eq 2 ]] \
	&& grep -q "^timeslice,aggregate,.*,$MIX,2\$" "$tmp/out"; then
	ok "bench CSV: a mix row per workload, the mix in the key columns"
else
	fail "bench CSV: exit $rc: $(cat "$tmp/out" "$tmp/err")"
fi

echo "== an option for all the mix's workloads, one in a spec, and both at once"
run bench --workload 'spin+spin:sleep=on' --request-us 2ms --workers 2 --strategy timeslice --duration 300ms \
	--warmup 20ms --quiet --json
if [[ $rc -eq 0 ]] && python3 - "$tmp/out" <<'EOF'
import json, sys
mix = json.load(open(sys.argv[1]))["config"]["mix"]
assert [m["workload_options"]["request-us"] for m in mix] == ["2ms", "2ms"], mix
assert [m["workload_options"]["sleep"] for m in mix] == ["off", "on"], mix
EOF
then ok "--request-us applies to every workload of the mix, :sleep=on to its own"
else fail "mix options: exit $rc $(cat "$tmp/err")"; fi

echo "== a workload of the mix that ends no request: the run has no score, never a 0"
run bench --workload 'spin:sleep=on+spin:request-us=1500ms:sleep=on' --workers 2 --strategy timeslice \
	--duration 300ms --warmup 20ms --warmup-requests 0 --quiet --json
if [[ $rc -eq 10 ]] && python3 - "$tmp/out" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
assert r["status"] == "failed" and r["score"] is None, r
assert "workload 'spin:request-us=1500ms:sleep=on' of the mix ended no request" in r["reason"], r["reason"]
EOF
then ok "a mix with a workload that ended nothing: failed (exit 10), no score"
else fail "mix without a score: exit $rc $(head -c 400 "$tmp/out") $(cat "$tmp/err")"; fi

echo "== refusals: exit 2, one line, nothing run"
refused() { # refused WHAT PATTERN ARGS...
	local what=$1 pat=$2
	shift 2
	run "$@"
	if [[ $rc -eq 2 && $(wc -l <"$tmp/err") -eq 1 ]] && grep -q -- "$pat" "$tmp/err"; then
		ok "$what: refused (exit 2)"
	else
		fail "$what: exit $rc: $(cat "$tmp/err")"
	fi
}
refused "3 workers for 2 workloads" "does not divide among the 2 workloads" "${BENCH[@]}" --workers 3 --strategy timeslice
refused "streams" "streams runs every worker in one process" "${BENCH[@]}" --workers 2 --strategy streams
refused "mig without --workers" "a mix on mig needs --workers" bench --workload spin+spin --strategy mig
refused "--ceiling" "ceiling .* does not apply to a mix" "${BENCH[@]}" --workers 2 --strategy timeslice --ceiling
refused "open loop" "a mix is measured in closed loop" "${BENCH[@]}" --workers 2 --strategy timeslice --load open --rate 100
refused "a split without a mix" "split the GPU between the workloads" bench --workload spin --workers 2 \
	--strategy mps-split --thread-percentage 30/70
refused "a split of 3 for 2 workloads" "more shares than the 2 workloads" "${BENCH[@]}" --workers 2 \
	--strategy mps-split --thread-percentage 30/60/10
refused "a split item out of range" "thread-percentage '30/170'" "${BENCH[@]}" --workers 2 --strategy mps-split \
	--thread-percentage 30/170
refused "an unknown workload in the mix" "unknown workload 'nosuch'" bench --workload spin+nosuch --workers 2
refused "an empty workload at the mix's end" "'spin+' ends with '+'" bench --workload spin+ --workers 2
refused "an empty workload in the mix" "'spin++spin' has an empty item" bench --workload spin++spin --workers 2
refused "five workloads" "mixes more than 4 workloads" bench --workload spin+spin+spin+spin+spin --workers 5
refused "an option twice" "given twice" bench --workload 'spin:request-us=1ms+spin' --request-us 2ms --workers 2
no_workers_left "refusals"

echo "== sweep: a mix as a shape, the split as its thread percentage axis"
run sweep --out "$tmp/sw" --workload "$MIX,spin:sleep=on" --strategy mps-split --workers 2 \
	--thread-percentage 30,50 --repeats 1 --duration 300ms --warmup 20ms -q
if [[ $rc -eq 0 ]] && python3 - "$tmp/sw/results.jsonl" "$MIX" <<'EOF'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
keys = sorted(r["cell"]["key"] for r in recs)
mix = sys.argv[2]
assert keys == sorted([mix + "|mps-split|w2|b1", mix + "|mps-split|w2|b1|t30",
                       "spin:sleep=on|mps-split|w2|b1", "spin:sleep=on|mps-split|w2|b1|t30"]), keys
for r in recs:
    res = r["bench"]["results"][0]
    if r["cell"]["shape"] == mix:
        assert r["cell"]["workload"] == "mix"
        want = [30, 70] if r["cell"]["key"].endswith("|t30") else [50, 50]
        assert [w["thread_percentage_set"] for w in res["workers"]] == want, res["workers"]
        assert res["score"] > 0
    else:
        assert r["cell"]["workload"] == "spin" and res["score"] is None
EOF
then ok "sweep: the mix's cells at its even split and at 30/70, each worker its share"
else fail "sweep mix: exit $rc $(cat "$tmp/err")"; fi
if grep -q "(mps-split shares 30/70)" "$tmp/sw/report.md" && grep -q "^A mix (A+B" "$tmp/sw/report.md" \
	&& grep -q "(mps-split threads 30%)" "$tmp/sw/report.md"; then
	ok "report: the mix's split apart, what its figures are"
else
	fail "report of the mix: $(grep -n 'mps-split' "$tmp/sw/report.md" | head -5)"
fi

echo "== sweep and tune: an option for every workload of a mix (--NAME VALUE), refused where a spec gave it"
run sweep --out "$tmp/swo" --workload 'spin:request-us=300us+spin:request-us=900us' --sleep on --strategy timeslice \
	--workers 2 --repeats 1 --duration 200ms --warmup 20ms -q --no-report
if [[ $rc -eq 0 ]] && python3 - "$tmp/swo/results.jsonl" <<'EOF'
import json, sys
r = json.loads(open(sys.argv[1]).readline())
mix = r["bench"]["config"]["mix"]
assert [m["workload_options"]["sleep"] for m in mix] == ["on", "on"], mix
assert [m["workload_options"]["request-us"] for m in mix] == ["300us", "900us"], mix
EOF
then ok "sweep: --sleep reaches both workloads of the mix, each keeps its own --request-us"
else fail "sweep mix option: exit $rc $(cat "$tmp/err")"; fi
run tune --out "$tmp/tno" --workload 'spin+spin:request-us=900us' --sleep on \
	--strategy timeslice --workers 2 --duration 100ms --warmup 10ms --max-repeats 2 -q --json
[[ $rc -eq 0 || $rc -eq 10 ]] && ok "tune: a workload option beside a mix is an option (exit $rc)" \
	|| fail "tune mix option: exit $rc $(cat "$tmp/err")"
refused "sweep: an option a spec of the mix gave" "--request-us is given twice: as an option and in workload" \
	sweep --out "$tmp/swr" --workload 'spin+spin:request-us=900us' --request-us 400us --workers 2
no_workers_left "mix options"

echo "== report: an ok run of a mix without a score is a bad line, never its summed items/s"
mkdir -p "$tmp/sw-bad"
python3 - "$tmp/sw/results.jsonl" "$tmp/sw-bad/results.jsonl" <<'EOF'
import json, sys
out = open(sys.argv[2], "w")
done = False
for l in open(sys.argv[1]):
    r = json.loads(l)
    if not done and r["cell"]["workload"] == "mix" and r["status"] == "ok":
        r["bench"]["results"][0]["score"] = None
        done = True
    out.write(json.dumps(r) + "\n")
assert done
EOF
run report "$tmp/sw-bad"
[[ $rc -eq 0 ]] && grep -q "an ok run of a mix without a score; line skipped" "$tmp/err" \
	&& ok "report: the scoreless mix run skipped with a warning" || fail "report of a scoreless mix: exit $rc $(cat "$tmp/err")"

echo "== plan: a set percentage is the one the runs had; a mix is refused (spin measured no GPU: --template)"
run plan "$tmp/sw" --for env --shape 'spin:sleep=on (mps-split threads 30%)' --batch 1 --template
[[ $rc -eq 0 ]] && grep -qx 'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30' "$tmp/out" \
	&& ok "plan: the runs' 30%, not 100/K" || fail "plan of a set percentage: exit $rc: $(cat "$tmp/out" "$tmp/err")"
run plan "$tmp/sw" --for slurm --shape 'spin:sleep=on (mps-split threads 30%)' --batch 1 --template
[[ $rc -eq 0 ]] && grep -q "the runs gave each worker 30% of the SMs; job.sh's gpushare farm gives each of its 2 slots 50% (100/2)" "$tmp/err" \
	&& ok "plan for slurm: the job script's farm share differs from the runs' 30%, and it says so" \
	|| fail "plan slurm of a set percentage: exit $rc: $(cat "$tmp/err")"
run plan "$tmp/sw" --for env --shape "$MIX (mps-split shares 30/70)" --batch 1 --template
[[ $rc -eq 14 && $(wc -l <"$tmp/err") -eq 1 ]] && grep -q "is a mix of workloads" "$tmp/err" \
	&& ok "plan of a mix: refused (exit 14), one line" || fail "plan of a mix: exit $rc: $(cat "$tmp/err")"

echo "== tune: the split searched; the pick gives the SM-bound workload the most"
run tune --out "$tmp/auto" --workload "$MIX" --strategy mps-split --workers 2 --duration 200ms --warmup 20ms \
	--budget 1s --json -q
if [[ $rc -eq 0 || $rc -eq 10 ]] && python3 - "$tmp/out" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
assert sorted(c["split"] for c in doc["candidates"]) == ["25/75", "50/50", "75/25"], doc["candidates"]
assert doc["goal"] == "score"
EOF
then ok "tune: auto searches the splits 25/75, 50/50, 75/25"
else fail "tune auto: exit $rc $(cat "$tmp/err")"; fi

SM='spin:request-us=1ms:sleep=on:by-threads=on+spin:request-us=2ms:sleep=on'
pick_ok=false
for try in 1 2; do
	rm -rf "$tmp/tn"
	run tune --out "$tmp/tn" --workload "$SM" --strategy mps-split --workers 2 --thread-percentage 10,50,90 \
		--duration 800ms --warmup 50ms --json -q
	if [[ $rc -eq 0 ]] && python3 - "$tmp/out" "$SM" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
best = [c for c in doc["candidates"] if c["best"]]
assert len(best) == 1 and best[0]["split"] == "90/10", doc["candidates"]
assert doc["bench_command"].endswith("--thread-percentage 90/10 --workload " + sys.argv[2]), doc["bench_command"]
assert doc["farm_command"] is None
assert doc["plan_command"] is None and doc["exec_command"] is None   # plan refuses a mix; no command
EOF
	then
		pick_ok=true
		break
	fi
	echo "try $try: exit $rc $(head -c 600 "$tmp/out") $(tail -3 "$tmp/err")"
done
$pick_ok && ok "tune: the pick is 90/10 with its bench command" || fail "tune: the pick is not 90/10"
no_workers_left "tune"

finish
