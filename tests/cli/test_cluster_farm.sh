#!/usr/bin/env bash
# gpushare farm shards over the two nodes of a real Slurm cluster
# (tests/cli/lib_cluster.sh), with the stand-in NVML and MPS control program:
# examples/slurm/farm.sbatch with -N2 (one task and shard per node, all of
# the node's GPUs, one private MPS daemon per node), a resubmission that
# resumes both shards, and examples/slurm/farm-array.sbatch as a 2-element
# array of whole nodes; `gpushare farm status` merges the shard directories
# of both nodes. Every job runs exactly once; no farm, daemon or job
# directory is left on any node, and nothing of the cluster on the machine.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/cli/lib_cluster.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib_cluster.sh"

: "${GPUSHARE:?}" "${GPUSHARE_TEST_HELPERS:?}" "${GPUSHARE_SOURCE_DIR:?}"
H=$GPUSHARE_TEST_HELPERS
EX=$GPUSHARE_SOURCE_DIR/examples/slurm
tmp=$(mktemp -d /tmp/gpushare-cluster-farm.XXXXXX)
chmod 755 "$tmp"
trap 'cluster_stop; rm -rf "$tmp"' EXIT
cluster_needed "farm on a Slurm cluster"
# Jobs and gpushare inherit this environment through sbatch (--export=ALL).
# Each node has GPUs of its own: GPU-fa4e0000-000X-4000-8000-00000000000I is
# GPU I of nodeX (FAKE_NVML_NODE_UUIDS: the host name's number).
export GPUSHARE_NVML_LIBRARY=$H/libfakenvml.so FAKE_NVML_GPUS=2 FAKE_NVML_NODE_UUIDS=1
export GPUSHARE_MPS_CONTROL=$H/fake_mps_control FAKE_MPS_START_LOG=$tmp/starts
export GPUSHARE
unset CUDA_VISIBLE_DEVICES CUDA_MPS_PIPE_DIRECTORY
touch "$tmp/starts"

t_start=$(date +%s)
if ! cluster_start 2; then
	fail "the two-node cluster did not become idle"
	finish
fi
ok "cluster of node1 and node2 idle in $(($(date +%s) - t_start)) s ($CLUSTER_DIR)"
# gpushare's run directories (the farm's MPS daemon) are node-local
export XDG_RUNTIME_DIR=$CLUSTER_LOCAL/xdg

# 30 jobs; each appends "INDEX NODE GPU-UUID" to a side file of its farm.
N=30
cat >"$tmp/job.sh" <<'EOF'
#!/bin/sh
sleep 0.1
echo "$1 $(hostname) $GPUSHARE_FARM_GPU" >>"$2"
EOF
chmod +x "$tmp/job.sh"
jobs_for() { # jobs_for SIDE
	local i
	for ((i = 0; i < N; i++)); do echo "$tmp/job.sh $i $1"; done
}
jobs_for "$tmp/side-nodes" >"$tmp/jobs-nodes.txt"
jobs_for "$tmp/side-array" >"$tmp/jobs-array.txt"
exactly_once() { # SIDE: every index 0..N-1 once
	test "$(cut -d' ' -f1 "$1" | sort -n | tr '\n' ' ')" = "$(seq 0 $((N - 1)) | tr '\n' ' ')"
}
submit() { (cd "$tmp" && cluster_exec ctl sbatch --parsable "$@"); }
# the nodes (sorted, unique) that ran the jobs of shard I of N: index mod N == I
nodes_of_shard() { awk -v i="$2" -v n="$3" '$1 % n == i {print $2}' "$1" | sort -u | tr '\n' ' '; }
daemons_alive() {
	local p d n=0
	while read -r p d; do
		tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "CUDA_MPS_PIPE_DIRECTORY=$d" && n=$((n + 1))
	done <"$tmp/starts"
	echo "$n"
}
is_zero() { test "$("$1")" = 0; }
run_dirs() { find "$CLUSTER_DIR"/nodes/node*/local/xdg/gpushare -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }

echo "== farm.sbatch -N2: one task per node, each its shard on its node's 2 GPUs"
t0=$(date +%s)
before=$(wc -l <"$tmp/starts")
jid=$(submit -o "$tmp/nodes-%j.out" -N2 --ntasks-per-node=1 --gres=gpu:2 --cpus-per-task=1 \
	"$EX/farm.sbatch" "$tmp/jobs-nodes.txt" "$tmp/nodes")
st=$(cluster_wait_job "$jid" 120) || true
check "job $jid completed ($st)" test "$st" = COMPLETED
[[ $st == COMPLETED ]] || cat "$tmp"/nodes-*.out
check "two shard directories, shards 0/2 and 1/2" bash -c "
grep -q '\"shard\":{\"index\":0,\"count\":2}' '$tmp/nodes/shard-0/journal.jsonl' &&
grep -q '\"shard\":{\"index\":1,\"count\":2}' '$tmp/nodes/shard-1/journal.jsonl'"
check "every job exactly once across both nodes" exactly_once "$tmp/side-nodes"
check "shard 0 ran on node1 only, shard 1 on node2 only" \
	test "$(nodes_of_shard "$tmp/side-nodes" 0 2)/$(nodes_of_shard "$tmp/side-nodes" 1 2)" = "node1 /node2 "
uuids_of() { # NODE: its GPUs' UUIDs, as the jobs there saw them
	local x=${1#node}
	printf 'GPU-fa4e0000-%04x-4000-8000-%012x ' "$x" 0 "$x" 1
}
pairs_expected() { local n u; for n in node1 node2; do for u in $(uuids_of $n); do echo "$n $u"; done; done; }
check "jobs pinned to the 2 GPUs of their own node, by UUID" test \
	"$(awk '{print $2 " " $3}' "$tmp/side-nodes" | sort -u)" = "$(pairs_expected)"
check "one MPS daemon per node, each on its node's run directory" \
	test "$(tail -n +$((before + 1)) "$tmp/starts" | grep -c "$CLUSTER_LOCAL/xdg/gpushare/")" = 2
run farm status --json "$tmp/nodes/shard-0" "$tmp/nodes/shard-1"
check "farm status merges both nodes' shards: $N done" python3 -c "
import json; s = json.load(open('$tmp/out'))['summary']
assert s['done'] == $N and s['failed'] == 0 and s['unfinished'] == 0 and s['shards_seen'] == 2, s"
check "  with the 4 GPUs of both nodes, each with its own attempts" python3 -c "
import json; g = json.load(open('$tmp/out'))['summary']['gpus']
ids = sorted(x['id'] for x in g)
assert ids == sorted('$(uuids_of node1)$(uuids_of node2)'.split()), ids
assert sum(x['attempts'] for x in g) == $N and all(x['attempts'] > 0 for x in g), g"
check "no MPS daemon left on any node" is_zero daemons_alive
check "no run directory left on any node" is_zero run_dirs
echo "   ($(($(date +%s) - t0)) s)"

echo "== farm.sbatch resubmitted: both nodes' shards resume, nothing runs again"
jid=$(submit -o "$tmp/nodes2-%j.out" -N2 --ntasks-per-node=1 --gres=gpu:2 --cpus-per-task=1 \
	"$EX/farm.sbatch" "$tmp/jobs-nodes.txt" "$tmp/nodes")
st=$(cluster_wait_job "$jid" 120) || true
check "job $jid completed ($st)" test "$st" = COMPLETED
check "both tasks resumed with 0 attempts" test "$(grep -c 'this run: 0 attempts' "$tmp"/nodes2-*.out)" = 2
check "still every job exactly once" exactly_once "$tmp/side-nodes"

echo "== farm-array.sbatch: a 2-element array of whole nodes, one shard per element"
t0=$(date +%s)
ajid=$(submit -o "$tmp/array-%A_%a.out" --array=0-1 --gres=gpu:2 --cpus-per-task=1 \
	"$EX/farm-array.sbatch" "$tmp/jobs-array.txt" "$tmp/array")
for a in 0 1; do
	st=$(cluster_wait_job "${ajid}_$a" 120) || true
	check "element $a completed ($st)" test "$st" = COMPLETED
	check "element $a: shard $a/2" grep -q "\"shard\":{\"index\":$a,\"count\":2}" "$tmp/array/shard-$a/journal.jsonl"
done
check "every job exactly once across the elements" exactly_once "$tmp/side-array"
echo "   (element 0 ran on: $(nodes_of_shard "$tmp/side-array" 0 2), element 1 on: $(nodes_of_shard "$tmp/side-array" 1 2))"
run farm status "$tmp/array/shard-0" "$tmp/array/shard-1"
check "farm status merges the two elements' shards" grep -q "jobs: $N done, 0 failed, 0 unfinished of $N (2 of 2 shards seen)" "$tmp/out"
run farm status "$tmp/array/shard-1" "$tmp/nodes/shard-0"
check "shards of two different farms are refused, not merged (rc $rc)" test "$rc" != 0
echo "   ($(($(date +%s) - t0)) s)"

echo "== nothing left"
check "no MPS daemon left on any node" is_zero daemons_alive
check "no run directory left on any node" is_zero run_dirs
check "no process on any node but slurmd and munged" cluster_idle_nodes 30
cluster_stop
check "cluster stopped: no namespace, link, mount or directory of it left" cluster_check_clean
echo "   (whole test $(($(date +%s) - t_start)) s)"
finish "farm on a Slurm cluster"
