#!/usr/bin/env bash
# `gpushare sweep --out DIR --resume` continues exactly the grid recorded in
# DIR (the first run's command line, metadata.command_line), not the default
# grid; options given again must match, or are refused (exit 2) naming the
# difference. Options that measure nothing (-q, --no-report, ...) may change.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?set by ctest}"
tmp=$(mktemp -d /tmp/gpushare-sweepres-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset CUDA_MPS_PIPE_DIRECTORY GPUSHARE_MPS_CONTROL
private_xdg
export GPUSHARE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1
keys() { python3 -c 'import json,sys; print(" ".join(sorted(json.loads(l)["cell"]["key"] + "#" + str(json.loads(l)["repeat"]) for l in open(sys.argv[1]))))' "$1"; }

run sweep --out "$tmp/sw" --workload spin --request-us 100 --strategy timeslice,sequential --workers 1,2 \
	--repeats 1 --duration 100ms --warmup 0 --no-report -q
check "first sweep: exit 0 (got $rc)" test "$rc" -eq 0
full=$(keys "$tmp/sw/results.jsonl")
# As if it had been stopped after two runs.
head -n 2 "$tmp/sw/results.jsonl" >"$tmp/part" && cat "$tmp/part" >"$tmp/sw/results.jsonl"

run sweep --out "$tmp/sw" --workload spin --workers 1,2,4 --resume -q --no-report
check "--resume with another --workers: exit 2 (got $rc)" test "$rc" -eq 2
check "  names the option and both values" grep -q "ran with --workers 1,2, this one asks for --workers 1,2,4" "$tmp/err"
run sweep --out "$tmp/sw" --resume --batch 2 -q --no-report
check "--resume with an option the sweep did not have: exit 2 (got $rc)" test "$rc" -eq 2
check "  says it ran without it" grep -q "ran without --batch" "$tmp/err"
run sweep --out "$tmp/sw" --resume -- /bin/true
check "--resume with a command the sweep did not have: exit 2 (got $rc)" test "$rc" -eq 2
check "refused resumes appended nothing" test "$(wc -l <"$tmp/sw/results.jsonl")" -eq 2

run sweep --out "$tmp/sw" --resume -q --no-report
check "--resume alone: exit 0 (got $rc; $(head -c 300 "$tmp/err"))" test "$rc" -eq 0
check "--resume alone ran exactly the recorded grid's missing runs" test "$(keys "$tmp/sw/results.jsonl")" = "$full"
check "  (spin, not the default matmul)" bash -c "! grep -q '\"workload\":\"matmul\"' '$tmp/sw/results.jsonl'"

head -n 1 "$tmp/sw/results.jsonl" >"$tmp/part" && cat "$tmp/part" >"$tmp/sw/results.jsonl"
run sweep --out "$tmp/sw" --resume --workload spin --strategy timeslice,sequential --workers 1,2 --duration 100ms -q
check "--resume with the same options given again (and the report): exit 0 (got $rc; $(head -c 300 "$tmp/err"))" test "$rc" -eq 0
check "  every recorded cell once again" test "$(keys "$tmp/sw/results.jsonl")" = "$full"
check "  the report was written (--no-report not given this time)" test -s "$tmp/sw/report.md"

finish "sweep resume grid"
