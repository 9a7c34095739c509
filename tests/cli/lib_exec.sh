# shellcheck shell=bash disable=SC2154,SC2034,SC2016
# What the gpushare exec tests share, sourced after lib.sh (not a test
# itself). exec_setup makes $tmp, a private XDG_RUNTIME_DIR ($U is gpushare's
# directory there), two fake GPUs ($uuid0, $uuid1), the stand-in MPS control
# program logging each daemon start to $tmp/starts, the test program
# $tmp/app-show.sh (prints its local rank, CUDA_VISIBLE_DEVICES, pipe
# directory and thread percentage) and a cleanup trap (exec_cleanup, which
# first runs the command in EXEC_CLEANUP_MORE when set). Then:
#   starts            daemons started so far
#   daemons_alive     those still running (by pid and pipe directory: pids
#                     are reused, and other tests run stand-ins too)
#   no_daemon_left    wait (bounded) until none runs; lists them otherwise
#   job_dirs, job_entries   job directories / any exec-* entry in $U
#   no_job_dir        wait (bounded) until no job directory is left
#   apps_alive, no_app_left   processes whose command line names $tmp/app
#   is_zero FN        FN prints 0 (wait_for runs its command again each time)

exec_cleanup() {
	local p d
	if [[ -n ${EXEC_CLEANUP_MORE-} ]]; then $EXEC_CLEANUP_MORE; fi
	while read -r p d; do
		tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "CUDA_MPS_PIPE_DIRECTORY=$d" && kill -KILL "$p"
	done <"$tmp/starts" 2>/dev/null
	rm -rf "$tmp"
}

exec_setup() {
	tmp=$(mktemp -d)
	H=$GPUSHARE_TEST_HELPERS
	export GPUSHARE_NVML_LIBRARY=$H/libfakenvml.so FAKE_NVML_GPUS=2 GPUSHARE_MPS_CONTROL=$H/fake_mps_control
	export FAKE_MPS_START_LOG=$tmp/starts
	touch "$tmp/starts"
	trap exec_cleanup EXIT
	private_xdg
	U=$XDG_RUNTIME_DIR/gpushare
	uuid0=GPU-fa4e0000-0000-4000-8000-000000000000
	uuid1=GPU-fa4e0000-0000-4000-8000-000000000001
	printf '%s\n' '#!/bin/sh' \
		'echo "lr=${OMPI_COMM_WORLD_LOCAL_RANK:-${PMIX_LOCAL_RANK:-$SLURM_LOCALID}} cvd=$CUDA_VISIBLE_DEVICES pipe=$CUDA_MPS_PIPE_DIRECTORY pct=${CUDA_MPS_ACTIVE_THREAD_PERCENTAGE-unset}"' \
		>"$tmp/app-show.sh"
	chmod +x "$tmp/app-show.sh"
}

is_zero() { test "$("$1")" = 0; }
starts() { wc -l <"$tmp/starts"; }
alive_pid() {
	local s
	s=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) && [[ $s != Z && $s != X ]]
}
daemons_alive() {
	local p d n=0
	while read -r p d; do
		alive_pid "$p" && tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "CUDA_MPS_PIPE_DIRECTORY=$d" &&
			n=$((n + 1))
	done <"$tmp/starts"
	echo "$n"
}
# A launcher that kills the ranks leaves the stop to the job's keeper.
no_daemon_left() {
	wait_for 150 0.1 is_zero daemons_alive && return 0
	cat "$tmp/starts"
	ps -o pid,ppid,stat,lstart,args -p "$(cut -d' ' -f1 "$tmp/starts" | paste -sd,)" || true
	ls -la "$U" || true
	return 1
}
job_dirs() { find "$U" -maxdepth 1 -type d -name 'exec-*' 2>/dev/null | wc -l; }
job_entries() { find "$U" -maxdepth 1 -name 'exec-*' 2>/dev/null | wc -l; }
no_job_dir() { wait_for 100 0.1 is_zero job_dirs; }
apps_alive() {
	local p n=0
	for p in $(pgrep -f "$tmp/app" || true); do alive_pid "$p" && n=$((n + 1)); done
	echo "$n"
}
no_app_left() {
	wait_for 100 0.1 is_zero apps_alive && return 0
	ps -o pid,ppid,pgid,stat,args -p "$(pgrep -d, -f "$tmp/app" || echo 1)" || true
	return 1
}
