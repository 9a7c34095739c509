#!/usr/bin/env bash
# GPU test (label gpu): Slurm's gres/mps share on a real GPU, without Slurm.
# The environment a task of `srun --gres=mps:50` gets is simulated
# (SLURM_JOB_ID, CUDA_VISIBLE_DEVICES, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50):
#  1. two ranks of `mpirun -np 2 gpushare exec --strategy mps` (Open MPI) run
#     the CUDA client, which reads back its SM count: each sees at most half
#     of the GPU's SMs, not all of them (the share is honoured);
#  2. `--strategy mps-split` splits the 50% between the two ranks (25% each);
#  3. `gpushare slurm prolog` starts the job's daemon, `gpushare exec` joins
#     it instead of starting its own (said in its output), the clients see the
#     share, and `gpushare slurm epilog` stops it.
# Asserts that no MPS daemon is left running.
set -euo pipefail
left_running() { ps -eo pid=,stat=,args= | awk '$2 !~ /^Z/' | grep -E "^ *[0-9]+ +[^ ]+ +[^ ]*($1)"; }
G=${GPUSHARE:?} H=${GPUSHARE_TEST_HELPERS:?}
D=$(mktemp -d /tmp/gsslurm.XXXXXX)
chmod 755 "$D"
export XDG_RUNTIME_DIR=$D/xdg
mkdir -p -m 700 "$XDG_RUNTIME_DIR"
cleanup() {
	SLURM_JOB_ID=4242 SLURM_JOB_UID=$(id -u) SLURM_JOB_GID=$(id -g) CUDA_VISIBLE_DEVICES=0 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 \
		"$G" slurm epilog --state-dir "$D/state" >/dev/null 2>&1 || true
	rm -rf "$D"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }
sm_of() { python3 -c 'import json,sys
for line in sys.stdin:
    line = line.strip()
    if line.startswith("{"):
        d = json.loads(line)
        print(d.get("sm_count", "error:" + str(d.get("error"))))'; }
if ! command -v mpirun >/dev/null; then
	echo "SKIP (missing tool): mpirun (Open MPI)"
	exit 0
fi
full=$(CUDA_MPS_PIPE_DIRECTORY=$D/none "$H/mps_client" | sm_of)
[[ $full -gt 0 ]] || fail "baseline SM count '$full'"
ok "plain context: $full SMs"
half=$(((full + 1) / 2))
job_env=(SLURM_JOB_ID=4242 SLURM_STEP_ID=0 SLURM_JOB_UID="$(id -u)" SLURM_JOB_GID="$(id -g)" CUDA_VISIBLE_DEVICES=0
	CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50)
mpi=(mpirun --allow-run-as-root --oversubscribe -np 2)

for strategy in mps mps-split; do
	out=$(env "${job_env[@]}" "${mpi[@]}" -x SLURM_JOB_ID -x SLURM_STEP_ID -x CUDA_VISIBLE_DEVICES \
		-x CUDA_MPS_ACTIVE_THREAD_PERCENTAGE -x XDG_RUNTIME_DIR \
		"$G" exec --strategy "$strategy" -- "$H/mps_client" 2>"$D/err") || {
		cat "$D/err"
		fail "$strategy: exec failed"
	}
	sms=$(echo "$out" | sm_of | tr '\n' ' ')
	echo "$strategy: ranks see SMs: $sms (of $full); $(grep -i 'slurm\|share' "$D/err" | head -2 | tr '\n' ' ')"
	limit=$half
	[[ $strategy == mps-split ]] && limit=$(((full + 3) / 4 + 2))
	n=0
	for s in $sms; do
		[[ $s =~ ^[0-9]+$ ]] || fail "$strategy: a rank failed: $s"
		((s <= limit)) || fail "$strategy: a rank sees $s SMs, more than the share allows ($limit of $full)"
		n=$((n + 1))
	done
	((n == 2)) || fail "$strategy: $n ranks reported"
	ok "$strategy under gres/mps:50: every rank within its share ($sms<= $limit of $full SMs)"
done
if left_running nvidia-cuda-mps; then fail "a daemon is left after exec"; fi

# The prolog's daemon, joined by exec, stopped by the epilog.
env "${job_env[@]}" "$G" slurm prolog --state-dir "$D/state" || fail "prolog"
left_running nvidia-cuda-mps-control >/dev/null || fail "no daemon after the prolog"
out=$(env "${job_env[@]}" GPUSHARE_SLURM_DIR="$D/state" "${mpi[@]}" -x SLURM_JOB_ID -x SLURM_STEP_ID \
	-x CUDA_VISIBLE_DEVICES -x CUDA_MPS_ACTIVE_THREAD_PERCENTAGE -x XDG_RUNTIME_DIR -x GPUSHARE_SLURM_DIR \
	"$G" exec --strategy mps -- "$H/mps_client" 2>"$D/err") || {
	cat "$D/err"
	fail "exec beside the prolog's daemon"
}
grep -q "joined" "$D/err" || {
	cat "$D/err"
	fail "exec did not say it joined the prolog's daemon"
}
sms=$(echo "$out" | sm_of | tr '\n' ' ')
for s in $sms; do
	[[ $s =~ ^[0-9]+$ ]] && ((s <= half)) || fail "joined: a rank sees '$s' SMs (share $half of $full)"
done
ok "exec joined the prolog's daemon ($(grep joined "$D/err" | head -1)); ranks see $sms SMs"
left_running nvidia-cuda-mps-control >/dev/null || fail "exec stopped the prolog's daemon"
env "${job_env[@]}" "$G" slurm epilog --state-dir "$D/state" || fail "epilog"
for _ in $(seq 50); do left_running nvidia-cuda-mps >/dev/null || break; sleep 0.2; done
if left_running nvidia-cuda-mps; then fail "a daemon is left after the epilog"; fi
ok "the epilog stopped the daemon; nothing left running"
