#!/usr/bin/env bash
# The sweep report says why a cell failed: its "failed (N)" cell carries the
# error of the cell's last failed run (the record's error.message), in
# report.md and report.html.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?set by ctest}"
tmp=$(mktemp -d /tmp/gpushare-repfail-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset CUDA_MPS_PIPE_DIRECTORY GPUSHARE_MPS_CONTROL
private_xdg
export GPUSHARE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1

run sweep --out "$tmp/sw" --workload spin:request-us=100,spin:init-fail=on --strategy timeslice --workers 1 \
	--repeats 1 --duration 100ms --warmup 0 -q
check "a sweep with a failing shape: exit 10 (got $rc)" test "$rc" -eq 10
msg=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["status"] == "failed": print(r["error"]["message"]); break' "$tmp/sw/results.jsonl")
check "the failed run recorded its error ('$msg')" test -n "$msg"
check "report.md: the failed cell names the error" grep -qF "failed (1): ${msg:0:60}" "$tmp/sw/report.md"
check "report.html: the failed cell names the error" grep -qF "failed (1): ${msg:0:30}" "$tmp/sw/report.html"
run report "$tmp/sw" -q
check "gpushare report: exit 0 (got $rc)" test "$rc" -eq 0

finish "report failed reasons"
