#!/usr/bin/env bash
# The no-GPU path says each error once and what to try instead: info --json
# prints a document with the error (exit 3), bench and sweep name the error
# once with a hint, farm without MPS suggests --strategy timeslice. And a
# bare number given to an option whose name states a unit means that unit
# (--request-us 200 is 200 microseconds).
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?set by ctest}"
tmp=$(mktemp -d /tmp/gpushare-nogpu-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY GPUSHARE_MPS_CONTROL
private_xdg
export GPUSHARE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1

# ---- info --json without a driver: a document, exit 3 ----
run info --json
check "info --json, no driver: exit 3 (got $rc)" test "$rc" -eq 3
check "info --json, no driver: one error line on stderr" test "$(wc -l <"$tmp/err")" -eq 1
check "info --json, no driver: a JSON document with driver null and the error" python3 - "$tmp/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["driver"] is None and d["driver_version"] is None, d
assert "no NVIDIA driver" in d["error"] and "/nonexistent" in d["error"], d
assert d["gpus"] == [], d
PY
run info
check "info, no driver: nothing on stdout" test ! -s "$tmp/out"

# ---- bench without a driver: one line, with a hint ----
run bench --workers 1 --duration 100ms --warmup 0
check "bench, no driver: exit 3 (got $rc)" test "$rc" -eq 3
check "bench, no driver: the error said once" test "$(grep -c "needs an NVIDIA GPU" "$tmp/out" "$tmp/err" | awk -F: '{s+=$2} END {print s}')" -eq 1
check "bench, no driver: a hint (--workload spin)" grep -q -- "--workload spin" "$tmp/err"
run bench --workers 1 --duration 100ms --warmup 0 --json
check "bench --json, no driver: still a document (exit 3)" python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/out"

# ---- farm without MPS: exit 4 and a hint ----
printf 'true\n' >"$tmp/jobs"
PATH=/usr/bin:/bin run farm --dir "$tmp/farm" "$tmp/jobs" -q
check "farm, no MPS: exit 4 (got $rc)" test "$rc" -eq 4
check "farm, no MPS: suggests --strategy timeslice" grep -q -- "--strategy timeslice" "$tmp/err"
check "farm, no MPS: one line" test "$(wc -l <"$tmp/err")" -eq 1
PATH=/usr/bin:/bin run farm --dir "$tmp/farm2" --strategy timeslice "$tmp/jobs" -q
check "farm --strategy timeslice, no MPS, no driver: runs (exit 0, got $rc)" test "$rc" -eq 0

# ---- a bare number means the unit the option's name states ----
run bench --workload spin --request-us 200 --strategy timeslice --workers 1 --duration 300ms --warmup 0 --json
check "--request-us 200: accepted (exit 0, got $rc)" test "$rc" -eq 0
check "--request-us 200: 200 microseconds, recorded as 200us" python3 - "$tmp/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
opts = d["config"]["workload_options"] if "workload_options" in d["config"] else d["config"]
assert "200us" in json.dumps(opts), opts
p50 = d["results"][0]["aggregate"]["p50_seconds"]
assert 150e-6 < p50 < 0.1, p50    # 200 us of spinning, not 200 s
PY
run bench --workload spin --stall 100 --strategy timeslice --workers 1 --duration 100ms
check "--stall 100 (no unit in the name): refused, exit 2 (got $rc)" test "$rc" -eq 2
check "--stall 100: says it needs a unit" grep -q "needs a unit" "$tmp/err"

finish "no-GPU and unit"
