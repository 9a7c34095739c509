#!/usr/bin/env bash
# Before any job starts, the farm warns about what will make jobs fail or
# run fewer at once than asked: timeslice jobs on an Exclusive_Process GPU,
# a GPU with MIG enabled, and --slots beyond what --mem-per-job admits
# (saying how many slots admission allows).
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?set by ctest}" "${GPUSHARE_TEST_HELPERS:?set by ctest}"
H=$GPUSHARE_TEST_HELPERS
tmp=$(mktemp -d /tmp/gpushare-fwarn-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset CUDA_MPS_PIPE_DIRECTORY GPUSHARE_MPS_CONTROL CUDA_VISIBLE_DEVICES FAKE_NVML_GPUS SLURM_JOB_ID SLURM_STEP_ID \
	SLURM_PROCID SLURM_NTASKS SLURM_ARRAY_TASK_ID
private_xdg
export GPUSHARE_NVML_LIBRARY=$H/libfakenvml.so CUDA_MPS_PIPE_DIRECTORY=$tmp/no-daemon
printf 'true\ntrue\n' >"$tmp/jobs"

# The fake driver's default pair: GPU 0 has MIG enabled, GPU 1 is Exclusive_Process.
run farm --dir "$tmp/f1" --strategy timeslice --slots 2 -q "$tmp/jobs"
check "timeslice on the default pair: the jobs still run (exit 0, got $rc)" test "$rc" -eq 0
check "  warns: GPU 1 is Exclusive_Process" grep -q "^gpushare: warning: farm: GPU 1 is in compute mode Exclusive_Process" "$tmp/err"
check "  warns: GPU 0 has MIG enabled" grep -q "^gpushare: warning: farm: GPU 0 (GPU-.*) has MIG enabled" "$tmp/err"
run farm --dir "$tmp/f2" --strategy timeslice --slots 1 --gpus 1 -q "$tmp/jobs"
check "--slots 1 on the Exclusive_Process GPU: no warning" bash -c "! grep -q Exclusive_Process '$tmp/err'"

# One plain H100 of 79.6 GiB free: 30G per job admits 2 at once.
export FAKE_NVML_GPUS=1
run farm --dir "$tmp/f3" --strategy timeslice --slots 4 --mem-per-job 30G -q "$tmp/jobs"
check "--slots 4 --mem-per-job 30G: exit 0 (got $rc)" test "$rc" -eq 0
check "  says admission allows 2 slots, not 4" grep -q "admits 2 jobs at once, not the 4 of --slots" "$tmp/err"

finish "farm warnings"
