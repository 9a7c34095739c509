#!/usr/bin/env bash
# `gpushare farm status` lists the jobs that failed and those running now:
# number, attempts, last exit status or signal, stderr file, command (shell-
# quoted); `--failed` leaves out the running ones; `--json` has them as
# summary.job_list. The farm's own end summary lists its failed jobs too.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/cli/lib_farm_env.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib_farm_env.sh"

: "${GPUSHARE:?set by ctest}"
tmp=$(mktemp -d /tmp/gpushare-fstat-XXXXXX)
fpid=
trap '[[ -n "$fpid" ]] && kill -KILL "$fpid" 2>/dev/null; rm -rf "$tmp"' EXIT
farm_env_nodriver

{ # jobs 1 to 4 (numbered from 1)
	echo "sh -c 'echo bad >&2; exit 3'"
	echo "sh -c 'kill -9 \$\$'"
	echo "sh -c 'while [ ! -e $tmp/gate ]; do sleep 0.05; done'"
	echo "true"
} >"$tmp/jobs"
"$GPUSHARE" farm --dir "$tmp/f" --strategy timeslice --slots 4 --retries 1 -q "$tmp/jobs" >"$tmp/f.out" 2>"$tmp/f.err" &
fpid=$!
# The two failing jobs end (twice each); the gated one runs.
ended() { [[ $(grep -c '"type":"attempt"' "$tmp/f/journal.jsonl" 2>/dev/null || echo 0) -ge 5 && -s "$tmp/f/running.json" ]]; }
wait_for 200 0.05 ended || true
sleep 1.2 # running.json is rewritten about once a second

run farm status "$tmp/f"
check "status while running: exit 0 (got $rc)" test "$rc" -eq 0
check "  lists job 1: failed, 2 attempts, exit 3, its stderr, its command" \
	grep -Eq "^failed +1 +2  failed  exit 3 +out/1.2.err +sh -c 'echo bad >&2; exit 3'$" "$tmp/out"
check "  lists job 2: failed by signal 9, no stderr written" grep -Eq "^failed +2 +2  failed  sig 9 +\(no stderr\) " "$tmp/out"
check "  lists job 3: running, attempt 1" grep -Eq "^running +3 +1  running +out/3.1.err +sh -c " "$tmp/out"
check "  not the job that was ok" bash -c "! grep -Eq '^[a-z]+ +4 ' '$tmp/out'"
run farm status --failed "$tmp/f"
check "--failed: the failed jobs, not the running one" \
	bash -c "grep -Eq '^failed +1 ' '$tmp/out' && ! grep -q '^running' '$tmp/out'"
run farm status --json "$tmp/f"
check "--json: summary.job_list with state, attempts, exit_code, signal, stderr, command" python3 - "$tmp/out" <<'PY'
import json, sys
jl = {j["job"]: j for j in json.load(open(sys.argv[1]))["summary"]["job_list"]}
assert jl[1]["state"] == "failed" and jl[1]["attempts"] == 2 and jl[1]["exit_code"] == 3 and jl[1]["signal"] is None, jl
assert jl[1]["stderr"] == "out/1.2.err" and jl[1]["command"] == "sh -c 'echo bad >&2; exit 3'", jl[1]
assert jl[2]["signal"] == 9 and jl[2]["exit_code"] is None, jl[2]
assert jl[3]["state"] == "running", jl[3]
assert 4 not in jl and 0 not in jl
PY
touch "$tmp/gate"
set +e
wait "$fpid"
rc=$?
set -e
fpid=
check "the farm: exit 8 (got $rc)" test "$rc" -eq 8
check "the farm's summary lists its failed jobs" grep -Eq "^failed +1 +2 " "$tmp/f.out"
check "the stderr file named is there" grep -q bad "$tmp/f/out/1.2.err"

finish "farm status jobs"
