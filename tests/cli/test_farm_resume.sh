#!/usr/bin/env bash
# `gpushare farm` stopped in every way, then `--resume`: SIGKILL of gpushare
# mid-farm (under MPS, with a torn last journal line), one Ctrl-C (running
# jobs finish, no new ones start), SIGTERM (running jobs are stopped and run
# again on resume). After each resume every job has run exactly once: one
# "ok" record per job in the journal, and each job's own side effect (its
# index appended to a file) exactly once. No job process or MPS daemon is
# left behind.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/cli/lib_farm_env.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib_farm_env.sh"

: "${GPUSHARE:?}" "${GPUSHARE_TEST_HELPERS:?}"
tmp=$(mktemp -d /tmp/gpushare-farm-resume.XXXXXX)
fpid=
trap '[[ -n "$fpid" ]] && kill -KILL "$fpid" 2>/dev/null; pkill -KILL -f "$tmp/job.sh" 2>/dev/null || true; rm -rf "$tmp"' EXIT
farm_env_fake 2

# shellcheck source=tests/cli/lib_farm.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib_farm.sh"

echo "== SIGKILL of gpushare mid-farm under MPS, then --resume"
# Jobs 7.. wait for a gate, so that gpushare is killed while no job can be
# ending (a job that ends in the instant before its record is written runs
# again on resume, which would make these checks race).
jobs_file "$tmp/j24" 24 0.6 "$tmp/side1" "$tmp/gate1" 7
"$GPUSHARE" farm --dir "$tmp/f1" --slots 3 -q "$tmp/j24" >"$tmp/f1.out" 2>&1 &
fpid=$!
wait_for 200 0.05 bash -c "[ \"\$(grep -c '\"type\":\"attempt\"' '$tmp/f1/journal.jsonl' 2>/dev/null)\" -ge 6 ]" || true
wait_for 200 0.05 running_jobs 6 || true # the second wave, at the gate
check "a private MPS daemon serves the farm" test -n "$(our_daemons)"
d=$(our_daemons | head -1)
check "  for both GPUs: its CUDA_VISIBLE_DEVICES holds their UUIDs" \
	test "$(tr '\0' '\n' <"/proc/$d/environ" | sed -n 's/^CUDA_VISIBLE_DEVICES=//p')" = \
	"GPU-fa4e0000-0000-4000-8000-000000000000,GPU-fa4e0000-0000-4000-8000-000000000001"
kill -KILL "$fpid"
wait "$fpid" 2>/dev/null || true
fpid=
recorded=$(attempts "$tmp/f1")
check "killed after the first wave: $recorded attempts recorded" test "$recorded" -ge 6 -a "$recorded" -lt 24
check "no job outlives gpushare" wait_for 30 0.1 no_jobs
check "each recorded job left its side effect, no other job did" \
	test "$(sort -n "$tmp/side1" | tr '\n' ' ')" = "$(python3 -c "
import json; print(' '.join(str(j) for j in sorted(json.loads(l)['job'] for l in open('$tmp/f1/journal.jsonl') if '\"attempt\"' in l)) + ' ')")"
run farm status "$tmp/f1"
check "farm status: the killed farm is gone, its jobs wait for --resume" \
	grep -q "f1: its farm (pid [0-9]* on .*) is gone; --resume $tmp/f1 runs what it left" "$tmp/out"
printf '{"type":"attempt","job":' >>"$tmp/f1/journal.jsonl" # a torn last line, as a crash mid-write leaves
touch "$tmp/gate1"
run farm --resume "$tmp/f1" --slots 3 "$tmp/j24"
check "resume: exit 0" test "$rc" = 0
check "resume: $((24 - recorded)) jobs run, $recorded finished earlier" \
	grep -q "this run: $((24 - recorded)) attempts .* $recorded finished earlier" "$tmp/out"
check "every job exactly once (journal and side effects)" exactly_once "$tmp/f1" "$tmp/side1" 24
check "two headers in the journal" test "$(grep -c '"type":"header"' "$tmp/f1/journal.jsonl")" = 2
check "the killed farm's MPS daemon was stopped" test -z "$(our_daemons)"
check "no run directory left" bash -c "! ls -d '$XDG_RUNTIME_DIR'/gpushare/farm-* 2>/dev/null"
run farm --resume "$tmp/f1" --slots 3 "$tmp/j24"
check "resuming a finished farm runs nothing: exit 0" \
	bash -c "test $rc = 0 && grep -q 'this run: 0 attempts' '$tmp/out'"

echo "== one Ctrl-C: running jobs finish, no new ones start"
jobs_file "$tmp/j8" 8 1 "$tmp/side2"
"$GPUSHARE" farm --dir "$tmp/f2" --strategy timeslice --slots 1 "$tmp/j8" >"$tmp/f2.out" 2>"$tmp/f2.err" &
fpid=$!
wait_for 100 0.05 running_jobs 2 || true
kill -INT "$fpid"
set +e
wait "$fpid"
rc=$?
set -e
fpid=
check "exit 130" test "$rc" = 130
check "the two running jobs finished ok, nothing else ran" python3 -c "
import json; recs = [json.loads(l) for l in open('$tmp/f2/journal.jsonl')][1:]
assert sorted(r['job'] for r in recs) == [1, 2] and all(r['outcome'] == 'ok' for r in recs), recs"
check "it says how to continue" grep -q -- "--resume $tmp/f2" "$tmp/f2.out"
check "it said what a second Ctrl-C does" grep -q "Ctrl-C again stops them" "$tmp/f2.err"
run farm --resume "$tmp/f2" --strategy timeslice "$tmp/j8"
check "resume after Ctrl-C: exit 0, every job exactly once" \
	bash -c "test $rc = 0 && $(declare -f exactly_once); exactly_once '$tmp/f2' '$tmp/side2' 8"

echo "== Ctrl-C twice: the running jobs are stopped too"
jobs_file "$tmp/j4" 4 30 "$tmp/side4"
"$GPUSHARE" farm --dir "$tmp/f4" --strategy timeslice --slots 1 "$tmp/j4" >"$tmp/f4.out" 2>"$tmp/f4.err" &
fpid=$!
wait_for 100 0.05 running_jobs 2 || true
kill -INT "$fpid"
sleep 0.3
kill -INT "$fpid"
set +e
wait "$fpid"
rc=$?
set -e
fpid=
check "exit 130" test "$rc" = 130
check "both running jobs recorded as stopped" python3 -c "
import json; recs = [json.loads(l) for l in open('$tmp/f4/journal.jsonl')][1:]
assert sorted(r['job'] for r in recs) == [1, 2] and all(r['outcome'] == 'stopped' for r in recs), recs"
check "it said it stops the running jobs" grep -q "stopping the running jobs" "$tmp/f4.err"
check "no job left" wait_for 30 0.1 no_jobs

echo "== SIGTERM: running jobs are stopped, and run again on resume"
jobs_file "$tmp/j6" 6 30 "$tmp/side3"
"$GPUSHARE" farm --dir "$tmp/f3" --strategy timeslice --slots 1 "$tmp/j6" >"$tmp/f3.out" 2>&1 &
fpid=$!
wait_for 100 0.05 running_jobs 2 || true
start=$(date +%s)
kill -TERM "$fpid"
set +e
wait "$fpid"
rc=$?
set -e
fpid=
check "exit 130 within seconds ($(($(date +%s) - start)) s)" test "$rc" = 130 -a $(($(date +%s) - start)) -lt 10
check "two attempts recorded as stopped by SIGTERM" python3 -c "
import json; recs = [json.loads(l) for l in open('$tmp/f3/journal.jsonl')][1:]
assert len(recs) == 2 and all(r['outcome'] == 'stopped' and r['signal'] == 15 for r in recs), recs"
check "no job left" wait_for 30 0.1 no_jobs
sed "s/ 30 / 0 /" "$tmp/j6" >"$tmp/j6-short" # shorter jobs would be a different list:
run farm --resume "$tmp/f3" --strategy timeslice "$tmp/j6-short"
check "a changed job list is refused on resume: exit 2" test "$rc" = 2
# Same list; the jobs are made quick through the environment they share.
cat >"$tmp/job.sh" <<'EOF'
#!/bin/sh
echo "$1" >>"$3"
EOF
run farm --resume "$tmp/f3" --strategy timeslice "$tmp/j6"
check "resume after SIGTERM: exit 0, stopped jobs ran again, every job exactly once" \
	bash -c "test $rc = 0 && $(declare -f exactly_once); exactly_once '$tmp/f3' '$tmp/side3' 6"
check "stopped attempts do not count as failures: attempt 2 of the stopped jobs is ok" python3 -c "
import json; recs = [json.loads(l) for l in open('$tmp/f3/journal.jsonl') if '\"attempt\"' in l]
st = {r['job'] for r in recs if r['outcome'] == 'stopped'}
assert all(any(r['job'] == j and r['attempt'] == 2 and r['outcome'] == 'ok' for r in recs) for j in st)"
check "no job left" wait_for 30 0.1 no_jobs
check "no daemon left" test -z "$(our_daemons)"

finish "farm resume"
