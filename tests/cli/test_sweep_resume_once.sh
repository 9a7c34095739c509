#!/usr/bin/env bash
# A sweep interrupted by SIGINT records the run the signal cut at most once
# per (cell, repeat), whatever the moment: an mps,mps-split grid of your own
# command (the C test worker behind a gate), each run's workers held at the
# gate until the test has signalled the sweep, at the first, a middle and
# the last run of a round; then --resume completes the grid with one record
# per (cell, repeat). The moment is an event the test waits for (a worker
# at the gate), never a sleep.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?}" "${GPUSHARE_WORKER:?}"
HELPERS=${GPUSHARE_TEST_HELPERS:?}

tmp=$(mktemp -d /tmp/gpushare-sweep-once.XXXXXX)
pid=
cleanup() {
	[[ -n $pid ]] && kill -KILL "$pid" 2>/dev/null
	rm -f "$tmp/gate/hold"
	fake_mps_quit_left
	rm -rf "$tmp"
}
trap cleanup EXIT

private_xdg
export CUDA_MPS_PIPE_DIRECTORY=$tmp/no-daemon
export GPUSHARE_MPS_CONTROL=$HELPERS/fake_mps_control
mkdir "$tmp/gate"
# The command: while the gate is held it says so (a file per process) and
# waits for the gate to open; then it is the test worker.
cat >"$tmp/gated" <<EOF
#!/bin/sh
if [ -e '$tmp/gate/hold' ]; then
	: >'$tmp/gate/at.'\$\$
	while [ -e '$tmp/gate/hold' ]; do sleep 0.02; done
fi
exec '$HELPERS/test_worker' "\$@"
EOF
chmod +x "$tmp/gated"

GRID=(sweep --strategy mps,mps-split --workers 1,2 --repeats 2 --duration $((150 * TIME_FACTOR))ms --warmup 20ms
	--start-timeout 120s -q --no-report)
CMD=(-- "$tmp/gated" --request-us 300)

lines() { if [[ -f $1 ]]; then wc -l <"$1"; else echo 0; fi; }
held() { compgen -G "$tmp/gate/at.*" >/dev/null; }
have_lines() { [[ $(lines "$1") -ge $2 ]]; }

# pairs FILE: "PAIRS OK MAXOK OTHER" over the results file: the pairs, the
# ok records, the most ok records of one pair, and the records neither ok
# nor failed. A failed run (a loaded machine starved its window) is run again
# by --resume, docs/sweep.md: its failed record is not a second outcome.
pairs() {
	python3 - "$1" <<'PY'
import json, sys, collections
c = collections.Counter(); seen = set(); other = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    k = (r["cell"]["key"], r["repeat"])
    seen.add(k)
    if r["status"] == "ok":
        c[k] += 1
    elif r["status"] != "failed":
        other += 1
print(len(seen), sum(c.values()), max(c.values()) if c else 0, other)
PY
}

# cut_at K: let K runs be recorded, hold the next run's workers at the gate,
# SIGINT the sweep while they wait, open the gate; the cut run leaves no
# record. Then --resume (once more where a loaded machine starved a run:
# a failed run is run again, docs/sweep.md) completes the grid, each
# (cell, repeat) once.
cut_at() {
	local k=$1 out=$tmp/o$1 before after mrc
	rm -f "$tmp"/gate/at.*
	[[ $k -eq 0 ]] && : >"$tmp/gate/hold"
	"$GPUSHARE" "${GRID[@]}" --out "$out" "${CMD[@]}" >"$tmp/s.out" 2>"$tmp/s.err" &
	pid=$!
	if [[ $k -gt 0 ]]; then
		wait_for 600 0.05 have_lines "$out/results.jsonl" "$k" || true
		: >"$tmp/gate/hold"
	fi
	wait_for 600 0.05 held || true
	wait_for 200 0.05 catches "$pid" INT || true
	before=$(lines "$out/results.jsonl")
	kill -INT "$pid" 2>/dev/null || true
	set +e
	wait "$pid"
	mrc=$?
	set -e
	pid=
	rm -f "$tmp/gate/hold"
	after=$(lines "$out/results.jsonl")
	check "cut after $k runs: a worker was held at the gate" held
	check "  SIGINT: exit 130 (exit $mrc: $(head -c 300 "$tmp/s.err"))" test "$mrc" = 130
	check "  the cut run left no record ($before lines before the signal, $after after)" test "$before" = "$after"
	run "${GRID[@]}" --out "$out" --resume "${CMD[@]}"
	if [[ $rc -eq 10 ]]; then
		echo "note: a run failed on this machine; --resume runs it again"
		run "${GRID[@]}" --out "$out" --resume "${CMD[@]}"
	fi
	check "  --resume: exit 0 ($(head -c 300 "$tmp/err"))" test "$rc" = 0
	read -r np nok maxok other < <(pairs "$out/results.jsonl")
	check "  8 (cell, repeat) pairs, each recorded once ($np pairs, $nok ok, at most $maxok a pair, $other partial)" \
		test "$np $nok $maxok $other" = "8 8 1 0"
}

echo "== SIGINT while a run's workers wait at the gate: that run is never recorded; --resume records each pair once"
cut_at 0   # the first run
cut_at 2   # a middle run of the first round (mps-split, 1 worker)
cut_at 3   # the last run of the first round
cut_at 4   # the first run of the second round

finish "a sweep's interrupted run recorded at most once"
