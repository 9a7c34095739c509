#!/usr/bin/env bash
# GPU test (label gpu): `gpushare bench` with a CUDA workload under every
# single-GPU strategy; mps-split workers must report the limits in effect
# (fewer SMs than a plain worker), nothing may be partial, and no daemon or
# worker may be left running.
set -euo pipefail
# Live (non-zombie) processes whose program matches $1; a container's init may
# leave exited daemons as zombies, which are not running.
left_running() { ps -eo pid=,stat=,args= | awk '$2 !~ /^Z/' | grep -E "^ *[0-9]+ +[^ ]+ +[^ ]*($1)"; }
G=${GPUSHARE:?}
D=$(mktemp -d /tmp/gsbench.XXXXXX)
trap 'rm -rf "$D"' EXIT
"$G" bench --workload matmul --size 512 --workers 2 --strategy timeslice,mps,mps-split,sequential,streams \
	--duration 1s --warmup 300ms --quiet --json >"$D/r.json"
python3 - "$D/r.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert not d["partial"], "partial results"
by = {r["strategy"]: r for r in d["results"]}
assert set(by) == {"timeslice", "mps", "mps-split", "sequential", "streams"}, by.keys()
for s, r in by.items():
    a = r["aggregate"]
    assert a["requests"] > 0 and a["requests_per_second"] > 0, (s, a)
    assert a["tflops"] and a["tflops"] > 0, (s, a)
    for w in r["workers"]:
        assert w["requests"] > 0, (s, w)
full = by["timeslice"]["workers"][0]["sm_count"]
split = [w["sm_count"] for w in by["mps-split"]["workers"]]
assert all(0 < x < full for x in split), (full, split)
print(f"ok: 5 strategies measured; mps-split workers see {split} of {full} SMs")
PY
sleep 0.5
if left_running 'nvidia-cuda-mps|gpushare-worker'; then echo "FAIL: left running"; exit 1; fi
echo "1 passed, 0 failed"
