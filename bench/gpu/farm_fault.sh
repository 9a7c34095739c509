#!/usr/bin/env bash
# What one faulting job costs a farm under MPS. Usage:
#   bench/gpu/farm_fault.sh BUILD_DIR OUT_DIR
# Runs JOBS (default 40) fault_job jobs (tests/gpu/fault_job.cu, built as
# BUILD_DIR/tests/helpers/fault_job) on GPU 0 at K (default 4) slots under mps
# with --retries 1: once without a fault (the makespan to compare with), and
# once with job FAULT_JOB (default 17) writing to an illegal address (a fatal
# fault that MPS reports to every client of the GPU). Prints and writes to
# OUT_DIR/summary.md: done and failed jobs, the jobs whose attempts failed
# with the fault's error text (the culprit and its bystanders), the attempts
# charged against --retries, both makespans and the time lost. Environment:
# JOBS, K, FAULT_JOB, SECONDS_PER_JOB (default 2).
set -uo pipefail
B=$(cd "${1:?build dir}" && pwd)
O=${2:?out dir}
mkdir -p "$O"
O=$(cd "$O" && pwd)
G=$B/gpushare
J=$B/tests/helpers/fault_job
JOBS=${JOBS:-40}
K=${K:-4}
FAULT_JOB=${FAULT_JOB:-17}
SPJ=${SECONDS_PER_JOB:-2}
S=$O/summary.md
[[ -x $J ]] || { echo "no $J: build with CUDA (tests/gpu/run.sh)" >&2; exit 1; }
{
	echo "# farm under MPS with one faulting job"
	echo
	echo "- $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader -i 0 2>/dev/null), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "- $JOBS jobs of ${SPJ} s, K=$K, --retries 1, job $FAULT_JOB faults (command: bench/gpu/farm_fault.sh $*)"
	echo
} >"$S"
for mode in clean fault; do
	f=$O/jobs-$mode.txt
	: >"$f"
	for ((i = 0; i < JOBS; i++)); do
		if [[ $mode == fault && $i == "$FAULT_JOB" ]]; then
			echo "$J --seconds $SPJ --fault --after 0.5" >>"$f"
		else
			echo "$J --seconds $SPJ" >>"$f"
		fi
	done
	rm -rf "$O/farm-$mode"
	"$G" farm --dir "$O/farm-$mode" --gpus 0 --slots "$K" --retries 1 --json -q "$f" >"$O/farm-$mode.json"
	python3 - "$O/farm-$mode" "$O/farm-$mode.json" "$mode" >>"$S" <<'PY'
import glob, json, os, sys
d, js, mode = sys.argv[1:]
s = json.load(open(js))["summary"]
recs = [json.loads(l) for l in open(os.path.join(d, "journal.jsonl"))]
att = [r for r in recs if r["type"] == "attempt"]
faulted = sorted({r["job"] for r in att if r["outcome"] != "ok" and
                  "illegal" in open(os.path.join(d, r["stderr"])).read().lower()})
charged = sum(1 for r in att if r["outcome"] in ("failed", "timeout"))
print(f"- {mode}: {s['done']} done, {s['failed']} failed, makespan {s['makespan_seconds']:.1f} s; "
      f"attempts {len(att)}, failed attempts charged to --retries {charged}; "
      f"jobs with an attempt failed by the fault: {faulted}")
PY
done
python3 - "$O/farm-clean.json" "$O/farm-fault.json" >>"$S" <<'PY'
import json, sys
a, b = (json.load(open(p))["summary"]["makespan_seconds"] for p in sys.argv[1:])
print(f"- time lost to the fault: {b - a:.1f} s ({b / a:.2f}x the clean makespan)")
PY
cat "$S"
