#!/usr/bin/env bash
# gpushare exec under a private Slurm with two fake GPUs (srun, sbatch,
# examples/slurm/mpi.sbatch with srun --mpi=pmix) and the stand-in MPS
# control program: binding by SLURM_LOCALID within Slurm's
# CUDA_VISIBLE_DEVICES, exactly one daemon per node and job step, its stop
# after a normal end, after a rank fails or is killed by a signal (srun -K),
# and after scancel; the once-per-job warning; nothing left afterwards.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_slurm.sh"
. "$(dirname "$0")/lib_exec.sh"

EXEC_CLEANUP_MORE=slurm_stop
exec_setup

slurm_needed "exec under Slurm"
if ! slurm_start 2; then
	fail "the private Slurm did not become idle"
	finish
fi
ok "slurm idle in $SLURM_DIR"

# sr ARGS...: srun ARGS (bounded); status in $rc, output in $tmp/out, $tmp/err
sr() {
	set +e
	timeout 120 srun "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	set -e
}
# local-rank:GPU-UUID pairs from the test program's output, sorted
binding() { sed -n 's/^lr=\([0-9]*\) cvd=\([^ ]*\) .*/\1:\2/p' "$tmp/out" | sort -n | tr '\n' ' '; }

echo "== srun -n 4 on both GPUs, block: 2 ranks per GPU under one daemon"
before=$(starts)
sr -n 4 --gres=gpu:2 "$GPUSHARE" exec --bind block -- "$tmp/app-show.sh"
check "exit 0" test "$rc" = 0
check "ranks 0,1 on GPU 0 and 2,3 on GPU 1" test "$(binding)" = "0:$uuid0 1:$uuid0 2:$uuid1 3:$uuid1 "
check "one pipe directory, named after the Slurm job step" \
	test "$(grep -o "pipe=$U/exec-slurm-[0-9]*\.[0-9]*@testnode/mps/pipe" "$tmp/out" | sort -u | wc -l)" = 1
check "exactly one daemon started" test "$(($(starts) - before))" = 1
check "  stopped at the end" no_daemon_left
check "  job directory removed" test "$(job_dirs)" = 0
check "the shared-GPU warning, once" test "$(grep -c "NCCL cannot put two ranks" "$tmp/err")" = 1

echo "== srun -n 2: one rank per GPU"
sr -n 2 --gres=gpu:2 "$GPUSHARE" exec -- "$tmp/app-show.sh"
check "ranks 0 and 1 on GPUs 0 and 1" test "$(binding)" = "0:$uuid0 1:$uuid1 "
check "no NCCL warning" test "$(grep -c NCCL "$tmp/err" || true)" = 0

echo "== srun -n 3 --gres=gpu:1: Slurm's one GPU for all three"
sr -n 3 --gres=gpu:1 "$GPUSHARE" exec --strategy mps-split -- "$tmp/app-show.sh"
check "exit 0" test "$rc" = 0
check "all three on the one GPU Slurm gave" test "$(sed -n 's/^lr=[0-9]* cvd=\([^ ]*\) .*/\1/p' "$tmp/out" | sort -u | wc -l)" = 1
check "  a third of it each (mps-split)" test "$(grep -c 'pct=33$' "$tmp/out")" = 3
check "  daemon stopped" no_daemon_left

echo "== a rank fails, or is killed by a signal (srun -K ends the step)"
cat >"$tmp/app-crash.sh" <<'EOF'
#!/bin/bash
lr=$SLURM_LOCALID
touch "$(dirname "$0")/up-$lr"
if [ "$lr" = 1 ]; then
	while [ "$(ls "$(dirname "$0")" | grep -c '^up-')" -lt 4 ]; do sleep 0.05; done
	case $1 in
	exit) exit 3 ;;
	signal) kill -KILL $$ ;;
	esac
fi
sleep "${2:-20}"
EOF
chmod +x "$tmp/app-crash.sh"
for how in exit signal; do
	rm -f "$tmp"/up-*
	before=$(starts)
	t0=$(date +%s)
	# (the others sleep 20 s, or 5 s where srun -K may not end the step)
	secs=20
	[[ $how == signal ]] && secs=5
	sr -K -n 4 --gres=gpu:2 "$GPUSHARE" exec -- "$tmp/app-crash.sh" "$how" "$secs"
	check "rank 1 $how: srun fails (rc $rc)" test "$rc" != 0
	# srun -K ends the step at once on an exit status; a task killed by a
	# signal lets the others finish
	[[ $how == exit ]] && check "  the step ends within seconds" test $(($(date +%s) - t0)) -lt 15
	check "  one daemon for the step" test "$(($(starts) - before))" = 1
	check "  stopped" no_daemon_left
	check "  job directory removed" no_job_dir
	check "  no rank's program left" no_app_left
done

echo "== scancel of a batch job whose 4 ranks run"
cat >"$tmp/app-long.sh" <<'EOF'
#!/bin/bash
touch "$(dirname "$0")/up-$SLURM_LOCALID"
sleep 120
EOF
chmod +x "$tmp/app-long.sh"
rm -f "$tmp"/up-*
idle() { test -z "$(timeout 5 squeue -h 2>/dev/null)"; }
wait_for 300 0.1 idle || slurm_diag
before=$(starts)
jid=$(sbatch --parsable -n 4 --gres=gpu:2 -o "$tmp/job.out" --wrap "srun $GPUSHARE exec -- $tmp/app-long.sh")
up() { test "$(find "$tmp" -maxdepth 1 -name 'up-*' | wc -l)" = 4; }
check "job $jid: 4 ranks running" wait_for 600 0.1 up
up || { cat "$tmp/job.out" || true; slurm_diag "$jid"; }
check "  under one daemon" test "$(($(starts) - before)) $(daemons_alive)" = "1 1"
scancel "$jid"
check "scancel: the job ends" test "$(slurm_wait_job "$jid" 60)" = CANCELLED
check "  daemon stopped" no_daemon_left
check "  job directory removed" no_job_dir
check "  no rank's program left" no_app_left

echo "== examples/slurm/mpi.sbatch: 8 ranks under srun --mpi=pmix, 4 per GPU"
before=$(starts)
jid=$(cd "$tmp" && GPUSHARE=$GPUSHARE APP=$tmp/app-show.sh sbatch --parsable -o "$tmp/mpi.out" \
	"$GPUSHARE_SOURCE_DIR/examples/slurm/mpi.sbatch")
st=$(slurm_wait_job "$jid" 90 || true)
check "job $jid completed" test "$st" = COMPLETED || { cat "$tmp/mpi.out" || true; slurm_diag "$jid"; }
cp "$tmp/mpi.out" "$tmp/out"
check "8 ranks, block: 0-3 on GPU 0, 4-7 on GPU 1" \
	test "$(binding)" = "0:$uuid0 1:$uuid0 2:$uuid0 3:$uuid0 4:$uuid1 5:$uuid1 6:$uuid1 7:$uuid1 "
check "one daemon for the job" test "$(($(starts) - before))" = 1
check "  stopped" no_daemon_left
check "the shared-GPU warning, once" test "$(grep -c "NCCL cannot put two ranks" "$tmp/mpi.out")" = 1

echo "== nothing left"
check "no daemon of this test alive" test "$(daemons_alive)" = 0
check "no program of this test alive" no_app_left
check "no job directory, no lock file" test "$(job_entries)" = 0
finish "exec under Slurm"
