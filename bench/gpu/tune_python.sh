#!/usr/bin/env bash
# tune against the full grid for a Python worker through the Python client
# and for a built-in workload (issue 36, item 4: tune at a third of the
# grid's time for every kind of worker, its pick within 5% of the grid's
# best). Per workload, gpushare sweep (the grid) and gpushare tune over the
# very same grid, window, warm-up and --preload, interleaved (sweep first
# for one workload, tune first for the next). tune --preload keeps each
# run's workers warm for the next run of the same strategy (docs/tune.md,
# "Keeping Python workers warm"); the grid starts every run's workers
# afresh, as a grid's independent runs do.
#
#   bench/gpu/tune_python.sh BUILD OUT
#
# Prints and writes OUT/summary.txt: per workload the wall time of each,
# tune's time over the grid's, the runs each did, the grid's best cell,
# tune's pick and the pick's throughput in the grid's own runs against the
# grid's best (%). Every private MPS daemon lives under OUT/rt and is
# stopped on any exit; each step is interrupted (SIGINT) at the deadline.
#
# Env:
#   WORKLOADS ("yolos hybrid") in this order:
#     yolos   examples/yolos_worker.py (YOLOS-small-shaped, PyTorch), --preload
#     mlp     examples/mlp_worker.py (PyTorch), --preload
#     hybrid  the built-in hybrid workload
#     stub    no GPU: the Python stand-in tests/helpers/py_preload.py with
#             --init-s STUB_INIT_S (1.5) per worker, as a CUDA context and a
#             model load, --preload
#     spin    no GPU: the built-in spin workload (sleep=1)
#     (stub and spin need GPUSHARE_MPS_CONTROL and GPUSHARE_NVML_LIBRARY set
#     to the fakes of tests/helpers, as bench/tune_cpu.sh sets them)
#   STRATEGIES (timeslice,mps) WORKERS (1,3,5,7) BATCH (1): the grid
#   DUR (3s) the window of a full run (tune's probes take an eighth)
#   REPEATS (2) of the sweep
#   WARM (300ms) the warm-up of every run
#   PRELOAD (1) the Python workloads' grid and tune with --preload; 0 both
#     without (tune then forks every worker of every run, as the grid does)
#   FRESH_AB (0) 1: also tune with --fresh-workers (--preload, each run's
#     workers forked afresh): what keeping them saves
#   DEADLINE (540) seconds after which no step starts and a running one is
#     interrupted (one call of 600 s; estimated, not measured: the yolos pair
#     about 150 s on an H200 at these defaults, hybrid about 90 s)
set -euo pipefail
B=$(cd "${1:?usage: bench/gpu/tune_python.sh BUILD OUT}" && pwd)
O=${2:?usage: bench/gpu/tune_python.sh BUILD OUT}
G=$B/gpushare
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
WORKLOADS=${WORKLOADS:-yolos hybrid}
STRATEGIES=${STRATEGIES:-timeslice,mps} WORKERS=${WORKERS:-1,3,5,7} BATCH=${BATCH:-1}
DUR=${DUR:-3s} REPEATS=${REPEATS:-2} WARM=${WARM:-300ms} DEADLINE=${DEADLINE:-540}
PRELOAD=${PRELOAD:-1} FRESH_AB=${FRESH_AB:-0} STUB_INIT_S=${STUB_INIT_S:-1.5}
START=$(date +%s)
mkdir -p "$O"
O=$(cd "$O" && pwd)
# shellcheck source=bench/gpu/lib.sh
. "$SRC/bench/gpu/lib.sh"
bench_private_runtime
bench_header
GRID=(--strategy "$STRATEGIES" --workers "$WORKERS" --batch "$BATCH" --duration "$DUR" --warmup "$WARM")
echo "grid: ${GRID[*]}; sweep --repeats $REPEATS; PRELOAD=$PRELOAD; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)" |
	tee -a "$O/summary.txt"

# The analysis of one workload's pair: $1 name, $2 the tune's directory name.
compare() {
	python3 - "$O" "$1" "$2" "$REPEATS" <<'PY' | tee -a "$O/summary.txt"
import json, statistics, sys
o, name, tname, reps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
rows = [json.loads(l) for l in open(f"{o}/{name}-sweep/results.jsonl")]
sweep_s = float(open(f"{o}/{name}-sweep.seconds").read())
tune_s = float(open(f"{o}/{tname}.seconds").read())
t = json.load(open(f"{o}/{tname}.json"))
g = {}
for r in rows:
    if r["status"] == "ok":
        c = r["cell"]
        g.setdefault((c["strategy"], c["workers"], c["batch"]), []).append(
            r["bench"]["results"][0]["aggregate"]["items_per_second"])
med = {k: statistics.median(v) for k, v in g.items()}
best = max(med, key=med.get)
pick = [c for c in t["candidates"] if c["best"]]
line = (f"{tname}: {tune_s:.1f} s ({t['probes_done']} probes in {t['probe_seconds']:.1f} s, {t['full_runs_done']} full "
        f"runs in {t['rounds']} rounds in {t['full_seconds']:.1f} s) against the grid's {sweep_s:.1f} s ({len(rows)} runs): "
        f"{tune_s / sweep_s:.3f} of the grid's time; grid best {best[0]} w{best[1]} b{best[2]} {med[best]:.4g} items/s")
if pick:
    p = (pick[0]["strategy"], pick[0]["workers"], pick[0]["batch"])
    v = med.get(p, float("nan"))
    line += f"; pick {p[0]} w{p[1]} b{p[2]}: {v:.4g} in the grid's runs = {100 * v / med[best]:.1f}% of the best"
else:
    line += "; no pick"
print(line)
PY
}

# The workload's options and command: $1 name, $2 the stub's log. Sets args
# and pre (--preload when the workload is a Python command and PRELOAD=1).
wl_args() {
	pre=()
	[[ $PRELOAD == 0 ]] || pre=(--preload)
	case $1 in
	yolos) args=("${pre[@]}" -- python3 "$SRC/examples/yolos_worker.py") ;;
	mlp) args=("${pre[@]}" -- python3 "$SRC/examples/mlp_worker.py") ;;
	hybrid) pre=() args=(--workload hybrid) ;;
	stub) args=("${pre[@]}" -- python3 "$SRC/tests/helpers/py_preload.py" --log "$2" --init-s "$STUB_INIT_S" --import-s 1) ;;
	spin) pre=() args=(--workload spin:sleep=1:request-us=1ms) ;;
	*) echo "unknown workload '$1'" >&2; exit 2 ;;
	esac
}

# What the stand-in's log says: command starts, worker forks, worker-runs.
stub_counts() {
	echo "$1: $(grep -c '^start ' "$2" || true) command starts, $(grep -c '^worker ' "$2" || true) worker forks for" \
		"$(grep -c '^run ' "$2" || true) worker-runs" | tee -a "$O/summary.txt"
}

i=0
for name in $WORKLOADS; do
	wl_args "$name" "$O/$name-sweep.log"
	sweep_cmd=("$G" sweep --out "$O/$name-sweep" "${GRID[@]}" --repeats "$REPEATS" -q --no-report "${args[@]}")
	wl_args "$name" "$O/$name-tune.log"
	tune_cmd=("$G" tune --out "$O/$name-tune" "${GRID[@]}" --json -q --no-report "${args[@]}")
	echo "== $name ($( ((i % 2)) && echo "tune first" || echo "sweep first")): ${args[*]}" | tee -a "$O/summary.txt"
	ok=1
	if ((i % 2)); then
		step "$name-tune" "$O/$name-tune.json" "${tune_cmd[@]}" || ok=0
		step "$name-sweep" /dev/null "${sweep_cmd[@]}" || ok=0
	else
		step "$name-sweep" /dev/null "${sweep_cmd[@]}" || ok=0
		step "$name-tune" "$O/$name-tune.json" "${tune_cmd[@]}" || ok=0
	fi
	i=$((i + 1))
	# A command that could not be preloaded says why (then every run starts it).
	grep -h "warning" "$O/$name-sweep.err" "$O/$name-tune.err" 2>/dev/null | sort -u | head -5 | sed "s/^/$name: /" |
		tee -a "$O/summary.txt" || true
	((ok)) || { echo "$name: incomplete, no comparison" | tee -a "$O/summary.txt"; continue; }
	compare "$name" "$name-tune"
	if [[ $name == stub ]]; then
		stub_counts "stub grid" "$O/$name-sweep.log"
		stub_counts "stub tune" "$O/$name-tune.log"
	fi
	if [[ $FRESH_AB == 1 && ${#pre[@]} -gt 0 ]]; then
		wl_args "$name" "$O/$name-tune-fresh.log"
		fresh=("$G" tune --out "$O/$name-tune-fresh" "${GRID[@]}" --json -q --no-report --fresh-workers "${args[@]}")
		if step "$name-tune-fresh" "$O/$name-tune-fresh.json" "${fresh[@]}"; then
			compare "$name" "$name-tune-fresh"
			[[ $name != stub ]] || stub_counts "stub tune --fresh-workers" "$O/$name-tune-fresh.log"
		fi
	fi
done

left=$(ps -eo pid=,stat=,args= | awk '$2 !~ /^Z/' |
	grep -E 'nvidia-cuda-mps-(control|server)|gpushare-worker|yolos_worker|mlp_worker|py_preload' | grep -v grep || true)
echo "total $(($(date +%s) - START)) s" | tee -a "$O/summary.txt"
if [[ -z "$left" ]]; then
	echo "nothing left running (before the exit trap)" | tee -a "$O/summary.txt"
else
	echo "still running before the exit trap (it stops our daemons): $left" | tee -a "$O/summary.txt"
fi
