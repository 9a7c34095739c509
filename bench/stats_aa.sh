#!/usr/bin/env bash
# The false-positive rate of gpushare's comparison on A/A comparisons (the
# same configuration as two arms): any verdict other than "tie" is false.
#
#   bench/stats_aa.sh BUILD [RUNS]
#
# 1. RUNS (default 120) runs of one configuration of the CPU `spin` workload
#    (gpushare bench --repeats, 2 workers, 200 ms windows), cut into disjoint
#    blocks of interleaved arms of n = 2, 3 and 5 runs each: independent A/A
#    comparisons of real runs;
# 2. simulated A/A draws (100,000 comparisons each) at the run-to-run spread
#    measured in 1 (coefficient of variation), log-normal, normal and with
#    outliers, and the power at 5% and 2x gaps.
# Results: docs/benchmarks.md ("Comparisons at small n").
set -euo pipefail
build=${1:?usage: bench/stats_aa.sh BUILD [RUNS]}
runs=${2:-120}
aa=$build/bench/stats_aa
[[ -x $aa ]] || { echo "no $aa: build the stats_aa target" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "== $runs runs of spin, 2 workers, timeslice, 200 ms windows ($(date -u +%FT%TZ), $(nproc) CPUs, $(uname -n))"
"$build/gpushare" bench --workload spin --strategy timeslice --workers 2 --duration 200ms --warmup 50ms \
	--repeats "$runs" --json -q >"$tmp/b.json" 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
python3 - "$tmp/b.json" >"$tmp/v" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    if r["status"] == "ok":
        print(r["aggregate"]["items_per_second"])
PY
cv=$(python3 -c '
import statistics, sys
v = [float(x) for x in open(sys.argv[1])]
print("%.4f" % (statistics.stdev(v) / statistics.mean(v)))' "$tmp/v")
echo "runs ok: $(wc -l <"$tmp/v"), run-to-run coefficient of variation $cv"
for n in 2 3 5; do "$aa" data "$n" <"$tmp/v"; done
echo "== simulated A/A, 100000 comparisons each, at the measured spread and at 1%"
for c in "$cv" 0.01; do
	for n in 2 3 5; do
		for d in lognormal normal outliers; do "$aa" sim "$d" "$c" "$n" 100000; done
	done
done
echo "== power: a true 5% and 2x gap, log-normal"
for c in "$cv" 0.01; do
	for n in 2 3 5; do
		for g in 1.05 2; do "$aa" sim lognormal "$c" "$n" 100000 "$g"; done
	done
done
