#!/usr/bin/env bash
# gpushare tune against the full grid on the CPU, with the stand-ins for the
# GPU: the spin workload (sleep=1: each worker sleeps through its requests,
# so throughput grows with the workers as on a GPU with room to spare, and a
# loaded machine's CPUs do not blur it), the fake NVML and the fake MPS
# control daemon (tests/helpers). The grid is the GPU one of
# bench/gpu/tune.sh: timeslice,mps,mps-split x workers 1,2,4,8 x batch 1,4,
# the same window and warm-up for both. Prints the wall time of each, the
# runs each did, the grid's best and tune's pick in the grid's own runs.
#
#   bench/tune_cpu.sh BUILD OUT
#
# Env: HELPERS (BUILD/tests/helpers) where the fake NVML and MPS control are;
# DUR (1s) the window of a full run; REPEATS (3) of the sweep: the grid
# at 2 repeats is read from the same sweep (its first two rounds, timed to
# the start of round 3, to the second); WARM (300ms) the warm-up of every run.
set -euo pipefail
B=$(cd "${1:?usage: bench/tune_cpu.sh BUILD OUT}" && pwd)
O=${2:?usage: bench/tune_cpu.sh BUILD OUT}
DUR=${DUR:-1s} REPEATS=${REPEATS:-3} WARM=${WARM:-300ms}
H=${HELPERS:-$B/tests/helpers}
G=$B/gpushare
mkdir -p "$O"
O=$(cd "$O" && pwd)
rt=$(mktemp -d /tmp/gpushare-tune-cpu.XXXXXX)
cleanup() {
	# The private daemons live under our runtime directory: stop any left.
	for p in "$rt"/gpushare/*/mps/pipe; do
		[[ -d "$p" ]] || continue
		CUDA_MPS_PIPE_DIRECTORY=$p "$H/fake_mps_control" <<<quit >/dev/null 2>&1 || true
	done
	rm -rf "$rt"
}
trap cleanup EXIT
chmod 700 "$rt"
export XDG_RUNTIME_DIR=$rt GPUSHARE_NVML_LIBRARY=$H/libfakenvml.so GPUSHARE_MPS_CONTROL=$H/fake_mps_control
export CUDA_MPS_PIPE_DIRECTORY=$rt/no-daemon GPUSHARE_WORKER=$B/gpushare-worker
# shellcheck disable=SC2054  # commas inside the list values
GRID=(--workload spin:sleep=1:request-us=1ms --strategy timeslice,mps,mps-split --workers 1,2,4,8 --batch 1,4
	--duration "$DUR" --warmup "$WARM" -q)
{
	echo "machine: $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "date: $(date -u +%FT%TZ)  commit: $(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo ?)"
	echo "grid: ${GRID[*]}"
} | tee "$O/summary.txt"
secs() { python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 1))" "$@"; }

t0=$(date +%s.%N)
"$G" sweep --out "$O/sweep" "${GRID[@]}" --repeats "$REPEATS" --no-report
t1=$(date +%s.%N)
"$G" tune --out "$O/tune" "${GRID[@]}" --json --no-report >"$O/tune.json"
t2=$(date +%s.%N)
echo "$(secs "$t0" "$t1") $(secs "$t1" "$t2") $t0" >"$O/seconds"

python3 - "$O" "$REPEATS" <<'PY' | tee -a "$O/summary.txt"
import json, statistics, sys
o, reps = sys.argv[1], int(sys.argv[2])
import datetime
sweep_s, tune_s, t0 = map(float, open(f"{o}/seconds").read().split())
rows = [json.loads(l) for l in open(f"{o}/sweep/results.jsonl")]
def grid(upto):
    g = {}
    for r in rows:
        if r["status"] == "ok" and r["repeat"] < upto:
            c = r["cell"]
            g.setdefault((c["strategy"], c["workers"], c["batch"]), []).append(
                r["bench"]["results"][0]["aggregate"]["items_per_second"])
    return {k: statistics.median(v) for k, v in g.items()}
# The time of the first n rounds of the sweep (runs go round by round):
# from its start to the start of the first run of round n + 1 (a record's
# date is its run's start, to the second).
def first_rounds_seconds(n):
    r = next(r for r in rows if r["repeat"] == n)
    d = datetime.datetime.strptime(r["metadata"]["date"], "%Y-%m-%dT%H:%M:%SZ")
    return d.replace(tzinfo=datetime.timezone.utc).timestamp() - t0
t = json.load(open(f"{o}/tune.json"))
pick = [c for c in t["candidates"] if c["best"]][0]
p = (pick["strategy"], pick["workers"], pick["batch"])
print(f"tune: {tune_s:.1f} s: {t['probes_done']} probes ({t['probe_seconds']:.1f} s), "
      f"{t['full_runs_done']} full runs ({t['full_seconds']:.1f} s); pick {p[0]} w{p[1]} b{p[2]}")
for n in sorted({2, reps}):
    med = grid(n)
    best = max(med, key=med.get)
    gs = first_rounds_seconds(n) if n < reps else sweep_s
    runs = sum(1 for r in rows if r["repeat"] < n)
    print(f"grid at {n} repeats: {gs:.1f} s{' (its first rounds, to the second)' if n < reps else ''}, {runs} runs; "
          f"best {best[0]} w{best[1]} b{best[2]} {med[best]:.4g} items/s; the pick there {med[p]:.4g} = "
          f"{med[p] / med[best]:.3f} of the best; tune took {tune_s / gs:.2f} of the grid's time")
PY
