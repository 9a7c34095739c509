#!/usr/bin/env bash
# GPU test (label gpu): a mix of two CUDA workloads sharing the GPU in one
# run (`gpushare bench --workload A+B`): each workload's workers run and
# report, the score is the geometric mean of the two workloads' items/s, and
# under mps-split the split 25/75 reaches each worker as its active thread
# percentage: the first workload's worker sees fewer SMs than the second's,
# and both fewer than a plain worker. No daemon or worker may be left.
set -euo pipefail
left_running() { ps -eo pid=,stat=,args= | awk '$2 !~ /^Z/' | grep -E "^ *[0-9]+ +[^ ]+ +[^ ]*($1)"; }
G=${GPUSHARE:?}
D=$(mktemp -d /tmp/gsmix.XXXXXX)
trap 'rm -rf "$D"' EXIT
"$G" bench --workload 'matmul:size=512+transformer:layers=2:seq=64' --workers 2 --strategy timeslice,mps,mps-split \
	--thread-percentage 25/75 --duration 1s --warmup 300ms --quiet --json >"$D/r.json"
python3 - "$D/r.json" <<'PY'
import json, math, sys
d = json.load(open(sys.argv[1]))
assert not d["partial"], "partial results"
assert [m["workload"] for m in d["config"]["mix"]] == ["matmul", "transformer"], d["config"]["mix"]
by = {r["strategy"]: r for r in d["results"]}
for s, r in by.items():
    assert r["status"] == "ok", (s, r["reason"])
    a, b = r["mix"]
    assert a["requests"] > 0 and b["requests"] > 0, (s, r["mix"])
    score = math.sqrt(a["items_per_second"] * b["items_per_second"])
    assert abs(r["score"] - score) <= 1e-6 * score, (s, r["score"], score)
full = by["timeslice"]["workers"][0]["sm_count"]
split = [w["sm_count"] for w in by["mps-split"]["workers"]]
pct = [w["thread_percentage_set"] for w in by["mps-split"]["workers"]]
assert pct == [25, 75], pct
assert 0 < split[0] < split[1] < full, (full, split)
print(f"ok: a mix of matmul and transformer under 3 strategies; 25/75 gives {split} of {full} SMs;",
      "scores", {s: round(r["score"], 1) for s, r in by.items()})
PY
sleep 0.5
if left_running 'nvidia-cuda-mps|gpushare-worker'; then echo "FAIL: left running"; exit 1; fi
echo "1 passed, 0 failed"
