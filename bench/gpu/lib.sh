# Shared by the GPU benchmark scripts (sourced, not run): a private runtime
# directory for the MPS daemons they start, the stop of those daemons on any
# exit, and steps bounded by one deadline so that a script fits one lease.
#
# The sourcing script sets O (its output directory, absolute) and START
# (date +%s) and DEADLINE (seconds) before calling these.

# Every private MPS daemon of gpushare goes under $O/rt: a private
# XDG_RUNTIME_DIR that no other user of the GPU shares. Stopped on any exit.
bench_private_runtime() {
	export XDG_RUNTIME_DIR=$O/rt
	mkdir -p "$XDG_RUNTIME_DIR"
	chmod 700 "$XDG_RUNTIME_DIR"
	trap 'stop_daemons' EXIT
	trap 'exit 130' INT TERM
}

# Stop every MPS daemon started under our runtime directory: ask it to quit,
# then end the control daemon by its pid file if it is still there.
stop_daemons() {
	local p pid
	for p in "$XDG_RUNTIME_DIR"/gpushare/*/mps/pipe; do
		[[ -d "$p" ]] || continue
		echo quit | CUDA_MPS_PIPE_DIRECTORY=$p timeout 10 "${GPUSHARE_MPS_CONTROL:-nvidia-cuda-mps-control}" \
			>/dev/null 2>&1 || true
		pid=$(cat "$p/nvidia-cuda-mps-control.pid" 2>/dev/null || true)
		if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
			sleep 1
			kill -TERM "$pid" 2>/dev/null || true
		fi
		echo "stopped the MPS daemon of $p" >>"$O/cleanup.log"
	done
}

# Seconds left before DEADLINE.
left() { echo $((DEADLINE - ($(date +%s) - START))); }

# The GPU, the date and the commit, first line of $O/summary.txt (a new one).
bench_header() {
	nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$O/gpu.txt" 2>&1 || true
	echo "GPU: $(cat "$O/gpu.txt")  date: $(date -u +%FT%TZ)  commit: $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo ?)" |
		tee "$O/summary.txt"
}

# Run a step with what is left of the deadline (SIGINT at the end: gpushare
# stops its daemon and records what it finished). $1 name, $2 stdout file,
# rest the command. Writes $O/$1.start and $O/$1.seconds; false when it
# could not finish.
step() {
	local name=$1 out=$2 t0 t1 rc=0 l
	shift 2
	l=$(left)
	if ((l < 10)); then
		echo "$name: not run (deadline)" | tee -a "$O/summary.txt"
		return 1
	fi
	t0=$(date +%s.%N)
	echo "$t0" >"$O/$name.start"
	timeout --signal=INT --kill-after=30 "$l" "$@" >"$out" 2>"$O/$name.err" || rc=$?
	t1=$(date +%s.%N)
	python3 -c "print(round($t1 - $t0, 1))" >"$O/$name.seconds"
	if ((rc != 0)); then
		echo "$name: exit $rc$( ((rc == 124 || rc == 130)) && echo " (deadline)")" | tee -a "$O/summary.txt"
		return 1
	fi
}
