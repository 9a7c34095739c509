#!/usr/bin/env bash
# Interleaved A/B of two builds of gpushare on one GPU machine, for a change
# that must keep behaviour and numbers (a restructuring).
# Usage: bench/gpu/ab.sh OLD_BUILD NEW_BUILD OUT_DIR [ROUNDS]
#  - one worker, sequential, of matmul fp16 1024 and tiny: req/s per round,
#    old and new one after the other in each round (ROUNDS, default 3);
#  - the GPU-bound cells of the grid: transformer b1 with 7 workers under
#    timeslice, mps and mps-split, old and new in each round.
# Prints a table; every run's JSON is kept in OUT_DIR. Checks afterwards that
# no MPS daemon is left running.
set -uo pipefail
OLD=$(cd "${1:?old build dir}" && pwd) NEW=$(cd "${2:?new build dir}" && pwd) O=${3:?out dir}
R=${4:-3}
DUR=${DUR:-4s} WARM=${WARM:-1s}
mkdir -p "$O"
run() { # label build out args...
	local label=$1 b=$2 f=$3
	shift 3
	"$b/gpushare" bench "$@" --duration "$DUR" --warmup "$WARM" --quiet --json >"$O/$f.json" 2>"$O/$f.err" ||
		echo "$label: exit $? ($(tail -1 "$O/$f.err"))"
}
for i in $(seq 1 "$R"); do
	for side in old new; do
		b=$OLD
		[[ $side == new ]] && b=$NEW
		run "$side matmul $i" "$b" "${side}_matmul_$i" --workload matmul --size 1024 --dtype fp16 --workers 1 \
			--strategy sequential
		run "$side tiny $i" "$b" "${side}_tiny_$i" --workload tiny --workers 1 --strategy sequential
		run "$side transformer $i" "$b" "${side}_transformer_$i" --workload transformer --workers 7 \
			--strategy timeslice,mps,mps-split
	done
done
python3 - "$O" "$R" <<'PY' | tee "$O/summary.txt"
import json, sys
o, r = sys.argv[1], int(sys.argv[2])
def rate(name, strategy=None):
    try:
        d = json.load(open(f"{o}/{name}.json"))
    except Exception:
        return None
    for s in d.get("results", []):
        if (strategy is None or s.get("strategy") == strategy) and s.get("status") == "ok":
            return (s.get("aggregate") or {}).get("requests_per_second")
    return None
def fmt(v):
    return "failed" if v is None else f"{v:,.0f}"
rows = [("matmul fp16 1024, 1 worker, sequential", "matmul", None),
        ("tiny, 1 worker, sequential", "tiny", None)]
rows += [(f"transformer b1, 7 workers, {s}", "transformer", s) for s in ("timeslice", "mps", "mps-split")]
print("| cell (req/s) | old | new |")
print("| --- | --- | --- |")
for label, w, s in rows:
    old = " · ".join(fmt(rate(f"old_{w}_{i}", s)) for i in range(1, r + 1))
    new = " · ".join(fmt(rate(f"new_{w}_{i}", s)) for i in range(1, r + 1))
    print(f"| {label} | {old} | {new} |")
PY
# Live (non-zombie) MPS processes: a container's init may leave exited
# daemons as zombies, which are not running.
left=$(ps -eo pid=,stat=,comm= | awk '$2 !~ /^Z/ && $3 ~ /nvidia-cuda-mps/')
if [[ -n $left ]]; then
	echo "LEFT RUNNING: $left"
	exit 1
fi
