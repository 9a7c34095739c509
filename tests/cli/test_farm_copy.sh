#!/usr/bin/env bash
# The farm directory's copy of the job list (DIR/jobs.jsonl): a farm fed on
# standard input and killed with SIGKILL mid-farm resumes with
# `--resume DIR` alone (nothing lost, nothing repeated: one "ok" record and
# one side effect per job); the copy holds each job's argv exactly; a job
# list given again must match (a changed one is refused naming the job,
# also from standard input); a symbolic link planted at DIR/jobs.jsonl is
# refused, never followed; a job file error leaves no directory behind.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?}"
tmp=$(mktemp -d /tmp/gpushare-farm-copy.XXXXXX)
fpid=
trap '[[ -n "$fpid" ]] && kill -KILL "$fpid" 2>/dev/null; pkill -KILL -f "$tmp/job.sh" 2>/dev/null || true; rm -rf "$tmp"' EXIT
private_xdg
export GPUSHARE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 # no driver: jobs run unplaced
unset CUDA_VISIBLE_DEVICES SLURM_JOB_ID SLURM_STEP_ID SLURM_PROCID SLURM_NTASKS SLURM_ARRAY_TASK_ID

# shellcheck source=tests/cli/lib_farm.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib_farm.sh"
at_least() { [ "$(attempts "$1")" -ge "$2" ] 2>/dev/null; } # at_least DIR N: N attempts recorded

echo "== a farm fed on stdin, SIGKILL mid-farm, then --resume DIR alone"
jobs_file "$tmp/j20" 20 0.1 "$tmp/side1" "$tmp/go" 7
"$GPUSHARE" farm --dir "$tmp/f1" --strategy timeslice --slots 3 --no-shell -q - <"$tmp/j20" >"$tmp/f1.out" 2>&1 &
fpid=$!
# Jobs 1..6 end; 7, 8 and 9 wait for $tmp/go.
waiting() { [ "$(pgrep -f "$tmp/job.sh [789] " | wc -l)" -ge 3 ]; }
wait_for 300 0.05 waiting || true
wait_for 100 0.05 at_least "$tmp/f1" 6 || true
kill -KILL "$fpid"
wait "$fpid" 2>/dev/null || true
fpid=
recorded=$(attempts "$tmp/f1")
check "killed mid-farm: the 6 attempts that ended are recorded" test "$recorded" = 6
check "no job outlives gpushare" wait_for 30 0.1 no_jobs
check "the copy holds the 20 jobs, each its argv" python3 -c "
import json, shlex
lines = open('$tmp/f1/jobs.jsonl').read().splitlines()
want = [shlex.split(l) for l in open('$tmp/j20')]
assert [json.loads(l) for l in lines] == want, lines[:2]"
check "no temporary file left beside it" bash -c "! ls -A '$tmp/f1' | grep -q tmp"
touch "$tmp/go"
run farm --resume "$tmp/f1" --strategy timeslice --slots 3 -q
check "resume without a job list: exit 0" test "$rc" = 0
check "  $((20 - recorded)) jobs run, $recorded finished earlier" \
	grep -q "this run: $((20 - recorded)) attempts .* $recorded finished earlier" "$tmp/out"
check "  every job exactly once (journal and side effects)" exactly_once "$tmp/f1" "$tmp/side1" 20
check "  the header names the source of the first run" \
	test "$(grep -c '"jobs_source":"stdin"' "$tmp/f1/journal.jsonl")" = 2
run farm --resume "$tmp/f1" --strategy timeslice -q - <"$tmp/j20"
check "the same list again on stdin: accepted, nothing to run" \
	bash -c "test $rc = 0 && grep -q 'this run: 0 attempts' '$tmp/out'"

echo "== a changed job list is refused, naming the job"
sed '4s/ 4 / 44 /' "$tmp/j20" >"$tmp/j20-changed"
run farm --resume "$tmp/f1" --strategy timeslice -q - <"$tmp/j20-changed"
check "changed on stdin: exit 2, job 4 and its line named" \
	bash -c "test $rc = 2 && grep -q 'job 4 (stdin:4, now .*job.sh 44 0.1 .*) differs from the job the journal' '$tmp/err'"
run farm --resume "$tmp/f1" --strategy timeslice -q "$tmp/j20-changed"
check "changed in a file: exit 2, the file's line named" \
	bash -c "test $rc = 2 && grep -q 'job 4 (.*j20-changed:4, now' '$tmp/err'"
check "  no spooled or temporary file left" bash -c "! ls -A '$tmp/f1' | grep -q tmp"
head -19 "$tmp/j20" >"$tmp/j19"
run farm --resume "$tmp/f1" --strategy timeslice -q "$tmp/j19"
check "one job fewer: exit 2" test "$rc" = 2
check "the copy is unchanged by refused lists" python3 -c "
import json, shlex
assert [json.loads(l) for l in open('$tmp/f1/jobs.jsonl')] == [shlex.split(l) for l in open('$tmp/j20')]"

echo "== a symbolic link at DIR/jobs.jsonl"
echo '["/bin/echo", "not mine"]' >"$tmp/victim"
cp "$tmp/victim" "$tmp/victim.orig"
rm "$tmp/f1/jobs.jsonl"
ln -s "$tmp/victim" "$tmp/f1/jobs.jsonl"
run farm --resume "$tmp/f1" --strategy timeslice -q
check "resume without a job list: exit 6, the link named" \
	bash -c "test $rc = 6 && grep -q 'jobs.jsonl.*symbolic link' '$tmp/err'"
run farm --resume "$tmp/f1" --strategy timeslice -q "$tmp/j20"
check "resume with the job list: exit 6, not replaced" \
	bash -c "test $rc = 6 && grep -q 'jobs.jsonl.*symbolic link' '$tmp/err' && test -L '$tmp/f1/jobs.jsonl'"
check "  the link's target is untouched" cmp -s "$tmp/victim" "$tmp/victim.orig"
rm "$tmp/f1/jobs.jsonl"
run farm --resume "$tmp/f1" --strategy timeslice -q
check "no copy (an older farm): exit 2, asks for the job list" \
	bash -c "test $rc = 2 && grep -q 'give the job list again' '$tmp/err'"
run farm --resume "$tmp/f1" --strategy timeslice -q "$tmp/j20"
check "given again: accepted, the copy written anew" \
	bash -c "test $rc = 0 && test -f '$tmp/f1/jobs.jsonl' && test ! -L '$tmp/f1/jobs.jsonl'"

echo "== shell mode and templates"
printf 'echo "a  b" >%s\n' "$tmp/sh.out" >"$tmp/jsh"
run farm --dir "$tmp/f2" --strategy timeslice --shell -q "$tmp/jsh"
check "shell: the copy holds /bin/sh -c LINE" python3 -c "
import json; assert json.loads(open('$tmp/f2/jobs.jsonl').read()) == ['/bin/sh', '-c', 'echo \"a  b\" >$tmp/sh.out']"
run farm --resume "$tmp/f2" --strategy timeslice -q
check "shell: resume from the copy: exit 0" test "$rc" = 0
run farm --dir "$tmp/f3" --strategy timeslice -q --no-shell --args - -- echo '{#}:{}' < <(printf 'x y\n\nz\n')
check "template on stdin: the copy holds the expanded jobs" python3 -c "
import json; assert [json.loads(l) for l in open('$tmp/f3/jobs.jsonl')] == [['echo', '1:x y'], ['echo', '2:z']]"
run farm --resume "$tmp/f3" --strategy timeslice -q --args - -- echo '{#}:{}' < <(printf 'x y\nzz\n')
check "template changed on stdin: exit 2, job 2 (its {#}) at line 2" \
	bash -c "test $rc = 2 && grep -q 'job 2 (stdin:2, now .echo 2:zz.)' '$tmp/err'"

echo "== a job file error leaves no directory behind"
printf 'ok\necho "unterminated\n' >"$tmp/jbad"
run farm --dir "$tmp/f4" --strategy timeslice -q --no-shell "$tmp/jbad"
check "exit 2 naming the line" bash -c "test $rc = 2 && grep -q 'jbad:2: unterminated double quote' '$tmp/err'"
check "the new directory is removed" test ! -e "$tmp/f4"

check "no job left" wait_for 30 0.1 no_jobs
finish "farm copy"
