# shellcheck shell=bash disable=SC2154 # $tmp is the test's
# The environment the farm tests run in, and what they read back (sourced
# after lib.sh, with $tmp set):
#   farm_env_nodriver    no GPU driver (jobs run unplaced), no MPS, no Slurm job
#   farm_env_fake N      N fake GPUs (fake NVML), the fake MPS control program,
#                        no daemon where plain processes look, no Slurm job
#   journal DIR PYTHON   run PYTHON over DIR's journal, with hdr (the headers),
#                        recs (the attempts) and faults (the fault records)
#   our_daemons          the fake MPS daemons this test started
# Each gives the test a private XDG_RUNTIME_DIR (private_xdg).

farm_env_nodriver() {
	unset CUDA_MPS_PIPE_DIRECTORY GPUSHARE_MPS_CONTROL CUDA_VISIBLE_DEVICES SLURM_JOB_ID SLURM_STEP_ID SLURM_PROCID \
		SLURM_NTASKS SLURM_ARRAY_TASK_ID
	private_xdg
	export GPUSHARE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1
}

farm_env_fake() {
	: "${GPUSHARE_TEST_HELPERS:?}"
	private_xdg
	export GPUSHARE_NVML_LIBRARY=$GPUSHARE_TEST_HELPERS/libfakenvml.so FAKE_NVML_GPUS=$1
	export GPUSHARE_MPS_CONTROL=$GPUSHARE_TEST_HELPERS/fake_mps_control
	export CUDA_MPS_PIPE_DIRECTORY=$tmp/no-daemon
	unset CUDA_VISIBLE_DEVICES SLURM_JOB_ID SLURM_STEP_ID SLURM_PROCID SLURM_NTASKS SLURM_ARRAY_TASK_ID
}

journal() {
	python3 - "$1/journal.jsonl" "$2" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
hdr = [l for l in lines if l["type"] == "header"]
recs = [l for l in lines if l["type"] == "attempt"]
faults = [l for l in lines if l["type"] == "fault"]
exec(sys.argv[2])
PY
}

# The fake MPS daemons whose pipe directory is under this test's
# XDG_RUNTIME_DIR: one pid a line.
our_daemons() {
	local p
	for p in $(pgrep -f fake_mps_control || true); do
		tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -q "^CUDA_MPS_PIPE_DIRECTORY=$XDG_RUNTIME_DIR/" && echo "$p"
	done
	return 0
}
