#!/usr/bin/env bash
# `gpushare slurm env` prints lines a shell evals: a state directory whose
# path holds spaces or a quote still gives the task the prolog's daemon
# (each value one shell word), and nothing of the path is run.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_exec.sh"
# shellcheck source=tests/cli/lib_hooks.sh
. "$(dirname "$0")/lib_hooks.sh"

exec_setup
hook_state_dir q
state="$sd/a b'\$(>x)"
export GPUSHARE_SLURM_DIR=$state
cleanup_sd() {
	hook_epilogs 61
	rm -rf "$sd"
}

echo "== slurm env under a state directory with a space, a quote and \$(>x)"
rc=0
env -u CUDA_VISIBLE_DEVICES SLURM_JOB_ID=61 SLURM_JOB_UID="$me" SLURM_JOB_GID="$myg" CUDA_VISIBLE_DEVICES=1 \
	CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 "$GPUSHARE" slurm prolog >"$tmp/out" 2>&1 || rc=$?
check "the prolog of job 61: exit 0 ($(head -c 300 "$tmp/out"))" test "$rc" = 0
pipe=$state/mps-$me-$uuid1/pipe
check "  its daemon's pipe directory is there" test -d "$pipe"
rc=0
(cd "$sd" && env -u CUDA_VISIBLE_DEVICES -u SLURM_STEP_GPUS -u SLURM_JOB_GPUS SLURM_JOB_ID=61 SLURM_STEP_ID=0 \
	SLURM_LOCALID=0 SLURM_NTASKS_PER_NODE=1 SLURM_PROCID=0 SLURM_NTASKS=1 SLURM_NODEID=0 \
	CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 "$GPUSHARE" slurm env) >"$tmp/out" 2>"$tmp/err" || rc=$?
check "slurm env: exit 0 ($(head -c 300 "$tmp/err"))" test "$rc" = 0
# What a job script does with it: eval, then the variables hold the paths.
got=$(cd "$sd" && env -i PATH="$PATH" bash -c 'eval "$(cat "$1")" && printf "%s|%s|%s" \
	"$CUDA_VISIBLE_DEVICES" "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"' _ "$tmp/out" 2>&1) || true
check "eval sets the prolog's pipe and log directories as they are ($got)" \
	test "$got" = "$uuid1|$pipe|${pipe%/pipe}/log"
check "  and runs nothing of the path" test ! -e "$sd/x"
check "  each line is one export of one word" test "$(grep -c "^export [A-Z_]*=" "$tmp/out")" = 3

finish "slurm env quoted for the shell"
