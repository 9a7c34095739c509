#!/usr/bin/env bash
# The full grid (gpushare sweep) against the search (gpushare tune) on the
# same GPU, interleaved per workload (sweep first for one workload, tune
# first for the next), for three workloads: transformer, matmul and a
# PyTorch MLP of our own through the Python client (examples/mlp_worker.py).
# Both get the very same grid, window and warm-up: the variables below are
# passed to both commands. First, on the same host (CPU only, about 40 s),
# the cost of an empty request through the clients
# (bench/client_overhead.sh) and the spin sweep of the issue end to end
# against its 15 s of windows (SPIN_SWEEP=0 skips it).
#
#   bench/gpu/tune.sh BUILD OUT
#
# Prints and writes OUT/summary.txt: per workload the time each took, the
# runs each did, the grid's best cell, tune's pick, the pick's throughput in
# the grid's own runs against the grid's best (%), and tune's time over the
# grid's. Every private MPS daemon of the runs lives under OUT/rt (a private
# XDG_RUNTIME_DIR) and is stopped on any exit of this script; each step is
# stopped with SIGINT (gpushare then stops its own daemon) when the
# script's deadline comes, so the whole fits one call.
#
# Env (defaults sized for about 9 minutes on one H100; see docs/tune.md for
# the cost model):
#   DUR (1s) window of a full run; tune's probes take an eighth
#   MLP_DUR (4s) the same for the mlp: a forked PyTorch worker costs about
#     2 s per run before its window (its CUDA context, model and cuBLAS),
#     and tune's probe round is at least one such start per candidate, so
#     a 1 s window leaves tune at about 0.45 of the grid whatever it drops
#     (docs/tune.md, "What it costs"); at 4 s, 0.30 on an H100
#     (docs/benchmarks.md, 2026-11-27), and single runs vary less
#   REPEATS (3) of the sweep (the grid at 2 repeats is read from its first
#     two rounds, timed to the start of round 3 to the second)
#   WARM (300ms) warm-up of every run
#   WORKLOADS ("transformer matmul mlp") which of the three, in this order
#     ("spin", on the transformer's grid, tries the script without a GPU:
#     with GPUSHARE_MPS_CONTROL and GPUSHARE_NVML_LIBRARY set to the fakes
#     of tests/helpers)
#   DEADLINE (540) seconds after which no step starts and a running one is
#     interrupted (under the 600 s of one call; estimated on an H100 from
#     earlier runs: CPU parts 40 s, transformer 210 s, matmul 90 s, mlp
#     200 s; WORKLOADS="transformer matmul" then WORKLOADS=mlp SPIN_SWEEP=0
#     CLIENT_DUR=0 in two calls when one is too short)
#   CLIENT_DUR (2s) window of each client overhead measurement; 0 skips it
#   PRELOAD (1) grid and tune of the mlp both with --preload (its Python
#     process and its imports once per command, the workers forked from it);
#     0 both without
#   PRELOAD_AB (0) 1: after the mlp comparison, its grid again without
#     --preload: both sweeps' times and each cell's median side by side
#     (does forking the workers change what they measure?)
#   Grids (strategies,workers,batches): TRANSFORMER_GRID
#     ("timeslice,mps,mps-split|1,2,4,8|1,4"), MATMUL_GRID
#     ("timeslice,mps,mps-split|1,2,4,8|1"), MLP_GRID
#     ("timeslice,mps,mps-split|1,2,4|32")
set -euo pipefail
B=$(cd "${1:?usage: bench/gpu/tune.sh BUILD OUT}" && pwd)
O=${2:?usage: bench/gpu/tune.sh BUILD OUT}
G=$B/gpushare
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DUR=${DUR:-1s} MLP_DUR=${MLP_DUR:-4s} REPEATS=${REPEATS:-3} WARM=${WARM:-300ms} DEADLINE=${DEADLINE:-540} CLIENT_DUR=${CLIENT_DUR:-2s}
WORKLOADS=${WORKLOADS:-transformer matmul mlp}
TRANSFORMER_GRID=${TRANSFORMER_GRID:-timeslice,mps,mps-split|1,2,4,8|1,4}
MATMUL_GRID=${MATMUL_GRID:-timeslice,mps,mps-split|1,2,4,8|1}
MLP_GRID=${MLP_GRID:-timeslice,mps,mps-split|1,2,4|32}
START=$(date +%s)
mkdir -p "$O"
O=$(cd "$O" && pwd)
# shellcheck source=bench/gpu/lib.sh
. "$SRC/bench/gpu/lib.sh"
bench_private_runtime
bench_header
echo "DUR=$DUR (mlp: $MLP_DUR) REPEATS=$REPEATS WARM=$WARM (the same for grid and tune); $(nproc) CPUs" | tee -a "$O/summary.txt"

# CPU-only first (short, and so always measured): the clients, the spin sweep.
if [[ "$CLIENT_DUR" != 0 ]] && (($(left) > 300)); then
	echo "== the cost of an empty request through the clients (bench/client_overhead.sh BUILD $CLIENT_DUR)" |
		tee -a "$O/summary.txt"
	"$SRC/bench/client_overhead.sh" "$B" "$CLIENT_DUR" 2>&1 | tee -a "$O/summary.txt" || true
fi
if [[ "${SPIN_SWEEP:-1}" != 0 ]] && (($(left) > 300)); then
	echo "== the issue's spin sweep end to end (15.0 s of measurement windows)" | tee -a "$O/summary.txt"
	t0=$(date +%s.%N)
	"$G" sweep --out "$O/issue-spin-sweep" --workload spin --strategy timeslice,sequential --workers 1,2,4 --repeats 3 \
		--duration 0.5s -q --no-report >/dev/null 2>"$O/issue-spin-sweep.err" || echo "spin sweep: exit $?" | tee -a "$O/summary.txt"
	t1=$(date +%s.%N)
	python3 -c "w = $t1 - $t0; print(f'spin sweep: {w:.1f} s wall = {w / 15.0:.2f} x its windows')" | tee -a "$O/summary.txt"
fi
i=0
for name in $WORKLOADS; do
	dur=$DUR
	case $name in
	transformer) args=(--workload transformer:layers=6:seq=128) grid=$TRANSFORMER_GRID ;;
	matmul) args=(--workload matmul:size=2048:dtype=fp16) grid=$MATMUL_GRID ;;
	mlp)
		args=(-- python3 "$SRC/examples/mlp_worker.py") grid=$MLP_GRID dur=$MLP_DUR
		[[ ${PRELOAD:-1} == 0 ]] || args=(--preload "${args[@]}") ;;
	spin) args=(--workload spin:sleep=1:request-us=1ms) grid=$TRANSFORMER_GRID ;;   # the script without a GPU
	*) echo "unknown workload '$name'" >&2; exit 2 ;;
	esac
	IFS='|' read -r strategies workers batches <<<"$grid"
	GRID=(--strategy "$strategies" --workers "$workers" --batch "$batches" --duration "$dur" --warmup "$WARM")
	echo "== $name: grid $strategies x workers $workers x batch $batches, window $dur ($( ((i % 2)) && echo "tune first" || echo "sweep first"))" |
		tee -a "$O/summary.txt"
	# Options before the workload (a command's '--' ends them).
	sweep_cmd=("$G" sweep --out "$O/$name-sweep" "${GRID[@]}" --repeats "$REPEATS" -q --no-report "${args[@]}")
	# tune searches the same cells: mps-split at its default share only (its
	# thread-percentage search is measured by bench/gpu/tune_split.sh)
	tune_cmd=("$G" tune --out "$O/$name-tune" "${GRID[@]}" --thread-percentage 1x --json --no-report "${args[@]}")
	ok=1
	if ((i % 2)); then
		step "$name-tune" "$O/$name-tune.json" "${tune_cmd[@]}" || ok=0
		step "$name-sweep" /dev/null "${sweep_cmd[@]}" || ok=0
	else
		step "$name-sweep" /dev/null "${sweep_cmd[@]}" || ok=0
		step "$name-tune" "$O/$name-tune.json" "${tune_cmd[@]}" || ok=0
	fi
	i=$((i + 1))
	((ok)) || { echo "$name: incomplete, no comparison" | tee -a "$O/summary.txt"; continue; }
	python3 - "$O" "$name" "$REPEATS" "$START" <<'PY' | tee -a "$O/summary.txt"
import datetime, json, statistics, sys
o, name, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = [json.loads(l) for l in open(f"{o}/{name}-sweep/results.jsonl")]
sweep_s = float(open(f"{o}/{name}-sweep.seconds").read())
tune_s = float(open(f"{o}/{name}-tune.seconds").read())
t = json.load(open(f"{o}/{name}-tune.json"))
def grid(upto):
    g = {}
    for r in rows:
        if r["status"] == "ok" and r["repeat"] < upto:
            c = r["cell"]
            g.setdefault((c["strategy"], c["workers"], c["batch"]), []).append(
                r["bench"]["results"][0]["aggregate"]["items_per_second"])
    return {k: statistics.median(v) for k, v in g.items()}
def stamp(r):
    d = datetime.datetime.strptime(r["metadata"]["date"], "%Y-%m-%dT%H:%M:%SZ")
    return d.replace(tzinfo=datetime.timezone.utc).timestamp()
pick = [c for c in t["candidates"] if c["best"]]
print(f"{name}: tune {tune_s:.1f} s: {t['probes_done']} probes ({t['probe_seconds']:.1f} s), "
      f"{t['full_runs_done']} full runs in {t['rounds']} rounds ({t['full_seconds']:.1f} s)")
for n in sorted({2, reps}):
    med = grid(n)
    best = max(med, key=med.get)
    # The first n rounds of the sweep: from its start to the start of the
    # first run of round n + 1 (a record's date is its run's start, to the
    # second; runs go round by round).
    if n < reps:
        t0 = float(open(f"{o}/{name}-sweep.start").read())
        gs = stamp(next(r for r in rows if r["repeat"] == n)) - t0
        how = f" (its first {n} rounds)"
    else:
        gs, how = sweep_s, ""
    runs = sum(1 for r in rows if r["repeat"] < n)
    line = (f"{name}: grid at {n} repeats{how}: {gs:.1f} s, {runs} runs; best {best[0]} w{best[1]} b{best[2]} "
            f"{med[best]:.4g} items/s")
    if pick:
        p = (pick[0]["strategy"], pick[0]["workers"], pick[0]["batch"])
        v = med.get(p, float("nan"))
        line += (f"; tune's pick {p[0]} w{p[1]} b{p[2]}: {v:.4g} in the grid's runs = {100 * v / med[best]:.1f}% "
                 f"of the best; tune's time {tune_s / gs:.2f} of the grid's")
    print(line)
if not pick:
    print(f"{name}: tune: no pick")
PY
	if [[ $name == mlp && ${PRELOAD_AB:-0} == 1 && ${PRELOAD:-1} != 0 ]]; then
		echo "== mlp: the same grid without --preload" | tee -a "$O/summary.txt"
		nopre=("$G" sweep --out "$O/mlp-sweep-nopreload" "${GRID[@]}" --repeats "$REPEATS" -q --no-report -- python3 \
			"$SRC/examples/mlp_worker.py")
		step mlp-sweep-nopreload /dev/null "${nopre[@]}" &&
			python3 - "$O" <<'PY' | tee -a "$O/summary.txt"
import json, statistics, sys
o = sys.argv[1]
def cells(d):
    g = {}
    for l in open(f"{o}/{d}/results.jsonl"):
        r = json.loads(l)
        if r["status"] == "ok":
            c = r["cell"]
            g.setdefault((c["strategy"], c["workers"], c["batch"]), []).append(
                r["bench"]["results"][0]["aggregate"]["items_per_second"])
    return g
a, b = cells("mlp-sweep"), cells("mlp-sweep-nopreload")
ta = float(open(f"{o}/mlp-sweep.seconds").read()); tb = float(open(f"{o}/mlp-sweep-nopreload.seconds").read())
print(f"mlp grid: {ta:.1f} s with --preload, {tb:.1f} s without ({ta / tb:.2f}x)")
for k in sorted(set(a) | set(b)):
    ma, mb = (statistics.median(a[k]) if k in a else float("nan")), (statistics.median(b[k]) if k in b else float("nan"))
    print(f"  {k[0]:10s} w{k[1]} b{k[2]}: {ma:9.1f} items/s with, {mb:9.1f} without ({100 * (ma / mb - 1):+.1f}%); "
          f"runs with {sorted(round(x) for x in a.get(k, []))}, without {sorted(round(x) for x in b.get(k, []))}")
PY
	fi
done

left=$(ps -eo pid=,stat=,args= | awk '$2 !~ /^Z/' | grep -E 'nvidia-cuda-mps-(control|server)|gpushare-worker|mlp_worker' |
	grep -v grep || true)
echo "total $(($(date +%s) - START)) s" | tee -a "$O/summary.txt"
if [[ -z "$left" ]]; then
	echo "nothing left running (before the exit trap)" | tee -a "$O/summary.txt"
else
	echo "still running before the exit trap (it stops our daemons): $left" | tee -a "$O/summary.txt"
fi
