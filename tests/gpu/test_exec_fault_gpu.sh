#!/usr/bin/env bash
# shellcheck disable=SC2015 # ok/fail lines: ok never fails
# GPU test (label gpu): `gpushare exec`'s fault report on GPU 0 with the real
# MPS. Four ranks of one job by hand (Open MPI's variables), each a fault_job
# (tests/gpu/fault_job.cu) of 4 s; rank 2 writes to an illegal address after
# 0.5 s. Under mps: rank 2 fails, the node's last rank prints one report
# naming the culprit (from the server log) or a suspect (the first to fail,
# when the log names none) and the blast radius, which matches the ranks
# that failed; the daemon and the job directory are gone. Under timeslice
# the same job fails rank 2 only and reports no MPS fault.
set -euo pipefail
G=${GPUSHARE:?}
JOB=${GPUSHARE_TEST_HELPERS:?}/fault_job
[[ -x $JOB ]] || { echo "SKIP: no $JOB (built with CUDA)"; exit 0; }
D=$(mktemp -d /tmp/gsexecfault.XXXXXX)
export XDG_RUNTIME_DIR=$D/xdg
mkdir -m 700 "$XDG_RUNTIME_DIR"
cleanup() {
	pkill -KILL -f "$JOB" 2>/dev/null || true
	for p in "$XDG_RUNTIME_DIR"/gpushare/exec-*/mps*/pipe "$XDG_RUNTIME_DIR"/gpushare/exec-*/*/pipe; do
		[[ -S $p/control ]] && echo quit | CUDA_MPS_PIPE_DIRECTORY=$p nvidia-cuda-mps-control >/dev/null 2>&1
	done
	rm -rf "$D"
}
trap cleanup EXIT
unset CUDA_MPS_PIPE_DIRECTORY CUDA_VISIBLE_DEVICES SLURM_JOB_ID SLURM_STEP_ID SLURM_PROCID SLURM_NTASKS SLURM_LOCALID
fails=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# job ID STRATEGY: four ranks on GPU 0, rank 2 faulting; $D/err.R, $D/rc.R.
job() {
	local id=$1 strategy=$2 r pids=()
	rm -f "$D"/err.* "$D"/rc.*
	for r in 0 1 2 3; do
		local extra=()
		[[ $r == 2 ]] && extra=(--fault --after 0.5)
		(
			set +e
			env OMPI_COMM_WORLD_LOCAL_RANK=$r OMPI_COMM_WORLD_LOCAL_SIZE=4 OMPI_COMM_WORLD_RANK=$r \
				OMPI_COMM_WORLD_SIZE=4 OMPI_MCA_orte_ess_jobid="$id" \
				timeout -k 5 120 "$G" exec --strategy "$strategy" --gpus 0 -- "$JOB" --seconds 4 "${extra[@]}" \
				2>"$D/err.$r"
			echo $? >"$D/rc.$r"
		) &
		pids+=($!)
	done
	wait "${pids[@]}" || true
	cat "$D"/err.? >"$D/err"
}
codes() { cat "$D/rc.0" "$D/rc.1" "$D/rc.2" "$D/rc.3" | paste -sd' '; }
failed_ranks() { for r in 0 1 2 3; do [[ $(cat "$D/rc.$r") != 0 ]] && echo "$r"; done | paste -sd,; }

echo "== mps: rank 2 faults"
job gf1 mps
echo "exit statuses: $(codes)"
grep "GPU fault under MPS" "$D/err" || true
n=$(grep -c "gpushare: exec: GPU fault under MPS" "$D/err" || true)
[[ $n == 1 ]] && ok "one fault report for the node" || fail "$n fault reports: $(cat "$D/err")"
[[ $(cat "$D/rc.2") != 0 ]] && ok "rank 2 failed" || fail "rank 2 did not fail: $(codes)"
line=$(grep "gpushare: exec: GPU fault under MPS" "$D/err" | head -1)
culprit=$(sed -nE 's/.*GPU 0: rank ([0-9]+) (faulted|is the suspect).*/\1/p' <<<"$line")
failed=$(failed_ranks)
if [[ $line == *"named by the server log"* ]]; then
	[[ $culprit == 2 ]] && ok "the server log names rank 2" || fail "the log named rank $culprit: $line"
else
	[[ ,$failed, == *,$culprit,* ]] && ok "suspect rank $culprit is one that failed ($failed)" ||
		fail "suspect $culprit did not fail ($failed): $line"
fi
others=$(tr ',' '\n' <<<"$failed" | grep -vx "$culprit" | paste -sd, || true)
if [[ -n $others ]]; then
	grep -q "ranks\? $others failed with it (blast radius $(tr ',' '\n' <<<"$others" | wc -l) of 4 ranks on the GPU)" \
		<<<"$line" && ok "blast radius: $others" || fail "blast radius not $others: $line"
fi
sleep 1
if pgrep -f "$JOB" >/dev/null; then fail "fault_job left running"; else ok "no rank left running"; fi
if compgen -G "$XDG_RUNTIME_DIR/gpushare/exec-*" >/dev/null; then fail "job directory left: $(ls "$XDG_RUNTIME_DIR/gpushare")"; else
	ok "no job directory left"; fi
pgrep -u "$(id -u)" -f "nvidia-cuda-mps-control" >/dev/null && echo "note: an MPS control daemon runs (not necessarily this test's)"

echo "== timeslice: the same job"
job gf2 timeslice
echo "exit statuses: $(codes)"
[[ $(failed_ranks) == 2 ]] && ok "only rank 2 failed" || fail "failed ranks: $(failed_ranks)"
grep -q "GPU fault under MPS" "$D/err" && fail "a fault report under timeslice" || ok "no MPS fault report"

[[ $fails == 0 ]] && echo "all exec fault checks passed" || { echo "$fails check(s) failed"; exit 1; }
