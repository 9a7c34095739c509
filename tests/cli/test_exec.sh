#!/usr/bin/env bash
# gpushare exec under Open MPI's mpirun (and with hand-set launcher
# variables), two fake GPUs and the stand-in MPS control program: binding,
# exactly one daemon per node and job however many ranks arrive at once, its
# stop after a normal end, after a rank fails, is killed by a signal or has
# its gpushare killed, the reaping of a job whose ranks were all killed, the
# once-per-job warning about ranks sharing a GPU, signal forwarding, exit
# statuses, --dry-run, and nothing left running afterwards.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_mpi.sh"
. "$(dirname "$0")/lib_exec.sh"

exec_setup

echo "== usage and launcher errors"
run exec -- /bin/true
check "no launcher: exit 2" test "$rc" = 2
check "  one line naming the variables" grep -q "no launcher found: none of OMPI_COMM_WORLD_LOCAL_RANK" "$tmp/err"
check "  one line only" test "$(wc -l <"$tmp/err")" = 1
run exec --strategy mig -- /bin/true
check "--strategy mig refused (exit 2)" test "$rc" = 2
run exec --thread-percentage 50 -- /bin/true
check "--thread-percentage without mps-split refused" test "$rc" = 2
run exec --strategy mps-split --thread-percentage 0 -- /bin/true
check "--thread-percentage 0 refused" test "$rc" = 2
run exec --json -- /bin/true
check "--json without --dry-run refused" test "$rc" = 2
run exec --bind diagonal -- /bin/true
check "--bind diagonal refused" test "$rc" = 2
run exec --ranks-per-gpu abc -- /bin/true
check "--ranks-per-gpu abc refused" test "$rc" = 2
run exec --help
check "--help exits 0" test "$rc" = 0
check "  and names every option" grep -q -- "--ranks-per-gpu" "$tmp/out"
check "nothing started by the refusals" test "$(starts)" = 0

echo "== one rank by hand: exit statuses, signals"
one() { env OMPI_COMM_WORLD_LOCAL_RANK=0 OMPI_COMM_WORLD_LOCAL_SIZE=1 OMPI_MCA_orte_ess_jobid="$1" "${@:2}"; }
set +e
one 11 "$GPUSHARE" exec >/dev/null 2>"$tmp/err"
rc=$?
set -e
check "no program: exit 2" test "$rc" = 2
set +e
one 12 "$GPUSHARE" exec -- sh -c 'exit 7' 2>"$tmp/err"
rc=$?
set -e
check "the program's exit status 7 is gpushare's" test "$rc" = 7
check "  one daemon was started" test "$(starts)" = 1
check "  and stopped" no_daemon_left
check "  and the job directory removed" test "$(job_dirs)" = 0
set +e
one 13 "$GPUSHARE" exec -- sh -c 'kill -TERM $$' 2>"$tmp/err"
rc=$?
one 14 "$GPUSHARE" exec -- "$tmp/no-such-program" 2>"$tmp/err"
rc2=$?
set -e
check "a program killed by SIGTERM: exit 143" test "$rc" = 143
check "a program that cannot start: exit 127" test "$rc2" = 127
check "  saying so" grep -q "cannot run '$tmp/no-such-program'" "$tmp/err"
check "  its daemon stopped too" no_daemon_left
cat >"$tmp/app-trap.sh" <<EOF
#!/bin/bash
trap 'echo "got \$1" >$tmp/trapped; exit 5' TERM
trap 'echo "got HUP" >$tmp/trapped; exit 6' HUP
echo up >$tmp/up
sleep 30 & wait
EOF
chmod +x "$tmp/app-trap.sh"
for sig in TERM HUP; do
	rm -f "$tmp/up" "$tmp/trapped"
	env OMPI_COMM_WORLD_LOCAL_RANK=0 OMPI_COMM_WORLD_LOCAL_SIZE=1 OMPI_MCA_orte_ess_jobid="15$sig" \
		"$GPUSHARE" exec -- "$tmp/app-trap.sh" TERM 2>"$tmp/err" &
	ex=$!
	wait_for 100 0.1 test -e "$tmp/up" || true
	kill -"$sig" "$ex"
	set +e
	wait "$ex"
	rc=$?
	set -e
	want=5
	[[ $sig == HUP ]] && want=6
	check "SIG$sig to gpushare reaches the program, whose status ($want) is gpushare's" test "$rc" = "$want"
	check "  the program saw it" test -s "$tmp/trapped"
done
check "  daemons stopped" no_daemon_left
check "  no program left" no_app_left

echo "== --dry-run (one rank by hand)"
before=$(starts)
set +e
env OMPI_COMM_WORLD_LOCAL_RANK=3 OMPI_COMM_WORLD_LOCAL_SIZE=4 OMPI_MCA_orte_ess_jobid=21 \
	"$GPUSHARE" exec --dry-run --bind block >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
check "dry run exits 0" test "$rc" = 0
check "  rank 3 of 4, block: GPU 1" grep -q "local 3/4 .*GPU 1 $uuid1 (2 ranks on it)" "$tmp/out"
check "  names the daemon it would use" grep -q "daemon $U/exec-ompi-21@.*/mps/pipe (started by the first rank)" "$tmp/out"
check "  and the environment it sets" grep -q " CUDA_VISIBLE_DEVICES=$uuid1\( \|$\)" "$tmp/out"
check "  and unsets" grep -q " -CUDA_MPS_ACTIVE_THREAD_PERCENTAGE\( \|$\)" "$tmp/out"
check "  starts nothing" test "$(starts)" = "$before"
check "  creates no job directory" test "$(job_dirs)" = 0
set +e
env OMPI_COMM_WORLD_LOCAL_RANK=1 OMPI_COMM_WORLD_LOCAL_SIZE=2 OMPI_MCA_orte_ess_jobid=22 \
	"$GPUSHARE" exec --dry-run --json --strategy mps-split >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
check "--dry-run --json exits 0" test "$rc" = 0
check "  one JSON object: GPU, thread share, daemon" python3 -c '
import json, sys
d = json.loads(open(sys.argv[1]).read())
assert d["local_rank"] == 1 and d["gpu"]["uuid"] == sys.argv[2], d
assert d["set"]["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "100", d
assert d["daemon"]["running"] is False and d["daemon"]["pid"] is None, d
assert "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT" in d["unset"], d
' "$tmp/out" "$uuid1"

if ! mpi_available; then
	missing_tool "Open MPI's mpirun not installed (Debian package openmpi-bin)"
	finish "exec"
	exit 0
fi

# mpi N ARGS...: mpirun -np N gpushare exec ARGS (as lib_mpi.sh's mpi_run,
# bounded: an mpirun that hangs is a failure, not a stuck test); status in $rc
mpi() {
	local n=$1 args=(--oversubscribe --mca btl_vader_single_copy_mechanism none)
	shift
	((EUID == 0)) && args+=(--allow-run-as-root)
	set +e
	timeout -k 5 120 mpirun "${args[@]}" -np "$n" "$GPUSHARE" exec "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	set -e
}

echo "== mpirun -np 4, block over 2 GPUs: 2 ranks per GPU under one daemon"
before=$(starts)
mpi 4 --bind block -- "$tmp/app-show.sh"
check "exit 0" test "$rc" = 0
check "ranks 0,1 on GPU 0 and 2,3 on GPU 1 (by UUID)" \
	test "$(sed -n 's/^lr=\([0-9]\) cvd=\([^ ]*\) .*/\1:\2/p' "$tmp/out" | sort | tr '\n' ' ')" = \
	"0:$uuid0 1:$uuid0 2:$uuid1 3:$uuid1 "
check "all four ranks are clients of one pipe directory under the job's directory" \
	test "$(grep -o "pipe=$U/exec-ompi-[^ ]*/mps/pipe" "$tmp/out" | sort -u | wc -l)" = 1
check "exactly one daemon started" test "$(($(starts) - before))" = 1
check "  stopped after the job" no_daemon_left
check "  job directory removed" test "$(job_dirs)" = 0
check "the shared-GPU warning, once" test "$(grep -c "NCCL cannot put two ranks of one communicator on one GPU" "$tmp/err")" = 1

echo "== mpirun -np 2: one rank per GPU, no warning"
mpi 2 -- "$tmp/app-show.sh"
check "exit 0, GPUs 0 and 1" test "$(sed -n 's/^lr=\([0-9]\) cvd=\([^ ]*\) .*/\1:\2/p' "$tmp/out" | sort | tr '\n' ' ')" = \
	"0:$uuid0 1:$uuid1 "
check "no NCCL warning" test "$(grep -c NCCL "$tmp/err" || true)" = 0

echo "== mps-split: 100/K per rank, or --thread-percentage"
mpi 4 --strategy mps-split --ranks-per-gpu 2 -- "$tmp/app-show.sh"
check "4 ranks at 2 per GPU: each 50 percent" test "$(grep -c 'pct=50$' "$tmp/out")" = 4
mpi 4 --strategy mps-split --thread-percentage 30 -- "$tmp/app-show.sh"
check "--thread-percentage 30: each 30" test "$(grep -c 'pct=30$' "$tmp/out")" = 4
check "  daemons stopped" no_daemon_left

echo "== timeslice: no daemon, an empty pipe directory"
before=$(starts)
mpi 2 --strategy timeslice -- "$tmp/app-show.sh"
check "exit 0" test "$rc" = 0
check "no daemon started" test "$(starts)" = "$before"
check "ranks pointed at an empty pipe directory" test "$(grep -c "pipe=$U/exec-.*/no-mps " "$tmp/out")" = 2
check "  removed afterwards" test "$(job_dirs)" = 0

echo "== --ranks-per-gpu refused before anything runs"
before=$(starts)
mpi 3 --ranks-per-gpu 2 -- "$tmp/app-show.sh"
check "3 ranks at 2 per GPU: non-zero exit" test "$rc" != 0
check "  with the rule named" grep -q "not a multiple of --ranks-per-gpu 2" "$tmp/err"
check "  no program ran" test "$(grep -c '^lr=' "$tmp/out" || true)" = 0
check "  no daemon left, no job directory" test "$(daemons_alive) $(job_dirs)" = "0 0"

echo "== a rank fails: the job is aborted, the daemon stopped"
cat >"$tmp/app-crash.sh" <<'EOF'
#!/bin/bash
# rank 1 ends as $1 says once all have started; the others wait
lr=$OMPI_COMM_WORLD_LOCAL_RANK
touch "$(dirname "$0")/up-$lr"
if [ "$lr" = 1 ]; then
	while [ "$(ls "$(dirname "$0")" | grep -c '^up-')" -lt 4 ]; do sleep 0.05; done
	case $1 in
	exit) exit 3 ;;
	signal) kill -KILL $$ ;;
	gpushare) kill -KILL $PPID; sleep 30 ;;
	esac
fi
sleep 30
EOF
chmod +x "$tmp/app-crash.sh"
for how in exit signal gpushare; do
	rm -f "$tmp"/up-*
	before=$(starts)
	t0=$(date +%s)
	mpi 4 -- "$tmp/app-crash.sh" "$how"
	check "rank 1 $how: mpirun fails (rc $rc)" test "$rc" != 0
	check "  within seconds, not after the others' 30 s" test $(($(date +%s) - t0)) -lt 20
	check "  one daemon for the job" test "$(($(starts) - before))" = 1
	check "  stopped" no_daemon_left
	check "  job directory removed" no_job_dir
	check "  no rank's program left" no_app_left
done

echo "== every rank's gpushare killed at once: the job's keeper stops the daemon"
cat >"$tmp/app-killall.sh" <<'EOF'
#!/bin/bash
# $1 = ranks: kill this rank's gpushare; all: every gpushare of this job,
# the keeper too (by pid, found by this script's path in their command line)
touch "$(dirname "$0")/up-$OMPI_COMM_WORLD_LOCAL_RANK"
while [ "$(ls "$(dirname "$0")" | grep -c '^up-')" -lt 2 ]; do sleep 0.05; done
if [ "$1" = all ]; then
	# from a process that does not die with this rank midway
	setsid sh -c 'kill -KILL $(pgrep -f "exec -- $1")' sh "$0" &
	wait
else
	kill -KILL $PPID
fi
sleep 30
EOF
chmod +x "$tmp/app-killall.sh"
rm -f "$tmp"/up-*
before=$(starts)
mpi 2 -- "$tmp/app-killall.sh" ranks
check "all ranks' gpushare killed: mpirun fails" test "$rc" != 0
check "  one daemon for the job" test "$(($(starts) - before))" = 1
check "  stopped by the keeper" no_daemon_left
check "  job directory removed" no_job_dir
check "  what was left of the programs killed" no_app_left

echo "== every gpushare of the job killed, its keeper too: the next job reaps the daemon"
rm -f "$tmp"/up-*
mpi 2 -- "$tmp/app-killall.sh" all
check "all killed: mpirun fails" test "$rc" != 0
sleep 1
n_alive=$(daemons_alive)
if [[ $n_alive == 1 ]]; then
	ok "  their daemon outlives them"
else # what was left, for the next look at a failure seen on loaded machines
	fail "  their daemon outlives them: $n_alive alive; starts: $(tr '\n' ';' <"$tmp/starts"); left: $(ps -eo pid,ppid,stat,lstart,args | grep -E "app-killall|fake_mps" | grep -v grep | tr '\n' ';') at $(date +%T.%N); the last daemon's environment says: $(p=$(tail -n 1 "$tmp/starts" | cut -d' ' -f1); { tr '\0' '\n' <"/proc/$p/environ" | grep CUDA_MPS; } 2>&1 | tr '\n' ';')"
fi
check "  and their job directory" test "$(job_dirs)" = 1
mpi 2 -- "$tmp/app-show.sh"
check "the next job runs" test "$rc" = 0
check "  and leaves no daemon: the dead job's one was reaped" no_daemon_left
check "  nor any job directory" test "$(job_dirs)" = 0
check "  nor any program of the killed job" no_app_left

echo "== 48 ranks starting together: one daemon"
before=$(starts)
mpi 48 -- /bin/true
check "exit 0" test "$rc" = 0
check "exactly one daemon started for 48 ranks" test "$(($(starts) - before))" = 1
check "  stopped" no_daemon_left
check "  job directory removed" test "$(job_dirs)" = 0
check "the shared-GPU warning once among 48 ranks" test "$(grep -c "NCCL cannot put" "$tmp/err")" = 1
before=$(starts)
mpi 48 -- "$tmp/app-show.sh"
check "again with a program that prints: 48 lines, one pipe directory" \
	test "$(grep -c '^lr=' "$tmp/out") $(grep -o 'pipe=[^ ]*' "$tmp/out" | sort -u | wc -l)" = "48 1"
check "  24 ranks on each GPU" test "$(grep -c "cvd=$uuid0 " "$tmp/out") $(grep -c "cvd=$uuid1 " "$tmp/out")" = "24 24"
check "  one daemon, stopped" test "$(($(starts) - before)) $(no_daemon_left && echo gone)" = "1 gone"

echo "== nothing left"
check "no daemon of this test alive" test "$(daemons_alive)" = 0
check "no program of this test alive" no_app_left
check "no job directory, no lock file" test "$(job_entries)" = 0
finish "exec"
