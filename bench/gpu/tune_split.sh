#!/usr/bin/env bash
# mps-split's active thread percentage on a GPU: per workload (transformer,
# matmul), the grid of mps and mps-split at the default share 100/N, twice
# it and 100% (gpushare sweep --thread-percentage 1x,2x,100) and gpushare
# tune over the same candidates (its default --thread-percentage auto), on
# the same lease, one after the other.
#
#   bench/gpu/tune_split.sh BUILD OUT
#
# Prints and writes OUT/summary.txt: per workload and cell (strategy,
# workers, percentage) the median items/s of the grid's runs, the grid's
# best, tune's pick with its bench command, the pick's median in the grid
# against the grid's best (%), and the time each took. Every private MPS
# daemon lives under OUT/rt (a private XDG_RUNTIME_DIR) and is stopped on
# any exit of this script; each step is stopped with SIGINT (gpushare then
# stops its own daemon) when the deadline comes, so the whole fits one call.
#
# Env: DUR (1s) window of a full run (tune's probes an eighth), REPEATS (3)
# of the grid, WARM (300ms), WORKERS (2,4,8), WORKLOADS ("transformer
# matmul transformer+matmul:size=2048": a mix A+B is measured together and
# its split searched, 25/75, 50/50, 75/25, in grid and tune alike),
# DEADLINE (540) seconds after which no step starts.
set -euo pipefail
B=$(cd "${1:?usage: bench/gpu/tune_split.sh BUILD OUT}" && pwd)
O=${2:?usage: bench/gpu/tune_split.sh BUILD OUT}
G=$B/gpushare
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DUR=${DUR:-1s} REPEATS=${REPEATS:-3} WARM=${WARM:-300ms} WORKERS=${WORKERS:-2,4,8} DEADLINE=${DEADLINE:-540}
WORKLOADS=${WORKLOADS:-transformer matmul transformer+matmul:size=2048}
START=$(date +%s)
mkdir -p "$O"
O=$(cd "$O" && pwd)
# shellcheck source=bench/gpu/lib.sh
. "$SRC/bench/gpu/lib.sh"
bench_private_runtime
bench_header
echo "DUR=$DUR REPEATS=$REPEATS WARM=$WARM WORKERS=$WORKERS; percentages 1x,2x,100 (a mix: its splits, auto) in grid, auto in tune; a mix's figures are its score" | tee -a "$O/summary.txt"

for wl in $WORKLOADS; do
	echo "== $wl" | tee -a "$O/summary.txt"
	# A mix (A+B): the grid measures the splits tune's auto searches.
	pcts=1x,2x,100
	[[ $wl == *+* ]] && pcts=auto
	name=${wl//[:+=]/_}
	step "$name-grid" /dev/null "$G" sweep --out "$O/$name-grid" --workload "$wl" --strategy mps,mps-split \
		--workers "$WORKERS" --thread-percentage "$pcts" --repeats "$REPEATS" --duration "$DUR" \
		--warmup "$WARM" -q --no-report || true
	step "$name-tune" "$O/$name-tune.json" "$G" tune --out "$O/$name-tune" --workload "$wl" --strategy mps,mps-split \
		--workers "$WORKERS" --thread-percentage auto --duration "$DUR" --warmup "$WARM" --json -q --no-report || true
	wl=$name
	python3 - "$O/$wl-grid/results.jsonl" "$O/$wl-tune.json" "$O/$wl-grid.seconds" "$O/$wl-tune.seconds" <<'PY' |
import json, os, statistics, sys
runs = {}
if os.path.exists(sys.argv[1]):
    for line in open(sys.argv[1]):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("status") == "ok":
            res = r["bench"]["results"][0]
            # A mix is compared by its score (the geometric mean of its workloads' items/s).
            ips = res["score"] if res.get("score") is not None else res["aggregate"]["items_per_second"]
            runs.setdefault(r["cell"]["key"].split("|", 1)[1], []).append(ips)
med = {k: statistics.median(v) for k, v in runs.items()}
for k in sorted(med):
    print(f"  grid {k:28s} {med[k]:12.1f} items/s ({len(runs[k])} runs)")
best = max(med, key=med.get) if med else None
if best:
    print(f"  grid best: {best} {med[best]:.1f} items/s")
sec = lambda p: open(p).read().strip() if os.path.exists(p) else "?"
try:
    d = json.load(open(sys.argv[2]))
    pick = d["best"].split("|", 1)[1] if d.get("best") else None
    print(f"  tune pick: {pick}  ({d['runs_done']} runs)  {d['bench_command']}")
    if pick and best and pick in med:
        print(f"  the pick in the grid: {100 * med[pick] / med[best]:.1f}% of the grid's best")
except (OSError, ValueError, KeyError) as e:
    print(f"  tune: no result ({e})")
print(f"  time: grid {sec(sys.argv[3])} s, tune {sec(sys.argv[4])} s")
PY
		tee -a "$O/summary.txt"
done
