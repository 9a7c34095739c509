#!/usr/bin/env bash
# Never outside Slurm's allocation, on a real two-node cluster
# (tests/cli/lib_cluster.sh) of 4 stand-in GPUs per node with
# GresTypes=gpu,mps,shard (where Slurm 22.05 gives gres/mps tasks no
# CUDA_VISIBLE_DEVICES) and `gpushare slurm prolog|epilog` as
# Prolog=/Epilog=: every rank of `srun -N2 --gres=mps:60 gpushare exec` and
# every job of a farm under gres/mps runs on the GPU Slurm gave its job
# (checked from the outside, against `scontrol show job -d`), under the
# prolog's daemon (one per GPU and user, none started by exec or farm), and
# nothing is left after scancel.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/cli/lib_cluster.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib_cluster.sh"
# shellcheck source=tests/cli/lib_exec.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib_exec.sh"

EXEC_CLEANUP_MORE=cluster_stop
exec_setup
chmod 755 "$tmp"
export FAKE_NVML_GPUS=4
if ! cluster_available; then
	missing_tool "slurm-wlm, munge, util-linux or iproute2 not installed (scripts/deps-test.txt), or no namespaces (not root)"
	finish "Slurm's allocation on a cluster"
	exit 0
fi
t_start=$(date +%s)
# The hooks slurmd runs (root, the job's environment only), written once
# the cluster's node-local directory is known: the state directory is
# node-local (the same path on each node, its own files).
write_hooks() {
	local h
	for h in prolog epilog; do
		cat >"$tmp/$h.sh" <<HOOK
#!/bin/bash
export GPUSHARE_NVML_LIBRARY=$GPUSHARE_NVML_LIBRARY FAKE_NVML_GPUS=4 GPUSHARE_MPS_CONTROL=$GPUSHARE_MPS_CONTROL
export FAKE_MPS_START_LOG=$FAKE_MPS_START_LOG GPUSHARE_SLURM_DIR=$CLUSTER_LOCAL/sd
echo "\$(date +%T.%N) \$SLURMD_NODENAME $h job \$SLURM_JOB_ID cvd=\${CUDA_VISIBLE_DEVICES-unset}" >>"$tmp/hooks.log"
exec "$GPUSHARE" slurm $h >>"$tmp/hooks.log" 2>&1
HOOK
		chmod +x "$tmp/$h.sh"
	done
}
printf '#!/bin/sh\nexit 0\n' >"$tmp/prolog.sh"
cp "$tmp/prolog.sh" "$tmp/epilog.sh"
chmod +x "$tmp/prolog.sh" "$tmp/epilog.sh"
if ! CLUSTER_SHARING=mps CLUSTER_GRES_EXTRA=shard CLUSTER_CONF_EXTRA="Prolog=$tmp/prolog.sh
Epilog=$tmp/epilog.sh" cluster_start 2 4; then
	fail "the two-node cluster did not become idle"
	finish
fi
ok "cluster of node1 and node2, 4 GPUs each, GresTypes=gpu,mps,shard, idle in $(($(date +%s) - t_start)) s"
export XDG_RUNTIME_DIR=$CLUSTER_LOCAL/xdg GPUSHARE_SLURM_DIR=$CLUSTER_LOCAL/sd
uuid() { printf 'GPU-fa4e0000-0000-4000-8000-%012x' "$1"; }

# What a rank or farm job says: node, job, GPU and pipe.
cat >"$tmp/app.sh" <<'APP'
#!/bin/sh
echo "node=$SLURMD_NODENAME job=$SLURM_JOB_ID cvd=${CUDA_VISIBLE_DEVICES-unset} pipe=${CUDA_MPS_PIPE_DIRECTORY-unset}" \
	>>"$(dirname "$0")/seen"
[ "${1-}" = wait ] && for _ in $(seq 600); do [ -e "$(dirname "$0")/release" ] && break; sleep 0.1; done
exit 0
APP
chmod +x "$tmp/app.sh"
: >"$tmp/seen"
# gpu_of JID NODE: the GPU index Slurm gave the job on NODE, as slurmd told
# the prolog (CUDA_VISIBLE_DEVICES, recorded by the hook's wrapper: Slurm's
# word, not gpushare's)
gpu_of() { sed -n "s/.* $2 prolog job $1 cvd=\([0-9]*\)$/\1/p" "$tmp/hooks.log" | head -1; }
lines_of() { grep -c " job=$1 " "$tmp/seen" || true; }
# wrong JID "NODES": lines of job JID on a GPU or pipe other than the one Slurm gave it on that node
wrong() {
	local j=$1 n g u p bad=0
	for n in $2; do
		g=$(gpu_of "$j" "$n")
		[[ -n $g ]] || { bad=$((bad + 1)); continue; }
		u=$(uuid "$g")
		p=$CLUSTER_LOCAL/sd/mps-$(id -u)-$u/pipe
		bad=$((bad + $(grep " job=$j " "$tmp/seen" | grep "^node=$n " | grep -vc " cvd=$u pipe=$p$" || true)))
	done
	echo "$bad"
}

echo "== without the prolog: Slurm names the tasks no GPU, and exec refuses rather than guess"
before=$(starts)
set +e
cluster_exec ctl timeout 120 srun -N2 --ntasks-per-node=2 --gres=mps:60 "$GPUSHARE" exec --strategy mps -- \
	"$tmp/app.sh" >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
check "srun fails (rc $rc), each of the 4 ranks saying Slurm named no GPU" \
	test "$rc" != 0 -a "$(grep -c 'named no GPU' "$tmp/err")" = 4
check "  no rank's program ran, no daemon started" test "$(grep -c . "$tmp/seen") $(($(starts) - before))" = "0 0"
write_hooks

echo "== two jobs of srun -N2 --gres=mps:60 gpushare exec: two GPUs per node, each job on its own"
before=$(starts)
j1=$(cluster_exec ctl sbatch --parsable -N2 --ntasks-per-node=2 --gres=mps:60 -o "$tmp/j1.out" \
	--wrap "srun $GPUSHARE exec --strategy mps -- $tmp/app.sh wait")
j2=$(cluster_exec ctl sbatch --parsable -N2 --ntasks-per-node=2 --gres=mps:60 -o "$tmp/j2.out" \
	--wrap "srun $GPUSHARE exec --strategy mps -- $tmp/app.sh wait")
four() { test "$(lines_of "$1")" = 4; }
check "job $j1: 4 ranks ran" wait_for 300 0.1 four "$j1"
check "job $j2: 4 ranks ran" wait_for 300 0.1 four "$j2"
g1=$(gpu_of "$j1" node1) g2=$(gpu_of "$j2" node1)
check "Slurm gave them different GPUs on node1 ($g1, $g2)" test -n "$g1" -a -n "$g2" -a "$g1" != "$g2"
check "Slurm gave the tasks no CUDA_VISIBLE_DEVICES (the case this test is for)" \
	cluster_exec ctl timeout 60 srun -N1 -n1 --gres=mps:10 sh -c 'test -z "${CUDA_VISIBLE_DEVICES+x}"'
check "every rank of job $j1 on its job's GPU, under the prolog's daemon ($(grep " job=$j1 " "$tmp/seen" | head -2 | tr '\n' ' '))" \
	test "$(wrong "$j1" "node1 node2")" = 0
check "every rank of job $j2 on its job's GPU, under the prolog's daemon" test "$(wrong "$j2" "node1 node2")" = 0
check "one daemon per GPU and user on each node: 4 (started by the prologs only)" \
	test "$(($(starts) - before)) $(daemons_alive)" = "4 4"
cluster_exec ctl scancel "$j1" "$j2"
check "scancel: job $j1 ends CANCELLED" test "$(cluster_wait_job "$j1" 60)" = CANCELLED
check "scancel: job $j2 ends CANCELLED" test "$(cluster_wait_job "$j2" 60)" = CANCELLED
check "  every daemon stopped (by the epilogs)" no_daemon_left
check "  no rank's program left" no_app_left
check "  no job record left on either node" \
	test "$(find "$CLUSTER_DIR"/nodes/node*/local/sd/jobs -type f 2>/dev/null | wc -l)" = 0

echo "== a farm under --gres=mps:25 runs all its jobs on Slurm's GPU"
rm -f "$tmp/release"
: >"$tmp/seen"
before=$(starts)
jb=$(cluster_exec ctl sbatch --parsable -N1 -w node1 --gres=mps:80 -o "$tmp/jb.out" --wrap "sleep 300")
running() { test "$(cluster_exec ctl squeue -h -j "$1" -o %T 2>/dev/null)" = RUNNING; }
check "a job holding mps:80 of one GPU of node1 runs" wait_for 300 0.1 running "$jb"
jf=$(cluster_exec ctl sbatch --parsable -N1 -w node1 --gres=mps:25 -o "$tmp/jf.out" \
	--wrap "$GPUSHARE farm --dir $tmp/farm --slots 2 --range 1..8 -- $tmp/app.sh")
check "the farm's job ends COMPLETED" test "$(cluster_wait_job "$jf" 300)" = COMPLETED
check "  all 8 farm jobs ran" test "$(lines_of "$jf")" = 8
check "  Slurm gave the farm another GPU than the holding job's ($(gpu_of "$jb" node1), $(gpu_of "$jf" node1))" \
	test -n "$(gpu_of "$jf" node1)" -a "$(gpu_of "$jf" node1)" != "$(gpu_of "$jb" node1)"
check "  every one on the farm job's GPU ($(gpu_of "$jf" node1)... seen: $(sed 's/.* cvd=//' "$tmp/seen" | sort | uniq -c | tr '\n' ' '))" \
	test "$(wrong "$jf" node1)" = 0
cluster_exec ctl scancel "$jb"
check "the holding job ends CANCELLED" test "$(cluster_wait_job "$jb" 60)" = CANCELLED
check "  exactly one daemon per job's GPU, none from the farm: 2" test "$(($(starts) - before))" = 2
check "  every daemon stopped" no_daemon_left

cluster_idle_nodes 30 || true
cluster_stop
check "cluster stopped: nothing of it left" cluster_check_clean
echo "   (whole test $(($(date +%s) - t_start)) s)"
finish "Slurm's allocation on a cluster"
