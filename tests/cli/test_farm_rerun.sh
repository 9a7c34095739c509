#!/usr/bin/env bash
# Running the failures again: `farm --rerun-failed DIR` runs the jobs that
# failed for good (failed and timed out with their retries used up, and
# refused) with the recorded options, named by the end message and by
# `farm status`; `--resume` with nothing left says so and names it. Also:
# the failure table in job order with each line as written, calibration
# rates only the jobs that ended ok and says when it cannot, and after
# Ctrl-C the progress line no longer counts queued jobs.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/cli/lib_farm_env.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib_farm_env.sh"

: "${GPUSHARE:?set by ctest}"
tmp=$(mktemp -d /tmp/gpushare-frr-XXXXXX)
fpid=
trap '[[ -n "$fpid" ]] && kill -KILL "$fpid" 2>/dev/null; pkill -KILL -f "$tmp/" 2>/dev/null || true; rm -rf "$tmp"' EXIT
farm_env_nodriver

echo "== a farm with a failing job, a hanging one and a script not yet executable"
# Each fails until $tmp/fixed exists; the script is refused until chmod +x.
cat >"$tmp/flaky.sh" <<EOF
#!/bin/sh
test -e $tmp/fixed || exit 3
EOF
chmod +x "$tmp/flaky.sh"
cat >"$tmp/slow.sh" <<EOF
#!/bin/sh
test -e $tmp/fixed || exec sleep 60
EOF
chmod +x "$tmp/slow.sh"
printf '#!/bin/sh\nexit 0\n' >"$tmp/script.sh"
printf '%s\n' true "$tmp/flaky.sh" "$tmp/slow.sh" "$tmp/script.sh" true >"$tmp/jobs"
run farm --dir "$tmp/f" --strategy timeslice --slots 2 --retries 1 --timeout 1s -q "$tmp/jobs"
check "exit 8 (got $rc)" test "$rc" = 8
check "the end message names farm status --failed and --rerun-failed" \
	grep -q "3 of the shard's 5 jobs failed; list them: gpushare farm status --failed $tmp/f; run them again: gpushare farm --rerun-failed $tmp/f" "$tmp/err"
check "journal: 2 failed, 2 timed out, 1 refused" journal "$tmp/f" '
from collections import Counter
c = Counter(r["outcome"] for r in recs)
assert c == Counter(ok=2, failed=2, timeout=2, refused=1), c'

run farm status "$tmp/f"
check "farm status names --rerun-failed" grep -q "run the failed jobs again: gpushare farm --rerun-failed $tmp/f" "$tmp/out"
run farm --resume "$tmp/f" -q
check "--resume with nothing to run: exit 8, says so, names --rerun-failed (got $rc: $(cat "$tmp/err"))" bash -c "
test $rc = 8 && grep -q 'nothing to run: .*3 failed jobs .*gpushare farm --rerun-failed $tmp/f' '$tmp/err'"

echo "== fixed: --rerun-failed runs the three with the recorded options"
touch "$tmp/fixed"
chmod +x "$tmp/script.sh"
run farm --rerun-failed "$tmp/f" --dry-run
check "--dry-run: jobs 2, 3 and 4 would run (got $rc)" bash -c "test $rc = 0 && grep -q '^3 of 5 jobs would run$' '$tmp/out'"
run farm --rerun-failed "$tmp/f" -q
check "exit 0 (got $rc: $(cat "$tmp/err"))" test "$rc" = 0
check "journal: jobs 2 and 3 ok at attempt 3, job 4 ok at attempt 2; the recorded timeslice, slots, retries, timeout" \
	journal "$tmp/f" '
last = {}
for r in recs:
    last[r["job"]] = r
assert [last[j]["outcome"] for j in (1, 2, 3, 4, 5)] == ["ok"] * 5, last
assert last[2]["attempt"] == 3 and last[3]["attempt"] == 3 and last[4]["attempt"] == 2, last
assert len(recs) == 10, recs
h = hdr[-1]
assert h["strategy"] == "timeslice" and h["slots"] == 2 and h["retries"] == 1 and h["timeout_seconds"] == 1, h'
run farm status "$tmp/f"
check "farm status: 5 done, 0 failed, no --rerun-failed hint" bash -c "
grep -q 'jobs: 5 done, 0 failed, 0 unfinished of 5' '$tmp/out' && ! grep -q rerun-failed '$tmp/out'"
run farm --rerun-failed "$tmp/f" -q
check "--rerun-failed with nothing failed: exit 0, nothing run (got $rc)" bash -c "test $rc = 0 && test \$(grep -c '\"type\":\"attempt\"' '$tmp/f/journal.jsonl') = 10"
run farm --rerun-failed "$tmp/f" --resume "$tmp/f" -q
check "--rerun-failed with --resume: exit 2 (got $rc)" test "$rc" = 2
run farm --rerun-failed "$tmp/nothing-here" -q
check "--rerun-failed of no farm: exit 6 (got $rc)" test "$rc" = 6

echo "== the failure table: in job order, each line as written"
printf '%s\n' 'sh -c "sleep 1; exit 1"' 'sh -c "exit 2"' >"$tmp/jo"
run farm --dir "$tmp/o" --strategy timeslice --slots 2 -q "$tmp/jo"
check "job 2 failed first, job 1 is listed first (exit $rc)" bash -c "test $rc = 8 &&
test \"\$(awk '\$1 == \"failed\" { print \$2 }' '$tmp/out' | tr '\n' ' ')\" = '1 2 '"
check "  each line as written" bash -c "grep -qF ' sh -c \"sleep 1; exit 1\"' '$tmp/out' && grep -qF ' sh -c \"exit 2\"' '$tmp/out'"

echo "== calibration counts only the jobs that ended ok"
printf 'exit 3\n%.0s' $(seq 1 12) >"$tmp/allfail"
run farm --dir "$tmp/c1" --strategy timeslice --max-slots 8 --json "$tmp/allfail"
check "no job ok: cannot calibrate, said in --json, K stays 1 (got $rc)" python3 -c "
import json; r = json.load(open('$tmp/out'))['run']
assert r['calibration_failed'] is True and r['slots'] == 1, r
assert [c['jobs'] for c in r['calibration']] == [0], r"
run farm --dir "$tmp/c2" --strategy timeslice --max-slots 8 "$tmp/allfail"
check "  and in the text" bash -c "grep -q 'K=1: no job ended ok' '$tmp/out' && grep -q 'cannot calibrate' '$tmp/out'"

echo "== after Ctrl-C the progress line stops counting queued jobs"
printf 'sleep 1\n%.0s' $(seq 1 20) >"$tmp/slow20"
"$GPUSHARE" farm --dir "$tmp/s" --strategy timeslice --slots 1 "$tmp/slow20" >"$tmp/s.out" 2>"$tmp/s.err" &
fpid=$!
wait_for 100 0.1 test -e "$tmp/s/running.json" || true
sleep 0.3
kill -INT "$fpid"
rc=0
wait "$fpid" || rc=$?
fpid=
check "stopped: exit 130 (got $rc)" test "$rc" = 130
last=$(grep '^farm: ' "$tmp/s.err" | tail -1)
check "the last progress line says stopping, not '19 queued' (got: $last)" \
	bash -c "[[ '$last' == *stopping* && '$last' != *queued* ]]"

finish "farm rerun"
