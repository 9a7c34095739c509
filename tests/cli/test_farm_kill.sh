#!/usr/bin/env bash
# Nothing outlives a killed `gpushare farm`, and no job completes twice:
# five SIGKILLs of a farm (K=4, under the stand-in MPS) at different moments,
# each followed by a --resume. Within 2 s of each kill no job process (their
# background processes included: each job leaves a `sleep &` in its group)
# and no MPS daemon of the farm is left, nor its run directory; the keeper
# has recorded the jobs that finished before the kill, so that after each
# resume no job has run to completion twice (counted by the jobs' own side
# effects, not by the journal), and in the end every job exactly once.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/cli/lib_farm_env.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib_farm_env.sh"

: "${GPUSHARE:?}" "${GPUSHARE_TEST_HELPERS:?}"
tmp=$(mktemp -d /tmp/gpushare-farm-kill.XXXXXX)
fpid=
cleanup() {
	[[ -z "$fpid" ]] || kill -KILL "$fpid" 2>/dev/null || true
	pkill -KILL -f "$tmp/" 2>/dev/null || true
	for p in $(our_daemons); do kill -KILL "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
farm_env_fake 1

# Job i (numbered from 1, as the farm does): a background sleep in its process group, a short run, then its side
# effect (its index appended to $tmp/side) as its last act.
cp "$(command -v sleep)" "$tmp/bg-sleep"
cat >"$tmp/job" <<'EOF'
#!/bin/sh
"${0%/job}/bg-sleep" 60 &
sleep "$2"
echo "$1" >>"${0%/job}/side"
EOF
chmod +x "$tmp/bg-sleep" "$tmp/job"
N=60
for ((i = 1; i <= N; i++)); do echo "$tmp/job $i 0.$((3 + i % 5))"; done >"$tmp/jobs"
: >"$tmp/side"
left() { pgrep -f "$tmp/" >/dev/null || test -n "$(our_daemons)" || ls -d "$XDG_RUNTIME_DIR"/gpushare/farm-* >/dev/null 2>&1; }
nothing_left() { ! left; }
twice() { sort -n "$tmp/side" | uniq -d | tr '\n' ' '; }

echo "== jobs that finish while gpushare cannot record them (stopped, then killed)"
: >"$tmp/side"
# Each of these 4 jobs says it started, then waits for the gate to open
# (once gpushare is stopped): no race with a loaded machine's clock.
cat >"$tmp/gatejob" <<'EOF2'
#!/bin/sh
d=${0%/gatejob}
: >"$d/started.$1"
while [ ! -e "$d/gate" ]; do sleep 0.05; done
echo "$1" >>"$d/side"
EOF2
chmod +x "$tmp/gatejob"
for ((i = 1; i <= 4; i++)); do echo "$tmp/gatejob $i"; done >"$tmp/jobs4"
"$GPUSHARE" farm --dir "$tmp/g" --slots 4 -q "$tmp/jobs4" >"$tmp/g.out" 2>&1 &
fpid=$!
wait_for 600 0.05 bash -c "[ \"\$(ls '$tmp' | grep -c '^started\.')\" -ge 4 ]" || true
kill -STOP "$fpid"
: >"$tmp/gate"
wait_for 600 0.05 bash -c "[ \"\$(wc -l <'$tmp/side')\" -ge 4 ]" || true
sleep "$TIME_FACTOR" # the mirrors (not stopped) tell the keeper the jobs ended
kill -KILL "$fpid"
kill -CONT "$fpid" 2>/dev/null || true
wait "$fpid" 2>/dev/null || true
fpid=
wait_for 40 0.05 nothing_left || true
check "the 4 jobs finished while gpushare was stopped" test "$(wc -l <"$tmp/side")" = 4
check "the keeper recorded them as ok" python3 -c "
import json
recs = [r for r in map(json.loads, open('$tmp/g/journal.jsonl')) if r['type'] == 'attempt']
assert sorted(r['job'] for r in recs if r['outcome'] == 'ok') == [1, 2, 3, 4], recs"
run farm --resume "$tmp/g" --slots 4 -q
check "the resume runs nothing again: exit 0, no side effect twice" \
	bash -c "test $rc = 0 && test \"\$(wc -l <'$tmp/side')\" = 4 && grep -q 'this run: 0 attempts' '$tmp/out'"

echo "== five SIGKILLs, each followed by --resume"
: >"$tmp/side"
delays=(0.4 1.1 1.9 0.7 2.6)
# 2 s is the bound on a quiet machine. On a loaded one (shared CI runners,
# a busy development VM, CI's CPU-hog pass) two things slow down, each by
# about TIME_FACTOR (tests/cli/lib.sh): the stand-in daemon's start and stop
# that the keeper waits for (a kill during start-up), and the polling here
# (pgrep, /proc). So the bound is 2 s x TIME_FACTOR^2, and the time taken is
# printed.
bound=$((2 * TIME_FACTOR * TIME_FACTOR))
for round in 0 1 2 3 4; do
	if ((round == 0)); then
		"$GPUSHARE" farm --dir "$tmp/f" --slots 4 -q "$tmp/jobs" >"$tmp/f.out" 2>&1 &
	else
		"$GPUSHARE" farm --resume "$tmp/f" --slots 4 -q >"$tmp/f.out" 2>&1 &
	fi
	fpid=$!
	sleep "${delays[$round]}"
	running=$( (pgrep -f "$tmp/job [0-9]" || true) | wc -l)
	kill -KILL "$fpid" 2>/dev/null || true # a farm that already finished (a slow machine) is no failure of the test
	wait "$fpid" 2>/dev/null || true
	fpid=
	t0=$(date +%s.%N)
	wait_for 40 0.05 nothing_left || true
	t=$(python3 -c "print(f'{$(date +%s.%N) - $t0:.2f}')")
	check "kill $((round + 1)) (after ${delays[$round]} s, $running job processes): nothing left ($t s)" \
		nothing_left
	check "  within $bound s" python3 -c "import sys; sys.exit(0 if $t <= $bound else 1)"
	[[ -n "$(pgrep -af "$tmp/" || true)" ]] && echo "left: $(pgrep -af "$tmp/")"
	check "  no job ran to completion twice" test -z "$(twice)"
done
run farm --resume "$tmp/f" --slots 4 -q
check "the last resume ends the farm: exit 0" test "$rc" = 0
check "every job ran to completion exactly once (side effects)" \
	test "$(sort -n "$tmp/side" | tr '\n' ' ')" = "$(seq 1 "$N" | tr '\n' ' ')"
check "the journal has one ok attempt per job" python3 -c "
import collections, json
ok = collections.Counter(r['job'] for r in map(json.loads, open('$tmp/f/journal.jsonl')) if r['type'] == 'attempt' and r['outcome'] == 'ok')
assert sorted(ok) == list(range(1, $N + 1)) and set(ok.values()) == {1}, ok"
check "nothing left at the end" nothing_left

finish "farm kill"
