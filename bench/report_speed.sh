#!/usr/bin/env bash
# How long `gpushare report` takes on 1,000 recorded runs (issue 4 asks for
# under a second), and how much memory it holds. Usage:
#   bench/report_speed.sh BUILD_DIR [RUNS]
# Builds a results file of RUNS records (default 1000) by copying the records
# of a short CPU-only spin sweep (7 workers each), with their cells
# spread over 3 strategies x 5 worker counts x 4 batch sizes, then times the
# report (best of 3) and prints the number, with the peak resident memory
# of each run (GNU time's "Maximum resident set size", when /usr/bin/time
# is there). Build without sanitizers for a meaningful number
# (-DGPUSHARE_SANITIZE=OFF -DCMAKE_BUILD_TYPE=Release).
# KEEP=DIR keeps the generated results file in DIR/results.jsonl and reuses
# it when it is there already (to compare two builds on the same file).
# CELLS=9 spreads the runs over 9 cells (3 strategies x 3 worker counts, so a
# cell holds RUNS/9 runs) instead of 60; PLAN=1 times `gpushare plan` on the
# same file too (with PLAN_ARGS, default "--for env"). Each run's CPU time (user + sys) is printed beside its wall
# time: on a shared machine the CPU time is the figure to compare.
set -euo pipefail
B=$(cd "${1:?build dir}" && pwd) N=${2:-1000}
G=$B/gpushare
export GPUSHARE_WORKER=${GPUSHARE_WORKER:-$B/gpushare-worker}
tmp=$(mktemp -d /tmp/gpushare-report-speed.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# Real records (7 workers each, like a GPU sweep) as templates.
"$G" sweep --out "$tmp/seed" --workload spin --request-us 100us --strategy timeslice,sequential \
	--workers 7 --batch 1 --repeats 1 --duration 100ms --warmup 20ms -q --no-report >/dev/null
big=$tmp/big
[[ -n "${KEEP:-}" ]] && big=$KEEP
mkdir -p "$big"
[[ -n "${KEEP:-}" && -s "$big/results.jsonl" && $(wc -l <"$big/results.jsonl") -eq $N ]] ||
python3 - "$tmp/seed/results.jsonl" "$big/results.jsonl" "$N" "${CELLS:-60}" <<'PY'
import json, random, sys
seeds = [json.loads(l) for l in open(sys.argv[1])]
n = int(sys.argv[3]); random.seed(1)
strategies = ["timeslice", "mps", "mps-split"]; workers = [1, 2, 3, 5, 7]; batches = [1, 2, 4, 8]
if sys.argv[4] == "9":
    workers = [1, 3, 7]; batches = [1]
cells = [(s, w, b) for s in strategies for w in workers for b in batches]
with open(sys.argv[2], "w") as f:
    for i in range(n):
        s, w, b = cells[i % len(cells)]
        r = json.loads(json.dumps(seeds[i % len(seeds)]))
        r["cell"].update(strategy=s, workers=w, batch=b, key=f"spin|{s}|w{w}|b{b}")
        r["repeat"] = i // len(cells)
        a = r["bench"]["results"][0]["aggregate"]
        a["items_per_second"] *= random.uniform(0.9, 1.1) * b * (w if s != "timeslice" else 1)
        f.write(json.dumps(r, separators=(",", ":")) + "\n")
PY
echo "results file: $(wc -l <"$big/results.jsonl") runs, $(du -h "$big/results.jsonl" | cut -f1)"
# time_cmd LABEL CMD...: wall and CPU seconds of one run, and its peak memory.
time_cmd() {
	local label=$1 t0 t1
	shift
	t0=$(date +%s.%N)
	if [[ -x /usr/bin/time ]]; then
		/usr/bin/time -v -o "$tmp/time.txt" "$@" >/dev/null || echo "$label: exit $?"
	else
		"$@" >/dev/null || echo "$label: exit $?"
	fi
	t1=$(date +%s.%N)
	t=$(python3 -c "print(round($t1 - $t0, 3))")
	cpu= rss=
	if [[ -s "$tmp/time.txt" ]]; then
		cpu=$(awk -F': ' '/User time/ { u = $2 } /System time/ { s = $2 } END { printf ", CPU %.2f s", u + s }' "$tmp/time.txt")
		rss=$(awk -F': ' '/Maximum resident set size/ { printf ", peak RSS %.1f MiB", $2 / 1024 }' "$tmp/time.txt")
	fi
	echo "$label: $t s$cpu$rss"
}
best=
for i in 1 2 3; do
	time_cmd "run $i" "$G" report "$big" --slo-p99 5 -q
	if [[ -z "$best" ]] || python3 -c "import sys; sys.exit(0 if $t < $best else 1)"; then best=$t; fi
done
if [[ "${PLAN:-0}" == 1 ]]; then
	# shellcheck disable=SC2086 # PLAN_ARGS is a list of words
	time_cmd "plan ${PLAN_ARGS:---for env}" "$G" plan "$big" ${PLAN_ARGS:---for env}
fi
echo "gpushare report on $N runs in ${CELLS:-60} cells: best of 3 = $best s"
