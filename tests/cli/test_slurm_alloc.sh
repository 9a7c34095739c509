#!/usr/bin/env bash
# Never outside Slurm's allocation, and hooks that never drain a node for
# gpushare's sake, by hand (no slurmd; the stand-in NVML with two GPUs and
# the stand-in MPS control program; Slurm's environment as slurmd gives it):
#  - a job step holding gres/mps with no CUDA_VISIBLE_DEVICES (Slurm 22.05
#    with GresTypes=gpu,mps,shard, seen in tests/cli/test_cluster_alloc.sh)
#    takes its GPU from SLURM_STEP_GPUS / SLURM_JOB_GPUS, else from the
#    prolog's record of the job, else is refused: exec and farm never use a
#    GPU Slurm did not give, and join the prolog's daemon (no second one);
#    `gpushare slurm env` prints what a plain CUDA program needs;
#  - the prolog creates a missing --hpc-job-mapping-dir; a job holding no
#    gres/mps never fails in the prolog (a mapping that cannot be written is
#    a warning), nor does the epilog for the mapping's sake.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_exec.sh"
# shellcheck source=tests/cli/lib_hooks.sh
. "$(dirname "$0")/lib_hooks.sh"

exec_setup
hook_state_dir a
export GPUSHARE_SLURM_DIR=$sd/s
cleanup_sd() {
	hook_epilogs 51 52 53 56
	rm -rf "$sd"
}
said() { head -c 400 "$tmp/out" | tr '\n' ' '; }

# hook ACTION JOB [VAR=VALUE...] [OPTION...]: a hook with Slurm's prolog
# environment (the job's user: this one); rc and $tmp/out hold its exit and
# output.
hook() {
	local action=$1 job=$2 vars=()
	shift 2
	while [[ $# -gt 0 && $1 == *=* ]]; do vars+=("$1"); shift; done
	rc=0
	env -u CUDA_VISIBLE_DEVICES -u CUDA_MPS_ACTIVE_THREAD_PERCENTAGE SLURM_JOB_ID="$job" SLURM_JOB_UID="$me" \
		SLURM_JOB_GID="$myg" "${vars[@]}" "$GPUSHARE" slurm "$action" "$@" >"$tmp/out" 2>&1 || rc=$?
}

echo "== the prolog and the job mapping: never a drained node"
map=$sd/map
hook prolog 51 CUDA_VISIBLE_DEVICES=1 --hpc-job-mapping-dir "$map"
check "a missing --hpc-job-mapping-dir (a reboot emptied /run) is created: exit 0 ($(said))" \
	test "$rc $(tr '\n' , <"$map/1" 2>/dev/null)" = "0 51,"
hook epilog 51 --hpc-job-mapping-dir "$map"
check "  the epilog removes the job (exit $rc)" test "$rc $(ls "$map" | wc -l)" = "0 0"
rm -rf "$map"
hook epilog 51 --hpc-job-mapping-dir "$map"
check "an epilog with the directory gone: exit 0, nothing said ($(said))" test "$rc $(grep -c . "$tmp/out")" = "0 1"
: >"$sd/file"
hook prolog 52 CUDA_VISIBLE_DEVICES=0 --hpc-job-mapping-dir "$sd/file/map"
check "a whole-GPU job whose mapping cannot be written: exit 0 ($(said))" test "$rc" = 0
check "  the cause said on stderr (slurmd logs it): one warning naming the directory" \
	test "$(grep -c "warning: job 52: the job mapping was not written: cannot create --hpc-job-mapping-dir '$sd/file/map'" "$tmp/out")" = 1
hook prolog 52 CUDA_VISIBLE_DEVICES=0 FAKE_NVML_INIT_ERROR=999 --hpc-job-mapping-dir "$map"
check "a whole-GPU job whose GPUs NVML cannot name: exit 0, a warning ($(said))" \
	test "$rc $(grep -c 'warning: job 52: the job mapping was not written' "$tmp/out")" = "0 1"
hook epilog 52 --hpc-job-mapping-dir "$sd/file/map"
check "  its epilog: exit 0 ($(said))" test "$rc" = 0

# step JOB [VAR=VALUE...] -- CMD...: CMD as local rank 1 of 2 of a job step
# holding gres/mps:50 on this node, with no CUDA_VISIBLE_DEVICES (what Slurm
# gives with GresTypes=gpu,mps,shard); rc, $tmp/out and $tmp/err.
step() {
	local job=$1
	shift
	local vars=()
	while [[ $1 != -- ]]; do vars+=("$1"); shift; done
	shift
	rc=0
	env -u CUDA_VISIBLE_DEVICES -u SLURM_STEP_GPUS -u SLURM_JOB_GPUS SLURM_JOB_ID="$job" SLURM_STEP_ID=0 \
		SLURM_LOCALID=1 SLURM_NTASKS_PER_NODE=2 SLURM_PROCID=1 SLURM_NTASKS=2 SLURM_NODEID=0 \
		CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 "${vars[@]}" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
}
jq_() { python3 -c "import json,sys; d=json.load(open('$tmp/out')); print($1)" 2>/dev/null || echo "?"; }

echo "== exec: a gres/mps step that Slurm named no GPU"
step 53 -- "$GPUSHARE" exec --dry-run --json
check "no SLURM_*_GPUS, no prolog record: refused, exit 7 ($(head -c 300 "$tmp/err"))" \
	test "$rc $(grep -c "named no GPU" "$tmp/err")" = "7 1"
check "  saying that every GPU of the node is not taken" grep -q "refusing to take every GPU of the node" "$tmp/err"
step 53 SLURM_STEP_GPUS=1 -- "$GPUSHARE" exec --dry-run --json
check "SLURM_STEP_GPUS=1: the rank on GPU 1 only ($(jq_ 'd["gpu"]["uuid"], d["usable_gpus"]'))" \
	test "$rc $(jq_ 'd["gpu"]["uuid"], d["usable_gpus"]')" = "0 $uuid1 1"
step 53 SLURM_JOB_GPUS=1 -- "$GPUSHARE" exec --dry-run --json
check "SLURM_JOB_GPUS=1: the same" test "$rc $(jq_ 'd["gpu"]["uuid"], d["usable_gpus"]')" = "0 $uuid1 1"

# The prolog of job 53 saw Slurm's GPU 1 (slurmd gives the prolog
# CUDA_VISIBLE_DEVICES even where it gives the tasks none).
before=$(starts)
hook prolog 53 CUDA_VISIBLE_DEVICES=1 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50
check "the prolog of job 53 (GPU 1): one daemon ($(said))" test "$rc $(($(starts) - before))" = "0 1"
pipe=$sd/s/mps-$me-$uuid1/pipe
check "  its record readable by the job's user, no listing of others" \
	test "$(stat -c %a "$sd/s/jobs") $(stat -c %a "$sd/s/jobs/53")" = "711 644"
step 53 -- "$GPUSHARE" exec --dry-run --json
check "exec: the rank on the prolog's GPU 1 ($(jq_ 'd["gpu"]["uuid"], d["usable_gpus"]'))" \
	test "$rc $(jq_ 'd["gpu"]["uuid"], d["usable_gpus"]')" = "0 $uuid1 1"
check "  joining the prolog's daemon ($(jq_ 'd["daemon"]["source"], d["daemon"]["pipe_dir"]'))" \
	test "$(jq_ 'd["daemon"]["source"], d["daemon"]["pipe_dir"]')" = "prolog $pipe"
before=$(starts)
step 53 -- "$GPUSHARE" exec -- "$tmp/app-show.sh"
check "exec runs the rank: on GPU 1, under the prolog's daemon ($(head -c 200 "$tmp/out"))" \
	test "$rc $(cat "$tmp/out")" = "0 lr=1 cvd=$uuid1 pipe=$pipe pct=50"
check "  no second daemon" test "$(($(starts) - before))" = 0

echo "== gpushare slurm env: what a plain CUDA program needs"
step 53 -- "$GPUSHARE" slurm env
check "job 53: exit 0, the task's GPU and the prolog's daemon ($(tr '\n' ' ' <"$tmp/out"; head -c 200 "$tmp/err"))" \
	test "$rc $(tr '\n' ' ' <"$tmp/out")" = \
	"0 export CUDA_VISIBLE_DEVICES=$uuid1 export CUDA_MPS_PIPE_DIRECTORY=$pipe export CUDA_MPS_LOG_DIRECTORY=${pipe%/pipe}/log "
step 53 CUDA_VISIBLE_DEVICES=1 -- "$GPUSHARE" slurm env
check "  with Slurm's CUDA_VISIBLE_DEVICES: only the daemon's lines" \
	test "$rc $(tr '\n' ' ' <"$tmp/out")" = \
	"0 export CUDA_MPS_PIPE_DIRECTORY=$pipe export CUDA_MPS_LOG_DIRECTORY=${pipe%/pipe}/log "
step 54 -- "$GPUSHARE" slurm env
check "job 54 (no record, no SLURM_*_GPUS): exit 7, nothing on stdout" \
	test "$rc $(wc -c <"$tmp/out") $(grep -c 'named no GPU' "$tmp/err")" = "7 0 1"
step 54 CUDA_VISIBLE_DEVICES=0 -- "$GPUSHARE" slurm env
check "job 54 on GPU 0 without the prolog's daemon: exit 5, naming it ($(head -c 200 "$tmp/err"))" \
	test "$rc $(wc -c <"$tmp/out") $(grep -c "the prolog's MPS daemon is not there" "$tmp/err")" = "5 0 1"
rc=0
env -u CUDA_MPS_ACTIVE_THREAD_PERCENTAGE SLURM_JOB_ID=55 CUDA_VISIBLE_DEVICES=0 "$GPUSHARE" slurm env >"$tmp/out" 2>&1 || rc=$?
check "a whole-GPU job: nothing to set, exit 0" test "$rc $(wc -c <"$tmp/out")" = "0 0"
rc=0
env -u SLURM_JOB_ID "$GPUSHARE" slurm env >"$tmp/out" 2>&1 || rc=$?
check "outside Slurm: exit 2" test "$rc" = 2

echo "== farm: a gres/mps job that Slurm named no GPU"
printf '%s\n' '#!/bin/sh' 'echo "job=$1 cvd=$CUDA_VISIBLE_DEVICES pipe=$CUDA_MPS_PIPE_DIRECTORY" >>"$(dirname "$0")/farm.out"' \
	>"$tmp/app-farm.sh"
chmod +x "$tmp/app-farm.sh"
before=$(starts)
step 53 -- "$GPUSHARE" farm --dir "$tmp/f1" --slots 2 --range 1..6 -- "$tmp/app-farm.sh" "{}"
check "farm exit 0 ($(head -c 300 "$tmp/err"))" test "$rc" = 0
# (rank 1 of 2: the farm runs its shard, jobs 2, 4 and 6)
check "  its 3 jobs on the prolog's GPU 1, under its daemon ($(sort "$tmp/farm.out" | tr '\n' ' ' | head -c 300))" \
	test "$(sed 's/^job=[0-9]* //' "$tmp/farm.out" | sort | uniq -c | awk '{print $1, $2, $3}')" = \
	"3 cvd=$uuid1 pipe=$pipe"
check "  no second daemon" test "$(($(starts) - before))" = 0
check "  the prolog's daemon still runs" test "$(daemons_alive)" = 1
rm -f "$tmp/farm.out"
step 54 -- "$GPUSHARE" farm --dir "$tmp/f2" --slots 2 --range 1..2 -- "$tmp/app-farm.sh" "{}"
check "farm of a job without record or SLURM_*_GPUS: refused, exit 7, nothing run ($(head -c 200 "$tmp/err"))" \
	test "$rc $(grep -c 'named no GPU' "$tmp/err") $(test -e "$tmp/farm.out" && echo ran || echo none)" = "7 1 none"

hook epilog 53
check "the epilog of job 53 stops the daemon" no_daemon_left

echo "== farm: a gres/mps job of two GPUs joins the prolog's daemon of each"
before=$(starts)
hook prolog 56 CUDA_VISIBLE_DEVICES=0,1 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25
check "the prolog of job 56 (GPUs 0 and 1): two daemons ($(said))" test "$rc $(($(starts) - before))" = "0 2"
rm -f "$tmp/farm.out"
before=$(starts)
step 56 SLURM_LOCALID=0 SLURM_PROCID=0 SLURM_NTASKS=1 SLURM_NTASKS_PER_NODE=1 -- \
	"$GPUSHARE" farm --dir "$tmp/f3" --slots 2 --range 1..8 -- "$tmp/app-farm.sh" "{}"
check "farm exit 0 ($(head -c 300 "$tmp/err"))" test "$rc" = 0
p0=$sd/s/mps-$me-$uuid0/pipe p1=$sd/s/mps-$me-$uuid1/pipe
seen=$(sed 's/^job=[0-9]* //' "$tmp/farm.out" | sort | uniq -c | awk '{print $2, $3}' | tr '\n' ' ')
check "  its 8 jobs on both GPUs, each under the prolog's daemon of its GPU ($seen)" \
	test "$(wc -l <"$tmp/farm.out") $seen" = "8 cvd=$uuid0 pipe=$p0 cvd=$uuid1 pipe=$p1 "
check "  no second daemon" test "$(($(starts) - before))" = 0
check "  the prolog's two daemons still run" test "$(daemons_alive)" = 2
for lr in 0 1; do
	step 56 SLURM_LOCALID=$lr SLURM_PROCID=$lr -- "$GPUSHARE" exec --strategy mps -- "$tmp/app-show.sh"
	check "exec, local rank $lr of the same job: on GPU $lr, under the prolog's daemon of that GPU ($(head -c 200 "$tmp/out"))" \
		grep -q "cvd=$(eval echo "\$uuid$lr") pipe=$(eval echo "\$p$lr") " "$tmp/out"
done
check "  no second daemon" test "$(($(starts) - before))" = 0
hook epilog 56
check "the epilog of job 56 stops both" no_daemon_left
finish "never outside Slurm's allocation"
