#!/usr/bin/env bash
# GPU test (label gpu): MPS fault containment of `gpushare farm` on GPU 0.
# 40 fault_job jobs (tests/gpu/fault_job.cu) at K=4 under mps with
# --retries 1, job 17 writing to an illegal address: 39 done, job 17 failed
# and named the culprit of the last fault, no other job charged a failure,
# the jobs failed beside it recorded as bystanders (when only the order of
# the failures tells, R580 naming no client in its log, the first to fail is
# a suspect and every job of the fault runs again alone); no daemon or job
# left.
set -euo pipefail
left_running() { ps -eo pid=,stat=,args= | awk '$2 !~ /^Z/' | grep -E "^ *[0-9]+ +[^ ]+ +[^ ]*($1)"; }
G=${GPUSHARE:?}
JOB=${GPUSHARE_TEST_HELPERS:?}/fault_job
[[ -x $JOB ]] || { echo "SKIP: no $JOB (built with CUDA)"; exit 0; }
D=$(mktemp -d /tmp/gsfault.XXXXXX)
trap 'rm -rf "$D"' EXIT
unset CUDA_MPS_PIPE_DIRECTORY CUDA_VISIBLE_DEVICES
for i in $(seq 1 40); do # job numbers from 1, as the farm numbers them
	if [[ $i == 17 ]]; then echo "$JOB --seconds 1.5 --fault --after 0.4"; else echo "$JOB --seconds 1.5"; fi
done >"$D/jobs.txt"
set +e
"$G" farm --dir "$D/f" --gpus 0 --slots 4 --retries 1 --strategy mps --json -q "$D/jobs.txt" >"$D/f.json"
rc=$?
set -e
[[ $rc == 8 ]] || { echo "FAIL: exit $rc, expected 8 (a job failed)"; cat "$D/f.json"; exit 1; }
python3 - "$D" <<'PY'
import json, sys
d = sys.argv[1]
s = json.load(open(f"{d}/f.json"))["summary"]
lines = [json.loads(l) for l in open(f"{d}/f/journal.jsonl")]
att = [x for x in lines if x["type"] == "attempt"]
faults = [x for x in lines if x["type"] == "fault"]
assert s["done"] == 39 and s["failed"] == 1, s
assert faults and faults[-1]["culprit"] == 17 and faults[-1]["culprit_failed"], faults
assert not [x for x in att if x["outcome"] == "failed" and x["job"] != 17], "a job other than 17 was charged"
by = [x for x in att if x["outcome"] == "bystander"]
assert s["faults"]["count"] == len(faults), s["faults"]
assert s["faults"]["bystanders_requeued"] == sum(len(f["bystanders"]) for f in faults), s["faults"]
# every bystander a fault names has a bystander attempt (a suspect culprit's too)
for f in faults:
    for j in f["bystanders"]:
        assert [x for x in by if x["job"] == j], (f, j)
assert len(by) == sum(len(f["bystanders"]) + (f["evidence"] == "first to fail") for f in faults), by
print(f"ok: 39 of 40 done, culprit job 17 named ({', '.join(f['evidence'] for f in faults)}), "
      f"{len(by)} bystander attempts requeued, recovery {s['faults']['recovery_seconds']:.2f} s")
PY
sleep 0.5
if left_running 'nvidia-cuda-mps|fault_job'; then echo "FAIL: left running"; exit 1; fi
echo "1 passed, 0 failed"
