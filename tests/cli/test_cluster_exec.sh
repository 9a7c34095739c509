#!/usr/bin/env bash
# gpushare exec on a real two-node Slurm cluster (tests/cli/lib_cluster.sh:
# slurmctld and two slurmd, each node in namespaces of its own with its own
# host name, address, munged, node-local directory and two fake GPUs), with
# the stand-in NVML and MPS control program: `srun -N2 -n8 gpushare exec
# --strategy mps` starts exactly one MPS daemon on each node, each node's
# daemon is stopped after that node's last rank (while the other node's
# ranks still run), and so after scancel mid-job; after one node's rank is
# SIGKILLed they are stopped with the job or reaped by the next; no daemon, rank or job directory is left on any node, and
# nothing of the cluster is left on the machine.
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
cluster_needed "exec on a Slurm cluster"
t_start=$(date +%s)
if ! cluster_start 2; then
	fail "the two-node cluster did not become idle"
	finish
fi
ok "cluster of node1 and node2 idle in $(($(date +%s) - t_start)) s ($CLUSTER_DIR)"
# Ranks and their daemons keep their job directories in the node's own
# directory: the same path on every node, different files.
export XDG_RUNTIME_DIR=$CLUSTER_LOCAL/xdg

# sr ARGS...: srun ARGS on the head node (bounded); status in $rc, output in $tmp/out, $tmp/err
sr() {
	set +e
	cluster_exec ctl timeout 120 srun "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	set -e
}
# The daemon started on NODE: its line in the stand-in's log (pid, pipe directory)
daemon_of() { grep "@$1/mps/pipe$" "$tmp/starts" || true; }
daemon_alive_on() { # NODE: the daemon started on NODE runs
	local p d
	read -r p d <<<"$(daemon_of "$1")"
	[[ -n ${p-} ]] && alive_pid "$p" && tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "CUDA_MPS_PIPE_DIRECTORY=$d"
}
daemon_gone_on() { ! daemon_alive_on "$1"; }
# job directories (and lock files) of gpushare exec on NODE, or on every node
entries_on() { find "$(cluster_local "$1")/xdg/gpushare" -maxdepth 1 -name 'exec-*' 2>/dev/null | wc -l; }
entries_on_node1() { entries_on node1; }
entries_anywhere() { find "$CLUSTER_DIR"/nodes/node*/local/xdg/gpushare -maxdepth 1 -name 'exec-*' 2>/dev/null | wc -l; }
dirs_anywhere() { find "$CLUSTER_DIR"/nodes/node*/local/xdg/gpushare -maxdepth 1 -type d -name 'exec-*' 2>/dev/null | wc -l; }
no_dir_anywhere() { wait_for 100 0.1 is_zero dirs_anywhere; }
# node:local-rank:GPU of every rank that printed, sorted
binding() { sed -n 's/^node=\([^ ]*\) lr=\([0-9]*\) cvd=\([^ ]*\) .*/\1:\2:\3/p' "$tmp/out" | sort | tr '\n' ' '; }
u0=$uuid0 u1=$uuid1

# The ranks' program: says where it runs, leaves up-NODE-LR holding its
# gpushare's pid and its own, and (with "wait") waits until release-NODE exists (at
# most 60 s); node1's ranks do not wait unless told so.
cat >"$tmp/app-rank.sh" <<'EOF'
#!/bin/bash
d=$(dirname "$0") n=$SLURMD_NODENAME
echo "node=$n lr=$SLURM_LOCALID cvd=$CUDA_VISIBLE_DEVICES pipe=$CUDA_MPS_PIPE_DIRECTORY host=$(hostname)"
echo "$PPID $$" >"$d/up-$n-$SLURM_LOCALID"
case " $* " in *" wait-$n "*) for _ in $(seq 600); do [ -e "$d/release-$n" ] && break; sleep 0.1; done ;; esac
EOF
chmod +x "$tmp/app-rank.sh"
ups() { find "$tmp" -maxdepth 1 -name 'up-*' | wc -l; }
eight_up() { test "$(ups)" = 8; }
reset_flags() { rm -f "$tmp"/up-* "$tmp"/release-*; }
SR_RANKS=(-N2 --ntasks-per-node=4 -n8 --gres=gpu:2)

echo "== srun -N2 -n8 gpushare exec --strategy mps: node1's ranks end first"
reset_flags
before=$(starts)
t0=$(date +%s)
(sr "${SR_RANKS[@]}" "$GPUSHARE" exec --strategy mps -- "$tmp/app-rank.sh" wait-node2; echo "$rc" >"$tmp/rc") &
srun_pid=$!
check "all 8 ranks ran" wait_for 300 0.1 eight_up
check "  node1's daemon stopped after node1's last rank" wait_for 150 0.1 daemon_gone_on node1
check "  node1's job directory removed" wait_for 100 0.1 is_zero entries_on_node1
check "  while node2's daemon still serves node2's ranks" daemon_alive_on node2
check "  and node2's job directory is there" test "$(entries_on node2)" -ge 1
touch "$tmp/release-node2"
wait "$srun_pid" || true
rc=$(cat "$tmp/rc")
check "srun exit 0 (rc $rc)" test "$rc" = 0
[[ $rc == 0 ]] || cat "$tmp/err"
check "4 ranks per node, each node's local ranks round-robin over its 2 GPUs" test "$(binding)" = \
	"node1:0:$u0 node1:1:$u1 node1:2:$u0 node1:3:$u1 node2:0:$u0 node2:1:$u1 node2:2:$u0 node2:3:$u1 "
check "each rank on its own node (host name = Slurm's node name)" \
	test "$(grep -c 'node=\(node[12]\) .*host=\1$' "$tmp/out")" = 8
check "exactly one daemon per node: 2 started" test "$(($(starts) - before))" = 2
check "  one on node1, one on node2" test "$(daemon_of node1 | wc -l) $(daemon_of node2 | wc -l)" = "1 1"
check "each node's ranks on their node's daemon (one pipe directory per node, in the node's own directory)" \
	test "$(grep -o "pipe=$CLUSTER_LOCAL/xdg/gpushare/exec-slurm-[0-9]*\.[0-9]*@node[12]/mps/pipe" "$tmp/out" |
		sort | uniq -c | awk '{print $1}' | tr '\n' ' ')" = "4 4 "
check "the shared-GPU warning once for the whole job" test "$(grep -c "NCCL cannot put two ranks" "$tmp/err")" = 1
check "  both daemons stopped" no_daemon_left
check "  no job directory on any node" no_dir_anywhere
check "  no rank's program left" no_app_left
echo "   ($(($(date +%s) - t0)) s)"

echo "== scancel of a two-node batch job whose 8 ranks run"
reset_flags
before=$(starts)
t0=$(date +%s)
jid=$(cluster_exec ctl sbatch --parsable "${SR_RANKS[@]}" -o "$tmp/job.out" \
	--wrap "srun $GPUSHARE exec --strategy mps -- $tmp/app-rank.sh wait-node1 wait-node2")
check "job $jid: 8 ranks running" wait_for 300 0.1 eight_up
eight_up || { cat "$tmp/job.out"; cluster_exec ctl timeout 5 scontrol show job "$jid" || true; }
check "  one daemon on each node" test "$(($(starts) - before)) $(daemons_alive)" = "2 2"
cluster_exec ctl scancel "$jid"
check "scancel: the job ends CANCELLED" test "$(cluster_wait_job "$jid" 60)" = CANCELLED
check "  both daemons stopped" no_daemon_left
check "  no job directory on any node" no_dir_anywhere
check "  no rank's program left" no_app_left
echo "   ($(($(date +%s) - t0)) s)"

# A task killed by a signal makes srun end the step (here it SIGKILLs what
# is left of the step on the other node, with -K0 too): the killed rank's
# node keeps its daemon for its other ranks, while on the other node Slurm
# may kill the job's keeper with the ranks (proctrack/linuxproc kills the
# step's descendants), and the daemon there then stays until the next
# gpushare exec on that node reaps it (docs/exec.md, "Everything killed at
# once"). So: the daemons are stopped when the job ends, or by the next job.
echo "== one rank's gpushare on node2 is SIGKILLed mid-job"
reset_flags
before=$(starts)
t0=$(date +%s)
(sr "${SR_RANKS[@]}" "$GPUSHARE" exec --strategy mps -- "$tmp/app-rank.sh" wait-node1 wait-node2
	echo "$rc" >"$tmp/rc") &
srun_pid=$!
check "all 8 ranks ran" wait_for 300 0.1 eight_up
read -r victim victim_app <"$tmp/up-node2-1"
check "rank 1 of node2 is gpushare (pid $victim)" grep -q gpushare "/proc/$victim/cmdline"
kill -KILL "$victim"
gone() { ! alive_pid "$1"; }
check "  its program is gone with it" wait_for 100 0.1 gone "$victim_app"
touch "$tmp/release-node1" "$tmp/release-node2"
wait "$srun_pid" || true
rc=$(cat "$tmp/rc")
check "srun fails: a task was killed (rc $rc)" test "$rc" != 0
check "  one daemon per node" test "$(($(starts) - before))" = 2
check "  no rank's program left" no_app_left
wait_for 50 0.1 is_zero daemons_alive || true
left=$(daemons_alive)
echo "   (daemons left when the step ended: $left; node1's job directory: $(entries_on node1), node2's: $(entries_on node2))"
if [[ $left != 0 ]]; then
	# The next job on those nodes reaps them.
	sr -N2 --ntasks-per-node=1 -n2 --gres=gpu:2 "$GPUSHARE" exec --strategy mps -- true
	check "the next job (rc $rc) reaps the daemons left" no_daemon_left
else
	ok "  both daemons stopped with the job"
fi
check "  no job directory on any node" no_dir_anywhere
echo "   ($(($(date +%s) - t0)) s)"

echo "== nothing left"
check "no daemon of this test alive" test "$(daemons_alive)" = 0
check "no job directory, no lock file on any node" test "$(entries_anywhere)" = 0
check "no process on any node but slurmd and munged" cluster_idle_nodes 30
cluster_stop
check "cluster stopped: no namespace, link, mount or directory of it left" cluster_check_clean
echo "   (whole test $(($(date +%s) - t_start)) s)"
finish "exec on a Slurm cluster"
