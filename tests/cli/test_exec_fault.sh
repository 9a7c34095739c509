#!/usr/bin/env bash
# shellcheck disable=SC1091,SC2154,SC2034
# gpushare exec reports a fatal GPU fault under MPS, with the stand-in MPS
# (tests/helpers/fake_mps_control.c, fake_fault) and a stand-in client
# ($tmp/app-client): four ranks of one job by hand (Open MPI's variables) on one
# GPU. One rank faults; the others fail when the server reports the fault,
# as every client of a faulted MPS server does. The node's last rank says
# which rank faulted (named by the server log, though it fails last) and the
# blast radius; when the log names no culprit, the first to fail is the
# suspect. A rank that fails without a fault, or a job under timeslice,
# reports nothing. Nothing is left running.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_exec.sh"

exec_setup
unset CUDA_VISIBLE_DEVICES SLURM_JOB_ID SLURM_STEP_ID SLURM_PROCID SLURM_NTASKS SLURM_LOCALID CUDA_MPS_PIPE_DIRECTORY
kill_clients() { pkill -KILL -f "$tmp/app-client" || true; }
EXEC_CLEANUP_MORE=kill_clients

# client RANK MODE: attach to the daemon at $CUDA_MPS_PIPE_DIRECTORY, say
# so ($tmp/att.RANK), then tick until the server reports a fault (the file
# "fault" in the pipe directory): fail with error 700 after 1 s (a client's
# teardown). MODE "fault": once the 4 ranks attached, fault (naming this
# process), linger 1.5 s and fail; "fault-unnamed": fault naming no rank's
# process (as a server that does not name the client) and fail at once;
# "fail": fail with exit 4 at once, no fault; "ok": end after 1 s.
cat >"$tmp/app-client" <<EOF
#!/bin/sh
ctl=$H/fake_mps_control
t=$tmp
EOF
cat >>"$tmp/app-client" <<'EOF'
r=$(echo "fake_attach $$" | "$ctl")
[ "$r" = 807 ] && { echo "client: MPS server is not ready (807)" >&2; exit 3; }
touch "$t/att.$1"
i=0
while [ "$i" -lt 600 ]; do
	if [ "$(ls "$t" | grep -c '^att\.')" -ge 4 ]; then
		case $2 in
		fault) echo "fake_fault $$" | "$ctl" >/dev/null; sleep 1.5; exit 3 ;;
		fault-unnamed) echo "fake_fault 1" | "$ctl" >/dev/null; exit 3 ;;
		fail) exit 4 ;;
		ok) sleep 1; exit 0 ;;
		esac
	fi
	if [ -e "$CUDA_MPS_PIPE_DIRECTORY/fault" ]; then
		sleep 1
		echo "client: CUDA error 700: an illegal memory access was encountered" >&2
		exit 3
	fi
	sleep 0.05
	i=$((i + 1))
done
exit 9
EOF
chmod +x "$tmp/app-client"

# job ID STRATEGY MODE0 MODE1 MODE2 MODE3: four ranks on GPU 0, each rank's
# stderr in $tmp/err.R, its exit status in $tmp/rc.R; $tmp/err all of them.
job() {
	local id=$1 strategy=$2 r pids=()
	shift 2
	rm -f "$tmp"/att.* "$tmp"/err.* "$tmp"/rc.*
	for r in 0 1 2 3; do
		(
			set +e
			env OMPI_COMM_WORLD_LOCAL_RANK=$r OMPI_COMM_WORLD_LOCAL_SIZE=4 OMPI_COMM_WORLD_RANK=$r \
				OMPI_COMM_WORLD_SIZE=4 OMPI_MCA_orte_ess_jobid="$id" \
				"$GPUSHARE" exec --strategy "$strategy" --gpus 0 -- "$tmp/app-client" "$r" "$1" 2>"$tmp/err.$r"
			echo $? >"$tmp/rc.$r"
		) &
		pids+=($!)
		shift
	done
	wait "${pids[@]}" || true
	cat "$tmp"/err.? >"$tmp/err"
}
reports() { grep -c "gpushare: exec: GPU fault under MPS" "$tmp/err" || true; }
codes() { cat "$tmp/rc.0" "$tmp/rc.1" "$tmp/rc.2" "$tmp/rc.3" | paste -sd' '; }

echo "== rank 2 faults (named by the server log, though it fails last), ranks 0, 1, 3 fail with it"
job fe1 mps wait wait fault wait
check "every rank failed (exit 3)" test "$(codes)" = "3 3 3 3"
check "one report for the node" test "$(reports)" = 1
check "  naming rank 2 from the server log" \
	grep -q "GPU fault under MPS on node .* GPU 0: rank 2 faulted (named by the server log)" "$tmp/err"
check "  and the blast radius: ranks 0,1,3, 3 of 4" \
	grep -q "; ranks 0,1,3 failed with it (blast radius 3 of 4 ranks on the GPU)$" "$tmp/err"
check "  daemon stopped" no_daemon_left
check "  job directory removed" no_job_dir
check "  no client left" no_app_left

echo "== a fault the server log does not name: rank 1 fails first, the suspect"
job fe2 mps-split wait fault-unnamed wait wait
check "every rank failed (exit 3)" test "$(codes)" = "3 3 3 3"
check "one report" test "$(reports)" = 1
check "  rank 1 the suspect, ranks 0,2,3 with it" grep -q "GPU 0: rank 1 is the suspect (the first to fail; the server \
log names no culprit); ranks 0,2,3 failed with it (blast radius 3 of 4 ranks on the GPU)$" "$tmp/err"
check "  daemon stopped" no_daemon_left

echo "== a rank fails without a fault: nothing reported"
job fe3 mps ok fail ok ok
check "rank 1 exit 4, the others 0" test "$(codes)" = "0 4 0 0"
check "  no fault reported" test "$(reports)" = 0

echo "== under timeslice: no MPS, nothing reported"
job fe4 timeslice ok fail ok ok
check "rank 1 exit 4, the others 0" test "$(codes)" = "0 4 0 0"
check "  no fault reported" test "$(reports)" = 0

echo "== nothing left"
check "no daemon of this test alive" no_daemon_left
check "no client alive" no_app_left
check "no job directory, no lock file" test "$(job_entries)" = 0
finish "exec_fault"
