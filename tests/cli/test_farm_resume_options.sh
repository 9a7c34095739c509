#!/usr/bin/env bash
# `gpushare farm --resume DIR` continues with the first run's options: the
# strategy, slots, retries, timeout, memory admission and GPUs recorded in the
# journal's first header are used when not given again, and an option given
# again that differs is refused (exit 2, naming it) before anything runs. The
# farm's own hint after a stop, "continue with: gpushare farm --resume DIR",
# works as printed.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/cli/lib_farm_env.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib_farm_env.sh"

: "${GPUSHARE:?}" "${GPUSHARE_TEST_HELPERS:?}"
tmp=$(mktemp -d /tmp/gpushare-farm-resopt.XXXXXX)
fpid=
trap '[[ -n "$fpid" ]] && kill -KILL "$fpid" 2>/dev/null; pkill -KILL -f "$tmp/job.sh" 2>/dev/null || true; rm -rf "$tmp"' EXIT
farm_env_fake 2

# shellcheck source=tests/cli/lib_farm.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib_farm.sh"

# A first run with options of its own, stopped (SIGTERM) while two jobs wait at a gate.
jobs_file "$tmp/jobs" 8 0 "$tmp/side" "$tmp/gate" 0
"$GPUSHARE" farm --dir "$tmp/f" --strategy timeslice --slots 2 --retries 1 --timeout 1h --gpus 1 -q \
	"$tmp/jobs" >"$tmp/first.out" 2>"$tmp/first.err" &
fpid=$!
wait_for 400 0.05 running_jobs 2 || true
kill -TERM "$fpid"
set +e
wait "$fpid"
rc=$?
set -e
fpid=
check "first run stopped: exit 130 (got $rc)" test "$rc" -eq 130
hint=$(grep -o 'continue with: gpushare farm --resume .*' "$tmp/first.out" || true)
check "the stop prints the command that continues ('$hint')" test -n "$hint"

# Options given again that differ: refused, naming the option, nothing appended.
headers() { grep -c '"type":"header"' "$tmp/f/journal.jsonl"; }
n0=$(headers)
for bad in "--strategy mps" "--slots 3" "--timeout 2h" "--gpus 0"; do
	# shellcheck disable=SC2086 # two words
	run farm --resume "$tmp/f" $bad -q
	check "resume with $bad: exit 2 (got $rc)" test "$rc" -eq 2
	check "resume with $bad: names ${bad%% *} and what the first run had" grep -q -- "ran with ${bad%% *} " "$tmp/err"
done
check "refused resumes append nothing to the journal" test "$(headers)" -eq "$n0"

# The same options given again are accepted; none given: the first run's.
# (--retries may change: each run's header records its own.)
touch "$tmp/gate"
cmd=${hint#continue with: gpushare }
# shellcheck disable=SC2086 # the hint's words
run $cmd -q
check "the hint's command resumes the farm: exit 0 (got $rc; $(cat "$tmp/err"))" test "$rc" -eq 0
check "every job ran exactly once" exactly_once "$tmp/f" "$tmp/side" 8
check "the resumed run used the first run's options (timeslice, 2 slots, 1 retry, 1 h, GPU 1)" python3 - "$tmp/f/journal.jsonl" <<'PY'
import json, sys
hs = [r for r in map(json.loads, open(sys.argv[1])) if r["type"] == "header"]
assert len(hs) == 2, hs
h = hs[-1]
assert h["strategy"] == "timeslice" and h["slots"] == 2 and h["retries"] == 1, h
assert h["timeout_seconds"] == 3600 and [g["index"] for g in h["gpus"]] == [1], h
att = [r for r in map(json.loads, open(sys.argv[1])) if r["type"] == "attempt"]
assert all(a["gpu"] == 1 for a in att if a["gpu"] is not None), att
PY
run farm --resume "$tmp/f" --strategy timeslice --slots 2 --retries 1 --timeout 60m --gpus 1 -q
check "resume with the same options given again: accepted (exit 0, got $rc; $(cat "$tmp/err"))" test "$rc" -eq 0

finish "farm resume options"
