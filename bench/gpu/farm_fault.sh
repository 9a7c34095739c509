#!/usr/bin/env bash
# What one faulting job costs a farm under MPS, and what containment costs
# when nothing faults. Usage:
#   bench/gpu/farm_fault.sh BUILD_DIR OUT_DIR
# On GPU 0: JOBS (default 40) fault_job jobs (tests/gpu/fault_job.cu, built
# as BUILD_DIR/tests/helpers/fault_job) at K (default 4) slots under mps with
# --retries 1, ROUNDS (default 3) times each of: the clean farm, and the
# farm whose job FAULT_JOB (default 17) writes to an illegal address (a
# fatal fault that MPS reports to every client of the GPU), interleaved
# (clean, fault, clean, fault ...). Each farm starts and stops its own
# private MPS daemon; the script checks after each farm that none is left
# and stops any it finds (explicitly, also on error or Ctrl-C).
# Prints and writes OUT_DIR/summary.md: per farm done/failed, the fault
# records (culprit, evidence, bystanders, recovery), attempts charged, the
# makespans, the time the fault cost against the clean mean, and the clean
# makespans' spread. Exit 1 when a fault farm did not end with JOBS-1 done
# and the planted job failed as the culprit. Environment: JOBS, K,
# FAULT_JOB, ROUNDS, SECONDS_PER_JOB (default 2).
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
ROUNDS=${ROUNDS:-3}
SPJ=${SECONDS_PER_JOB:-2}
S=$O/summary.md
[[ -x $G ]] || { echo "no $G" >&2; exit 1; }
[[ -x $J ]] || { echo "no $J: build with CUDA (tests/gpu/run.sh)" >&2; exit 1; }
unset CUDA_MPS_PIPE_DIRECTORY CUDA_VISIBLE_DEVICES

# The private daemons of this script's farms (their pipe directory under
# the directory gpushare keeps per user: $XDG_RUNTIME_DIR/gpushare or
# /tmp/gpushare-UID): a farm stops its own; one left (a farm that died) is
# stopped here with quit, then killed, and so is a server left without it.
farm_pipe() { tr '\0' '\n' <"/proc/$1/environ" 2>/dev/null | sed -n 's/^CUDA_MPS_PIPE_DIRECTORY=//p'; }
ours() { [[ $1 == */gpushare/farm-* || $1 == /tmp/gpushare-*/farm-* ]]; }
stop_daemons() {
	local p d
	for p in $(pgrep -u "$(id -u)" -f nvidia-cuda-mps-control || true); do
		d=$(farm_pipe "$p")
		ours "$d" || continue
		echo "farm_fault.sh: stopping a daemon left at $d (pid $p)" >&2
		echo quit | CUDA_MPS_PIPE_DIRECTORY=$d timeout 10 nvidia-cuda-mps-control >/dev/null 2>&1 || true
		sleep 1
		kill -KILL "$p" 2>/dev/null || true
	done
	for p in $(pgrep -u "$(id -u)" -f nvidia-cuda-mps-server || true); do
		d=$(farm_pipe "$p")
		ours "$d" || continue
		echo "farm_fault.sh: killing a server left at $d (pid $p)" >&2
		kill -KILL "$p" 2>/dev/null || true
	done
}
trap 'stop_daemons' EXIT
trap 'exit 130' INT TERM
stop_daemons

for mode in clean fault; do
	f=$O/jobs-$mode.txt
	: >"$f"
	for ((i = 1; i <= JOBS; i++)); do # job numbers from 1, as the farm numbers them
		if [[ $mode == fault && $i == "$FAULT_JOB" ]]; then
			echo "$J --seconds $SPJ --fault --after 0.5" >>"$f"
		else
			echo "$J --seconds $SPJ" >>"$f"
		fi
	done
done
{
	echo "# farm under MPS with one faulting job"
	echo
	echo "- $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader -i 0 2>/dev/null), $(date -u +%Y-%m-%dT%H:%M:%SZ), $(hostname)"
	echo "- $JOBS jobs of ${SPJ} s (tests/gpu/fault_job.cu), --gpus 0 --slots $K --retries 1 --strategy mps, job $FAULT_JOB writes to an illegal address after 0.5 s; $ROUNDS rounds interleaved"
	echo "- command: bench/gpu/farm_fault.sh $*"
	echo
} >"$S"
bad=0
for ((r = 1; r <= ROUNDS; r++)); do
	for mode in clean fault; do
		d=$O/farm-$mode-$r
		rm -rf "$d"
		"$G" farm --dir "$d" --gpus 0 --slots "$K" --retries 1 --strategy mps --json -q "$O/jobs-$mode.txt" \
			>"$d.json" 2>"$d.stderr"
		echo "rc $?" >>"$d.stderr"
		stop_daemons
		python3 - "$d" "$d.json" "$mode" "$r" "$JOBS" "$FAULT_JOB" >>"$S" <<'PY' || bad=1
import json, os, sys
d, js, mode, r, jobs, fj = sys.argv[1:]
jobs, fj = int(jobs), int(fj)
try:
    s = json.load(open(js))["summary"]
except Exception as e:
    print(f"- {mode} {r}: no summary ({e}); see {js} and its .stderr")
    sys.exit(1)
lines = [json.loads(l) for l in open(os.path.join(d, "journal.jsonl"))]
att = [x for x in lines if x["type"] == "attempt"]
faults = [x for x in lines if x["type"] == "fault"]
charged = sum(1 for x in att if x["outcome"] in ("failed", "timeout"))
by = sum(1 for x in att if x["outcome"] == "bystander")
print(f"- {mode} {r}: {s['done']} done, {s['failed']} failed, makespan {s['makespan_seconds']:.2f} s; "
      f"{len(att)} attempts, {charged} charged to --retries, {by} bystander attempts requeued")
for f in faults:
    print(f"  - fault: culprit job {f['culprit']} (attempt {f['culprit_attempt']}, by {f['evidence']}), "
          f"bystanders {f['bystanders']}, recovery {f['recovery_seconds']:.2f} s"
          f"{', server shut down' if f['server_restarted'] else ''}{', culprit failed' if f['culprit_failed'] else ''}")
failed = sorted({x["job"] for x in att} - {x["job"] for x in att if x["outcome"] == "ok"})
if mode == "clean":
    ok = s["done"] == jobs and not faults
else:
    ok = s["done"] == jobs - 1 and failed == [fj] and faults and faults[-1]["culprit"] == fj and faults[-1]["culprit_failed"]
    ok = ok and not [x for x in att if x["outcome"] == "failed" and x["job"] != fj]
if not ok:
    print(f"  - UNEXPECTED: failed jobs {failed}")
json.dump({"mode": mode, "makespan": s["makespan_seconds"], "recovery": sum(f["recovery_seconds"] for f in faults)},
          open(d + ".m.json", "w"))
sys.exit(0 if ok else 1)
PY
	done
done
python3 - "$O" "$ROUNDS" >>"$S" <<'PY'
import json, statistics, sys
o, rounds = sys.argv[1], int(sys.argv[2])
m = {k: [json.load(open(f"{o}/farm-{k}-{r}.m.json")) for r in range(1, rounds + 1)] for k in ("clean", "fault")}
c = [x["makespan"] for x in m["clean"]]
f = [x["makespan"] for x in m["fault"]]
mc = statistics.mean(c)
sd = statistics.stdev(c) if len(c) > 1 else 0
print()
print(f"- clean makespans: {', '.join(f'{x:.2f}' for x in c)} s (mean {mc:.2f}, sd {sd:.2f}, "
      f"spread {100 * (max(c) - min(c)) / mc:.1f} %)")
print(f"- fault makespans: {', '.join(f'{x:.2f}' for x in f)} s; time lost to the fault: "
      f"{statistics.mean(f) - mc:.2f} s mean ({statistics.mean(f) / mc:.2f}x the clean mean); "
      f"recovery per farm {', '.join('%.2f' % x['recovery'] for x in m['fault'])} s")
PY
cat "$S"
[[ $bad == 0 ]] || { echo "farm_fault.sh: a farm did not end as expected (see above)" >&2; exit 1; }
