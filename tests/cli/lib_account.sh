# shellcheck shell=bash
# Shared by the accounting tests (test_account.sh, test_account_gpus.sh),
# sourced after lib.sh: the library under test and the stand-in CUPTI, a
# record's field, a run under both, and an environment cleared of every
# variable the library reads an owner, a promise or a GPU from.
: "${GPUSHARE:?set by ctest}" "${GPUSHARE_TEST_HELPERS:?set by ctest}"
H=$GPUSHARE_TEST_HELPERS
LIB=$(dirname "$GPUSHARE")/libgpushare-account.so

# account_built: true when the library and the stand-in CUPTI were built
# (they need CUPTI's header); else says so, as a missing tool.
account_built() {
	[[ -e $H/libfakecupti.so && -e $LIB ]] && return 0
	missing_tool "CUPTI's header (cupti.h): libgpushare-account.so was not built"
	return 1
}

# field FILE KEY: a record's value
field() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }

# under_library DIR [VAR=VALUE...] PROGRAM [ARGS...]: PROGRAM under the
# library and the stand-in CUPTI, records in DIR, a window of 20 ms every
# 100 ms, kernel timing (CUPTI's kernel records; test_account_launches.sh
# has the launch timing) unless the arguments say otherwise.
under_library() {
	local d=$1
	shift
	env GPUSHARE_ACCOUNT_DIR="$d" CUDA_INJECTION64_PATH="$LIB" GPUSHARE_CUPTI_LIBRARY="$H/libfakecupti.so" \
		GPUSHARE_ACCOUNT_PERIOD_MS=100 GPUSHARE_ACCOUNT_DUTY=0.2 GPUSHARE_ACCOUNT_TIMING=kernels "$@"
}

unset GPUSHARE_CUDA_LIBRARY SLURM_JOB_ID SLURM_STEP_ID GPUSHARE_FARM_JOB OMPI_COMM_WORLD_RANK PMI_RANK PMIX_RANK \
	SLURM_PROCID CUDA_MPS_ACTIVE_THREAD_PERCENTAGE GPUSHARE_ACCOUNT_PROMISED GPUSHARE_ACCOUNT POD_NAMESPACE POD_NAME \
	CUDA_VISIBLE_DEVICES FAKE_NVML_NODE_UUIDS
