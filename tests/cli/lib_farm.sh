# Helpers of the farm tests (sourced after lib.sh, with $tmp set): a job that
# leaves a side effect, job files of it, and the exactly-once check.
# shellcheck shell=bash

# $tmp/job.sh INDEX SLEEP SIDE [GATE]: waits for the file GATE when given,
# sleeps, then appends INDEX to SIDE (its side effect). A farm killed while
# its running jobs wait at a gate has recorded exactly the jobs that ended:
# none can be in the instant between its end and its record.
cat >"$tmp/job.sh" <<'JOB'
#!/bin/sh
if [ -n "$4" ]; then while [ ! -e "$4" ]; do sleep 0.05; done; fi
sleep "$2"
echo "$1" >>"$3"
JOB
chmod +x "$tmp/job.sh"

# jobs_file FILE N SLEEP SIDE [GATE FROM]: N jobs, job i (numbered from 1, as
# the farm numbers them) with INDEX i; those from number FROM on wait for GATE.
jobs_file() {
	local i
	: >"$1"
	for ((i = 1; i <= $2; i++)); do
		if [[ -n "${5:-}" ]] && ((i >= ${6:-0})); then
			echo "$tmp/job.sh $i $3 $4 $5" >>"$1"
		else
			echo "$tmp/job.sh $i $3 $4" >>"$1"
		fi
	done
}
attempts() { grep -c '"type":"attempt"' "$1/journal.jsonl" 2>/dev/null || true; }
no_jobs() { ! pgrep -f "$tmp/job.sh" >/dev/null; }
running_jobs() { [ "$(pgrep -f "$tmp/job.sh" | wc -l)" -ge "$1" ]; } # running_jobs N: at least N jobs run

# exactly_once DIR SIDE N: the journal has one ok attempt per job 1..N and
# the side file each index (the job's number) once.
exactly_once() {
	python3 - "$1/journal.jsonl" "$2" "$3" <<'PY'
import collections, json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
n = int(sys.argv[3])
ok = collections.Counter(r["job"] for r in recs if r["type"] == "attempt" and r["outcome"] == "ok")
assert sorted(ok) == list(range(1, n + 1)) and set(ok.values()) == {1}, ok
side = collections.Counter(int(l) for l in open(sys.argv[2]))
assert sorted(side) == list(range(1, n + 1)) and set(side.values()) == {1}, side
PY
}
