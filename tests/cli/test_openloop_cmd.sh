#!/usr/bin/env bash
# End-to-end tests of protocol version 2 (docs/protocol.md) with commands as
# workers: a version-2 C worker (tests/helpers/test_worker --v2) and Python
# worker (tests/helpers/py_worker_v2.py) under open-loop load, the same C
# worker under closed loop, a version-1 worker refused under open loop and
# still served under closed loop, and a worker that answers the wrong id.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?}" "${GPUSHARE_TEST_HELPERS:?}" "${GPUSHARE_SOURCE_DIR:?}"
TW="$GPUSHARE_TEST_HELPERS/test_worker"
PYW="$GPUSHARE_SOURCE_DIR/tests/helpers/py_worker_v2.py"

tmp=$(mktemp -d /tmp/gpushare-openloop-cmd-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export CUDA_MPS_PIPE_DIRECTORY="$tmp/no-daemon"
# A private name for the worker, so pgrep finds only this test's commands.
ln -s "$TW" "$tmp/tw"

no_commands_left() {
	local i
	for i in 1 2 3 4 5 6 7 8 9 10; do
		pgrep -f "$tmp/tw" >/dev/null || { ok "$1: no command left"; return 0; }
		sleep 0.2
	done
	fail "$1: commands left: $(pgrep -af "$tmp/tw" || true)"
}

jq_py() { # jq_py FILE EXPR: python over d (the document) and r (its first result)
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1])); r = d["results"][0]
ok = eval(sys.argv[2])
if not ok: print("  failed:", sys.argv[2], json.dumps(r.get("open_loop")), r["aggregate"]["requests"], r.get("failure"))
sys.exit(0 if ok else 1)' "$1" "$2"
}

OPEN=(bench --strategy timeslice --workers 2 --load open --rate 300 --arrival uniform --duration 2s --warmup 300ms -q --json)

echo "== a version-2 C worker under open loop"
# A test machine that freezes every process for a fraction of a second
# (other suites run beside this one) upsets the rate check: a run whose own
# dispatcher was held up that long (hand-over p99.9 over 100 ms) is measured
# once more.
frozen() { python3 -c 'import json,sys
o = json.load(open(sys.argv[1]))["results"][0]["open_loop"]
sys.exit(0 if o["lateness"]["p999_seconds"] > 0.1 else 1)' "$1"; }
for try in 1 2 3; do
	run "${OPEN[@]}" -- "$tmp/tw" --v2 --request-us 1000
	cp "$tmp/out" "$tmp/c2.json"
	[[ $rc -eq 0 ]] && frozen "$tmp/c2.json" || break
	echo "note: the machine froze the run (try $try); once more"
done
[[ $rc -eq 0 ]] && ok "exit 0" || fail "exit $rc: $(cat "$tmp/err")"
check "every arrival of the window served and recorded" jq_py "$tmp/c2.json" \
	'r["open_loop"]["offered"] == r["aggregate"]["requests"] and r["open_loop"]["unfinished"] == 0 and r["open_loop"]["offered"] >= 590'
check "achieved within 1% of offered" jq_py "$tmp/c2.json" \
	'abs(r["open_loop"]["achieved_per_second"] - r["open_loop"]["offered_per_second"]) <= 0.01 * r["open_loop"]["offered_per_second"]'
check "service ~1 ms (under 10 ms times the load), latency from the scheduled arrival" jq_py "$tmp/c2.json" \
	'0.001 <= r["open_loop"]["service"]["p50_seconds"] < 0.01 * '"$TIME_FACTOR"' and r["aggregate"]["p50_seconds"] >= r["open_loop"]["service"]["p50_seconds"]'
no_commands_left "v2 open"

echo "== the same worker under closed loop: gpushare hands requests back to back"
run bench --strategy timeslice --workers 2 --duration 1s --warmup 200ms -q --json -- "$tmp/tw" --v2 --request-us 1000
cp "$tmp/out" "$tmp/c2closed.json"
[[ $rc -eq 0 ]] && ok "closed: exit 0" || fail "closed: exit $rc: $(cat "$tmp/err")"
check "closed: both workers ran requests" jq_py "$tmp/c2closed.json" \
	'all(w["requests"] > 0 for w in r["workers"]) and r["open_loop"] is None'
no_commands_left "v2 closed"

echo "== a version-2 Python worker under open loop"
run "${OPEN[@]}" -- python3 "$PYW" --request-ms 1
cp "$tmp/out" "$tmp/py2.json"
[[ $rc -eq 0 ]] && ok "python: exit 0" || fail "python: exit $rc: $(cat "$tmp/err")"
check "python: every arrival served" jq_py "$tmp/py2.json" \
	'r["open_loop"]["offered"] == r["aggregate"]["requests"] and r["open_loop"]["offered"] >= 590'

echo "== a version-1 worker: refused under open loop, served under closed loop"
run "${OPEN[@]}" -- "$tmp/tw" --request-us 1000
[[ $rc -eq 8 ]] && grep -q "protocol version 1, and --load open" "$tmp/err" \
	&& ok "v1 under open loop: exit 8, says it needs version 2" || fail "v1 open: exit $rc: $(cat "$tmp/err")"
no_commands_left "v1 open"
run bench --strategy timeslice --workers 2 --duration 500ms --warmup 100ms -q --json -- "$tmp/tw" --request-us 1000
cp "$tmp/out" "$tmp/c1.json"
[[ $rc -eq 0 ]] && check "v1 closed loop unchanged" jq_py "$tmp/c1.json" 'all(w["requests"] > 0 for w in r["workers"])' \
	|| fail "v1 closed: exit $rc: $(cat "$tmp/err")"

echo "== a version-2 worker that answers the wrong id"
run "${OPEN[@]}" -- "$tmp/tw" --v2 --bad-done --only-worker 1
[[ $rc -eq 10 ]] && grep -q "'done [0-9]*' for a request it does not have" "$tmp/err" \
	&& ok "wrong id: exit 10 (partial), named" || fail "wrong id: exit $rc: $(cat "$tmp/err")"
no_commands_left "wrong id"

finish "protocol version 2"
