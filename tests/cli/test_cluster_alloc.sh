#!/usr/bin/env bash
# Never outside Slurm's allocation, on a real two-node cluster
# (tests/cli/lib_cluster.sh) of 4 stand-in GPUs per node with
# GresTypes=gpu,mps,shard (where Slurm 22.05 gives gres/mps tasks no
# CUDA_VISIBLE_DEVICES) and `gpushare slurm prolog|epilog` as
# Prolog=/Epilog=: every rank of `srun -N2 --gres=mps:60 gpushare exec` and
# every job of a farm under gres/mps runs on the GPU Slurm gave its job,
# under the prolog's daemon (one per GPU and user, none started by exec or
# farm), and nothing is left after scancel.
#
# Checked from the outside: each rank and farm job runs a CUDA program (the
# helper cuda_open on the stand-in libcuda), and the stand-in records which
# physical GPU each process opened, with its job, node and MPS pipe
# (FAKE_CUDA_OPEN_LOG, tests/helpers/libfakecuda.c); every opened GPU must
# be one `scontrol -d show job` says Slurm allocated that job on that node.
# A planted job that opens GPUs outside its allocation on purpose shows that
# the check catches it.
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
cluster_needed "Slurm's allocation on a cluster"
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
if ! CLUSTER_CPUS=12 CLUSTER_SHARING=mps CLUSTER_GRES_EXTRA=shard CLUSTER_CONF_EXTRA="Prolog=$tmp/prolog.sh
Epilog=$tmp/epilog.sh" cluster_start 2 4; then
	fail "the two-node cluster did not become idle"
	finish
fi
ok "cluster of node1 and node2, 4 GPUs each, GresTypes=gpu,mps,shard, idle in $(($(date +%s) - t_start)) s"
export XDG_RUNTIME_DIR=$CLUSTER_LOCAL/xdg GPUSHARE_SLURM_DIR=$CLUSTER_LOCAL/sd
# The jobs' CUDA programs (Slurm passes the environment on): the stand-in
# driver and its record of the GPUs each process opened.
export FAKE_CUDA_LIBRARY=$GPUSHARE_TEST_HELPERS/libfakecuda.so FAKE_CUDA_OPEN_LOG=$tmp/opened
: >"$tmp/opened"
uuid() { printf 'GPU-fa4e0000-0000-4000-8000-%012x' "$1"; }

# What a rank or farm job does: open its GPU as a CUDA program does (the
# stand-in records it), then say node, job, GPU and pipe.
cat >"$tmp/app.sh" <<APP
#!/bin/sh
"$GPUSHARE_TEST_HELPERS/cuda_open" >/dev/null || echo "cuda_open failed: job \$SLURM_JOB_ID" >>"$tmp/seen"
APP
cat >>"$tmp/app.sh" <<'APP'
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

# Slurm's word on where a job runs: alloc JID saves, while it runs, one
# "JOBID NODE GPU" line per GPU `scontrol -d show job` says it holds on each
# node (lib_cluster.sh; the fake GPUs' gres.conf order is their index)
alloc() {
	cluster_job_gpus "$1" >"$tmp/alloc-$1"
	test -s "$tmp/alloc-$1"
}
# opened JID: GPUs the job's processes opened, as the stand-in recorded them
opened() { grep -c " job=$1 " "$tmp/opened" || true; }
# outside JID: those opens on a GPU Slurm did not allocate the job on that node
outside() { cluster_opened_outside "$tmp/alloc-$1" "$tmp/opened"; }
# off_pipe JID: those opens not under the prolog's daemon of the GPU opened
off_pipe() {
	awk -v j="job=$1" -v pre="$CLUSTER_LOCAL/sd/mps-$(id -u)-" '
		$2 == j { split($5, u, "="); split($6, p, "="); if (p[2] != pre u[2] "/pipe") print }' "$tmp/opened"
}
# daemon_table: "NODE PIPE" of each MPS daemon alive (the stand-in control
# program's start log; a pid's node by its network namespace)
daemon_table() {
	local n p d pids
	for n in "${CLUSTER_NODES[@]}"; do
		pids=" $(cluster_pids "$n" | tr '\n' ' ') "
		while read -r p d; do
			[[ $pids == *" $p "* ]] && alive_pid "$p" &&
				tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "CUDA_MPS_PIPE_DIRECTORY=$d" && echo "$n $d"
		done <"$tmp/starts"
	done | sort
}
# want_daemons JID...: the daemons those jobs need, one per node, GPU and
# user: "NODE PIPE" of the prolog's daemon of each GPU Slurm allocated
want_daemons() {
	local j n g
	for j in "$@"; do
		while read -r _ n g; do echo "$n $CLUSTER_LOCAL/sd/mps-$(id -u)-$(uuid "$g")/pipe"; done <"$tmp/alloc-$j"
	done | sort -u
}
# nothing_left: no process of the jobs, no daemon, no job record and no
# daemon directory on any node
no_daemon_on_nodes() { test -z "$(daemon_table)"; }
nothing_left() {
	wait_for 300 0.1 no_daemon_on_nodes || { echo "   daemons left: $(daemon_table | tr '\n' ' ')"; return 1; }
	no_app_left || return 1
	local left
	left=$(find "$CLUSTER_DIR"/nodes/node*/local/sd -mindepth 1 \( -path '*/jobs/*' -o -name 'mps-*' \) 2>/dev/null)
	[[ -z $left ]] || { echo "   left: $left"; return 1; }
	cluster_idle_nodes 60
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

echo "== four jobs of srun -N2 --gres=mps:60 gpushare exec: spread over all 4 GPUs of each node"
before=$(starts)
js=()
for i in 1 2 3 4; do
	js+=("$(cluster_exec ctl sbatch --parsable -N2 --ntasks-per-node=2 --gres=mps:60 -o "$tmp/j$i.out" \
		--wrap "srun $GPUSHARE exec --strategy mps -- $tmp/app.sh wait")")
done
j1=${js[0]} j2=${js[1]}
four() { test "$(lines_of "$1")" = 4; }
# One deadline for the four (each failing one would wait its own).
all_four() { local j; for j in "${js[@]}"; do four "$j" || return 1; done; }
if ! wait_for 300 0.1 all_four; then
	echo "   the jobs' ranks did not all run; their hooks said: $(tail -n 12 "$tmp/hooks.log" | tr '\n' ';')"
	cluster_report "${js[@]}"
fi
for j in "${js[@]}"; do check "job $j: 4 ranks ran" four "$j"; done
g1=$(gpu_of "$j1" node1) g2=$(gpu_of "$j2" node1)
check "Slurm gave them different GPUs on node1 ($g1, $g2)" test -n "$g1" -a -n "$g2" -a "$g1" != "$g2"
check "Slurm gave the tasks no CUDA_VISIBLE_DEVICES (the case this test is for)" \
	cluster_exec ctl timeout 60 srun -N1 -n1 --gres=mps:10 sh -c 'test -z "${CUDA_VISIBLE_DEVICES+x}"'
check "every rank of job $j1 on its job's GPU, under the prolog's daemon ($(grep " job=$j1 " "$tmp/seen" | head -2 | tr '\n' ' '))" \
	test "$(wrong "$j1" "node1 node2")" = 0
for j in "${js[@]}"; do alloc "$j" || true; done
allocs=$(for j in "${js[@]}"; do echo "job $j: $(cut -d' ' -f2- "$tmp/alloc-$j" | tr '\n' ' ')"; done)
check "Slurm's allocations, by scontrol -d show job: $(tr '\n' ' ' <<<"$allocs")" \
	test "$(for j in "${js[@]}"; do wc -l <"$tmp/alloc-$j"; done | tr '\n' ' ')" = "2 2 2 2 "
check "  spread over all 8 GPUs of the two nodes" \
	test "$(cat "${js[@]/#/$tmp/alloc-}" | awk '{print $2, $3}' | sort -u | wc -l)" = 8
for j in "${js[@]}"; do
	check "from the outside: the 4 ranks of job $j opened 4 GPUs, all in its allocation, each under the prolog's daemon of that GPU (outside: $(outside "$j" | wc -l), off pipe: $(off_pipe "$j" | wc -l))" \
		test "$(opened "$j") $(outside "$j" | wc -l) $(off_pipe "$j" | wc -l)" = "4 0 0"
done
check "one daemon per GPU and user on each node: 8 (started by the prologs only)" \
	test "$(($(starts) - before)) $(daemons_alive)" = "8 8"
check "  exactly the prolog's daemons of the allocated GPUs, none twice ($(daemon_table | sed "s|$CLUSTER_LOCAL/sd/mps-||; s|/pipe||; s|GPU-fa4e0000-0000-4000-8000-0*\([0-9a-f]\)$|gpu\1|" | tr '\n' ' '))" \
	test "$(daemon_table)" = "$(want_daemons "${js[@]}")"

echo "== a planted violation: a job that opens GPUs outside its allocation is caught"
jp=$(cluster_exec ctl sbatch --parsable -N1 -w node2 --gres=mps:25 -o "$tmp/jp.out" \
	--wrap "for g in 0 1 2 3; do CUDA_VISIBLE_DEVICES=\$g $GPUSHARE_TEST_HELPERS/cuda_open; done; sleep 300")
four_opens() { test "$(opened "$1")" = 4; }
check "the planted job $jp opened all 4 GPUs of node2" wait_for 300 0.1 four_opens "$jp"
alloc "$jp" || true
check "  Slurm allocated it one ($(tr '\n' ' ' <"$tmp/alloc-$jp"))" test "$(wc -l <"$tmp/alloc-$jp")" = 1
check "  the check finds its 3 opens outside that allocation ($(outside "$jp" | awk '{print $3, $4}' | tr '\n' ' '))" \
	test "$(outside "$jp" | wc -l)" = 3
cluster_exec ctl scancel "$jp"
check "  scancel: ends CANCELLED" test "$(cluster_wait_job "$jp" 60)" = CANCELLED

cluster_exec ctl scancel "${js[@]}"
for j in "${js[@]}"; do check "scancel: job $j ends CANCELLED" test "$(cluster_wait_job "$j" 60)" = CANCELLED; done
check "  every daemon stopped (by the epilogs)" no_daemon_left
check "  nothing of the jobs left on either node: no process, daemon, job record or daemon directory" nothing_left

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
# The farm's job has ended: Slurm's word on its GPU is the one slurmd gave
# its prolog (recorded by the hook's wrapper).
echo "$jf node1 $(gpu_of "$jf" node1)" >"$tmp/alloc-$jf"
check "from the outside: the farm's 8 jobs opened 8 GPUs ($(opened "$jf"))" test "$(opened "$jf")" = 8
check "  all on the farm job's GPU $(gpu_of "$jf" node1) (outside it: $(outside "$jf" | awk '{print $4}' | sort | uniq -c | tr '\n' ' '))" \
	test -z "$(outside "$jf")"
check "  all under the prolog's daemon of that GPU" test -z "$(off_pipe "$jf")"
cluster_exec ctl scancel "$jb"
check "the holding job ends CANCELLED" test "$(cluster_wait_job "$jb" 60)" = CANCELLED
check "  exactly one daemon per job's GPU, none from the farm: 2" test "$(($(starts) - before))" = 2
check "  every daemon stopped" no_daemon_left
check "  nothing of the jobs left on node1" nothing_left

cluster_idle_nodes 30 || true
cluster_stop
check "cluster stopped: nothing of it left" cluster_check_clean
echo "   (whole test $(($(date +%s) - t_start)) s)"
finish "Slurm's allocation on a cluster"
