#!/usr/bin/env bash
# Torture, "hardening, round two": closed standard descriptors, failed reads
# taken for the end of a list, Slurm counts that overflow, --shell templates
# that would run an argument, stop signals while the job list is read, a
# refused --resume that changed the journal, torn lines cut silently,
# hand-edited journals, limits reported with their reason, an open-file
# limit too low for the slots. Each case ends
# with its documented status and a one-line error, and a refused command
# leaves the files it was given as they were.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?}" "${GPUSHARE_TEST_HELPERS:?}"
H=$GPUSHARE_TEST_HELPERS
tmp=$(mktemp -d /tmp/gpushare-torture-harden.XXXXXX)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
private_xdg
export GPUSHARE_NVML_LIBRARY=$H/libfakenvml.so FAKE_NVML_GPUS=1
export GPUSHARE_MPS_CONTROL=$H/fake_mps_control
export CUDA_MPS_PIPE_DIRECTORY=$tmp/no-daemon
unset CUDA_VISIBLE_DEVICES SLURM_JOB_ID SLURM_STEP_ID SLURM_PROCID SLURM_NTASKS SLURM_ARRAY_TASK_ID \
	SLURM_ARRAY_TASK_MIN SLURM_ARRAY_TASK_MAX SLURM_ARRAY_TASK_STEP SLURM_ARRAY_TASK_COUNT
F=(farm --strategy timeslice --slots 2 -q)

# trun ARGS...: gpushare ARGS bounded by 60 s (124 when it hung).
trun() {
	set +e
	timeout -k 5 60 "$GPUSHARE" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	set -e
}
expect() { # expect STATUS TEXT DESCRIPTION
	if [[ $rc -eq $1 ]] && grep -q -- "$2" "$tmp/err"; then ok "$3"; else
		fail "$3: exit $rc (want $1 and '$2'): $(head -c 600 "$tmp/err")"; fi
}
one_line() { [[ $(wc -l <"$tmp/err") -eq 1 ]] && ok "$1: one line" || fail "$1: $(cat "$tmp/err")"; }
sum() { sha256sum "$1" | cut -d' ' -f1; }

printf 'true\ntrue\n' >"$tmp/two"
echo true >"$tmp/one"

echo "== 1. closed standard descriptors never become state files"
set +e
timeout 60 "$GPUSHARE" farm --dir "$tmp/c2" --strategy timeslice --slots 1 "$tmp/two" >"$tmp/out" 2>&-
rc=$?
set -e
[[ $rc -eq 0 ]] && ok "farm with stderr closed: exit 0" || fail "farm with stderr closed: exit $rc"
python3 - "$tmp/c2/journal.jsonl" <<'PY' && ok "farm 2>&-: the journal holds only records" || fail "farm 2>&-: progress in the journal: $(head -c 300 "$tmp/c2/journal.jsonl")"
import json, sys
for l in open(sys.argv[1]):
    assert json.loads(l)["type"] in ("header", "attempt"), l
PY
set +e
timeout 60 "$GPUSHARE" farm --dir "$tmp/c0" --strategy timeslice --slots 1 - <&- >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
check "farm - with stdin closed: exit 0, reads nothing (exit $rc)" test "$rc" -eq 0
check "farm - with stdin closed: no job taken from its own files" \
	python3 -c 'import sys; assert sum(1 for l in open(sys.argv[1])) == 0' "$tmp/c0/jobs.jsonl"
set +e
timeout 60 "$GPUSHARE" sweep --out "$tmp/s2" --workload spin --strategy sequential --workers 1 --repeats 1 \
	--request-us 100us --duration 50ms --warmup 10ms --warmup-requests 1 --no-report >"$tmp/out" 2>&-
rc=$?
set -e
if [[ -n $(find "$tmp/s2" -name '*lock*' -size +64c 2>/dev/null) ]]; then
	fail "sweep 2>&-: a lock file holds progress lines"
else ok "sweep 2>&- (exit $rc): no progress in its lock file"; fi

echo "== 2. job lines are bounded while read; a read error is an error"
python3 -c 'import sys; sys.stdout.write("true " + "x" * (1 << 21) + "\n")' >"$tmp/long"
trun "${F[@]}" --dir "$tmp/long-d" "$tmp/long"
expect 2 "longer than 1048576 bytes" "a 2 MiB job line: refused (exit 2)"
one_line "a 2 MiB job line"
check "a refused job file leaves no farm directory" test ! -e "$tmp/long-d"
# A job list on a descriptor that fails to read (a directory): exit 11, not 0 jobs.
set +e
timeout 60 "$GPUSHARE" "${F[@]}" --dir "$tmp/eisdir" - <"$tmp" >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
expect 11 "Is a directory" "a job list whose read fails: exit 11 (not an empty list)"
check "the failed read leaves no farm directory" test ! -e "$tmp/eisdir"
echo "== 3. Slurm counts that overflow"
for env in "SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_COUNT=4294967296 SLURM_STEP_ID=0 SLURM_PROCID=0 SLURM_NTASKS=4294967296" \
	"SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_COUNT=100000 SLURM_STEP_ID=0 SLURM_PROCID=0 SLURM_NTASKS=100000" \
	"SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_COUNT=99999999999999999999"; do
	set +e
	# shellcheck disable=SC2086 # the words are NAME=VALUE pairs
	env $env timeout 60 "$GPUSHARE" "${F[@]}" --dir "$tmp/slurm" "$tmp/two" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	set -e
	expect 2 "SLURM_\\|shards" "Slurm ${env// SLURM_STEP_ID=0 SLURM_PROCID=0/}: refused (exit 2)"
	check "  ... no farm directory left" test ! -e "$tmp/slurm"
done
trun bench --workload spin --rate 1e12 --load open --strategy sequential --workers 1
expect 2 "at most 1e9" "--rate 1e12: the bound is named"

echo "== 4. --shell templates never run an argument"
printf '%s\n' '$(touch '"$tmp"'/INJECTED)' '`touch '"$tmp"'/INJECTED2`' >"$tmp/evil"
trun "${F[@]}" --dir "$tmp/sh1" --shell --args "$tmp/evil" -- 'echo "{}"'
expect 2 "inside double quotes" "'echo \"{}\"': refused (exit 2)"
check "  ... nothing ran" test ! -e "$tmp/INJECTED" -a ! -e "$tmp/INJECTED2"
trun "${F[@]}" --dir "$tmp/sh2" --shell --args "$tmp/evil" -- "echo 'x{}y'"
expect 2 "inside single quotes" "\"echo 'x{}y'\": refused (exit 2)"
trun "${F[@]}" --dir "$tmp/sh3" --shell --args "$tmp/evil" -- 'echo {} >>'"$tmp"'/said'
[[ $rc -eq 0 ]] && ok "unquoted {}: exit 0" || fail "unquoted {}: exit $rc: $(cat "$tmp/err")"
check "  ... the arguments are printed, not run" test ! -e "$tmp/INJECTED" -a ! -e "$tmp/INJECTED2"
check "  ... verbatim" grep -qxF '$(touch '"$tmp"'/INJECTED)' "$tmp/said"

echo "== 5. a stop while the job list is read from a pipe"
for sig in INT TERM; do
	rm -rf "$tmp/pipe-d"
	mkfifo "$tmp/fifo-$sig"
	set +e
	"$GPUSHARE" "${F[@]}" --dir "$tmp/pipe-d" - <"$tmp/fifo-$sig" >"$tmp/out" 2>"$tmp/err" &
	pid=$!
	pids+=("$pid")
	exec 7>"$tmp/fifo-$sig"
	echo true >&7
	wait_for 100 0.05 catches "$pid" "$sig" || true
	sleep 0.2 # on to the read of the list, which waits for more: fd 7 stays open
	kill -"$sig" "$pid"
	timeout 30 tail --pid="$pid" -f /dev/null
	wait "$pid"
	rc=$?
	exec 7>&-
	set -e
	expect 130 "before any job started" "SIG$sig while reading the list: exit 130"
	if grep -q "running jobs\|running ones" "$tmp/err"; then fail "SIG$sig: talks of running jobs: $(cat "$tmp/err")"; else
		ok "SIG$sig: no talk of running jobs"; fi
done

echo "== 6. a refused command changes no journal; torn lines are reported"
trun "${F[@]}" --dir "$tmp/r6" "$tmp/two"
[[ $rc -eq 0 ]] || fail "base farm: exit $rc: $(cat "$tmp/err")"
printf '{"type":"attempt","job":1' >>"$tmp/r6/journal.jsonl"
before=$(sum "$tmp/r6/journal.jsonl")
printf 'false\n' >"$tmp/other"
trun "${F[@]}" --resume "$tmp/r6" "$tmp/other"
expect 2 "refusing to resume" "--resume with another list: refused (exit 2)"
check "  ... the journal is byte for byte the same" test "$(sum "$tmp/r6/journal.jsonl")" = "$before"
trun "${F[@]}" --resume "$tmp/r6" --shard 1/2
[[ $rc -ne 0 ]] && check "--resume as another shard: refused, the journal unchanged" \
	test "$(sum "$tmp/r6/journal.jsonl")" = "$before" || fail "--resume as another shard: exit 0"
mkdir "$tmp/r6b"
printf '{"type":"header","version":1' >"$tmp/r6b/journal.jsonl"
before=$(sum "$tmp/r6b/journal.jsonl")
trun "${F[@]}" --dir "$tmp/r6b" "$tmp/two"
expect 6 "already holds" "a new farm on a journal without a newline: refused (exit 6)"
check "  ... the journal is unchanged" test "$(sum "$tmp/r6b/journal.jsonl")" = "$before"
trun "${F[@]}" --resume "$tmp/r6b"
[[ $rc -ne 0 ]] && check "--resume of a journal that is one torn line: refused, unchanged" \
	test "$(sum "$tmp/r6b/journal.jsonl")" = "$before" || fail "--resume of a torn-only journal: exit 0"
trun farm --resume "$tmp/r6" --strategy timeslice --slots 2
expect 0 "torn" "--resume: the torn last line is cut with a warning"
check "  ... and the journal is whole" python3 -c '
import json, sys
[json.loads(l) for l in open(sys.argv[1])]' "$tmp/r6/journal.jsonl"

echo "== 7. a resume checks every attempt's hash against its job"
printf 'true\nfalse\n' >"$tmp/tf"
trun "${F[@]}" --dir "$tmp/r7" "$tmp/tf"
[[ $rc -eq 8 ]] || fail "base farm with a failing job: exit $rc: $(cat "$tmp/err")"
# A hand-edited line: job 1's ok attempt, renumbered as job 2 (its hash stays job 1's).
grep '"job":1,' "$tmp/r7/journal.jsonl" | sed 's/"job":1,/"job":2,/; s/"attempt":1,/"attempt":2,/' >>"$tmp/r7/journal.jsonl"
before=$(sum "$tmp/r7/journal.jsonl")
copy_before=$(sum "$tmp/r7/jobs.jsonl")
trun "${F[@]}" --resume "$tmp/r7" "$tmp/tf"
expect 2 "has hash" "--resume with the list again: an attempt with another job's hash is refused (exit 2)"
check "  ... journal and copy unchanged" test "$(sum "$tmp/r7/journal.jsonl")" = "$before" -a \
	"$(sum "$tmp/r7/jobs.jsonl")" = "$copy_before"
trun "${F[@]}" --resume "$tmp/r7"
expect 2 "has hash" "--resume from the copy: refused the same way (exit 2)"

echo "== 8. exec leaves nothing behind when it refuses a job"
U=$XDG_RUNTIME_DIR/gpushare
export FAKE_NVML_GPUS=2
ompi() { env OMPI_COMM_WORLD_LOCAL_RANK=0 OMPI_COMM_WORLD_LOCAL_SIZE="$1" OMPI_MCA_orte_ess_jobid="$2" "${@:3}"; }
set +e
ompi 3 77 timeout 60 "$GPUSHARE" exec --ranks-per-gpu 2 -- true >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
expect 2 "ranks-per-gpu" "3 ranks that --ranks-per-gpu 2 cannot fit: refused (exit 2)"
check "  ... no job directory or lock left" test -z "$(find "$U" -name 'exec-*' 2>/dev/null)"
short_xdg=$(mktemp -d /tmp/gx.XXXXXX)
set +e
XDG_RUNTIME_DIR=$short_xdg ompi 1 "$(printf 'k%.0s' {1..120})" timeout 60 "$GPUSHARE" exec -- true >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
[[ $rc -eq 0 ]] && ok "a long job key: shortened to fit the pipe directory's 80 characters, the job runs (exit 0)" \
	|| fail "a long job key: exit $rc: $(head -c 600 "$tmp/err")"
check "  ... no job directory or lock left" test -z "$(find "$short_xdg" -name 'exec-*' 2>/dev/null)"
rm -rf "$short_xdg"
# 60 characters: still used (below 64), but no job name fits after it.
long_xdg=$tmp/$(printf 'x%.0s' $(seq $((59 - ${#tmp}))))
mkdir -m 700 "$long_xdg"
set +e
XDG_RUNTIME_DIR=$long_xdg ompi 1 78 timeout 60 "$GPUSHARE" exec -- true >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
expect 2 "no room under" "a user directory too long for the pipe directory: refused (exit 2)"
one_line "a user directory too long"
check "  ... no job directory or lock left" test -z "$(find "$long_xdg" -name 'exec-*' 2>/dev/null)"

echo "== 9. an MPS start failure quotes the log, never points into a removed run directory"
FAKE_MPS_START_FAIL=1 trun farm --dir "$tmp/m9" --slots 1 "$tmp/one"
expect 5 "control.log" "farm: the MPS daemon fails to start (exit 5)"
if grep -q "; see " "$tmp/err"; then fail "  ... points to a log in a removed directory: $(cat "$tmp/err")"; else
	ok "  ... no pointer to a removed log"; fi

echo "== 10. a window with no request: failed with its reason, in bench, sweep and report"
export GPUSHARE_WORKER=${GPUSHARE_WORKER:-$(dirname "$GPUSHARE")/gpushare-worker} CUDA_MPS_PIPE_DIRECTORY=$tmp/no-daemon
OPEN=(--workload spin --request-us 100us --duration 100ms --warmup 10ms --warmup-requests 1 --strategy sequential
	--workers 1 --load open --rate 0.01)
trun bench "${OPEN[@]}" --json
[[ $rc -eq 10 ]] && ok "bench, no arrival in the window: exit 10" || fail "bench with no arrival: exit $rc"
check "  ... status failed, p99 null (never 0)" python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
assert r["status"] == "failed" and r["aggregate"]["p99_seconds"] is None, r["status"]' "$tmp/out"
trun sweep --out "$tmp/sw10" "${OPEN[@]}" --repeats 1 -q --no-report
[[ $rc -eq 10 ]] && ok "sweep, no arrival: exit 10" || fail "sweep with no arrival: exit $rc: $(cat "$tmp/err")"
check "  ... recorded failed with its reason" grep -q '"status":"failed","error":{"code":"no result","message":"no request' \
	"$tmp/sw10/results.jsonl"
trun report "$tmp/sw10" -q
if grep -qi "corrupt\|skipp" "$tmp/err"; then fail "report calls the run corrupt: $(cat "$tmp/err")"; else
	ok "report reads it as a failed run (exit $rc), not a corrupt line"; fi

echo "== classes: readers take regular files only, a status counts each journal once"
mkfifo "$tmp/jfifo"
trun "${F[@]}" --dir "$tmp/ff" "$tmp/jfifo"
expect 11 "not a regular file" "a FIFO as the job file: refused at once (exit 11)"
trun "${F[@]}" --dir "$tmp/fz" --args /dev/zero -- echo {}
expect 11 "not a regular file" "/dev/zero as --args: refused (exit 11)"
check "  ... no farm directory left" test ! -e "$tmp/ff" -a ! -e "$tmp/fz"
trun "${F[@]}" --dir "$tmp/st" "$tmp/two"
ln -s "$tmp/st" "$tmp/st-link"
( cd "$tmp" && timeout 60 "$GPUSHARE" farm status --json st ./st st/ "$tmp/st-link" "$tmp/st" >"$tmp/out" 2>"$tmp/err" ) && rc=0 || rc=$?
check "farm status of one directory named five ways: each job once (exit $rc)" python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
assert s["jobs"] == 2 and s["done"] == 2 and s["attempts"] == 2, s' "$tmp/out"

echo "== 12. small things"
set +e
env PMIX_LOCAL_RANK=0 PMIX_LOCAL_SIZE=1 PMIX_RANK=0 PMIX_NAMESPACE=ns timeout 60 "$GPUSHARE" exec --dry-run -- true \
	>"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
check "exec under PMIx: 'rank 0/?', never -1 (exit $rc)" grep -q "^rank 0/? " "$tmp/out"
set +e
env OMPI_COMM_WORLD_LOCAL_RANK=0 OMPI_COMM_WORLD_LOCAL_SIZE=1 OMPI_COMM_WORLD_RANK=7 OMPI_COMM_WORLD_SIZE=2 \
	timeout 60 "$GPUSHARE" exec --dry-run -- true >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
expect 2 "not below its job's size" "exec with rank 7 of 2: refused (exit 2)"
trun farm --dir "$tmp/p1" --strategy timeslice --slots 1 "$tmp/one"
check "farm of one job, one slot: no '1 jobs', '1 slots', '1 attempts'" \
	bash -c '! grep -P "(?<![0-9.])1 (jobs|slots|attempts)\b(?!/)" "$1"' _ "$tmp/out"
check "  ... '1 job' and '1 slot'" grep -q "(1 job), 1 slot per GPU" "$tmp/out"
trun "${F[@]}" --dir "$tmp/p2" --mps-pipe-dir '' "$tmp/two"
expect 2 "an empty path" "--mps-pipe-dir '': refused (exit 2)"
check "  ... nothing created" test ! -e "$tmp/p2"
trun report ''
[[ $rc -eq 2 ]] && ok "report '': exit 2" || fail "report '': exit $rc"

echo "== the open-file limit: raised when the hard limit allows, else refused before anything"
printf 'true\n%.0s' $(seq 60) >"$tmp/nofile-jobs"
set +e
(ulimit -S -n 32 && timeout -k 5 60 "$GPUSHARE" farm --strategy timeslice --slots 40 -q --dir "$tmp/nofile-ok" \
	"$tmp/nofile-jobs") >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
[[ $rc -eq 0 ]] && ok "farm --slots 40 with a soft limit of 32 open files: the limit raised, exit 0" \
	|| fail "farm --slots 40 under a soft limit of 32: exit $rc: $(head -c 600 "$tmp/err")"
set +e
(ulimit -n 32 && timeout -k 5 60 "$GPUSHARE" farm --strategy timeslice --slots 40 -q --dir "$tmp/nofile-no" \
	"$tmp/nofile-jobs") >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
expect 2 "40 slots on .* need about .* open files, but this process may open only 32" \
	"farm --slots 40 under a hard limit of 32 open files: exit 2, why"
one_line "farm under a hard open-file limit"
check "  ... no farm directory created" test ! -e "$tmp/nofile-no"

finish "hardening torture"
