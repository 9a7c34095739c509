#!/usr/bin/env bash
# GPU test (label gpu): `gpushare farm` runs farm_job (examples/farm_job.cu)
# on the machine's GPUs under mps (one private daemon for all of them) and
# timeslice; every job is done exactly once, each on one GPU by UUID, the
# calibration picks a K, and no daemon or job is left running.
set -euo pipefail
left_running() { ps -eo pid=,stat=,args= | awk '$2 !~ /^Z/' | grep -E "^ *[0-9]+ +[^ ]+ +[^ ]*($1)"; }
G=${GPUSHARE:?}
JOB=$(dirname "$G")/farm_job
[[ -x $JOB ]] || { echo "SKIP: no $JOB (built with CUDA)"; exit 0; }
D=$(mktemp -d /tmp/gsfarm.XXXXXX)
trap 'rm -rf "$D"' EXIT
for _ in $(seq 0 23); do echo "$JOB --n 128 --steps 500"; done >"$D/jobs.txt"
"$G" farm --dir "$D/mps" --slots 3 --json -q "$D/jobs.txt" >"$D/mps.json"
"$G" farm --dir "$D/ts" --strategy timeslice --slots 2 --gpus 0 --json -q "$D/jobs.txt" >"$D/ts.json"
"$G" farm --dir "$D/cal" --gpus 0 --max-slots 4 --json -q "$D/jobs.txt" >"$D/cal.json"
python3 - "$D" "$(nvidia-smi -L | grep -c '^GPU ')" <<'PY'
import json, sys
d, n_gpus = sys.argv[1], int(sys.argv[2])
for name in ("mps", "ts", "cal"):
    doc = json.load(open(f"{d}/{name}.json"))
    s = doc["summary"]
    assert s["done"] == 24 and s["failed"] == 0, (name, s)
    recs = [json.loads(l) for l in open(f"{d}/{name}/journal.jsonl") if '"attempt"' in l]
    assert sorted(r["job"] for r in recs) == list(range(1, 25)), name  # numbered from 1
    assert all(r["gpu_uuid"] and r["gpu_uuid"].startswith(("GPU-", "MIG-")) for r in recs), name
mps = [json.loads(l) for l in open(f"{d}/mps/journal.jsonl") if '"attempt"' in l]
assert len({r["gpu"] for r in mps}) == min(n_gpus, 24), "jobs not spread over the GPUs"
cal = json.load(open(f"{d}/cal.json"))["run"]
assert cal["calibrated"] and cal["slots"] in (1, 2, 4), cal
print(f"ok: 3 farms of 24 farm_job jobs; mps on {n_gpus} GPU(s); calibration picked K={cal['slots']}")
PY
sleep 0.5
if left_running 'nvidia-cuda-mps|farm_job'; then echo "FAIL: left running"; exit 1; fi
echo "1 passed, 0 failed"
