#!/usr/bin/env bash
# Slurm's shares of a GPU on a real two-node cluster (tests/cli/lib_cluster.sh)
# and what gpushare's ranks and jobs see of them, with the stand-in NVML and
# MPS control program: gres/mps (--gres=mps:50: Slurm sets
# CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 and CUDA_VISIBLE_DEVICES of one GPU in
# every task) and gres/shard (--gres=shard:2: SLURM_SHARDS_ON_NODE=2). Slurm
# 22.05 does not mix the two in one cluster (lib_cluster.sh), so each gets a
# cluster of its own.
#
# What Slurm sets, and what a rank under `gpushare exec` sees, is checked as
# it is today. Whether gpushare honours the share (a rank never gets more
# than gres/mps gave the job; a farm never runs more jobs at once than
# gres/shard gave it) is checked by the functions honours_gres_mps and
# honours_gres_shard.
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
cluster_needed "gres on a Slurm cluster"
t_start=$(date +%s)

# sr ARGS...: srun ARGS on the head node (bounded); status in $rc, output in $tmp/out, $tmp/err
sr() {
	set +e
	cluster_exec ctl timeout 120 srun "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	set -e
}
# A task's view: node, CUDA_VISIBLE_DEVICES, the MPS thread percentage and
# Slurm's shard count ("unset" when unset); under gpushare exec also its pipe.
cat >"$tmp/app-gres.sh" <<'EOF'
#!/bin/sh
echo "node=$SLURMD_NODENAME lr=$SLURM_LOCALID cvd=${CUDA_VISIBLE_DEVICES-unset} pct=${CUDA_MPS_ACTIVE_THREAD_PERCENTAGE-unset} shards=${SLURM_SHARDS_ON_NODE-unset} pipe=${CUDA_MPS_PIPE_DIRECTORY-unset}"
EOF
chmod +x "$tmp/app-gres.sh"
# field NAME: the values of NAME= in $tmp/out, one line per task, sorted
field() { sed -n "s/\(^\|.* \)$1=\([^ ]*\).*/\2/p" "$tmp/out" | sort | uniq -c | awk '{print $1 "x" $2}' | tr '\n' ' '; }
record() { # WHAT: keep what the tasks saw in the test's output
	echo "   $1:"
	sed 's/^/     /' "$tmp/out"
}
start_cluster() { # SHARING
	local t0
	t0=$(date +%s)
	if ! CLUSTER_SHARING=$1 cluster_start 2; then
		fail "the two-node cluster with gres/$1 did not become idle"
		finish
	fi
	ok "cluster of node1 and node2 with gres/$1 idle in $(($(date +%s) - t0)) s ($CLUSTER_DIR)"
	export XDG_RUNTIME_DIR=$CLUSTER_LOCAL/xdg
}
stop_cluster() {
	check "no process left on any node but slurmd and munged" cluster_idle_nodes 30
	cluster_stop
	check "cluster stopped: no namespace, link, mount or directory of it left" cluster_check_clean
}
TASKS=(-N2 --ntasks-per-node=2 -n4)
job_dirs_anywhere() { find "$CLUSTER_DIR"/nodes/node*/local/xdg/gpushare -maxdepth 1 -type d -name "exec-*" 2>/dev/null | wc -l; }

# The assertion that gpushare honours gres/mps: every rank of a job holding
# --gres=mps:50 gets at most 50 % of the GPU's threads (mps: each client at
# most the job's share; mps-split: the ranks on one GPU together at most it).
honours_gres_mps() {
	sr "${TASKS[@]}" --gres=mps:50 "$GPUSHARE" exec --strategy mps -- "$tmp/app-gres.sh"
	record "gres/mps:50, gpushare exec --strategy mps"
	check "honours gres/mps: exec --strategy mps exit 0" test "$rc" = 0
	# shellcheck disable=SC2016 # awk's own $0
	check "honours gres/mps: every rank at most 50 % (mps)" awk '
		/ pct=/ { n++; match($0, / pct=[^ ]*/); v = substr($0, RSTART + 5, RLENGTH - 5)
		          if (v !~ /^[0-9.]+$/ || v + 0 <= 0 || v + 0 > 50) bad++ }
		END { exit !(n == 4 && bad == 0) }' "$tmp/out"
	sr "${TASKS[@]}" --gres=mps:50 "$GPUSHARE" exec --strategy mps-split -- "$tmp/app-gres.sh"
	record "gres/mps:50, gpushare exec --strategy mps-split"
	check "honours gres/mps: exec --strategy mps-split exit 0" test "$rc" = 0
	# shellcheck disable=SC2016 # awk's own $0
	check "honours gres/mps: the 2 ranks of each node's GPU together at most 50 % (mps-split)" awk '
		/ pct=/ { n++; match($0, /node=[^ ]*/); node = substr($0, RSTART, RLENGTH)
		          match($0, / pct=[^ ]*/); v = substr($0, RSTART + 5, RLENGTH - 5)
		          if (v !~ /^[0-9.]+$/ || v + 0 <= 0) bad++; sum[node] += v }
		END { for (k in sum) if (sum[k] > 50) bad++; exit !(n == 4 && bad == 0) }' "$tmp/out"
	check "  daemons stopped" no_daemon_left
}

# The assertion that gpushare honours gres/shard: a farm in a job step that
# holds --gres=shard:2 refuses --slots 4 (above the share, said so, nothing
# run), and left to choose its slots runs at most 2 jobs at once on the node.
honours_gres_shard() {
	mkdir -p "$tmp/running"
	cat >"$tmp/job-conc.sh" <<'EOF'
#!/bin/sh
r=$(dirname "$0")/running
touch "$r/$1"
ls "$r" | wc -l >>"$(dirname "$0")/concurrency"
sleep 0.3
rm -f "$r/$1"
EOF
	chmod +x "$tmp/job-conc.sh"
	: >"$tmp/concurrency"
	sr -N1 -n1 -w node1 --gres=shard:2 "$GPUSHARE" farm --dir "$tmp/shardfarm4" --slots 4 --range 1..12 -- \
		"$tmp/job-conc.sh" "{}"
	check "honours gres/shard: --slots 4 under shard:2 refused naming the share (rc $rc)" \
		bash -c "test $rc = 2 && grep -q 'SLURM_SHARDS_ON_NODE=2' '$tmp/err' && test ! -s '$tmp/concurrency'"
	sr -N1 -n1 -w node1 --gres=shard:2 "$GPUSHARE" farm --dir "$tmp/shardfarm" --range 1..12 -- \
		"$tmp/job-conc.sh" "{}"
	check "honours gres/shard: the farm finished (rc $rc$( ((rc)) && echo ": $(head -c 400 "$tmp/err")"))" test "$rc" = 0
	check "honours gres/shard: 12 jobs, at most 2 at once (seen: $(sort -n "$tmp/concurrency" | tail -1))" \
		test "$(wc -l <"$tmp/concurrency")" = 12 -a "$(sort -n "$tmp/concurrency" | tail -1)" -le 2
}

echo "== gres/mps: a cluster whose nodes have 2 GPUs with mps:200 each"
start_cluster mps
sr "${TASKS[@]}" --gres=mps:50 "$tmp/app-gres.sh"
record "what Slurm sets (srun --gres=mps:50, no gpushare)"
check "srun exit 0" test "$rc" = 0
check "Slurm: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 in all 4 tasks" test "$(field pct)" = "4x50 "
check "Slurm: one GPU (CUDA_VISIBLE_DEVICES=0) in all 4 tasks" test "$(field cvd)" = "4x0 "
check "  on both nodes" test "$(field node)" = "2xnode1 2xnode2 "
before=$(starts)
sr "${TASKS[@]}" --gres=mps:50 "$GPUSHARE" exec --strategy mps -- "$tmp/app-gres.sh"
record "what the ranks see under gpushare exec --strategy mps (today)"
check "gpushare exec exit 0" test "$rc" = 0
check "  every rank on Slurm's GPU, by UUID" test "$(field cvd)" = "4x$uuid0 "
check "  one daemon per node" test "$(($(starts) - before))" = 2
check "  the thread percentage each rank sees is recorded: $(field pct)" test -n "$(field pct)"
check "  daemons stopped" no_daemon_left
check "  no job directory on any node" wait_for 100 0.1 is_zero job_dirs_anywhere
honours_gres_mps
stop_cluster

echo "== gres/shard: a cluster whose nodes have 2 GPUs with shard:8 each"
start_cluster shard
sr "${TASKS[@]}" --gres=shard:2 "$tmp/app-gres.sh"
record "what Slurm sets (srun --gres=shard:2, no gpushare)"
check "srun exit 0" test "$rc" = 0
check "Slurm: SLURM_SHARDS_ON_NODE=2 in all 4 tasks" test "$(field shards)" = "4x2 "
check "Slurm: one GPU (CUDA_VISIBLE_DEVICES=0) in all 4 tasks" test "$(field cvd)" = "4x0 "
check "Slurm: no MPS thread percentage" test "$(field pct)" = "4xunset "
sr "${TASKS[@]}" --gres=shard:2 "$GPUSHARE" exec --strategy mps -- "$tmp/app-gres.sh"
record "what the ranks see under gpushare exec --strategy mps (today)"
check "gpushare exec exit 0" test "$rc" = 0
check "  every rank on Slurm's GPU, by UUID" test "$(field cvd)" = "4x$uuid0 "
check "  every rank still sees SLURM_SHARDS_ON_NODE=2" test "$(field shards)" = "4x2 "
check "  daemons stopped" no_daemon_left
check "  no job directory on any node" wait_for 100 0.1 is_zero job_dirs_anywhere
honours_gres_shard
stop_cluster

echo "== nothing left"
check "no daemon of this test alive" test "$(daemons_alive)" = 0
check "no program of this test alive" no_app_left
echo "   (whole test $(($(date +%s) - t_start)) s)"
finish "gres on a Slurm cluster"
