#!/usr/bin/env bash
# `gpushare sweep --halt N` starts no more runs once N runs of this
# invocation failed (a sweep whose every run fails, such as matmul on a
# machine without a GPU, stops early), says what ran (exit 10), writes the
# report of what ran, and --resume continues (--halt may be given again or not).
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?set by ctest}"
tmp=$(mktemp -d /tmp/gpushare-swhalt-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset CUDA_MPS_PIPE_DIRECTORY GPUSHARE_MPS_CONTROL
private_xdg
export GPUSHARE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1
runs() { wc -l <"$1/results.jsonl"; }

# Every run fails: 2 strategies x 2 worker counts x 3 repeats = 12 planned.
run sweep --out "$tmp/sw" --workload spin:init-fail=on --strategy timeslice,sequential --workers 1,2 \
	--repeats 3 --duration 100ms --warmup 0 --halt 3 -q
check "exit 10 (got $rc)" test "$rc" -eq 10
check "3 runs recorded, not 12" test "$(runs "$tmp/sw")" -eq 3
check "all three failed, each with its error" python3 -c "
import json, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
assert all(r['status'] == 'failed' and r['error']['message'] for r in rs), rs" "$tmp/sw/results.jsonl"
check "it says it halted, and what ran" \
	grep -q "sweep: halted after 3 failed runs (--halt 3); 3 runs recorded in '$tmp/sw/results.jsonl', 0 of them ok; continue with --resume" "$tmp/err"
check "the report of what ran is written" test -s "$tmp/sw/report.md"
run sweep --out "$tmp/sw" --resume --halt 2 -q --no-report
check "--resume with another --halt: accepted, halts after 2 more (exit 10, got $rc)" \
	bash -c "test $rc -eq 10 && test \$(wc -l <'$tmp/sw/results.jsonl') -eq 5"
run sweep --out "$tmp/sw" --resume -q --no-report
# Failed runs are run again on resume (only ok runs count as recorded): all 12.
check "--resume without --halt: the whole grid runs (5 + 12 lines)" test "$(runs "$tmp/sw")" -eq 17
run sweep --out "$tmp/ok" --workload spin --request-us 100 --strategy timeslice --workers 1 --repeats 2 \
	--duration 100ms --warmup 0 --halt 1 -q --no-report
check "--halt with no failure: exit 0 (got $rc)" test "$rc" -eq 0
run sweep --out "$tmp/b" --halt 0 -q
check "--halt 0: exit 2" test "$rc" -eq 2

finish "sweep halt"
