#!/usr/bin/env bash
# End-to-end test of `gpushare mps start|stop|status|set` without a GPU: the
# stand-in control program of tests/helpers (fake_mps_control, named by
# GPUSHARE_MPS_CONTROL) plays nvidia-cuda-mps-control and its daemon, and the
# fake NVML plays the driver (GPU 1 is in Exclusive_Process mode, so
# `--gpus 1` starts without the Default-mode warning). Everything lives in a
# private temporary directory; the trap stops every daemon started here.
#
# Besides the normal life cycle (start, idempotent start, status in text and
# JSON, set, stop, attached clients, stale state), every bad input is checked
# for its exact exit status (docs/cli.md) and for exactly one line on stderr
# that names what was wrong, with nothing on stdout and no daemon started.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?set by ctest}" "${GPUSHARE_TEST_HELPERS:?set by ctest}"
H=$GPUSHARE_TEST_HELPERS
FAKE=$H/fake_mps_control
PIDFILE=nvidia-cuda-mps-control.pid
[[ -x $FAKE && -f $H/libfakenvml.so ]] || { echo "FAIL: no fake_mps_control or libfakenvml.so in $H"; exit 1; }

tmp=$(mktemp -d /tmp/gpushare-mps-XXXXXX)
pipes=()   # every pipe directory a daemon may have been started in
pids=()    # processes started here (stand-in MPS clients)

# Stop what is left: clients first (the control program's quit waits for
# them), then each daemon through its control program, then by pid if it is
# still there and really is the stand-in daemon.
cleanup() {
	local d pid
	kill_pids
	for d in "${pipes[@]}"; do
		[[ -f $d/$PIDFILE ]] || continue
		pid=$(cat "$d/$PIDFILE" 2>/dev/null || true)
		echo quit | CUDA_MPS_PIPE_DIRECTORY=$d timeout 5 "$FAKE" >/dev/null 2>&1 || true
		for _ in $(seq 50); do
			if [[ -z $pid ]] || ! kill -0 "$pid" 2>/dev/null; then break; fi
			sleep 0.1
		done
		if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null && grep -q '^fake_mps_contr' "/proc/$pid/comm" 2>/dev/null; then
			echo "cleanup: daemon $pid did not quit; killing it"
			kill -9 "$pid" 2>/dev/null || true
		fi
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

# bad <status> <text the message must contain> <gpushare args...>: the exit
# status, exactly one line on stderr that contains the text, nothing on
# stdout, and no daemon in the default pipe directory.
bad() {
	local want=$1 text=$2
	shift 2
	run "$@"
	local lines
	lines=$(wc -l <"$tmp/err")
	if [[ $rc -eq $want && $lines -eq 1 && ! -s $tmp/out ]] && grep -qF -- "$text" "$tmp/err" \
		&& grep -q '^gpushare: ' "$tmp/err" && ! daemon_running "$PIPE"; then
		ok "$* -> exit $want: $(cat "$tmp/err")"
	else
		fail "$* -> want exit $want and one line with '$text'; got exit $rc, $lines line(s) on stderr:"
		sed 's/^/    stderr: /' "$tmp/err"
		sed 's/^/    stdout: /' "$tmp/out" | head -5
	fi
}

# json <python expression over d>: evaluate against the JSON in $tmp/out.
json() {
	python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' \
		"$tmp/out" "$1"
}

# alive <pid>: running (a zombie nobody reaped yet counts as gone, as for gpushare).
alive() {
	local state
	kill -0 "$1" 2>/dev/null || return 1
	state=$(sed 's/.*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null) || return 1
	[[ $state != Z && $state != X ]]
}
gone() { ! alive "$1"; }
# daemon_running <pipe dir>: its pid file names a live process.
daemon_running() {
	[[ -f $1/$PIDFILE ]] && alive "$(cat "$1/$PIDFILE")"
}

# Keep the environment of the machine running the test out of the way.
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY CUDA_VISIBLE_DEVICES FAKE_NVML_NOT_SUPPORTED \
	FAKE_NVML_INIT_ERROR FAKE_MPS_START_FAIL FAKE_MPS_READY_DELAY_MS FAKE_MPS_IGNORE_SET FAKE_MPS_NO_QUIT
private_xdg
export GPUSHARE_MPS_CONTROL=$FAKE
export GPUSHARE_NVML_LIBRARY=$H/libfakenvml.so
PIPE=$tmp/xdg/gpushare/mps/pipe   # gpushare's private default
LOG=$tmp/xdg/gpushare/mps/log
pipes+=("$PIPE")

echo "== no daemon yet"
bad 5 "no MPS control daemon at '$PIPE'" mps status
run mps status --json
check "status --json without a daemon: exit 5, state absent, running false" \
	test "$rc" -eq 5 -a ! -s "$tmp/err"
check "status --json without a daemon: the document says so" json 'd["state"] == "absent" and d["running"] is False and d["pipe_dir"] == "'"$PIPE"'"'
bad 5 "no MPS control daemon" mps set --thread-percentage 30
run mps stop
check "stop without a daemon: exit 0, says there is none (got $rc)" \
	test "$rc" -eq 0 -a -n "$(grep -F "no MPS control daemon running at $PIPE" "$tmp/out")"

echo "== compute mode Prohibited: refused, nothing started"
export FAKE_NVML_PROHIBITED=GPU-8e4a3c1d-1f2b-4c5d-9e6f-0a1b2c3d4e5f
bad 7 "GPU 0 is in compute mode Prohibited" mps start --gpus 0
bad 7 "compute mode Prohibited" mps start
unset FAKE_NVML_PROHIBITED

echo "== start"
run mps start --gpus 1
check "start: exit 0 (got $rc: $(cat "$tmp/err"))" test "$rc" -eq 0
check "start: nothing on stderr (GPU 1 is Exclusive_Process)" test ! -s "$tmp/err"
check "start: says it started, with the pipe dir clients need" \
	grep -qF "clients need: export CUDA_MPS_PIPE_DIRECTORY=$PIPE" "$tmp/out"
pid=$(sed -n 's/^MPS control daemon started: pid \([0-9]*\)$/\1/p' "$tmp/out")
check "start: the printed pid ($pid) is the pid file's and is running" \
	test -n "$pid" -a "$pid" = "$(cat "$PIPE/$PIDFILE" 2>/dev/null)"
check "start: daemon ${pid:-?} is running" alive "${pid:-0}"
check "start: the private pipe and log directories are mode 700" \
	test "$(stat -c %a "$PIPE")" = 700 -a "$(stat -c %a "$LOG")" = 700
run mps start --gpus 1
check "second start: exit 0, 'already running', same pid (got $rc)" \
	test "$rc" -eq 0 -a -n "$(grep -F "MPS control daemon already running: pid $pid" "$tmp/out")"
run mps start --gpus 1 --json
check "second start --json: already_running, same pid" \
	json 'd["already_running"] is True and d["pid"] == '"$pid"' and d["cleaned_stale"] is False'
run mps start --gpus 1 --thread-percentage 10
check "start with limits while running: exit 0 and a warning that they were not applied" \
	test "$rc" -eq 0 -a -n "$(grep -F "limits not applied" "$tmp/err")"

echo "== status"
run mps status
check "status: exit 0 (got $rc)" test "$rc" -eq 0 -a ! -s "$tmp/err"
check "status: names the daemon" grep -qF "MPS control daemon: pid $pid" "$tmp/out"
check "status: default thread percentage 100" grep -q "^  active thread percentage: 100$" "$tmp/out"
check "status: no servers yet" grep -q "^servers: none" "$tmp/out"
run mps status --json
check "status --json: exit 0 (got $rc)" test "$rc" -eq 0
check "status --json: running, daemon_pid, directories" \
	json 'd["running"] is True and d["state"] == "running" and d["daemon_pid"] == '"$pid"' and d["pipe_dir"] == "'"$PIPE"'" and d["log_dir"] == "'"$LOG"'"'
check "status --json: defaults 100%, priority 0, no memory limit, no servers" \
	json 'd["default_thread_percentage"] == 100 and d["default_client_priority"] == 0 and d["default_pinned_mem_limit"]["0"] is None and d["servers"] == []'
run mps status --log 3
check "status --log 3: the tail of control.log" \
	test "$rc" -eq 0 -a -n "$(grep -F -- "--- last 3 lines of $LOG/control.log ---" "$tmp/out")"

echo "== set"
run mps set --thread-percentage 30
check "set --thread-percentage 30: exit 0 (got $rc: $(cat "$tmp/err"))" test "$rc" -eq 0
run mps status
check "status then shows 30" grep -q "^  active thread percentage: 30$" "$tmp/out"
run mps set --mem-limit 0=2G
check "set --mem-limit 0=2G: exit 0 (got $rc: $(cat "$tmp/err"))" test "$rc" -eq 0
run mps set --priority 1
check "set --priority 1: exit 0 (got $rc: $(cat "$tmp/err"))" test "$rc" -eq 0
run mps status
check "status text: memory limit and priority" \
	bash -c "grep -q 'pinned memory limit: dev0=2G' '$tmp/out' && grep -q '^  client priority: 1 (below normal)$' '$tmp/out'"
run mps status --json
check "status --json: 30%, 2G on device 0, priority 1" \
	json 'd["default_thread_percentage"] == 30 and d["default_pinned_mem_limit"]["0"] == "2G" and d["default_client_priority"] == 1'
run mps set --thread-percentage 45 --json
check "set --json: exit 0 and {\"ok\": true}" test "$rc" -eq 0
check "set --json: a JSON document" json 'd == {"ok": True}'

echo "== attached clients"
sleep 300 & client=$!
pids+=("$client")
echo "fake_attach $client" | CUDA_MPS_PIPE_DIRECTORY=$PIPE "$FAKE" >/dev/null
run mps status --json
check "status --json: one server with the attached client" \
	json 'len(d["servers"]) == 1 and [c["pid"] for c in d["servers"][0]["clients"]] == ['"$client"']'
run mps stop
check "stop with a client attached: exit 5, one line naming the client and --force (got $rc)" \
	test "$rc" -eq 5 -a "$(wc -l <"$tmp/err")" -eq 1 -a -n "$(grep -F "$client" "$tmp/err" | grep -F -- --force)"
check "stop with a client attached: the daemon is left running" alive "$pid"
run mps stop --force --timeout 2s --json
check "stop --force: exit 0 (got $rc: $(cat "$tmp/err"))" test "$rc" -eq 0
check "stop --force --json: one client attached, terminated through MPS, then signalled" \
	json 'd["was_running"] is True and d["pid"] == '"$pid"' and d["clients_attached"] == 1 and d["clients_terminated"] == 1 and d["clients_signalled"] == 1'
wait "$client" 2>/dev/null || true
check "stop --force: the daemon is gone" gone "$pid"
bad 5 "no MPS control daemon at '$PIPE'" mps status

echo "== start with limits, stop"
run mps start --gpus 1 --thread-percentage 40 --mem-limit 1G --priority 1 --json
check "start with limits: exit 0 (got $rc: $(cat "$tmp/err"))" test "$rc" -eq 0
pid=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["pid"])' "$tmp/out")
run mps status --json
check "start with limits: they are the daemon's defaults" \
	json 'd["default_thread_percentage"] == 40 and d["default_pinned_mem_limit"]["0"] == "1G" and d["default_client_priority"] == 1'
run mps stop
check "stop: exit 0, says it stopped (got $rc)" \
	test "$rc" -eq 0 -a -n "$(grep -F "MPS control daemon $pid stopped" "$tmp/out")"
check "stop: the daemon process is gone" gone "$pid"
run mps status
check "status after stop: exit 5 (got $rc)" test "$rc" -eq 5
check "status after stop: one line 'no MPS control daemon'" \
	test "$(wc -l <"$tmp/err")" -eq 1 -a -n "$(grep -F "no MPS control daemon" "$tmp/err")"

echo "== stale state"
sh -c 'exit 0' &
dead=$!
wait "$dead" || true
echo "$dead" >"$PIPE/$PIDFILE"
touch "$PIPE/leftover"
bad 5 "stale pid file: pid $dead is not running" mps status
run mps status --json
check "status --json of a stale pid file: exit 5 (got $rc)" test "$rc" -eq 5
check "status --json of a stale pid file: state stale, not running" json 'd["state"] == "stale" and d["running"] is False'
run mps start --gpus 1
check "start over stale state: exit 0 (got $rc: $(cat "$tmp/err"))" test "$rc" -eq 0
check "start over stale state: says it removed it" grep -qF "removed stale MPS state in $PIPE" "$tmp/out"
check "start over stale state: the leftover file is gone" test ! -e "$PIPE/leftover"
pid=$(cat "$PIPE/$PIDFILE")
check "start over stale state: a new live daemon (pid $pid)" bash -c "test $pid -ne $dead" && check "start over stale state: it runs" alive "$pid"
run mps stop
check "stop: exit 0 (got $rc)" test "$rc" -eq 0

echo "== bad input: exit status and one line naming what was wrong"
bad 2 "unknown subcommand 'frobnicate'" mps frobnicate
bad 2 "unknown option '--bogus'" mps start --bogus
bad 2 "unknown option '--bogus'" mps status --bogus
bad 2 "option '--gpus' does not apply" mps stop --gpus 0
bad 2 "option '--force' does not apply" mps status --force
bad 2 "option '--thread-percentage' needs a value" mps start --thread-percentage
bad 2 "unexpected argument 'extra'" mps status extra
for v in 0 101 abc; do
	bad 2 "--thread-percentage: " mps start --thread-percentage "$v"
	grep -qF "'$v'" "$tmp/err" || fail "--thread-percentage $v: the value is not named"
done
bad 2 "--thread-percentage: " mps set --thread-percentage=0
for v in 4X 0 x=1G; do
	bad 2 "--mem-limit: " mps start --gpus 1 --mem-limit "$v"
	grep -qF "'${v%%=*}'" "$tmp/err" || fail "--mem-limit $v: the wrong part is not named"
done
bad 2 "--priority: '2'" mps start --priority 2
bad 2 "--timeout: '-1'" mps start --timeout -1
bad 2 "--timeout: " mps status --timeout 0s
bad 2 "--log: 'x'" mps status --log x
bad 2 "--server: '0'" mps set --server 0 --thread-percentage 30
bad 2 "pipe directory 'rel/pipe' must be an absolute path" mps start --pipe-dir rel/pipe
bad 2 "log directory 'rel/log' must be an absolute path" mps start --log-dir rel/log
bad 7 "no GPU with index 7" mps start --gpus 7
bad 2 "nothing to set" mps set
bad 5 "no MPS control daemon at '$PIPE'" mps set --priority 1
bad 5 "no MPS control daemon at '$PIPE'" mps status

mkdir -m 770 "$tmp/groupw"
pipes+=("$tmp/groupw")
bad 6 "'$tmp/groupw' is writable by group or others" mps start --gpus 1 --pipe-dir "$tmp/groupw"
touch "$tmp/file"
bad 6 "'$tmp/file' exists and is not a directory" mps start --gpus 1 --pipe-dir "$tmp/file"
if [[ $(id -u) -eq 0 ]]; then
	mkdir -m 700 "$tmp/other"
	chown 65534 "$tmp/other"
	pipes+=("$tmp/other")
	bad 6 "'$tmp/other' is owned by uid 65534" mps start --gpus 1 --pipe-dir "$tmp/other"
else
	echo "skip: a pipe directory of another user (needs root to chown)"
fi
GPUSHARE_MPS_CONTROL=/nonexistent bad 4 "no file '/nonexistent'" mps start --gpus 1
check "a missing control program: the message says how to name another" grep -qF GPUSHARE_MPS_CONTROL "$tmp/err"

run mps
check "mps without a subcommand: exit 2, usage on stderr, nothing on stdout (got $rc)" \
	test "$rc" -eq 2 -a ! -s "$tmp/out" -a -n "$(grep -F "usage: gpushare mps" "$tmp/err")"

if daemon_running "$PIPE"; then fail "a daemon is left running in $PIPE"; else ok "no daemon left running in $PIPE"; fi
finish mps
