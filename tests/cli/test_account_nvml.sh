#!/usr/bin/env bash
# The exporter's attained share from NVML where NVML can attribute it (no
# GPU needed: the stand-in NVML gives per-process SM samples,
# FAKE_NVML_PROC_SM). Two records of live processes on the stand-in's GPU 1,
# each saying 90% busy from inside (the upper bound a time-sliced process
# reads): with no MPS server on the GPU and NVML samples for the pid, the
# share served is NVML's (source="nvml") and the held flag follows it; with
# an MPS server on the GPU (NVML gives it the clients' work), or without
# samples, the share is the record's (source="library"). Records without a
# memory figure (launch timing) get NVML's for the process, MPS clients too.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?set by ctest}" "${GPUSHARE_TEST_HELPERS:?set by ctest}"
H=$GPUSHARE_TEST_HELPERS
tmp=$(mktemp -d /tmp/gpushare-account-nvml-XXXXXX)
pids=()
cleanup() {
	kill_pids
	rm -rf "$tmp"
}
trap cleanup EXIT
export GPUSHARE_NVML_LIBRARY=$H/libfakenvml.so GPUSHARE_ACCOUNT_DIR=$tmp/rec
unset FAKE_NVML_GPUS FAKE_NVML_PROC_SM CUDA_MPS_PIPE_DIRECTORY
fake_gpu_processes
mkdir -m 700 "$tmp/rec"

plant() { # plant PID: a record of 90% busy on the stand-in's GPU 1, promised half
	printf 'gpushare-account 1\npid %s\nuid %s\ndevice 0\ngpu_uuid GPU-5f0c1e2a-9b3d-4c7e-8a1f-2b3c4d5e6f70\nstart_ns 1\nupdated_ns %s\nwall_ns 10000000000\nwindow_ns 1000000000\nbusy_ns 900000000\nkernel_ns 900000000\nkernels 100\ntiming launches\npromised 0.500000\n' \
		"$1" "$(id -u)" "$(date +%s%N)" >"$tmp/rec/$1-0.rec"
}
plant "$plain"
plant "$client"
share_of() { # share_of PID: "VALUE SOURCE" of its attained share
	sed -n "s/^gpushare_client_sm_share_ratio{.*pid=\"$1\".*source=\"\([a-z]*\)\"} \(.*\)$/\2 \1/p" "$tmp/out"
}
held_of() { sed -n "s/^gpushare_client_held_under_promise{.*pid=\"$1\".*} \(.*\)$/\1/p" "$tmp/out"; }
lint() {
	if command -v promtool >/dev/null; then
		check "$1: the exposition lints" promtool check metrics <"$tmp/out"
	fi
}

echo "== no MPS server on the GPU: NVML's share"
FAKE_NVML_PIDS="$plain,,$client" FAKE_NVML_PROC_SM="$plain:48,$client:30" run exporter --once
check "exporter (exit $rc)" test "$rc" -eq 0
check "NVML's share for the first: 0.48 (got '$(share_of "$plain")')" test "$(share_of "$plain")" = "0.48 nvml"
check "NVML's share for the second: 0.3 (got '$(share_of "$client")')" test "$(share_of "$client")" = "0.3 nvml"
check "held follows NVML's share: 0.3 against 0.5 promised, the GPU with room" test "$(held_of "$client")" = 1
check "0.48 against 0.5 is within 5 points: not held" test "$(held_of "$plain")" = 0
mem_of() { sed -n "s/^gpushare_client_memory_bytes{.*pid=\"$1\".*} \(.*\)$/\1/p" "$tmp/out"; }
check "no memory in the records (launch timing): NVML's, 1 GiB and 2 GiB" \
	test "$(mem_of "$plain")" = 1073741824 -a "$(mem_of "$client")" = 2147483648
lint "nvml"
FAKE_NVML_PIDS="$plain,,$client" FAKE_NVML_PROC_SM="$plain:48,$client:30" run info --clients --json
check "info --clients --json: NVML's shares, said so, the flag with them" python3 -c '
import json, sys
c = {x["pid"]: x for x in json.load(open(sys.argv[1]))["clients"]}
p, q = c[int(sys.argv[2])], c[int(sys.argv[3])]
assert (p["attained"], p["attained_source"], p["held_under_promise"]) == (0.48, "nvml", False), p
assert (q["attained"], q["attained_source"], q["held_under_promise"]) == (0.3, "nvml", True), q
assert (p["memory_bytes"], q["memory_bytes"]) == (1 << 30, 2 << 30), (p, q)' "$tmp/out" "$plain" "$client"
FAKE_NVML_PIDS="$plain,,$client" FAKE_NVML_PROC_SM="$plain:48,$client:30" run info --clients
check "info --clients: 30.0% attained, 2048 MiB, HELD" grep -qE "^1 +$client .* 50\.0% +30\.0% +2048 .*HELD$" "$tmp/out"

echo "== no NVML sample for a process: the record's share"
FAKE_NVML_PIDS="$plain,,$client" FAKE_NVML_PROC_SM="$plain:48" run exporter --once
check "the sampled one from NVML" test "$(share_of "$plain")" = "0.48 nvml"
check "the other from its record (got '$(share_of "$client")')" test "$(share_of "$client")" = "0.9 library"

echo "== an MPS server on the GPU: the records' shares"
FAKE_NVML_PIDS="$plain,$server,$client" FAKE_NVML_PROC_SM="$plain:48,$client:30" run exporter --once
check "under MPS, the record's share (got '$(share_of "$client")')" test "$(share_of "$client")" = "0.9 library"
check "  for every client of that GPU" test "$(share_of "$plain")" = "0.9 library"
check "under MPS, NVML's memory of a client" test "$(mem_of "$client")" = 2147483648
lint "mps"
FAKE_NVML_PIDS="$plain,$server,$client" FAKE_NVML_PROC_SM="$plain:48,$client:30" run info --clients --json
check "info --clients --json under MPS: the records' shares" python3 -c '
import json, sys
assert all(x["attained"] == 0.9 and x["attained_source"] == "library" for x in json.load(open(sys.argv[1]))["clients"])' "$tmp/out"

finish account_nvml
