#!/usr/bin/env bash
# gpushare farm under a real, private Slurm (tests/cli/lib_slurm.sh: munged,
# slurmctld and slurmd on loopback, two fake GPUs as gres) with the stand-in
# NVML and MPS control program: examples/slurm/farm.sbatch with two tasks
# (each task its shard, from SLURM_PROCID/SLURM_NTASKS) and
# examples/slurm/farm-array.sbatch as a 3-element array (each element its
# shard, from SLURM_ARRAY_TASK_*). Every job runs exactly once (the journals
# and the jobs' own side effects), `farm status` merges the shards, and a
# resubmission resumes every shard without running anything again.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/cli/lib_slurm.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib_slurm.sh"

: "${GPUSHARE:?}" "${GPUSHARE_TEST_HELPERS:?}" "${GPUSHARE_SOURCE_DIR:?}"
H=$GPUSHARE_TEST_HELPERS
EX=$GPUSHARE_SOURCE_DIR/examples/slurm
slurm_needed "farm under Slurm"
tmp=$(mktemp -d /tmp/gpushare-farm-slurm.XXXXXX)
chmod 755 "$tmp"
trap 'slurm_stop; rm -rf "$tmp"' EXIT
private_xdg
# Jobs and gpushare inherit this environment through sbatch (--export=ALL).
export GPUSHARE_NVML_LIBRARY=$H/libfakenvml.so FAKE_NVML_GPUS=2
export GPUSHARE_MPS_CONTROL=$H/fake_mps_control
export GPUSHARE
unset CUDA_VISIBLE_DEVICES CUDA_MPS_PIPE_DIRECTORY

if ! slurm_start 2; then
	fail "the private Slurm did not become idle"
	finish
fi
ok "slurm idle in $SLURM_DIR"

# 30 jobs; each appends "INDEX GPU-UUID" to a side file of its farm.
N=30
cat >"$tmp/job.sh" <<'EOF'
#!/bin/sh
sleep 0.1
echo "$1 $GPUSHARE_FARM_GPU $CUDA_VISIBLE_DEVICES" >>"$2"
EOF
chmod +x "$tmp/job.sh"
jobs_for() { # jobs_for SIDE
	local i
	for ((i = 0; i < N; i++)); do echo "$tmp/job.sh $i $1"; done
}
jobs_for "$tmp/side-nodes" >"$tmp/jobs-nodes.txt"
jobs_for "$tmp/side-array" >"$tmp/jobs-array.txt"
# exactly_once SIDE: every index 0..N-1 once
exactly_once() {
	test "$(cut -d' ' -f1 "$1" | sort -n | tr '\n' ' ')" = "$(seq 0 $((N - 1)) | tr '\n' ' ')"
}
submit() { (cd "$tmp" && sbatch --parsable "$@"); }

echo "== farm.sbatch: two tasks, each its shard of one job list, all GPUs of the node"
jid=$(submit -o "$tmp/nodes-%j.out" -N1 -n2 --ntasks-per-node=2 --gres=gpu:2 --cpus-per-task=1 \
	"$EX/farm.sbatch" "$tmp/jobs-nodes.txt" "$tmp/nodes")
st=$(slurm_wait_job "$jid" 120) || true
check "job $jid completed ($st)" test "$st" = COMPLETED
[[ $st == COMPLETED ]] || cat "$tmp"/nodes-*.out
check "two shard directories, shards 0/2 and 1/2" bash -c "
grep -q '\"shard\":{\"index\":0,\"count\":2}' '$tmp/nodes/shard-0/journal.jsonl' &&
grep -q '\"shard\":{\"index\":1,\"count\":2}' '$tmp/nodes/shard-1/journal.jsonl'"
check "every job exactly once across both tasks" exactly_once "$tmp/side-nodes"
check "jobs pinned to both fake GPUs by UUID" \
	test "$(cut -d' ' -f2 "$tmp/side-nodes" | sort -u | grep -c '^GPU-fa4e')" = 2
run farm status --json "$tmp/nodes/shard-0" "$tmp/nodes/shard-1"
check "farm status merges the shards: $N done" python3 -c "
import json; s = json.load(open('$tmp/out'))['summary']
assert s['done'] == $N and s['failed'] == 0 and s['unfinished'] == 0 and s['shards_seen'] == 2, s"
check "no MPS daemon left by the tasks" bash -c "! ls -d '$XDG_RUNTIME_DIR'/gpushare/farm-* 2>/dev/null"

echo "== farm.sbatch resubmitted: both shards resume, nothing runs again"
jid=$(submit -o "$tmp/nodes2-%j.out" -N1 -n2 --ntasks-per-node=2 --gres=gpu:2 --cpus-per-task=1 \
	"$EX/farm.sbatch" "$tmp/jobs-nodes.txt" "$tmp/nodes")
st=$(slurm_wait_job "$jid" 120) || true
check "job $jid completed ($st)" test "$st" = COMPLETED
check "both tasks resumed with 0 attempts" test "$(grep -c 'this run: 0 attempts' "$tmp"/nodes2-*.out)" = 2
check "still every job exactly once" exactly_once "$tmp/side-nodes"

echo "== farm-array.sbatch: a 3-element array, one shard per element"
ajid=$(submit -o "$tmp/array-%A_%a.out" --array=0-2 --cpus-per-task=1 \
	"$EX/farm-array.sbatch" "$tmp/jobs-array.txt" "$tmp/array")
for a in 0 1 2; do
	st=$(slurm_wait_job "${ajid}_$a" 120) || true
	check "element $a completed ($st)" test "$st" = COMPLETED
	check "element $a: shard $a/3" grep -q "\"shard\":{\"index\":$a,\"count\":3}" "$tmp/array/shard-$a/journal.jsonl"
done
check "every job exactly once across the elements" exactly_once "$tmp/side-array"
check "each element used its one GPU" python3 -c "
import json
for a in range(3):
    hdr = json.loads(open('$tmp/array/shard-%d/journal.jsonl' % a).readline())
    assert len(hdr['gpus']) == 1, hdr"
run farm status "$tmp/array/shard-0" "$tmp/array/shard-1" "$tmp/array/shard-2"
check "farm status merges the three shards" grep -q "jobs: $N done, 0 failed, 0 unfinished of $N (3 of 3 shards seen)" "$tmp/out"
run farm status "$tmp/array/shard-0" "$tmp/array/shard-2"
check "two of three shards: the third's jobs unfinished" grep -q "jobs: 20 done, 0 failed, 10 unfinished of $N" "$tmp/out"

finish "farm under Slurm"
