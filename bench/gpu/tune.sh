#!/usr/bin/env bash
# The full grid (gpushare sweep) against the race (gpushare tune) on the same
# GPU, for three workloads: transformer, matmul and a PyTorch MLP of our own
# (examples/mlp_worker.py). The two run interleaved per workload (the order
# alternates: sweep first for one workload, tune first for the next), on the
# same grid: strategies timeslice,mps,mps-split x workers 1,2,4,8 x batch
# 1,4 (the MLP: 8,32). Prints per workload the time each took, the grid's
# best cell, tune's pick and the pick's throughput in the grid's own runs
# against the grid's best.
#
#   bench/gpu/tune.sh BUILD OUT
#
# Env: DUR (default 1s) window per run of both; REPEATS (default 3) of the
# sweep; MAXREP (default 6) tune's --max-repeats. A grid of 24 cells x 3
# repeats with 1 s windows takes about 3 min per workload on an H100.
set -euo pipefail
B=$(cd "${1:?usage: bench/gpu/tune.sh BUILD OUT}" && pwd)
O=${2:?usage: bench/gpu/tune.sh BUILD OUT}
G=$B/gpushare
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DUR=${DUR:-1s} REPEATS=${REPEATS:-3} MAXREP=${MAXREP:-6}
mkdir -p "$O"
# shellcheck disable=SC2054  # commas inside the list values
GRID=(--strategy timeslice,mps,mps-split --workers 1,2,4,8 --duration "$DUR" --warmup 300ms)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$O/gpu.txt" 2>&1 || true
echo "GPU: $(cat "$O/gpu.txt")  date: $(date -u +%FT%TZ)  commit: $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo ?)" |
	tee "$O/summary.txt"

# name | workload arguments | batches
WORKLOADS=(
	"transformer|--workload transformer:layers=6:seq=128|1,4"
	"matmul|--workload matmul:size=2048:dtype=fp16|1,4"
	"mlp|-- python3 $SRC/examples/mlp_worker.py|8,32"
)

run_sweep() { # name args batches
	local t0 t1
	t0=$(date +%s.%N)
	# shellcheck disable=SC2086
	"$G" sweep --out "$O/$1-sweep" "${GRID[@]}" --batch "$3" --repeats "$REPEATS" -q $2 \
		>"$O/$1-sweep.out" 2>"$O/$1-sweep.err" || echo "$1: sweep exit $?" | tee -a "$O/summary.txt"
	t1=$(date +%s.%N)
	python3 -c "print(round($t1 - $t0, 1))" >"$O/$1-sweep.seconds"
}
run_tune() { # name args batches
	local t0 t1
	t0=$(date +%s.%N)
	# shellcheck disable=SC2086
	"$G" tune --out "$O/$1-tune" "${GRID[@]}" --batch "$3" --max-repeats "$MAXREP" --json $2 \
		>"$O/$1-tune.json" 2>"$O/$1-tune.err" || echo "$1: tune exit $?" | tee -a "$O/summary.txt"
	t1=$(date +%s.%N)
	python3 -c "print(round($t1 - $t0, 1))" >"$O/$1-tune.seconds"
}

i=0
for w in "${WORKLOADS[@]}"; do
	IFS='|' read -r name args batches <<<"$w"
	echo "== $name: sweep and tune ($( ((i % 2)) && echo "tune first" || echo "sweep first"))"
	if ((i % 2)); then
		run_tune "$name" "$args" "$batches"
		run_sweep "$name" "$args" "$batches"
	else
		run_sweep "$name" "$args" "$batches"
		run_tune "$name" "$args" "$batches"
	fi
	i=$((i + 1))
	python3 - "$O" "$name" <<'PY' | tee -a "$O/summary.txt"
import json, statistics, sys
o, name = sys.argv[1], sys.argv[2]
grid = {}
for line in open(f"{o}/{name}-sweep/results.jsonl"):
    r = json.loads(line)
    if r["status"] == "ok":
        c = r["cell"]
        grid.setdefault((c["strategy"], c["workers"], c["batch"]), []).append(
            r["bench"]["results"][0]["aggregate"]["items_per_second"])
med = {k: statistics.median(v) for k, v in grid.items()}
best = max(med, key=med.get)
t = json.load(open(f"{o}/{name}-tune.json"))
pick = [c for c in t["candidates"] if c["best"]]
ts, ss = open(f"{o}/{name}-tune.seconds").read().strip(), open(f"{o}/{name}-sweep.seconds").read().strip()
runs = sum(len(v) for v in grid.values())
print(f"{name}: sweep {ss} s ({runs} runs), grid best {best[0]} w{best[1]} b{best[2]} {med[best]:.4g} items/s")
if pick:
    p = (pick[0]["strategy"], pick[0]["workers"], pick[0]["batch"])
    print(f"{name}: tune {ts} s ({t['runs_done']} runs, {t['rounds']} rounds), pick {p[0]} w{p[1]} b{p[2]}"
          f" {pick[0]['median']:.4g} items/s in its own runs; in the grid's runs {med.get(p, float('nan')):.4g}"
          f" = {med.get(p, float('nan')) / med[best]:.3f} of the grid's best")
    tied = [f"{c['strategy']} w{c['workers']} b{c['batch']}" for c in t["candidates"]
            if c["racing"] and not c["best"]]
    if tied:
        print(f"{name}: still racing (tied) at tune's end: {', '.join(tied)}")
else:
    print(f"{name}: tune {ts} s: no pick")
PY
done
left=$(ps -eo pid=,stat=,args= | awk '$2 !~ /^Z/' | grep -E 'nvidia-cuda-mps-(control|server)|gpushare-worker|mlp_worker' | grep -v grep || true)
if [[ -z "$left" ]]; then
	echo "nothing left running" | tee -a "$O/summary.txt"
else
	echo "LEFT RUNNING: $left" | tee -a "$O/summary.txt"
fi
