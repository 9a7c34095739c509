# shellcheck shell=bash disable=SC2034,SC2154
# Helpers sourced by the end-to-end tests in tests/cli (not a test itself:
# ctest runs only test_*.sh). Each test keeps its own temporary directory in
# $tmp and its own cleanup trap; this file holds what they share:
#   failures, ok, fail, check   count and print what is checked
#   finish [WHAT]               the summary line; exit 1 when a check failed
#   missing_tool WHAT           a test tool is absent: a failure under CI=true,
#                               else a "SKIP (missing tool): WHAT" line
#   run ARGS...                 gpushare ARGS: status in $rc, output in $tmp/out, $tmp/err
#   wait_for TRIES DELAY CMD... run CMD until it succeeds, at most TRIES times
#   private_xdg                 a private XDG_RUNTIME_DIR under $tmp
#   served_port FILE            the port an exporter says in FILE it serves on, in $port
#   free_port                   a free TCP port on 127.0.0.1
#   hold_port FILE SECONDS      a process ($holder) that holds a port, written to FILE
#   fake_mps_start PIPE LOG     the fake MPS control daemon, started and answering
#   fake_mps_quit PIPE [LOG]    ask it to quit; never fails
#   fake_mps_quit_left          quit every fake daemon left under $tmp/xdg; never fails
#   fake_gpu_processes          $plain, $server, $client: processes the fake NVML reports
#   kill_pids                   kill every process in the array pids (for cleanup traps)
#   TIME_FACTOR                 multiply wall-clock bounds by it (the machine's load)

failures=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
check() { # check <description> <command...>
	local what=$1
	shift
	if "$@"; then ok "$what"; else fail "$what"; fi
}

# CI must run every test: there a missing tool is a failure, not a skip.
# scripts/test.sh lists the SKIP lines and fails under CI=true on this one.
missing_tool() {
	if [[ "${CI:-}" == true ]]; then
		fail "$1 (CI=true: every test tool must be installed)"
	else
		echo "SKIP (missing tool): $1"
	fi
}

# shellcheck disable=SC2120 # WHAT is optional
finish() {
	if ((failures > 0)); then
		echo "$failures check(s) failed"
		exit 1
	fi
	echo "all ${1:+$1 }checks passed"
}

# TIME_FACTOR: how much slower than a quiet machine this one is now, for
# checks with a wall-clock bound (bound * TIME_FACTOR). It is the 1-minute
# load average per CPU plus 1, at least 1 and at most 20, measured when a
# test starts; GPUSHARE_TEST_TIME_FACTOR sets it (CI's CPU-hog pass does).
time_factor() {
	local load cpus
	if [[ -n ${GPUSHARE_TEST_TIME_FACTOR-} ]]; then
		echo "$GPUSHARE_TEST_TIME_FACTOR"
		return
	fi
	read -r load _ </proc/loadavg 2>/dev/null || load=0
	cpus=$(nproc 2>/dev/null || echo 1)
	python3 -c "import math, sys; print(min(20, max(1, math.ceil(float(sys.argv[1]) / int(sys.argv[2]) + 1))))" \
		"$load" "$cpus" 2>/dev/null || echo 4
}
TIME_FACTOR=$(time_factor)

run() {
	set +e
	"$GPUSHARE" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	set -e
}

# wait_for TRIES DELAY CMD...: run CMD until it succeeds, at most TRIES x
# TIME_FACTOR times, DELAY seconds apart: the bound, a quiet machine's,
# grows with the load like every other wall-clock bound here (so never
# multiply TRIES by TIME_FACTOR again). Returns 1 when CMD never succeeded;
# the waits that only bound a start-up add `|| true` and let the checks
# after them tell.
wait_for() {
	local tries=$(($1 * TIME_FACTOR)) delay=$2 i
	shift 2
	for ((i = 0; i < tries; i++)); do
		"$@" && return 0
		sleep "$delay"
	done
	return 1
}

# catches PID SIG: process PID has its own handler for SIG (a name such as
# INT): its SigCgt mask in /proc has the bit. Signal a process only once this
# holds, or a loaded machine delivers it before the handler is in place.
# A job started with '&' is first a copy of this shell, with this shell's
# traps, until it runs its command: such a copy never counts.
catches() {
	local num mask
	[[ /proc/$1/exe -ef /proc/$$/exe ]] && return 1
	num=$(kill -l "$2") || return 1
	mask=$(awk '/^SigCgt:/ {print $2}' "/proc/$1/status" 2>/dev/null) || return 1
	[[ -n $mask ]] && (((16#$mask >> (num - 1)) & 1))
}

# no_workers_left WHAT: within 2 s no process runs the worker linked at
# $tmp/gpushare-worker (a test's own GPUSHARE_WORKER).
no_workers_left() {
	local what=$1 i
	for i in 1 2 3 4 5 6 7 8 9 10; do
		pgrep -f "$tmp/gpushare-worker" >/dev/null || { ok "$what: no worker left"; return 0; }
		sleep 0.2
	done
	fail "$what: workers left: $(pgrep -af "$tmp/gpushare-worker" || true)"
}

# served_port FILE: the port an exporter says in FILE (its stderr) it serves
# on, in $port ("" when it never says); waits up to 5 s x TIME_FACTOR. FILE
# may not exist yet: the shell that started the exporter in the background
# makes it in the child, which a loaded machine may not have run yet (under
# set -e a failing sed here once ended a test before it began).
served_port() {
	local i
	port=
	for ((i = 0; i < 100 * TIME_FACTOR; i++)); do
		port=$(sed -n 's|.*serving http://127.0.0.1:\([0-9]*\)/metrics|\1|p' "$1" 2>/dev/null || true)
		[[ -n $port ]] && return 0
		sleep 0.05
	done
}

private_xdg() {
	mkdir -m 700 "$tmp/xdg"
	export XDG_RUNTIME_DIR=$tmp/xdg
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

hold_port() {
	python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
print(s.getsockname()[1], flush=True); time.sleep(float(sys.argv[1]))' "$2" >"$1" &
	holder=$!
}

fake_mps_start() {
	mkdir -m 700 -p "$1" "$2"
	CUDA_MPS_PIPE_DIRECTORY=$1 CUDA_MPS_LOG_DIRECTORY=$2 "$GPUSHARE_TEST_HELPERS/fake_mps_control" -d
	wait_for 50 0.1 test -S "$1/control" || true
}

# fake_mps_quit PIPE_DIR [LOG_DIR]: quit the fake daemon of PIPE_DIR and wait
# (5 s at most) until it is gone: it writes its last log lines as it goes,
# and a test that removes its directory at once could meet them (rm -rf:
# "Directory not empty"). Never fails.
fake_mps_quit() {
	local pid
	pid=$(cat "$1/nvidia-cuda-mps-control.pid" 2>/dev/null || true)
	echo quit | env CUDA_MPS_PIPE_DIRECTORY="$1" ${2:+CUDA_MPS_LOG_DIRECTORY="$2"} \
		"$GPUSHARE_TEST_HELPERS/fake_mps_control" >/dev/null 2>&1 || true
	if [[ $pid =~ ^[0-9]+$ ]]; then
		wait_for 50 0.1 pid_gone "$pid" || true
	fi
	return 0
}

# pid_gone PID: no such process (or a zombie, which writes nothing more)
pid_gone() { ! kill -0 "$1" 2>/dev/null || [[ $(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) == Z ]]; }

# fake_mps_quit_left: quit every fake MPS daemon a run of this test left
# under its private XDG_RUNTIME_DIR ($tmp/xdg, private_xdg): a killed or
# interrupted sweep's, tune's or bench's; never fails.
fake_mps_quit_left() {
	local p
	for p in "$tmp"/xdg/gpushare/*/mps/pipe; do
		[[ -S "$p/control" ]] && fake_mps_quit "$p"
	done
	return 0
}

# Three sleeping processes the fake NVML reports on GPU 1 (FAKE_NVML_PIDS):
# $plain, $server and $client; they join the array pids. The server runs as
# nvidia-cuda-mps-server, whose comm the kernel cuts to "nvidia-cuda-mps", as
# on a GPU machine.
fake_gpu_processes() {
	mkdir "$tmp/bin"
	cp "$(command -v sleep)" "$tmp/bin/nvidia-cuda-mps-server"
	sleep 300 & plain=$!; pids+=("$plain")
	"$tmp/bin/nvidia-cuda-mps-server" 300 & server=$!; pids+=("$server")
	SLURM_JOB_ID=4242 sleep 300 & client=$!; pids+=("$client") # as if of a Slurm job
	export FAKE_NVML_PIDS="$plain,$server,$client"
}

kill_pids() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
}
