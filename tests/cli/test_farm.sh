#!/usr/bin/env bash
# End-to-end tests of `gpushare farm` with CPU jobs (no GPU): the stand-in
# NVML with several fake GPUs, the stand-in MPS control program, job files
# and templates, the journal and output files, failing jobs with retries,
# hanging jobs with --timeout, jobs refused for memory, GPU selection,
# calibration of K, `farm status` over shards, live metrics and bad input.
# Every case checks that no job process is left behind.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/cli/lib_farm_env.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib_farm_env.sh"

: "${GPUSHARE:?}" "${GPUSHARE_TEST_HELPERS:?}"
H=$GPUSHARE_TEST_HELPERS
tmp=$(mktemp -d /tmp/gpushare-farm-test.XXXXXX)
trap 'pkill -KILL -f "$tmp/job.sh" 2>/dev/null || true; rm -rf "$tmp"' EXIT
farm_env_fake 2
uuid() { printf 'GPU-fa4e0000-0000-4000-8000-%012x' "$1"; }

# job.sh INDEX SLEEP EXIT: records its environment, sleeps, appends its
# index to $tmp/side, exits with EXIT.
cat >"$tmp/job.sh" <<EOF
#!/bin/sh
mkdir -p "$tmp/env"
env | grep -E '^(GPUSHARE_FARM_|CUDA_)' | sort >"$tmp/env/\$1.\$GPUSHARE_FARM_ATTEMPT"
sleep "\$2"
echo "\$1" >>"$tmp/side"
echo "out of \$1"
echo "err of \$1" >&2
exit "\$3"
EOF
chmod +x "$tmp/job.sh"
jobs_file() { # jobs_file FILE N SLEEP [EXIT]: job i (from 1, as the farm numbers them) is job.sh i
	local i
	: >"$1"
	for ((i = 1; i <= $2; i++)); do echo "$tmp/job.sh $i $3 ${4:-0}" >>"$1"; done
}
no_jobs() { ! pgrep -f "$tmp/job.sh" >/dev/null; }
no_jobs_left() {
	wait_for 20 0.1 no_jobs && ok "$1: no job process left" || fail "$1: jobs left: $(pgrep -af "$tmp/job.sh" || true)"
}

echo "== a job file on two fake GPUs under timeslice"
jobs_file "$tmp/j8" 8 0.1
run farm --dir "$tmp/f1" --strategy timeslice --slots 2 "$tmp/j8"
check "exit 0" test "$rc" = 0
check "summary: 8 done" grep -q "jobs: 8 done, 0 failed, 0 unfinished of 8" "$tmp/out"
check "per-GPU busy lines" test "$(grep -c 'GPU GPU-fa4e.*busy' "$tmp/out")" = 2
check "journal: one header and 8 ok attempts on both GPUs, slots 0..1" journal "$tmp/f1" '
assert len(hdr) == 1 and hdr[0]["strategy"] == "timeslice" and len(hdr[0]["gpus"]) == 2
assert sorted(r["job"] for r in recs) == list(range(1, 9))
assert all(r["outcome"] == "ok" and r["exit_code"] == 0 and r["attempt"] == 1 for r in recs)
assert {r["gpu"] for r in recs} == {0, 1} and {r["slot"] for r in recs} <= {0, 1}'
check "stdout and stderr in their files" \
	bash -c "grep -qx 'out of 3' '$tmp/f1/out/3.1.out' && grep -qx 'err of 3' '$tmp/f1/out/3.1.err'"
check "each job pinned to its GPU by UUID" bash -c "
for f in '$tmp'/env/*.1; do
	g=\$(sed -n 's/^GPUSHARE_FARM_GPU=//p' \$f); v=\$(sed -n 's/^CUDA_VISIBLE_DEVICES=//p' \$f)
	[ -n \"\$g\" ] && [ \"\$g\" = \"\$v\" ] || exit 1
done"
check "timeslice jobs see no MPS daemon" grep -q "CUDA_MPS_PIPE_DIRECTORY=$XDG_RUNTIME_DIR/gpushare/farm-.*/no-mps" "$tmp/env/1.1"
check "each job ran once" test "$(sort -n "$tmp/side" | tr '\n' ' ')" = "1 2 3 4 5 6 7 8 "
check "numbered from 1: job i (the i-th line) sees GPUSHARE_FARM_JOB=i, writes out/i.1.out" bash -c "
for i in 1 2 3 4 5 6 7 8; do
	grep -qx \"GPUSHARE_FARM_JOB=\$i\" '$tmp'/env/\$i.1 && grep -qx \"out of \$i\" '$tmp'/f1/out/\$i.1.out || exit 1
done
test ! -e '$tmp'/f1/out/0.1.out"
check "  and the journal numbers it i, naming those files" journal "$tmp/f1" '
assert all(r["stdout"] == "out/%d.1.out" % r["job"] and r["stderr"] == "out/%d.1.err" % r["job"] for r in recs)
assert hdr[0]["version"] == 2'
check "the run directory is removed" bash -c "! ls -d '$XDG_RUNTIME_DIR'/gpushare/farm-* 2>/dev/null"
no_jobs_left "timeslice"

echo "== --json and farm status"
run farm status --json "$tmp/f1"
check "status --json: 8 done, 2 GPUs" python3 -c "
import json; d = json.load(open('$tmp/out'))['summary']
assert d['done'] == 8 and d['failed'] == 0 and d['jobs'] == 8 and len(d['gpus']) == 2, d
assert 0 < d['gpus'][0]['busy_fraction'] <= 1 and d['makespan_seconds'] > 0, d"
run farm status "$tmp/f1"
check "status text" grep -q "jobs: 8 done, 0 failed, 0 unfinished of 8" "$tmp/out"

echo "== mps: one private daemon for both GPUs, stopped at the end"
rm -rf "$tmp/env" "$tmp/side"
run farm --dir "$tmp/f2" --slots 3 --json "$tmp/j8"
check "exit 0" test "$rc" = 0
check "--json run: strategy mps, 3 slots, 8 ok" python3 -c "
import json; d = json.load(open('$tmp/out'))
assert d['run']['strategy'] == 'mps' and d['run']['slots'] == 3 and d['run']['ok'] == 8
assert d['summary']['done'] == 8"
check "jobs are clients of the private daemon" grep -q "CUDA_MPS_PIPE_DIRECTORY=$XDG_RUNTIME_DIR/gpushare/farm-.*/mps/pipe" "$tmp/env/1.1"
check "jobs pinned by UUID under MPS" grep -qE "CUDA_VISIBLE_DEVICES=GPU-fa4e" "$tmp/env/5.1"
check "no daemon left" test -z "$(our_daemons)"
check "no daemon's pipe directory left" bash -c "! ls -d '$XDG_RUNTIME_DIR'/gpushare/farm-* 2>/dev/null"

echo "== --json is valid UTF-8 whatever bytes the directory's name holds"
jobs_file "$tmp/j2" 2 0
run farm --dir "$tmp/d"$'\xff\xfe' --strategy timeslice --gpus 0 --slots 2 --json "$tmp/j2"
check "non-UTF-8 --dir: exit 0" test "$rc" = 0
utf8_json() { python3 -c 'import json,sys; json.loads(sys.stdin.buffer.read().decode("utf-8"))' <"$1"; }
check "non-UTF-8 --dir: --json output is valid UTF-8 JSON" utf8_json "$tmp/out"
check "non-UTF-8 --dir: the name is repaired, not dropped" grep -q "d"$'\xef\xbf\xbd\xef\xbf\xbd' "$tmp/out"
check "non-UTF-8 --dir: every journal line is valid UTF-8 JSON" python3 -c "
import json, sys
for l in open(sys.argv[1], 'rb'): json.loads(l.decode('utf-8'))" "$tmp/d"$'\xff\xfe'/journal.jsonl
run farm status --json "$tmp/d"$'\xff\xfe'
check "non-UTF-8 --dir: farm status --json is valid UTF-8 JSON" utf8_json "$tmp/out"
no_jobs_left "non-UTF-8 --dir"

echo "== failing jobs and --retries"
# Job 5 is executable but no program (no "#!", not ELF): found in PATH,
# refused by exec itself, which the farm learns as the job's mirror ends.
printf 'not a program\n' >"$tmp/noexec"
chmod +x "$tmp/noexec"
printf '%s\n' "$tmp/job.sh 1 0 0" "$tmp/job.sh 2 0 3" "sh -c 'kill -9 \$\$'" "/nonexistent/program" "$tmp/noexec" >"$tmp/jf"
run farm --dir "$tmp/f3" --strategy timeslice --slots 2 --retries 2 "$tmp/jf"
check "exit 8 (some jobs failed)" test "$rc" = 8
check "the error names the failed count" grep -q "4 of the shard's 5 jobs failed" "$tmp/err"
check "journal: 3 attempts of each failing job, exit 3 and SIGKILL; the missing program and the non-program refused once" journal "$tmp/f3" '
by = lambda j: [r for r in recs if r["job"] == j]
assert [r["outcome"] for r in by(1)] == ["ok"]
assert [r["exit_code"] for r in by(2)] == [3, 3, 3] and [r["attempt"] for r in by(2)] == [1, 2, 3]
assert [r["signal"] for r in by(3)] == [9, 9, 9] and all(r["outcome"] == "failed" for r in by(3))
assert [r["outcome"] for r in by(4)] == ["refused"] and by(4)[0]["gpu"] is None
assert [r["outcome"] for r in by(5)] == ["refused"]'
check "the refused job's .err says why" grep -q "cannot execute job 4" "$tmp/f3/out/4.1.err"
check "  and no .out, as for a job that ran and wrote nothing" test ! -e "$tmp/f3/out/4.1.out"
check "  and the non-program's: exec's reason" grep -q "cannot execute job 5: .*Exec format error" "$tmp/f3/out/5.1.err"
check "summary: 1 done, 4 failed" grep -q "jobs: 1 done, 4 failed" "$tmp/out"

echo "== a job's output file is a symbolic link: never followed, the farm stops (exit 11)"
# Created by the job's mirror on its first byte, not by the farm: the farm
# learns it as the job ends, and fails as when it created the files itself.
mkdir -p "$tmp/flink/out"
echo keep >"$tmp/victim"
ln -s "$tmp/victim" "$tmp/flink/out/1.1.err"
printf '%s\n' "sh -c 'echo oops >&2'" /bin/true >"$tmp/jl"
run farm --dir "$tmp/flink" --strategy timeslice --slots 1 "$tmp/jl"
check "exit 11" test "$rc" = 11
check "  the error names the file and the reason" grep -q "cannot open '$tmp/flink/out/1.1.err': Too many levels of symbolic links" "$tmp/err"
check "  the link's target is untouched" test "$(cat "$tmp/victim")" = keep

echo "== output files are made on a job's first byte to each stream"
# A job that writes nothing makes no file: creating two files per job was
# most of the farm's cost on ext4 and xfs. Output is whole (3 MB through the
# pipe), and a background process that writes after its job ended is not
# waited for.
printf '%s\n' /bin/true "sh -c 'echo only-err >&2'" "sh -c 'head -c 3000000 /dev/zero'" \
	"sh -c 'printf x; exec >&-; sleep 0.3; echo late >&2'" \
	"sh -c '(sleep 0.5; echo after) & echo before'" >"$tmp/jlazy"
run farm --dir "$tmp/flazy" --strategy timeslice --slots 2 "$tmp/jlazy"
check "exit 0" test "$rc" = 0
check "  a job with no output leaves no file" bash -c "test ! -e '$tmp/flazy/out/1.1.out' && test ! -e '$tmp/flazy/out/1.1.err'"
check "  one that writes only stderr has only its .err" \
	bash -c "test ! -e '$tmp/flazy/out/2.1.out' && grep -qx only-err '$tmp/flazy/out/2.1.err'"
check "  3,000,000 bytes of stdout arrive whole" test "$(wc -c <"$tmp/flazy/out/3.1.out")" = 3000000
check "  a stream closed early, the other written later: both kept" \
	bash -c "test \"\$(cat '$tmp/flazy/out/4.1.out')\" = x && grep -qx late '$tmp/flazy/out/4.1.err'"
check "  the job ended with its shell, its background writer not waited for" \
	bash -c "grep -qx before '$tmp/flazy/out/5.1.out' && ! grep -q after '$tmp/flazy/out/5.1.out'"
no_jobs_left "lazy output files"
printf '%s\n' false "sh -c 'echo why >&2; exit 3'" >"$tmp/jlazyf"
run farm --dir "$tmp/flazyf" --strategy timeslice --slots 1 "$tmp/jlazyf"
run farm status --failed "$tmp/flazyf"
check "  farm status: a failed job with no stderr says so" grep -qE '^failed +1 .*\(no stderr\) +false$' "$tmp/out"
check "  and names the file of one that wrote some" grep -qE '^failed +2 .* out/2\.1\.err ' "$tmp/out"

echo "== a job that leaves a background process behind"
printf '%s\n' "sh -c '$tmp/job.sh 98 60 0 & exit 0'" >"$tmp/jbg"
run farm --dir "$tmp/fbg" --strategy timeslice --slots 1 "$tmp/jbg"
check "exit 0" test "$rc" = 0
no_jobs_left "background process"

echo "== hanging jobs and --timeout"
printf '%s\n' "$tmp/job.sh 1 60 0" "sh -c 'trap \"\" TERM; $tmp/job.sh 2 60 0'" "$tmp/job.sh 3 0 0" >"$tmp/jh"
start=$(date +%s)
run farm --dir "$tmp/f4" --strategy timeslice --slots 3 --timeout 2s "$tmp/jh"
took=$(($(date +%s) - start))
check "exit 8" test "$rc" = 8
check "ended long before the jobs would ($took s; bound 10 s x $TIME_FACTOR, under the jobs' 60 s)" \
	test "$took" -lt $((10 * TIME_FACTOR < 50 ? 10 * TIME_FACTOR : 50))
check "journal: two timeouts (SIGTERM; SIGKILL for the one ignoring it), one ok" journal "$tmp/f4" '
o = {r["job"]: r for r in recs}
assert o[1]["outcome"] == "timeout" and o[1]["signal"] == 15, o[1]
assert o[2]["outcome"] == "timeout" and o[2]["signal"] == 9, o[2]
assert o[3]["outcome"] == "ok"'
no_jobs_left "timeout"

echo "== --mem-per-job"
run farm --dir "$tmp/f5" --strategy timeslice --slots 2 --mem-per-job 100G "$tmp/j8"
check "more than any GPU has: exit 8" test "$rc" = 8
check "every job refused, never placed" journal "$tmp/f5" '
assert len(recs) == 8 and all(r["outcome"] == "refused" and r["gpu"] is None for r in recs)'
check "the .err file says why" grep -q "job 1 not started: .*more than the free memory" "$tmp/f5/out/1.1.err"
jobs_file "$tmp/j12" 12 0.3
run farm --dir "$tmp/f6" --strategy timeslice --slots 4 --mem-per-job 30G "$tmp/j12"
check "30G on 80G GPUs: exit 0" test "$rc" = 0
check "at most 2 jobs at once on each GPU" journal "$tmp/f6" '
for g in (0, 1):
    ev = sorted([(r["start_unix_s"], 1) for r in recs if r["gpu"] == g] + [(r["end_unix_s"], -1) for r in recs if r["gpu"] == g], key=lambda e: (e[0], e[1]))
    n = m = 0
    for _, d in ev:
        n += d; m = max(m, n)
    assert m == 2, (g, m)'
if [[ -x "$H/fake_mps_control" ]]; then
	run farm --dir "$tmp/f7" --strategy mps-split --slots 4 --mem-per-job 2G "$tmp/j8"
	check "mps-split: pinned-memory limit and 1/K of the SMs per job" \
		bash -c "grep -qx 'CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=2G' '$tmp/env/1.1' && grep -qx 'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25' '$tmp/env/1.1'"
fi

echo "== GPU selection"
rm -rf "$tmp/env"
FAKE_NVML_GPUS=3 run farm --dir "$tmp/g1" --strategy timeslice --slots 1 --gpus 0,2 "$tmp/j8"
check "--gpus 0,2: only those" journal "$tmp/g1" '
assert {r["gpu"] for r in recs} == {0, 2} and [g["index"] for g in hdr[0]["gpus"]] == [0, 2]'
FAKE_NVML_GPUS=3 CUDA_VISIBLE_DEVICES=$(uuid 1) run farm --dir "$tmp/g2" --strategy timeslice --slots 2 "$tmp/j8"
check "CUDA_VISIBLE_DEVICES by UUID: only GPU 1" journal "$tmp/g2" 'assert {r["gpu"] for r in recs} == {1}'
FAKE_NVML_GPUS=3 run farm --dir "$tmp/g3" --strategy timeslice --slots 1 --gpus all "$tmp/j8"
check "--gpus all: three GPUs" journal "$tmp/g3" 'assert {r["gpu"] for r in recs} == {0, 1, 2}'
run farm --dir "$tmp/g4" --strategy timeslice --gpus 7 "$tmp/j8"
check "--gpus 7 of 2: exit 7" test "$rc" = 7
run farm --dir "$tmp/g5" --strategy timeslice --gpus 0,0 "$tmp/j8"
check "--gpus 0,0: exit 2" test "$rc" = 2

echo "== templates"
printf 'a b\nc\n' >"$tmp/args"
run farm --dir "$tmp/t1" --strategy timeslice --slots 2 --no-shell --args "$tmp/args" -- sh -c 'echo "[$1] $2" >"$3"' x '{}' '{#}' "$tmp/t1-{#}"
check "--args: one job per line, {} and {#}" \
	bash -c "test \"\$(cat '$tmp/t1-1')\" = '[a b] 1' && test \"\$(cat '$tmp/t1-2')\" = '[c] 2'"
run farm --dir "$tmp/t2" --strategy timeslice --slots 4 --no-shell --range 3..12:3 -- sh -c 'echo "$0" >>'"$tmp/t2.out" '{}' 
check "--range 3..12:3" test "$(sort -n "$tmp/t2.out" | tr '\n' ' ')" = "3 6 9 12 "
echo "$tmp/job.sh 0 0 0" | "$GPUSHARE" farm --dir "$tmp/t3" --strategy timeslice --slots 1 - >/dev/null 2>&1
check "job file on stdin" grep -q '"outcome":"ok"' "$tmp/t3/journal.jsonl"

echo "== calibration of K"
jobs_file "$tmp/j40" 40 0.4
run farm --dir "$tmp/c1" --strategy timeslice --gpus 0 --max-slots 4 --json "$tmp/j40"
check "calibrated: K = 1, 2, 4 tried, sleeping jobs scale, 4 kept" python3 -c "
import json, math; r = json.load(open('$tmp/out'))['run']
assert r['calibrated'] and [c['slots'] for c in r['calibration']] == [1, 2, 4], r
assert r['slots'] == 4, r
assert all(c['jobs_per_second'] > 0 and math.isfinite(c['jobs_per_second']) for c in r['calibration']), r"
run farm --dir "$tmp/c2" --strategy timeslice --gpus 0 --max-slots 2 "$tmp/j8"
check "the text states the calibration" grep -q "slots\? per GPU by calibration (K=1: .* jobs/s over 2 ok jobs, K=2:" "$tmp/out"

echo "== farm status over shards"
jobs_file "$tmp/j9" 9 0
run farm --dir "$tmp/s0" --strategy timeslice --slots 2 --shard 0/2 "$tmp/j9"
check "shard 0/2: 5 jobs" grep -q "shard 0/2 (5 jobs)" "$tmp/out"
run farm status "$tmp/s0"
check "status of one shard: 5 done, 4 unfinished" grep -q "jobs: 5 done, 0 failed, 4 unfinished of 9" "$tmp/out"
run farm --dir "$tmp/s1" --strategy timeslice --slots 2 --shard 1/2 "$tmp/j9"
run farm status --json "$tmp/s0" "$tmp/s1"
check "two shards merged: 9 done, 2 shards seen" python3 -c "
import json; d = json.load(open('$tmp/out'))['summary']
assert d['done'] == 9 and d['unfinished'] == 0 and d['shards_seen'] == 2 and d['shards'] == 2, d"
run farm status "$tmp/s0" "$tmp/f1"
check "journals of different job lists refused: exit 2" test "$rc" = 2
run farm status "$tmp/nope"
check "status of a directory without journal: exit 11" test "$rc" = 11

echo "== live metrics"
port=$(free_port)
jobs_file "$tmp/jm" 4 1.5
"$GPUSHARE" farm --dir "$tmp/m1" --strategy timeslice --slots 2 --metrics-listen "127.0.0.1:$port" "$tmp/jm" \
	>/dev/null 2>&1 &
fpid=$!
wait_for 50 0.1 curl -sf "http://127.0.0.1:$port/metrics" -o "$tmp/metrics" || true
sleep 0.3
curl -sf "http://127.0.0.1:$port/metrics" -o "$tmp/metrics" || true
check "metrics: queued, running, per-GPU running" bash -c "
grep -q '^gpushare_farm_jobs_queued 0' '$tmp/metrics' &&
grep -q '^gpushare_farm_jobs_running 4' '$tmp/metrics' &&
grep -q '^gpushare_farm_gpu_jobs_running{gpu=\"1\",uuid=\"$(uuid 1)\"} 2' '$tmp/metrics'"
run farm status "$tmp/m1"
check "farm status of the running farm: 4 jobs running now" grep -q "m1: running now: 4 jobs, 0 queued, 2 slots per GPU (pid $fpid on" "$tmp/out"
wait "$fpid" || true
check "the live file is removed at the end" test ! -e "$tmp/m1/running.json"
run farm --dir "$tmp/m2" --strategy timeslice --metrics-listen "127.0.0.1:$port" --metrics-listen x "$tmp/j8"
check "a bad --metrics-listen: exit 2" test "$rc" = 2

echo "== bad input"
bad() { # bad CODE WHAT ARGS...
	local code=$1 what=$2
	shift 2
	run farm "$@"
	if [[ $rc -eq $code ]] && grep -q -- "$what" "$tmp/err"; then ok "exit $code: $what"; else
		fail "farm $*: exit $rc, wanted $code with '$what': $(cat "$tmp/err")"; fi
}
bad 2 "give --dir DIR" "$tmp/j8"
bad 2 "no jobs" --dir "$tmp/b1"
bad 6 "already holds a farm journal" --dir "$tmp/f1" "$tmp/j8"
bad 6 "cannot resume" --resume "$tmp/nothing-here" "$tmp/j8"
bad 2 "refusing to resume" --resume "$tmp/f1" --strategy timeslice "$tmp/j12"
bad 11 "/nonexistent" --dir "$tmp/b2" /nonexistent/jobs.txt
printf 'echo "unterminated\n' >"$tmp/jbad"
bad 2 "jbad:1: unterminated double quote" --dir "$tmp/b3" --no-shell "$tmp/jbad"
bad 2 "invalid --slots" --dir "$tmp/b4" --slots 0 "$tmp/j8"
bad 2 "invalid --slots" --dir "$tmp/b4" --slots 49 "$tmp/j8"
bad 2 "invalid --strategy" --dir "$tmp/b4" --strategy mig "$tmp/j8"
bad 2 "invalid --timeout" --dir "$tmp/b4" --timeout soon "$tmp/j8"
bad 2 "invalid --mem-per-job" --dir "$tmp/b4" --mem-per-job lots "$tmp/j8"
bad 2 "needs one of --args FILE or --range" --dir "$tmp/b4" -- echo {}
bad 2 "need a command" --dir "$tmp/b4" --range 1..3 "$tmp/j8"
bad 2 "once" --dir "$tmp/b4" --resume "$tmp/f1" "$tmp/j8"
bad 2 "shard" --dir "$tmp/b4" --shard 2/2 "$tmp/j8"
ln -s "$tmp/f1" "$tmp/link"
bad 6 "symbolic link" --dir "$tmp/link" "$tmp/j8"
FAKE_NVML_INIT_ERROR=9 run farm --dir "$tmp/b5" --strategy timeslice --mem-per-job 1G "$tmp/j8"
check "--mem-per-job without a driver: exit 3" test "$rc" = 3
GPUSHARE_MPS_CONTROL=/nonexistent/mps-control run farm --dir "$tmp/b6" "$tmp/j8"
check "mps without the control program: exit 4" test "$rc" = 4
no_jobs_left "bad input"

run farm --help
check "--help: exit 0, names --slots and --resume" bash -c "test $rc = 0 && grep -q -- '--slots K' '$tmp/out' && grep -q -- '--resume DIR' '$tmp/out'"
run farm status --help
check "farm status --help" test "$rc" = 0

finish "farm"
