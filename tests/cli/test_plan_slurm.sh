#!/usr/bin/env bash
# `gpushare plan --for slurm` against a real, private Slurm
# (tests/cli/lib_slurm.sh): the emitted gres.conf lines, GresTypes= and the
# node's Gres= start it; the node then offers K shards of its one (fake)
# GPU, K jobs asking --gres=shard:1 run on it at once and a K+1-th waits;
# and the emitted job script runs there: its K array elements, each on a
# shard, run their shares of a job list through gpushare farm, every job
# exactly once, and a resubmission resumes them without running any again.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/cli/lib_slurm.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib_slurm.sh"

: "${GPUSHARE:?}" "${GPUSHARE_TEST_HELPERS:?}" "${GPUSHARE_SOURCE_DIR:?}"
H=$GPUSHARE_TEST_HELPERS
FIX=$GPUSHARE_SOURCE_DIR/tests/plan
if ! slurm_available; then
	missing_tool "plan under Slurm: slurm-wlm or munge not installed (scripts/deps-test.txt)"
	finish "plan under Slurm"
	exit 0
fi
tmp=$(mktemp -d /tmp/gpushare-plan-slurm.XXXXXX)
chmod 755 "$tmp"
jids=()
cleanup() {
	local j
	for j in "${jids[@]}"; do scancel "$j" 2>/dev/null || true; done
	slurm_stop
	rm -rf "$tmp"
}
trap cleanup EXIT
private_xdg
export GPUSHARE_NVML_LIBRARY=$H/libfakenvml.so FAKE_NVML_GPUS=1
export GPUSHARE_MPS_CONTROL=$H/fake_mps_control
export GPUSHARE
unset CUDA_VISIBLE_DEVICES CUDA_MPS_PIPE_DIRECTORY

# The node's one GPU: a character device, as gres File= needs.
mkdir "$tmp/dev"
mknod "$tmp/dev/gpu0" c 195 0 2>/dev/null || ln -s /dev/null "$tmp/dev/gpu0"

echo "== the plan"
run plan "$FIX/timeslice-a100" --for slurm --gpu-model A100 --nodes testnode --device-file "$tmp/dev/gpu0" \
	--out "$tmp/plan"
check "plan --for slurm: exit 0 (got $rc: $(cat "$tmp/err"))" test "$rc" -eq 0
K=$(sed -n 's/.* Name=shard Count=\([0-9]*\) .*/\1/p' "$tmp/plan/gres.conf")
# The measured pick, as the plan's own header states it ("timeslice with N
# workers per GPU"), is what the gres lines offer.
measured=$(sed -n 's/^# Measured: .* with \([0-9]*\) workers per GPU.*/\1/p' "$tmp/plan/gres.conf" | head -n 1)
check "gres.conf offers K=$K shards (the measured ${measured:-?})" test -n "$measured" -a "$K" = "$measured"
grestypes=$(sed -n 's/^GresTypes=//p' "$tmp/plan/slurm.conf")
# The node's Gres= is for its one NodeName line: said in a comment, never a
# second NodeName line ("Duplicated NodeHostName").
nodegres=$(sed -n 's/^#   NodeName=testnode \.\.\. Gres=//p' "$tmp/plan/slurm.conf")
check "slurm.conf: no NodeName line of its own" bash -c "! grep -q '^NodeName=' '$tmp/plan/slurm.conf'"
check "slurm.conf: GresTypes=$grestypes and Gres=$nodegres" \
	test "$grestypes" = gpu,shard -a "$nodegres" = "gpu:a100:1,shard:$K"

echo "== Slurm started with the emitted lines"
export SLURM_TEST_GRES_TYPES=$grestypes SLURM_TEST_NODE_GRES=$nodegres SLURM_TEST_GRES_CONF=$tmp/plan/gres.conf
if ! slurm_start 1; then
	fail "the private Slurm did not become idle with the emitted gres lines"
	finish "plan under Slurm"
fi
ok "slurm idle in $SLURM_DIR"
node=$(scontrol show node testnode)
check "the node has the GPU and its $K shards ($(grep -o 'Gres=[^ ]*' <<<"$node"))" \
	grep -qE "Gres=gpu:a100:1[^ ]*,shard:(a100:)?$K" <<<"$node"

echo "== K jobs with --gres=shard:1 share the one GPU"
for ((i = 0; i <= K; i++)); do
	jids+=("$(cd "$tmp" && sbatch --parsable -o /dev/null --gres=shard:1 --wrap 'sleep 60')")
done
running=0
for ((t = 0; t < 100; t++)); do
	running=$(squeue -h -t RUNNING -o %i | wc -l)
	((running >= K)) && break
	sleep 0.2
done
sleep 1
running=$(squeue -h -t RUNNING -o %i | wc -l)
pending=$(squeue -h -t PENDING -o '%i %r')
check "$K jobs run at once on the node's one GPU (running: $running)" test "$running" -eq "$K"
check "the K+1-th waits for a shard ($pending)" grep -q "^${jids[K]} Resources" <<<"$pending"
for j in "${jids[@]}"; do scancel "$j" 2>/dev/null || true; done
jids=()
for ((t = 0; t < 100; t++)); do
	[[ -z $(squeue -h -o %i) ]] && break
	sleep 0.2
done

echo "== the emitted job script runs there"
N=12
for ((i = 0; i < N; i++)); do echo "$tmp/job.sh $i $tmp/side"; done >"$tmp/jobs.txt"
cat >"$tmp/job.sh" <<'EOS'
#!/bin/sh
sleep 0.3
echo "$1 ${SLURM_ARRAY_TASK_ID:-none}" >>"$2"
EOS
chmod +x "$tmp/job.sh"
jid=$(cd "$tmp" && sbatch --parsable -o "$tmp/array-%A_%a.out" "$tmp/plan/job.sh" "$tmp/jobs.txt" "$tmp/farm")
jids+=("$jid")
for ((i = 0; i < K; i++)); do
	st=$(slurm_wait_job "${jid}_$i" 120) || true
	check "array element $i of $K completed ($st)" test "$st" = COMPLETED
	[[ $st == COMPLETED ]] || cat "$tmp"/array-*_"$i".out 2>/dev/null || true
done
check "every job exactly once" \
	test "$(cut -d' ' -f1 "$tmp/side" | sort -n | tr '\n' ' ')" = "$(seq 0 $((N - 1)) | tr '\n' ' ')"
check "the jobs ran in all $K elements" test "$(cut -d' ' -f2 "$tmp/side" | sort -u | wc -l)" -eq "$K"
run farm status --json "$tmp"/farm/shard-*
check "farm status merges the $K shards: $N done" python3 -c "
import json; s = json.load(open('$tmp/out'))['summary']
assert s['done'] == $N and s['failed'] == 0 and s['shards_seen'] == $K, s"

echo "== resubmitted, the script resumes every shard: nothing runs again"
jid=$(cd "$tmp" && sbatch --parsable -o "$tmp/again-%A_%a.out" "$tmp/plan/job.sh" "$tmp/jobs.txt" "$tmp/farm")
jids+=("$jid")
for ((i = 0; i < K; i++)); do
	st=$(slurm_wait_job "${jid}_$i" 120) || true
	check "resubmitted element $i completed ($st)" test "$st" = COMPLETED
done
check "still every job exactly once ($(wc -l <"$tmp/side") lines)" test "$(wc -l <"$tmp/side")" -eq "$N"

finish "plan under Slurm"
