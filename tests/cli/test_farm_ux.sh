#!/usr/bin/env bash
# What queue users expect of `gpushare farm`: --halt N (no new jobs after N
# failed for good; the running ones finish; exit 8; --resume continues),
# --dry-run (what would run, nothing created or changed; --json), --tag (the
# jobs' lines streamed as they come, prefixed with the job number, the out/
# files still written), --timeout Nx (N times the median ok job, at least
# 1 s, kept by --resume), and a farm directory of the earlier 0-based
# numbering refused on resume with the reason, still read by farm status.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/cli/lib_farm_env.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib_farm_env.sh"

: "${GPUSHARE:?set by ctest}"
tmp=$(mktemp -d /tmp/gpushare-fux-XXXXXX)
fpid=
trap '[[ -n "$fpid" ]] && kill -KILL "$fpid" 2>/dev/null; pkill -KILL -f "$tmp/" 2>/dev/null || true; rm -rf "$tmp"' EXIT
farm_env_nodriver

echo "== --halt N"
for i in $(seq 1 10); do echo "sh -c 'sleep 0.3; exit 1'"; done >"$tmp/fail10"
run farm --dir "$tmp/h" --strategy timeslice --slots 2 --halt 3 -q "$tmp/fail10"
check "exit 8 (got $rc)" test "$rc" = 8
check "the error says it halted, how many failed, and how to continue" \
	grep -q "halted after [34] failed jobs (--halt 3); the running jobs finished, [67] jobs not started; continue with: gpushare farm --resume $tmp/h" "$tmp/err"
check "the summary says so too" grep -q "^halted after [34] failed jobs (--halt): [67] jobs not started" "$tmp/out"
check "the journal: 3 or 4 attempts (those running at the third failure finished), none stopped" journal "$tmp/h" '
assert len(recs) in (3, 4) and all(r["outcome"] == "failed" and r["exit_code"] == 1 for r in recs), recs'
run farm --resume "$tmp/h" -q
check "--resume continues: the rest ran (no --halt given again), exit 8" \
	bash -c "test $rc = 8 && grep -q 'jobs: 0 done, 10 failed, 0 unfinished of 10' '$tmp/out'"
printf 'true\ntrue\ntrue\n' >"$tmp/ok3"
run farm --dir "$tmp/h2" --strategy timeslice --halt 1 -q "$tmp/ok3"
check "--halt with no failure: exit 0, nothing halted" bash -c "test $rc = 0 && ! grep -q halted '$tmp/out'"
run farm --dir "$tmp/h3" --strategy timeslice --halt 0 "$tmp/ok3"
check "--halt 0: exit 2" test "$rc" = 2

echo "== --dry-run"
printf '%s\n' "echo one" "sh -c 'echo two >&2'" "echo three" >"$tmp/j3"
run farm --dir "$tmp/d" --strategy timeslice --slots 2 --dry-run "$tmp/j3"
check "exit 0 (got $rc)" test "$rc" = 0
check "the directory is not created" test ! -e "$tmp/d"
check "the strategy, slots and GPUs" grep -q "dry run: .*timeslice, shard 0/1, 2 slots per GPU on 1 GPU" "$tmp/out"
check "job 1 and 2 placed on GPU 0 slots 0 and 1, job 3 not known in advance" bash -c "
grep -Eq '^ +1 +0 +0  echo one$' '$tmp/out' && grep -Eq \"^ +2 +0 +1  sh -c 'echo two >&2'$\" '$tmp/out' &&
grep -Eq '^ +3 +- +-  echo three$' '$tmp/out' && grep -q '^3 of 3 jobs would run$' '$tmp/out'"
run farm --dir "$tmp/d" --strategy timeslice --dry-run --json --no-shell --range 5..7 -- echo '{#}:{}'
check "--json: the jobs after {} and {#}, calibration's first wave (one per GPU)" python3 -c "
import json; d = json.load(open('$tmp/out'))
assert d['dry_run'] and d['strategy'] == 'timeslice' and d['calibrate'] and d['slots'] is None, d
assert [j['argv'] for j in d['job_list']] == [['echo', '1:5'], ['echo', '2:6'], ['echo', '3:7']], d
assert [j['job'] for j in d['job_list']] == [1, 2, 3] and d['job_list'][0]['gpu'] == 0 and d['job_list'][1]['gpu'] is None
assert d['jobs'] == 3 and d['would_run'] == 3"
check "  and still no directory" test ! -e "$tmp/d"
run farm --dir "$tmp/d" --strategy timeslice --dry-run --range -9223372036854775808..9223372036854775807 -- true
check "--range over all of int64 (2^64 values, not 0): exit 2 (got $rc)" bash -c "
test $rc = 2 && grep -q 'has more than' '$tmp/err' && test ! -e '$tmp/d'"
run farm --dir "$tmp/d" --strategy timeslice --dry-run --shard 1/2 "$tmp/j3"
check "--shard 1/2: job 2 only" bash -c "grep -Eq '^ +2 ' '$tmp/out' && ! grep -Eq '^ +[13] ' '$tmp/out'"
run farm --dir "$tmp/hr" --strategy timeslice --slots 1 -q "$tmp/j3"
cp -a "$tmp/hr" "$tmp/hr.before"
printf 'true\nfalse\ntrue\n' >"$tmp/mixed"
run farm --dir "$tmp/m" --strategy timeslice --slots 1 -q "$tmp/mixed"
run farm --resume "$tmp/m" --dry-run --retries 1
check "resume --dry-run: the failed job only, with the recorded strategy and slots" bash -c "
test $rc = 0 && grep -q 'timeslice, shard 0/1, 1 slot per GPU' '$tmp/out' && grep -Eq '^ +2 .* false$' '$tmp/out' &&
grep -q '^1 of 3 jobs would run$' '$tmp/out'"
run farm --resume "$tmp/hr" --dry-run
check "resume --dry-run of a finished farm: nothing would run, the directory unchanged" bash -c "
test $rc = 0 && grep -q '^0 of 3 jobs would run$' '$tmp/out' && diff -r '$tmp/hr' '$tmp/hr.before'"
run farm --dir "$tmp/d" --dry-run --tag "$tmp/j3"
check "--dry-run --tag: exit 2" test "$rc" = 2

echo "== --tag: lines streamed as they come, prefixed with the job number"
cat >"$tmp/slow.sh" <<EOF
#!/bin/sh
echo "first of \$1"
echo "err of \$1" >&2
while [ ! -e "$tmp/gate" ]; do sleep 0.05; done
printf 'last of %s' "\$1"
EOF
chmod +x "$tmp/slow.sh"
printf '%s\n' "$tmp/slow.sh a" "$tmp/slow.sh b" >"$tmp/jt"
"$GPUSHARE" farm --dir "$tmp/t" --strategy timeslice --slots 2 --tag -q "$tmp/jt" >"$tmp/t.out" 2>"$tmp/t.err" &
fpid=$!
streamed() { grep -qx $'1\tfirst of a' "$tmp/t.out" && grep -qx $'2\tfirst of b' "$tmp/t.out"; }
wait_for 100 0.05 streamed || true
check "each job's first line is on stdout while the jobs still run" streamed
check "  its stderr line on stderr" bash -c "grep -qx \$'1\\terr of a' '$tmp/t.err' && grep -qx \$'2\\terr of b' '$tmp/t.err'"
check "  the jobs are still running (waiting at the gate)" test -n "$(pgrep -f "$tmp/slow.sh" || true)"
touch "$tmp/gate"
set +e
wait "$fpid"
rc=$?
set -e
fpid=
check "exit 0 (got $rc)" test "$rc" = 0
check "a last line without a newline is passed whole" grep -qx $'2\tlast of b' "$tmp/t.out"
check "the out/ files are written as without --tag" bash -c "
test \"\$(cat '$tmp/t/out/1.1.out')\" = \"\$(printf 'first of a\nlast of a')\" && grep -qx 'err of b' '$tmp/t/out/2.1.err'"
check "-q: no progress line among them" bash -c "! grep -q '^farm: ' '$tmp/t.err'"
printf '%s\n' "sh -c 'echo x\$GPUSHARE_FARM_ATTEMPT; exit 1'" >"$tmp/jr"
run farm --dir "$tmp/t2" --strategy timeslice --retries 1 --tag -q "$tmp/jr"
check "a retry's lines carry JOB.ATTEMPT" bash -c "grep -qx \$'1\\tx1' '$tmp/out' && grep -qx \$'1.2\\tx2' '$tmp/out'"
run farm --dir "$tmp/t3" --strategy timeslice --tag --json -q "$tmp/j3"
check "--tag --json: stdout holds only the JSON document, the lines go to stderr" bash -c "
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' '$tmp/out' && grep -qx \$'1\\tone' '$tmp/err'"

echo "== --timeout Nx"
{ for i in 1 2 3 4 5 6; do echo "sleep 0.1"; done; echo "sleep 60"; echo "sleep 0.1"; } >"$tmp/jx"
start=$(date +%s)
run farm --dir "$tmp/x" --strategy timeslice --slots 1 --timeout 3x -q "$tmp/jx"
took=$(($(date +%s) - start))
check "exit 8 (got $rc): the long job timed out" test "$rc" = 8
check "  long before its 60 s ($took s; bound 30 s x $TIME_FACTOR, under 60)" \
	test "$took" -lt $((30 * TIME_FACTOR < 55 ? 30 * TIME_FACTOR : 55))
check "the journal: job 7 timed out after about the 1 s floor, the others ok; the header records 3x" journal "$tmp/x" '
o = {r["job"]: r for r in recs}
assert o[7]["outcome"] == "timeout" and 0.9 < o[7]["duration_seconds"] < 30, o[7]
assert all(o[j]["outcome"] == "ok" for j in (1, 2, 3, 4, 5, 6, 8))
assert hdr[0]["timeout_median_factor"] == 3 and hdr[0].get("timeout_seconds") is None, hdr'
run farm --resume "$tmp/x" --timeout 10s -q
check "resume with another --timeout: exit 2 naming 3x" \
	bash -c "test $rc = 2 && grep -q 'ran with --timeout 3x, this run asks for --timeout 10s' '$tmp/err'"
run farm --resume "$tmp/x" --timeout 3x -q --retries 1 --dry-run
check "resume with the same --timeout 3x: accepted" test "$rc" = 0
{ for i in 1 2 3 4; do echo "sleep 0.05"; done; echo "sleep 3"; } >"$tmp/jx2"
run farm --dir "$tmp/x2" --strategy timeslice --slots 1 --timeout 2x -q "$tmp/jx2"
check "fewer than 5 ok jobs: no relative timeout yet, the 3 s job runs out (exit 0)" test "$rc" = 0
for bad in 0x x 0.5x 5y; do
	run farm --dir "$tmp/xb" --strategy timeslice --timeout "$bad" "$tmp/j3"
	check "--timeout $bad: exit 2" bash -c "test $rc = 2 && grep -q 'invalid --timeout' '$tmp/err'"
done

echo "== a farm directory of the earlier numbering (from 0)"
run farm --dir "$tmp/o" --strategy timeslice --slots 1 -q "$tmp/mixed"
python3 - "$tmp/o/journal.jsonl" <<'EOF'
import json, sys
out = []
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["type"] == "header":
        r["version"] = 1
    else:
        r["job"] -= 1
        r["stdout"] = "out/%d.%d.out" % (r["job"], r["attempt"])
        r["stderr"] = "out/%d.%d.err" % (r["job"], r["attempt"])
    out.append(json.dumps(r, separators=(",", ":")))
open(sys.argv[1], "w").write("\n".join(out) + "\n")
EOF
# the earlier farm's stderr file of its failed job, under its 0-based name
mkdir -p "$tmp/o/out" && echo "the error" >"$tmp/o/out/1.1.err"
cp "$tmp/o/journal.jsonl" "$tmp/o.journal"
run farm --resume "$tmp/o" --retries 1 -q
check "resume: exit 6, the reason named" bash -c "test $rc = 6 &&
grep -q 'written by an earlier gpushare that numbered jobs from 0 (journal version 1)' '$tmp/err'"
check "  the journal is left as it was" cmp -s "$tmp/o/journal.jsonl" "$tmp/o.journal"
run farm status "$tmp/o"
check "farm status reads it: job 2 (its job 0-based 1) failed, with its old stderr file" \
	bash -c "test $rc = 0 && grep -q 'jobs: 2 done, 1 failed' '$tmp/out' && grep -Eq '^failed +2 +1  failed  exit 1 +out/1.1.err ' '$tmp/out'"

echo "== job commands and file names reach the terminal through the sanitiser"
printf 'sh -c "exit 3" \033[31mRED\033]0;title\007\n' >"$tmp/esc"
raw() { ! LC_ALL=C grep -q $'[\x1b\x07]' "$@"; } # no ESC or BEL byte in the files
run farm --dir "$tmp/e" --strategy timeslice --slots 1 -q --no-shell "$tmp/esc"
check "the failure listing after the run: the escapes shown, not sent (exit 8, got $rc)" bash -c "test $rc = 8 &&
grep -qF \"sh -c 'exit 3' '\\\\x1B[31mRED\\\\x1B]0;title\\\\x07'\" '$tmp/out'"
check "  no raw escape byte on stdout or stderr" raw "$tmp/out" "$tmp/err"
run farm status "$tmp/e" --failed
check "farm status --failed: the same" bash -c "test $rc = 0 && grep -qF '\\x1B[31mRED' '$tmp/out'"
check "  no raw escape byte" raw "$tmp/out" "$tmp/err"
run farm --dir "$tmp/e2" --strategy timeslice --dry-run --no-shell "$tmp/esc"
check "farm --dry-run: the same" bash -c "test $rc = 0 && grep -qF '\\x1B[31mRED' '$tmp/out'"
check "  no raw escape byte" raw "$tmp/out" "$tmp/err"
run farm --dir "$tmp/e4"$'\033[2J' --strategy timeslice --slots 1 --no-shell "$tmp/esc"
check "a farm directory's name in the summary: shown, not sent (exit 8, got $rc)" bash -c "test $rc = 8 &&
grep -qF 'farm $tmp/e4\\x1B[2J: timeslice' '$tmp/out' && grep -qF 'gpushare farm --rerun-failed $tmp/e4\\x1B[2J' '$tmp/err'"
check "  no raw escape byte" raw "$tmp/out" "$tmp/err"
run farm --dir "$tmp/e3" --strategy timeslice "$tmp/no"$'\033[2J'"such"
check "an error naming a file: the escape shown in the message (exit 11, got $rc)" bash -c "test $rc = 11 &&
grep -qF 'no\\x1B[2Jsuch' '$tmp/err'"
check "  no raw escape byte" raw "$tmp/out" "$tmp/err"

finish "farm ux"
