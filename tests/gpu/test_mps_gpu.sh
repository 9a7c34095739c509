#!/usr/bin/env bash
# GPU test (label gpu): the MPS round trip on a real GPU.
# Starts a daemon in a private pipe dir, attaches a real CUDA client, sees it in
# `mps status` and `info`, applies a thread percentage and a pinned memory limit
# and checks that new clients see fewer SMs and less free memory, then stops
# everything and asserts nothing is left running.
set -euo pipefail
# Live (non-zombie) processes whose program matches $1; a container's init may
# leave exited daemons as zombies, which are not running.
left_running() { ps -eo pid=,stat=,args= | awk '$2 !~ /^Z/' | grep -E "^ *[0-9]+ +[^ ]+ +[^ ]*($1)"; }
G=${GPUSHARE:?} H=${GPUSHARE_TEST_HELPERS:?}
D=$(mktemp -d /tmp/gsgpu.XXXXXX)
P=$D/pipe L=$D/log
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	"$G" mps stop --pipe-dir "$P" --log-dir "$L" --force --timeout 20s >/dev/null 2>&1 || true
	rm -rf "$D"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$L/control.log" ] && tail -5 "$L/control.log"; exit 1; }
ok() { echo "ok: $*"; }
# field EXPR: evaluate EXPR over the JSON document on standard input, bound to d.
field() { python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); v=eval(sys.argv[1]); print(v if v is not None else "null")' "$1"; }
client() { CUDA_MPS_PIPE_DIRECTORY=$P CUDA_MPS_LOG_DIRECTORY=$L "$H/mps_client" "$@"; }

# Baseline: a plain context (its pipe dir names no daemon).
base=$(CUDA_MPS_PIPE_DIRECTORY=$D/none "$H/mps_client")
full_sm=$(echo "$base" | field 'd["sm_count"]')
total=$(echo "$base" | field 'd["mem_total_bytes"]')
[ "$full_sm" -gt 0 ] || fail "baseline sm_count $full_sm"
ok "plain context: $full_sm SMs, $total bytes"

"$G" mps start --pipe-dir "$P" --log-dir "$L" || fail "mps start"
"$G" mps start --pipe-dir "$P" --log-dir "$L" | grep -q "already running" || fail "second start not idempotent"
st=$("$G" mps status --pipe-dir "$P" --log-dir "$L" --json)
[ "$(echo "$st" | tr -d '\n' | field 'd["running"]')" = True ] || fail "status not running"
[ "$(echo "$st" | tr -d '\n' | field 'd["servers"].__len__()')" = 0 ] || fail "servers before first client"
ok "daemon answers; no server before the first client"

# A client that holds its context.
client --hold 60 >"$D/c1.json" &
pids+=($!)
for _ in $(seq 100); do [ -s "$D/c1.json" ] && break; sleep 0.1; done
[ -s "$D/c1.json" ] || fail "holding client did not start"
c1pid=$(head -1 "$D/c1.json" | field 'd["pid"]')
st=$("$G" mps status --pipe-dir "$P" --log-dir "$L" --json | tr -d '\n')
server=$(echo "$st" | field 'd["servers"][0]["pid"]')
echo "$st" | field '[c["pid"] for s in d["servers"] for c in s["clients"]]' | grep -qw "$c1pid" || fail "client $c1pid not in status: $st"
echo "$st" | field '[c["command"] for s in d["servers"] for c in s["clients"]]' | grep -q mps_client || fail "client command missing"
ok "status shows server $server with client $c1pid (mps_client)"
"$G" mps status --pipe-dir "$P" --log-dir "$L" --log 5

info=$(CUDA_MPS_PIPE_DIRECTORY=$P "$G" info --json | tr -d '\n')
echo "$info" | field '[p["kind"] for g in d["gpus"] for p in g["processes"] if p["pid"]=='"$c1pid"']' | grep -q mps-client \
	|| fail "info does not show $c1pid as an MPS client"
echo "$info" | field '[p["kind"] for g in d["gpus"] for p in g["processes"]]' | grep -q mps-server || fail "info shows no MPS server"
ok "info classifies the MPS server and client"

# Thread percentage on the running server: new clients get fewer SMs.
"$G" mps set --pipe-dir "$P" --log-dir "$L" --server "$server" --thread-percentage 30 || fail "mps set thread percentage"
c2=$(client)
sm30=$(echo "$c2" | field 'd["sm_count"]')
[ "$sm30" -lt "$full_sm" ] || fail "30% thread percentage: sm_count $sm30 not below $full_sm"
ok "30% active threads: $sm30 of $full_sm SMs"

# Pinned memory limit on the running server: free memory reflects it.
"$G" mps set --pipe-dir "$P" --log-dir "$L" --server "$server" --mem-limit 2G || fail "mps set mem limit"
c3=$(client --alloc 3G)
free3=$(echo "$c3" | field 'd["mem_free_bytes"]')
[ "$free3" -le $((2 * 1024 * 1024 * 1024)) ] || fail "2G limit: free $free3"
[ "$(echo "$c3" | field 'd["alloc_ok"]')" = False ] || fail "3G allocation succeeded under a 2G limit"
ok "2G pinned limit: free $free3 bytes, 3G allocation refused"

# Stop while a client is attached: without --force it is reported and the
# daemon is left running and answering.
if "$G" mps stop --pipe-dir "$P" --log-dir "$L" --timeout 5s 2>"$D/stop.err"; then
	fail "stop succeeded with client $c1pid attached"
fi
grep -q "attached" "$D/stop.err" || fail "stop without --force: $(cat "$D/stop.err")"
"$G" mps status --pipe-dir "$P" --log-dir "$L" >/dev/null || fail "daemon no longer answers after a refused stop"
ok "stop without --force reports the attached client and leaves the daemon: $(cat "$D/stop.err")"
"$G" mps stop --pipe-dir "$P" --log-dir "$L" --force --timeout 20s || fail "mps stop --force"
wait "${pids[0]}" 2>/dev/null || true
pids=()

# Defaults at start: a fresh daemon with limits; its first server takes them.
"$G" mps start --pipe-dir "$P" --log-dir "$L" --thread-percentage 50 --mem-limit 4G || fail "start with limits"
c4=$(client)
sm50=$(echo "$c4" | field 'd["sm_count"]')
free4=$(echo "$c4" | field 'd["mem_free_bytes"]')
[ "$sm50" -lt "$full_sm" ] && [ "$sm50" -gt "$sm30" ] || fail "50% default: sm_count $sm50 (30%: $sm30, full $full_sm)"
[ "$free4" -le $((4 * 1024 * 1024 * 1024)) ] || fail "4G default: free $free4"
ok "start --thread-percentage 50 --mem-limit 4G: $sm50 SMs, free $free4 bytes"
"$G" mps stop --pipe-dir "$P" --log-dir "$L" --force --timeout 20s || fail "final stop"

sleep 0.5
if left_running 'nvidia-cuda-mps|mps_client'; then
	fail "processes left running"
fi
ok "no daemon, server or client left running"
echo "1 passed, 0 failed"
