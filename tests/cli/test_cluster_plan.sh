#!/usr/bin/env bash
# `gpushare plan --for slurm` applied as written, on a private two-node
# cluster (tests/cli/lib_cluster.sh) of 4 stand-in GPUs per node with
# GresTypes=gpu,mps,shard: the site's slurm.conf (one NodeName line for the
# nodes, no gres of its own) goes through `plan --slurm-conf`, and the
# merged slurm.conf, gres.conf and the hooks are installed unedited. Then
# the gres/mps jobs the plan describes (job-mps.sh, twice: one job per GPU
# of the two nodes) are submitted: all eight run at once, one on each GPU
# (Flags=all_sharing; without it Slurm stacks them on GPU 0), the prolog
# starts one MPS daemon per GPU and user, and after scancel the epilogs
# leave no daemon, no job record and no process on the nodes. Every farm
# job opens its GPU through the stand-in driver, which records the physical
# GPU: each must be the one `scontrol -d show job` says its task holds.
#
# The hooks run `--gpushare-path`, here a stand-in for the installed
# gpushare that adds the stand-in NVML and MPS control program (slurmd
# gives the hooks no environment of its own).
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/cli/lib_cluster.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib_cluster.sh"

: "${GPUSHARE:?}" "${GPUSHARE_TEST_HELPERS:?}" "${GPUSHARE_SOURCE_DIR:?}"
H=$GPUSHARE_TEST_HELPERS
FIX=$GPUSHARE_SOURCE_DIR/tests/plan
cluster_needed "plan on a Slurm cluster"
tmp=$(mktemp -d /tmp/gpushare-cplan.XXXXXX)
chmod 755 "$tmp"
jids=()
cleanup() {
	local j
	for j in "${jids[@]}"; do cluster_exec ctl scancel "$j" 2>/dev/null || true; done
	cluster_stop
	rm -rf "$tmp"
}
trap cleanup EXIT
private_xdg
NGPUS=4
export GPUSHARE_NVML_LIBRARY=$H/libfakenvml.so FAKE_NVML_GPUS=$NGPUS GPUSHARE_MPS_CONTROL=$H/fake_mps_control
unset CUDA_VISIBLE_DEVICES CUDA_MPS_PIPE_DIRECTORY

# The site's slurm.conf: the cluster's, with its nodes on one NodeName line
# and no gres but the GPUs' types; then the plan, installed as written.
apply_plan() {
	local D=$CLUSTER_DIR
	mkdir -p "$tmp/site" "$D/hooks"
	# The installed gpushare of a node, as the hooks call it (slurmd gives
	# them no environment): the stand-ins, and node-local state (the
	# prolog's daemons, a log of their starts).
	cat >"$tmp/gpushare-node" <<EOF
#!/bin/bash
export GPUSHARE_NVML_LIBRARY=$GPUSHARE_NVML_LIBRARY FAKE_NVML_GPUS=$NGPUS GPUSHARE_MPS_CONTROL=$GPUSHARE_MPS_CONTROL
export GPUSHARE_SLURM_DIR=$CLUSTER_LOCAL/s FAKE_MPS_START_LOG=$CLUSTER_LOCAL/mps-starts
echo "\$(date +%T.%N) \$(hostname) \$* job \$SLURM_JOB_ID" >>"$tmp/hooks.log"
exec "$GPUSHARE" "\$@" >>"$tmp/hooks.log" 2>&1
EOF
	chmod 755 "$tmp/gpushare-node"
	awk -v net="$CLUSTER_SUBNET" '
		/^NodeName=node1 / { print "NodeName=node[1-2] NodeHostname=node[1-2] NodeAddr=" net ".1[1-2] CPUs=8 RealMemory=2000 State=UNKNOWN"; next }
		/^NodeName=/ { next }
		/^GresTypes=/ { print "GresTypes=gpu,mps,shard"; next }
		{ print }' "$D/slurm.conf" >"$tmp/site/slurm.conf"
	"$GPUSHARE" plan "$FIX/mps-h100" --for slurm --nodes 'node[1-2]' --gpus-per-node "$NGPUS" \
		--device-file "$CLUSTER_LOCAL/dev/gpu[0-$((NGPUS - 1))]" --hook-dir "$D/hooks" --gpushare-path "$tmp/gpushare-node" \
		--slurm-conf "$tmp/site/slurm.conf" --out "$tmp/plan" 2>"$tmp/plan.err" || { cat "$tmp/plan.err" >&2; return 1; }
	cp "$tmp/plan/slurm.conf" "$D/slurm.conf"
	cp "$tmp/plan/gres.conf" "$D/gres.conf"
	cp -p "$tmp/plan/gpushare-prolog.sh" "$tmp/plan/gpushare-epilog.sh" "$D/hooks/"
}

echo "== the plan, installed as written"
t0=$(date +%s)
if ! CLUSTER_SHARING=mps CLUSTER_CONF_HOOK=apply_plan cluster_start 2 "$NGPUS"; then
	cat "$tmp/plan.err" 2>/dev/null || true
	fail "the cluster did not become idle with the plan's files"
	finish "plan on a Slurm cluster"
fi
ok "node1 and node2 idle with the plan's slurm.conf, gres.conf and hooks in $(($(date +%s) - t0)) s ($CLUSTER_DIR)"
check "installed unedited: slurm.conf and gres.conf are the plan's" \
	bash -c "cmp -s '$tmp/plan/slurm.conf' '$CLUSTER_DIR/slurm.conf' && cmp -s '$tmp/plan/gres.conf' '$CLUSTER_DIR/gres.conf'"
export XDG_RUNTIME_DIR=$CLUSTER_LOCAL/xdg GPUSHARE_SLURM_DIR=$CLUSTER_LOCAL/s
node=$(cluster_exec ctl scontrol show node node1)
check "node1 offers 4 GPUs and 400 mps units ($(grep -o 'Gres=[^ ]*' <<<"$node"))" \
	grep -qE "Gres=gpu:h100:4[^ ]*,mps:(h100:)?400" <<<"$node"

echo "== the gres/mps jobs of job-mps.sh, one per GPU"
# Each farm job opens its GPU as a CUDA program does: the stand-in driver
# records which physical GPU (tests/helpers/libfakecuda.c, FAKE_CUDA_OPEN_LOG).
export FAKE_CUDA_LIBRARY=$H/libfakecuda.so FAKE_CUDA_OPEN_LOG=$tmp/opened
: >"$tmp/opened"
cat >"$tmp/app.sh" <<'EOF'
#!/bin/bash
d=$(dirname "$0")
"$GPUSHARE_TEST_HELPERS/cuda_open" >/dev/null
echo "job=${SLURM_ARRAY_JOB_ID}_$SLURM_ARRAY_TASK_ID node=$SLURMD_NODENAME pipe=${CUDA_MPS_PIPE_DIRECTORY-unset}" >"$d/up-$SLURM_ARRAY_JOB_ID-$SLURM_ARRAY_TASK_ID-$1"
for ((i = 0; i < 1200; i++)); do sleep 0.5; done
EOF
chmod 755 "$tmp/app.sh"
for i in 1 2 3 4; do echo "$tmp/app.sh $i"; done >"$tmp/jobs.txt"
cd "$tmp"
for n in 1 2; do
	jids+=("$(cluster_exec ctl sbatch --parsable -o "$tmp/mps-%A_%a.out" "$tmp/plan/job-mps.sh" "$tmp/jobs.txt" "$tmp/farm-$n")")
done
ok "submitted ${jids[*]} (job-mps.sh twice, $(grep -c '^#SBATCH --array=0-3' "$tmp/plan/job-mps.sh") array of 4 each)"
running() { cluster_exec ctl squeue -h -t RUNNING -o %i 2>/dev/null | wc -l; }
all_running() { test "$(running)" -eq 8; }
check "all 8 gres/mps jobs run at once" wait_for 600 0.1 all_running
# Where Slurm put each: node and the index of its mps gres (scontrol -d).
gpus=$(for j in "${jids[@]}"; do
	cluster_exec ctl scontrol -d show job "$j" 2>/dev/null |
		sed -n 's/^ *Nodes=\([^ ]*\) .*GRES=mps:[0-9]*(IDX:\([0-9-]*\)).*/\1:\2/p'
done | sort)
check "spread over all 8 GPUs of the two nodes ($(tr '\n' ' ' <<<"$gpus"))" \
	test "$(sort -u <<<"$gpus" | wc -l)" -eq 8
tasks_opened() { awk '{print $2}' "$tmp/opened" | sort -u | wc -l; }
all_opened() { test "$(tasks_opened)" -eq 8; }
check "from the outside: the farm jobs of all 8 tasks opened a GPU" wait_for 600 0.1 all_opened
cluster_job_gpus "${jids[@]}" >"$tmp/alloc"
outside=$(cluster_opened_outside "$tmp/alloc" "$tmp/opened")
check "  each of the $(wc -l <"$tmp/opened") opens on the GPU Slurm gave its task on its node (scontrol -d; outside: $(grep -c . <<<"$outside"))" \
	test "$(wc -l <"$tmp/alloc") ${outside:-none}" = "8 none"
off=$(awk -v pre="$CLUSTER_LOCAL/s/mps-$(id -u)-" '{ split($5, u, "="); split($6, p, "="); if (p[2] != pre u[2] "/pipe") print }' "$tmp/opened")
check "  each under the prolog's daemon of that GPU" test -z "$off"
daemons() { # NODE: the live MPS daemons the prolog started there, and their pipe directories
	local L p d
	L=$(cluster_local "$1")
	[[ -s $L/mps-starts ]] || return 0
	while read -r p d; do
		kill -0 "$p" 2>/dev/null && echo "$d"
	done <"$L/mps-starts"
}
four_daemons() { test "$(daemons node1 | wc -l) $(daemons node2 | wc -l)" = "4 4"; }
check "the prologs started one MPS daemon per GPU and user: 4 on each node" wait_for 600 0.1 four_daemons ||
	{ echo "   the hooks said:"; tail -n 20 "$tmp/hooks.log" | sed 's/^/     /'; }
distinct() { daemons "$1" | sort -u | wc -l; }
check "  each for its own GPU: 4 distinct on each node" test "$(distinct node1) $(distinct node2)" = "4 4"
pipes=$( (daemons node1; daemons node2) | sed 's|/pipe$||; s|.*/||')
check "  each named for this user and its GPU ($(sort -u <<<"$pipes" | tr '\n' ' '))" \
	test "$(grep -c "^mps-$(id -u)-GPU-" <<<"$pipes")" -eq 8

echo "== scancel: nothing left"
for j in "${jids[@]}"; do cluster_exec ctl scancel "$j" || true; done
none_running() { test "$(cluster_exec ctl squeue -h 2>/dev/null | wc -l)" -eq 0; }
check "every job gone from the queue" wait_for 600 0.1 none_running
no_daemons() { test -z "$(daemons node1)$(daemons node2)"; }
check "the epilogs stopped every daemon" wait_for 300 0.1 no_daemons
no_records() {
	test -z "$(find "$(cluster_local node1)/s/jobs" "$(cluster_local node2)/s/jobs" -mindepth 1 2>/dev/null)"
}
check "  and left no job record" wait_for 100 0.1 no_records
check "no process left on any node but slurmd and munged" cluster_idle_nodes 60
states=$(cluster_exec ctl sinfo -h -N -o '%T' | sort -u | tr '\n' ' ')
check "no node drained by a hook (node states: $states)" test "$states" = "idle "
jids=()
cluster_stop
check "cluster stopped: nothing of it left" cluster_check_clean
finish "plan on a Slurm cluster"
