#!/usr/bin/env bash
# Does fault containment cost anything when nothing faults? The same clean
# farm (JOBS fault_job jobs of SECONDS_PER_JOB s, K slots, --retries 1,
# --strategy mps, GPU 0) under a build without the containment (OLD_BUILD)
# and one with it (NEW_BUILD), interleaved ROUNDS times (the order flips
# each round). Usage:
#   bench/gpu/farm_fault_ab.sh OLD_BUILD NEW_BUILD OUT_DIR
# The job program is NEW_BUILD/tests/helpers/fault_job (both farms run the
# same one). Prints and writes OUT_DIR/summary.txt: each farm's makespan and
# the means. Env: JOBS (40), K (4), SECONDS_PER_JOB (2), ROUNDS (2).
set -uo pipefail
OLD=$(cd "${1:?old build}" && pwd)
NEW=$(cd "${2:?new build}" && pwd)
O=${3:?out dir}
mkdir -p "$O"
O=$(cd "$O" && pwd)
J=$NEW/tests/helpers/fault_job
JOBS=${JOBS:-40} K=${K:-4} SPJ=${SECONDS_PER_JOB:-2} ROUNDS=${ROUNDS:-2}
[[ -x $J ]] || { echo "no $J: build NEW_BUILD with CUDA" >&2; exit 1; }
# shellcheck source=bench/gpu/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_private_runtime
unset CUDA_MPS_PIPE_DIRECTORY CUDA_VISIBLE_DEVICES
for ((i = 1; i <= JOBS; i++)); do echo "$J --seconds $SPJ"; done >"$O/jobs.txt"
S=$O/summary.txt
echo "clean farm: $JOBS jobs of $SPJ s, K=$K, --retries 1, --strategy mps, GPU 0; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader -i 0 2>/dev/null); $(date -u +%FT%TZ)" | tee "$S"
run_one() { # NAME BUILD ROUND
	local d=$O/$1-$3
	"$2/gpushare" farm --dir "$d" --gpus 0 --slots "$K" --retries 1 --strategy mps --json -q "$O/jobs.txt" >"$d.json" 2>"$d.err"
	echo "rc $?" >>"$d.err"
	stop_daemons
	python3 -c "
import json, sys
s = json.load(open('$d.json'))['summary']
print(f\"$1 round $3: {s['done']} done, {s['failed']} failed, makespan {s['makespan_seconds']:.2f} s\")
open('$d.m', 'w').write(str(s['makespan_seconds']))" | tee -a "$S"
}
for ((r = 1; r <= ROUNDS; r++)); do
	if ((r % 2)); then run_one old "$OLD" "$r"; run_one new "$NEW" "$r"; else run_one new "$NEW" "$r"; run_one old "$OLD" "$r"; fi
done
python3 - "$O" "$ROUNDS" <<'PY' | tee -a "$S"
import statistics, sys
o, n = sys.argv[1], int(sys.argv[2])
m = {k: [float(open(f"{o}/{k}-{r}.m").read()) for r in range(1, n + 1)] for k in ("old", "new")}
for k in ("old", "new"):
    print(f"{k}: makespans {', '.join(f'{x:.2f}' for x in m[k])} s, mean {statistics.mean(m[k]):.2f} s")
print(f"new / old: {statistics.mean(m['new']) / statistics.mean(m['old']):.4f}")
PY
