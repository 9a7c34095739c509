#!/usr/bin/env bash
# End-to-end tests of `gpushare tune` on the CPU: a test worker whose speed
# is known from its configuration (test_worker --by-config: 2 workers at
# batch 4 are best, sequential at 4 workers and batch 1 worst), so tune must
# pick the known best and drop the known worst at its probe; the run counts
# of successive halving (one probe per candidate, full runs only for the
# survivors); --budget stops it and says so; --resume continues a cut-short
# tune with the same decisions and no run twice; gpushare report reads its
# directory; bad options are refused.
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

echo "== the known best is picked, the known worst dropped at its probe; run counts of successive halving"
run "${TUNE[@]}" --out "$tmp/a" --json "${CMD[@]}"
# On a loaded machine the worst candidate's 100 ms probe (70 items/s over 4
# workers taking turns) may see no request at all: a failed probe (exit 10),
# dropped for "no successful run". Any other failure fails the test.
if [[ $rc -eq 0 || $rc -eq 10 ]] && python3 - "$tmp/out" "$tmp/a/probes.jsonl" "$tmp/a/results.jsonl" "$rc" <<'PY'
import json, sys, collections
doc = json.load(open(sys.argv[1]))
key = lambda c: (c["strategy"], c["workers"], c["batch"])
best = [c for c in doc["candidates"] if c["best"]]
assert len(best) == 1 and key(best[0]) == ("timeslice", 2, 4), best
worst = [c for c in doc["candidates"] if key(c) == ("sequential", 4, 1)][0]
# 70 items/s against 1600: far below half the best probe, out after the probe round.
assert worst["dropped_after_round"] == 0 and not worst["racing"] and worst["runs"] == 0, worst
failed = [p["cell"]["key"] for p in map(json.loads, open(sys.argv[2])) if p["status"] != "ok"]
failed += [r["cell"]["key"] for r in map(json.loads, open(sys.argv[3])) if r["status"] != "ok"]
if sys.argv[4] == "10":
    assert worst["dropped_why"] == "nothing" and failed and all(k.endswith("|sequential|w4|b1") for k in failed), failed
else:
    assert worst["dropped_why"] == "probe-cut" and worst["drop_ratio"] < 0.5 and not failed, (worst, failed)
assert "--strategy timeslice --workers 2 --batch 4 -- " in doc["bench_command"], doc["bench_command"]
assert doc["farm_command"].startswith("gpushare farm --dir FARMDIR --slots 2 --strategy timeslice"), doc
# The same pick as MPI ranks, and as a plan of tune's own results.
assert doc["exec_command"].startswith("mpirun -np 2 -x GPUSHARE_BATCH=4 gpushare exec --strategy timeslice --ranks-per-gpu 2 -- "), doc
assert doc["exec_command"].endswith("/tw --by-config --warmup 1"), doc["exec_command"]
assert doc["plan_command"].startswith("gpushare plan ") and " --for TARGET --shape " in doc["plan_command"], doc
assert doc["plan_command"].endswith(" --batch 4 --strategy timeslice"), doc["plan_command"]
open(sys.argv[1] + ".plan", "w").write(doc["plan_command"])
# Run counts: one probe per candidate (12), then full runs only for the best
# kept_after_probes = max(2, ceil(12 / 8)) = 2 probes: at most --max-repeats 3
# rounds of 2 (the halving leaves one after 2 rounds unless the runs cannot
# tell the two apart yet); the full grid at 2 repeats is 24 full runs.
probes = [json.loads(l) for l in open(sys.argv[2])]
full = [json.loads(l) for l in open(sys.argv[3])]
assert doc["probes_done"] == len(probes) == 12, (doc["probes_done"], len(probes))
assert collections.Counter(p["cell"]["key"] for p in probes).most_common(1)[0][1] == 1      # one each
assert all(p["bench"]["config"]["duration_seconds"] == 0.1 for p in probes), "probe window: 200ms / 4, at least 100ms"
assert all(r["bench"]["config"]["duration_seconds"] == 0.2 for r in full), "full window"
assert doc["kept_after_probes"] == 2, doc["kept_after_probes"]
assert doc["full_runs_done"] == len(full) and 1 <= len(full) <= 6, len(full)
assert doc["runs_done"] == 12 + len(full) and doc["runs_done"] < 24, doc["runs_done"]
ranked = {c["strategy"] + "|w%d|b%d" % (c["workers"], c["batch"]): c.get("probe_rank") for c in doc["candidates"]}
for r in full:
    k = r["cell"]["key"].split("|", 1)[1]
    assert ranked[k] is not None and ranked[k] <= 2, (k, ranked[k])    # only the survivors ran again
assert best[0]["runs"] >= 1 and best[0]["racing"]
racing = [c["strategy"] + "|w%d|b%d" % (c["workers"], c["batch"]) for c in doc["candidates"] if c["racing"]]
# The halving ends with one, or with a tie the runs could not settle (on a
# loaded machine): then the racing are the tied, the pick first.
if doc["tie"]:
    tied = [k.split("|", 1)[1] for k in doc["tie_between"]]
    assert tied[0] == "timeslice|w2|b4" and len(tied) >= 2 and set(tied) <= set(racing), (tied, racing)
    assert doc["unsettled"].startswith("cannot tell them apart with "), doc["unsettled"]
else:
    assert len(racing) == 1 and doc["tie_between"] is None and doc["unsettled"] is None, racing
for c in doc["candidates"]:
    k = c["strategy"] + "|w%d|b%d" % (c["workers"], c["batch"])
    # the pick, one tied with it the runs could not settle, or dropped
    assert c["best"] or (doc["tie"] and c["racing"] and k in tied) or \
        c["dropped_why"] in ("probe-cut", "probe-rank", "cut", "welch", "half"), c
PY
then ok "tune: picks timeslice w2 b4, drops sequential w4 b1 at its probe, 12 probes and at most 4 full runs"
else fail "tune pick: rc $rc $(cat "$tmp/err") $(cat "$tmp/out")"; fi
# The plan command tune printed runs as given (TARGET: env) on tune's results.
# These runs measured no GPU (no driver here): plan refuses them as a plan
# (exit 14, naming --template) and writes them as a template with --template.
plan=$(cat "$tmp/out.plan" 2>/dev/null || true)
plan_env=${plan/--for TARGET/--for env}
set +e
eval "\"\$GPUSHARE\"${plan_env#gpushare}" >/dev/null 2>"$tmp/plan.err"
prc=$?
out=$(eval "\"\$GPUSHARE\"${plan_env#gpushare} --template" 2>"$tmp/plan2.err")
prc2=$?
set -e
[[ $prc -eq 14 ]] && grep -q -- "--template" "$tmp/plan.err" \
	&& ok "tune's plan command on runs that measured no GPU: refused, exit 14, naming --template" \
	|| fail "tune's plan command '$plan_env': exit $prc: $(cat "$tmp/plan.err")"
[[ $prc2 -eq 0 && $out == *"Time-slicing needs no variable: run 2 processes per GPU"* ]] \
	&& ok "tune's plan command with --template: the pick's timeslice at 2 per GPU (exit 0)" \
	|| fail "tune's plan command '$plan_env --template': exit $prc2: $(cat "$tmp/plan2.err")"
# Two are kept after the probes, but on a loaded machine the second best's
# probe may fall below the cut too (one goes on then).
grep -qE "gpushare: tune: dropped sequential w4 b1: (its probe .* below the cut 0.500x|no successful run)" "$tmp/err" \
	&& grep -qE "after the probes: [12] go on" "$tmp/err" && grep -q "gpushare: tune: probe 12 " "$tmp/err" \
	&& ok "progress: probes, the drops and why, rounds on stderr" || fail "progress: $(cat "$tmp/err")"
[[ -s "$tmp/a/report.md" ]] && ok "the report is written" || fail "no report.md"
run report "$tmp/a" -q
[[ $rc -eq 0 ]] && ok "gpushare report reads tune's directory" || fail "report: rc $rc $(cat "$tmp/err")"
no_workers_left "tune"

echo "== text output"
run "${TUNE[@]}" --out "$tmp/b" -q "${CMD[@]}"
grep -qE "^(Pick: timeslice w2 b4, |Tie between timeslice w2 b4 and .* \(cannot tell them apart with )" "$tmp/out" && grep -q "^Searched: 12 candidates, 12 probes" "$tmp/out" \
	&& grep -q "^  dropped sequential w4 b1 after its probe (.*): its probe .* of [a-z-]* w[0-9]* b[0-9]*'s, below the cut" "$tmp/out" \
	&& grep -q "^Run it: gpushare bench --strategy timeslice --workers 2 --batch 4 -- " "$tmp/out" \
	&& grep -q "^Ranks this way: mpirun -np 2 -x GPUSHARE_BATCH=4 gpushare exec --strategy timeslice --ranks-per-gpu 2 -- " "$tmp/out" \
	&& [[ ! -s "$tmp/err" ]] && ok "text: the pick, what was dropped and why, the commands (the ranks' batch too); -q: nothing on stderr" \
	|| fail "text: $(cat "$tmp/out") $(cat "$tmp/err")"

echo "== --budget, then --resume"
picked() { python3 -c '
import json, sys
b = [c for c in json.load(open(sys.argv[1]))["candidates"] if c["best"]]
sys.exit(0 if b and (b[0]["strategy"], b[0]["workers"], b[0]["batch"]) == ("timeslice", 2, 4) else 1)' "$1" 2>/dev/null; }
for try in 1 2; do
	rm -rf "$tmp/c"
	run "${TUNE[@]}" --out "$tmp/c" --budget 1s --json "${CMD[@]}"
	budget_rc=$rc
	cp "$tmp/out" "$tmp/c.budget.out"
	cp "$tmp/err" "$tmp/c.budget.err"
	n1=$(wc -l <"$tmp/c/probes.jsonl")
	budget_results=$([[ -e "$tmp/c/results.jsonl" ]] && echo yes || echo no)
	run "${TUNE[@]}" --out "$tmp/c" --resume --json "${CMD[@]}"
	# A busy machine can freeze a 100 ms probe enough to drop the best (the
	# probe cut is half the best probe): the machine, not the resume. Once
	# more from the start.
	if [[ $try -eq 1 && $rc -eq 0 ]] && ! picked "$tmp/out"; then
		echo "note: the resumed tune picked another configuration (a frozen probe?); once more"
		continue
	fi
	break
done
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["budget_out"] is True and d["probes_only"] is True and 0 < d["runs_done"] < 12, d["runs_done"]
assert d["full_runs_done"] == 0 and sum(c["dropped_why"] == "not-run" for c in d["candidates"]) > 0' "$tmp/c.budget.out" \
	&& [[ $budget_rc -eq 0 && $budget_results == no ]] \
	&& ok "--budget 1s: stopped after $n1 probes, no full run, says so" \
	|| fail "--budget: rc $budget_rc $(cat "$tmp/c.budget.out" "$tmp/c.budget.err")"
if [[ $rc -eq 0 ]] && python3 - "$tmp/out" "$tmp/c/probes.jsonl" "$tmp/c/results.jsonl" "$n1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["runs_skipped"] == int(sys.argv[4]), (d["runs_skipped"], sys.argv[4])
assert d["probes_done"] == 12 - int(sys.argv[4]) and not d["probes_only"], d
best = [c for c in d["candidates"] if c["best"]][0]
assert (best["strategy"], best["workers"], best["batch"]) == ("timeslice", 2, 4), best
for f in sys.argv[2:4]:
    seen = set()
    for l in open(f):
        r = json.loads(l)
        k = (r["cell"]["key"], r["repeat"])
        assert k not in seen, k          # no run twice
        seen.add(k)
PY
then ok "--resume: carries on from the $n1 recorded probes, none twice, same pick"
else fail "--resume: rc $rc $(cat "$tmp/err")"; fi
cp "$tmp/out" "$tmp/c.first"
run "${TUNE[@]}" --out "$tmp/c" --resume --json "${CMD[@]}"
python3 -c '
import json, sys
d, e = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert d["runs_done"] == 0, d["runs_done"]
assert [(c["dropped_why"], c["dropped_after_round"], c["best"]) for c in d["candidates"]] == \
       [(c["dropped_why"], c["dropped_after_round"], c["best"]) for c in e["candidates"]]' "$tmp/out" "$tmp/c.first" \
	&& ok "--resume of a finished tune: the same decisions, no new run" || fail "--resume again: $(cat "$tmp/err")"

echo "== --resume takes the recorded options; other ones are refused"
run tune --out "$tmp/c" --resume --json
python3 -c '
import json, sys
d, e = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert d["runs_done"] == 0 and d["shape"] == e["shape"], d
assert [(c["dropped_why"], c["best"]) for c in d["candidates"]] == [(c["dropped_why"], c["best"]) for c in e["candidates"]]
' "$tmp/out" "$tmp/c.first" && [[ $rc -eq 0 ]] \
	&& ok "--resume with only --out: the recorded options and command, the same decisions" \
	|| fail "--resume with only --out: rc $rc $(cat "$tmp/err")"
run tune --out "$tmp/c" --resume --workers 1,2 --json "${CMD[@]}"
[[ $rc -eq 2 ]] && grep -q "ran with --workers 1,2,4, this one asks for --workers 1,2" "$tmp/err" \
	&& ok "--resume with other --workers -> 2: $(head -1 "$tmp/err")" || fail "--resume --workers: rc $rc $(cat "$tmp/err")"
run tune --out "$tmp/c" --resume --max-repeats 4 --json "${CMD[@]}"
[[ $rc -eq 2 ]] && grep -q "max-repeats" "$tmp/err" && ok "--resume with another --max-repeats -> 2" \
	|| fail "--resume --max-repeats: rc $rc $(cat "$tmp/err")"
run tune --out "$tmp/c" --resume --json -- "$tmp/tw" --warmup 1
[[ $rc -eq 2 ]] && grep -q "ran another command" "$tmp/err" && ok "--resume with another command -> 2" \
	|| fail "--resume other command: rc $rc $(cat "$tmp/err")"

echo "== a failed full run is a recorded run: --resume does not run it again, and decides the same"
# The first full run of timeslice w2 b4 (the best) fails: its two workers
# are the 3rd and 4th starts of that configuration (the probe's are 1 and 2).
cat >"$tmp/flaky.sh" <<FLAKY
#!/bin/sh
if [ "\$GPUSHARE_WORKERS" = 2 ] && [ "\$GPUSHARE_BATCH" = 4 ]; then
	n=\$(flock "$tmp/count.lock" sh -c 'n=\$((\$(cat "\$0" 2>/dev/null || echo 0) + 1)); echo \$n >"\$0"; echo \$n' "$tmp/count")
	case \$n in 3 | 4) exit 3 ;; esac
fi
exec "$tmp/tw" "\$@"
FLAKY
chmod +x "$tmp/flaky.sh"
FLAKY=(tune --strategy timeslice --workers 1,2,4 --batch 1,4 --duration 200ms --warmup 30ms --max-repeats 3 --json)
run "${FLAKY[@]}" --out "$tmp/f" -- "$tmp/flaky.sh" --by-config --warmup 1
frc=$rc
cp "$tmp/out" "$tmp/f.first"
run tune --out "$tmp/f" --resume --json
if python3 - "$tmp/f.first" "$tmp/out" "$tmp/f/results.jsonl" <<'PY'
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
full = [json.loads(l) for l in open(sys.argv[3])]
failed = [r for r in full if r["status"] == "failed"]
assert [r["cell"]["key"].split("|")[2:] for r in failed] == [["w2", "b4"]], [r["cell"]["key"] for r in failed]
w2b4 = [c for c in a["candidates"] if (c["workers"], c["batch"]) == (2, 4)][0]
assert w2b4["dropped_why"] == "nothing" and w2b4["dropped_after_round"] == 1, w2b4
assert b["runs_done"] == 0, b["runs_done"]
key = lambda d: [(c["dropped_why"], c["dropped_after_round"], c["runs"], c["best"]) for c in d["candidates"]]
assert key(a) == key(b), (key(a), key(b))
PY
then
	ok "a failed full run (exit $frc): dropped for nothing after round 1; --resume runs nothing and decides the same"
elif [[ $(cat "$tmp/count" 2>/dev/null || echo 0) -lt 3 ]]; then
	echo "note: timeslice w2 b4 was dropped at its probe on this busy machine: no full run of it to fail"
else
	fail "a failed full run, then --resume: rc $frc/$rc $(cat "$tmp/f.first" "$tmp/err")"
fi

echo "== --resume refuses what it cannot prove is the same grid, and never records a probe twice"
# From the finished tune in c: its records changed one way each; --resume
# must refuse (exit 2) and append nothing.
mutate() {
	python3 - "$tmp/c" "$tmp/g" "$1" <<'PY'
import json, os, shutil, sys
src, dst, how = sys.argv[1:4]
shutil.rmtree(dst, ignore_errors=True)
os.makedirs(dst)
shutil.copy(src + "/results.jsonl", dst + "/results.jsonl")
recs = [json.loads(l) for l in open(src + "/probes.jsonl")]
ok = [r for r in recs if r["status"] == "ok"][0]
agg = ok["bench"]["results"][0]["aggregate"]
lines = None
if how in ("cl-null", "cl-empty"):
    for r in recs:
        r["metadata"]["command_line"] = None if how == "cl-null" else []
elif how == "negative":
    agg["items_per_second"] = -5
elif how == "null":
    agg["items_per_second"] = None
elif how == "string":
    agg["items_per_second"] = "fast"
elif how == "workers":
    ok["cell"]["workers"] = ok["bench"]["config"]["workers"] = 3 - ok["cell"]["workers"] % 3
elif how == "foreign":
    f = json.loads(json.dumps(ok))
    f["cell"]["batch"] = f["bench"]["config"]["batch"] = 7
    f["cell"]["key"] = f["cell"]["key"].rsplit("|", 1)[0] + "|b7"
    recs.append(f)
if how == "nan":
    agg["items_per_second"] = float("nan")
lines = [json.dumps(r, separators=(",", ":")) for r in recs]
if how == "empty":
    lines = []
if how != "missing":
    open(dst + "/probes.jsonl", "w").write("".join(l + "\n" for l in lines))
PY
}
for how in cl-null cl-empty empty missing negative null nan string workers foreign; do
	mutate "$how"
	before=$(cat "$tmp/g"/*.jsonl | wc -l)
	run tune --out "$tmp/g" --resume -q --json
	after=$(cat "$tmp/g"/*.jsonl | wc -l)
	if [[ $rc -eq 2 && $before -eq $after ]] && grep -q "resume" "$tmp/err"; then
		ok "--resume over probes '$how' -> 2, nothing run: $(head -c 160 "$tmp/err")"
	else
		fail "--resume over probes '$how': rc $rc, $before -> $after lines: $(cat "$tmp/err")"
	fi
done
rm -rf "$tmp/new"
run tune --out "$tmp/new" --resume -q
[[ $rc -eq 2 && ! -e "$tmp/new/probes.jsonl" ]] && grep -q "nothing recorded" "$tmp/err" \
	&& ok "--resume of a new directory -> 2, no default tune started" || fail "--resume new: rc $rc $(cat "$tmp/err")"
no_workers_left "tune resume refusals"

echo "== bad options"
for bad in "--repeats 3" "--target-noise 2%" "--workload spin,matmul" "--max-repeats 1" "--budget 0" "--slo p99=10ms"; do
	# shellcheck disable=SC2086
	run tune --out "$tmp/bad" $bad --workload spin
	[[ $rc -eq 2 ]] && ok "'$bad' -> 2: $(head -1 "$tmp/err")" || fail "'$bad' -> $rc $(cat "$tmp/err")"
done
# Every run is planned before the first starts: a budget no probe fits in
# (a 7.5-minute probe of --duration 1h, a 1 ns budget, a peak search whose
# first step needs 1e8 s) is refused at once, nothing run, no "No pick".
for bad in "--budget 5s --duration 1h" "--budget 1ns" "--budget 5s --rate 100 --slo p99.999999=10ms"; do
	rm -rf "$tmp/bp"
	# shellcheck disable=SC2086
	run tune --out "$tmp/bp" $bad --strategy timeslice --workers 1 "${CMD[@]}"
	if [[ $rc -eq 2 ]] && grep -Eq "shorter than one run|at most 600 s" "$tmp/err" && ! grep -q "No pick" "$tmp/out" \
		&& [[ ! -s "$tmp/bp/probes.jsonl" ]]; then
		ok "'$bad' -> 2 before any run: $(head -1 "$tmp/err")"
	else
		fail "'$bad' -> $rc: $(cat "$tmp/out" "$tmp/err")"
	fi
done
run "${TUNE[@]}" --out "$tmp/a" "${CMD[@]}"
[[ $rc -eq 2 ]] && grep -q "give --resume" "$tmp/err" && ok "results present without --resume -> 2" || fail "present: $rc"
mkdir "$tmp/d" && cp "$tmp/c/probes.jsonl" "$tmp/d/"
run "${TUNE[@]}" --out "$tmp/d" "${CMD[@]}"
[[ $rc -eq 2 ]] && grep -q "probes.jsonl' already holds runs; give --resume" "$tmp/err" \
	&& ok "probes present without --resume -> 2" || fail "probes present: $rc $(cat "$tmp/err")"
run tune --help
[[ $rc -eq 0 ]] && grep -q -- "--budget TIME" "$tmp/out" && ok "--help" || fail "--help"
no_workers_left "tune bad options"
finish tune
