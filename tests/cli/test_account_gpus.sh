#!/usr/bin/env bash
# The GPU an accounting record names. Under CUDA_VISIBLE_DEVICES (a farm job
# pinned by UUID, a Slurm task, a container) every process sees its one GPU
# as device 0, whichever it is: the records name the GPU by UUID too (the
# stand-in libcuda answers cuDeviceGetUuid with the stand-in NVML's UUID of
# the physical GPU CUDA_VISIBLE_DEVICES gave), and the readers place each
# client on that GPU. Two clients, both device 0, on GPUs 0 and 1 of a node:
# one busy at 90% there, one promised half and attaining 30% alone on GPU 1,
# which had room, so it is held under its promise (by ordinal both were on
# one full "GPU 0", and it was not). Checked in the records, in `gpushare
# info --clients` (the GPU's index; without NVML the UUID's short form; a
# record naming no GPU by its ordinal, marked), its JSON and the exporter's
# series (labels gpu and uuid); and a MIG instance's UUID.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/cli/lib_account.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib_account.sh"

tmp=$(mktemp -d /tmp/gpushare-account-gpus-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

if ! account_built; then
	finish
	exit 0
fi
U0=GPU-fa4e0000-0000-4000-8000-000000000000 # the stand-in NVML's GPUs of a node of two
U1=GPU-fa4e0000-0000-4000-8000-000000000001

drive() { # drive DIR [VAR=VALUE...]: one process under the library, with the node's libcuda
	local d=$1
	shift
	under_library "$d" GPUSHARE_CUDA_LIBRARY="$H/libfakecuda.so" "$@" "$H/account_driver" 1
}

# ---- two clients, each device 0 of its process, on GPUs 0 and 1 ----
d=$tmp/node
node=(FAKE_NVML_GPUS=2 FAKE_CUDA_OPEN_LOG="$tmp/open.log")
check "a client on GPU 0 by index" drive "$d" "${node[@]}" CUDA_VISIBLE_DEVICES=0 \
	FAKE_CUPTI_KERNELS=0:900:100 GPUSHARE_ACCOUNT_PROMISED=0.5 SLURM_JOB_ID=51
check "a client on GPU 1 by UUID" drive "$d" "${node[@]}" CUDA_VISIBLE_DEVICES=$U1 \
	FAKE_CUPTI_KERNELS=0:300:700 GPUSHARE_ACCOUNT_PROMISED=0.5 SLURM_JOB_ID=52
check "each opened its own GPU" test "$(awk '{ print $4 }' "$tmp/open.log" | sort -u | tr '\n' ' ')" = "gpu=0 gpu=1 "
mapfile -t recs < <(find "$d" -name '*.rec' | sort)
check "two records, each of device 0 (${recs[*]##*/})" \
	test "${#recs[@]}" -eq 2 -a "$(cat "${recs[@]}" | awk '$1 == "device"' | sort -u)" = "device 0"
r51=$(grep -l '^slurm_job 51$' "${recs[@]}")
r52=$(grep -l '^slurm_job 52$' "${recs[@]}")
check "the first names GPU 0 by UUID" test "$(field "$r51" gpu_uuid)" = "$U0"
check "the second names GPU 1 by UUID" test "$(field "$r52" gpu_uuid)" = "$U1"
check "the magic line is unchanged" test "$(head -n1 "$r52")" = "gpushare-account 1"

export GPUSHARE_ACCOUNT_DIR=$d GPUSHARE_NVML_LIBRARY=$H/libfakenvml.so FAKE_NVML_GPUS=2
run info --clients
cat "$tmp/out"
check "info --clients (exit $rc)" test "$rc" -eq 0
check "info --clients: the GPU column" grep -q '^GPU  *PID  *USER' "$tmp/out"
check "info --clients: the first client on GPU 0" grep -q '^0  *[0-9]* .* slurm:51 ' "$tmp/out"
check "info --clients: the second on GPU 1" grep -q '^1  *[0-9]* .* slurm:52 ' "$tmp/out"
check "info --clients: the one alone on GPU 1, under its promise, held" \
	grep -q '^1 .* slurm:52 .* 50\.0% .*  HELD$' "$tmp/out"
check "info --clients: the one above its promise not held" grep -q '^0 .* slurm:51 .*[^D]$' "$tmp/out"
check "info --clients: no ordinal mark" test -z "$(grep '^(\*' "$tmp/out")"
run info --clients --json
check "info --clients --json: UUID, index and ordinal" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
c = {x["owner"]["slurm_job_id"]: x for x in d["clients"]}
assert len(c) == 2, d
assert c["51"]["gpu_uuid"] == sys.argv[2] and c["51"]["gpu"] == 0 and c["51"]["device"] == 0, c
assert c["52"]["gpu_uuid"] == sys.argv[3] and c["52"]["gpu"] == 1 and c["52"]["device"] == 0, c
assert c["52"]["held_under_promise"] is True and c["51"]["held_under_promise"] is False, c' "$tmp/out" "$U0" "$U1"

# without NVML the UUIDs tell the GPUs apart (these two differ only at
# their end: the short form grows until they do) and group the clients
GPUSHARE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 run info --clients
check "info --clients without NVML (exit $rc)" test "$rc" -eq 0
check "without NVML: each GPU by its UUID" \
	test "$(grep -c "^$U0 .* slurm:51 \|^$U1 .* slurm:52 .*HELD$" "$tmp/out")" -eq 2

run exporter --once
check "exporter --once (exit $rc)" test "$rc" -eq 0
for fam in gpushare_client_gpu_seconds_total gpushare_client_sm_share_ratio; do
	# the share says its source last (the processes are gone: no NVML sample, the records')
	check "$fam: the UUID and index of each client's GPU" \
		test "$(grep -c "^$fam{.*slurm_job_id=\"51\".*,gpu=\"0\",uuid=\"$U0\"\(,source=\"library\"\)\?}\|^$fam{.*slurm_job_id=\"52\".*,gpu=\"1\",uuid=\"$U1\"\(,source=\"library\"\)\?}" \
			"$tmp/out")" -eq 2
done
check "the exporter's flag: the client alone on GPU 1 held" \
	grep -q "^gpushare_client_held_under_promise{.*slurm_job_id=\"52\".*uuid=\"$U1\"} 1$" "$tmp/out"
check "the exporter's flag: the one on GPU 0 not" \
	grep -q "^gpushare_client_held_under_promise{.*slurm_job_id=\"51\".*uuid=\"$U0\"} 0$" "$tmp/out"
if command -v promtool >/dev/null; then
	check "the exposition lints" promtool check metrics <"$tmp/out"
else
	missing_tool "promtool (Debian package prometheus)"
fi

# a record of an older library (no gpu_uuid) is still read: placed by its ordinal, marked
printf 'gpushare-account 1\npid %d\nuid %d\ndevice 0\nwindow_ns 1000000000\nbusy_ns 100000000\nkernels 9\npromised 0.500000\nfarm_job 3\n' \
	"$$" "$(id -u)" >"$d/$$-0.rec"
run info --clients
check "an older record: its ordinal, marked" grep -q '^0\* .* farm:3 ' "$tmp/out"
check "an older record: the mark explained" grep -q '^(\*: the CUDA device ordinal' "$tmp/out"
check "an older record: the others still by GPU" test "$(grep -c '^[01]  *[0-9]' "$tmp/out")" -eq 2
run info --clients --json
check "an older record: gpu_uuid and gpu null, device 0" python3 -c '
import json, sys
c = {x["owner"]["farm_job"]: x for x in json.load(open(sys.argv[1]))["clients"]}
assert c["3"]["gpu_uuid"] is None and c["3"]["gpu"] is None and c["3"]["device"] == 0, c' "$tmp/out"
run exporter --once
check "an older record: served with uuid and gpu empty" \
	grep -q '^gpushare_client_sm_share_ratio{.*farm_job="3".*,gpu="",uuid="",source="library"} ' "$tmp/out"
rm -f "$d/$$-0.rec"

# ---- a MIG instance: CUDA gives the instance's own UUID ----
# the stand-in libcuda's default devices: 0 is the stand-in NVML's GPU 1
# (GPU-5f0c1e2a-...), 1 a MIG instance of its GPU 0
d=$tmp/mig
check "a client of two devices, one a MIG instance" drive "$d" FAKE_CUPTI_KERNELS=0:300:700,1:300:700
check "device 0: the GPU's UUID" \
	test "$(field "$(find "$d" -name '*-0.rec')" gpu_uuid)" = GPU-5f0c1e2a-9b3d-4c7e-8a1f-2b3c4d5e6f70
check "device 1: the MIG instance's UUID" \
	test "$(field "$(find "$d" -name '*-1.rec')" gpu_uuid)" = MIG-11aa22bb-33cc-44dd-55ee-66ff77008811
export GPUSHARE_ACCOUNT_DIR=$d
unset FAKE_NVML_GPUS
run info --clients
check "info --clients: the GPU by its index, the MIG instance by its UUID's short form" \
	test "$(grep -c '^1  *[0-9]\|^MIG-11aa22bb  *[0-9]' "$tmp/out")" -eq 2
run exporter --once
check "the exporter: the MIG instance's client on GPU 0, with its UUID" \
	grep -q '^gpushare_client_sm_share_ratio{.*,gpu="0",uuid="MIG-11aa22bb-33cc-44dd-55ee-66ff77008811",source="library"} ' "$tmp/out"
GPUSHARE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 run info --clients
check "without NVML: both by their UUIDs' short form" \
	test "$(grep -c '^GPU-5f0c1e2a  *[0-9]\|^MIG-11aa22bb  *[0-9]' "$tmp/out")" -eq 2

# ---- no libcuda in the process: the record names no GPU ----
d=$tmp/nocuda
check "a client without libcuda" drive "$d" GPUSHARE_CUDA_LIBRARY=/nonexistent/libcuda.so.1 \
	FAKE_CUPTI_KERNELS=0:300:700
check "... its record has no gpu_uuid, and is written" \
	test -n "$(find "$d" -name '*-0.rec')" -a -z "$(field "$(find "$d" -name '*-0.rec')" gpu_uuid)"

finish account_gpus
