#!/usr/bin/env bash
# GPU test (label gpu): per-client accounting with the real CUPTI and the
# built-in probe of `gpushare check` (workloads/probe.cu, gpushare-probe).
#  1. the probe alone under libgpushare-account.so, kernel timing then launch
#     timing: a record with kernels, a share near 1, its GPU's UUID
#     (nvidia-smi -L's), its device memory (kernel timing);
#  2. the exporter serves it;
#  3. time-slicing (no MPS daemon): `gpushare check --clients 2` passes (each
#     client against its half of what both attained, the switching's cost
#     within --max-cost), and
#     does not pass with a stray probe running beside the plan's two
#     (exit 15, the stray named: "alone" would hold its load);
#  4. under MPS, `gpushare check --shares 25,75` passes, and the same plan
#     with the limits overridden to 100/100 (a planted misconfiguration)
#     fails with exit 15.
# The figures are printed for docs/benchmarks.md.
set -euo pipefail
G=${GPUSHARE:?}
B=$(dirname "$G")
LIB=$B/libgpushare-account.so PROBE=$B/gpushare-probe
D=$(mktemp -d /tmp/gsacc.XXXXXX)
P=$D/pipe L=$D/log
stray=
cleanup() {
	[[ -n $stray ]] && kill "$stray" 2>/dev/null
	"$G" mps stop --pipe-dir "$P" --log-dir "$L" --force --timeout 20s >/dev/null 2>&1 || true
	rm -rf "$D"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }
field() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }

[[ -e $LIB ]] || fail "$LIB not built"
[[ -x $PROBE ]] || fail "$PROBE not built (no CUDA compiler at configure time?)"
if [[ -z ${GPUSHARE_CUPTI_LIBRARY:-} ]]; then
	for c in /usr/local/cuda/lib64/libcupti.so /usr/local/cuda/extras/CUPTI/lib64/libcupti.so \
		/usr/local/cuda/lib/libcupti.so; do
		[[ -e $c ]] && export GPUSHARE_CUPTI_LIBRARY=$c && break
	done
fi
[[ -n ${GPUSHARE_CUPTI_LIBRARY:-} ]] || fail "libcupti.so not found (set GPUSHARE_CUPTI_LIBRARY)"
echo "CUPTI: $GPUSHARE_CUPTI_LIBRARY"
unset CUDA_MPS_PIPE_DIRECTORY

# 1. alone, with kernel timing (CUPTI's kernel and memory records), then
# with launch timing (the default: CUDA events, CUPTI attached per window)
for timing in kernels launches; do
	GPUSHARE_ACCOUNT_TIMING=$timing GPUSHARE_ACCOUNT_DIR=$D/alone-$timing CUDA_INJECTION64_PATH=$LIB \
		GPUSHARE_CHECK_SMS_FILE=$D/sms "$PROBE" 5 || fail "the probe under the library ($timing)"
	rec=$(find "$D/alone-$timing" -name '*-0.rec' | head -n1)
	[[ -n $rec ]] || fail "no record written ($timing)"
	cat "$rec"
	k=$(field "$rec" kernels)
	[[ $k -gt 0 ]] || fail "no kernel recorded ($timing)"
	share=$(awk '$1 == "busy_ns" { b = $2 } $1 == "window_ns" { w = $2 } END { printf "%.3f", b / w }' "$rec")
	echo "alone ($timing): $(cat "$D/sms") SMs, kernels $k, share $share, mean kernel $(awk '$1 == "kernel_ns" { k = $2 } $1 == "kernels" { n = $2 } END { printf "%.1f us", k / n / 1e3 }' "$rec")"
	awk -v s="$share" 'BEGIN { exit !(s > 0.9) }' || fail "a saturating process alone reads a share of $share ($timing)"
	if [[ $timing == kernels ]]; then
		[[ $(field "$rec" memory_bytes) -ge 4 ]] || fail "its allocation was not seen"
		[[ -z $(field "$rec" timing) ]] || fail "kernel timing's record says $(field "$rec" timing)"
	else
		[[ $(field "$rec" timing) == launches ]] || fail "the default is not launch timing here"
	fi
	ok "a record of the probe, share $share ($timing)"
	uuid=$(field "$rec" gpu_uuid)
	if [[ -z $uuid ]] || ! nvidia-smi -L | grep -qF "UUID: $uuid)"; then
		fail "the record names no GPU of nvidia-smi -L ('$uuid')"
	fi
	ok "the record names its GPU: $uuid"
done

# 2. the exporter
GPUSHARE_ACCOUNT_DIR=$D/alone-launches "$G" exporter --once >"$D/exp.txt" || true
grep -q '^gpushare_client_sm_share_ratio{' "$D/exp.txt" || fail "the exporter serves no client"
grep -q "^gpushare_client_sm_share_ratio{.*,gpu=\"[0-9]*\",uuid=\"$uuid\",source=\"[a-z]*\"}" "$D/exp.txt" ||
	fail "the exporter does not label the client with its GPU"
ok "the exporter serves it"

# 3. time-slicing: the work rate halves (the probe's kernel time grew as
# much on an H200: docs/benchmarks.md)
"$G" check --clients 2 --seconds 10 --account-lib "$LIB" | tee "$D/ts.txt" || fail "check of 2 time-sliced clients"
ok "check passes 2 time-sliced clients"
"$PROBE" 600 &
stray=$!
# the stray running on the GPU before check looks: NVML lists it
listed() { nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null | grep -qx "$stray"; }
for _ in $(seq 100); do listed && break; sleep 0.2; done
listed || fail "the stray probe (pid $stray) never showed in NVML's compute processes"
set +e
"$G" check --clients 2 --seconds 10 --account-lib "$LIB" | tee "$D/ts-bad.txt"
rc=${PIPESTATUS[0]}
set -e
stray_pid=$stray
kill "$stray" 2>/dev/null || true
wait "$stray" 2>/dev/null || true
stray=
[[ $rc -eq 15 ]] || fail "check passed (exit $rc) 2 time-sliced clients beside a stray third"
grep -q "^unknown: 1 other process (pid $stray_pid)" "$D/ts-bad.txt" ||
	fail "check did not name the stray process as the reason no share could be judged"
ok "check does not pass 2 time-sliced clients beside a stray probe, and names it (exit 15)"

# 4. under MPS
export CUDA_MPS_PIPE_DIRECTORY=$P CUDA_MPS_LOG_DIRECTORY=$L
"$G" mps start --pipe-dir "$P" --log-dir "$L" >/dev/null || fail "mps start"
"$G" check --shares 25,75 --seconds 10 --account-lib "$LIB" | tee "$D/check.txt" ||
	fail "check 25/75 under MPS limits"
ok "check passes 25/75 under MPS limits"
set +e
"$G" check --shares 25,75 --seconds 10 --account-lib "$LIB" --json -- \
	env CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100 "$PROBE" | tee "$D/bad.json"
rc=${PIPESTATUS[0]}
set -e
[[ $rc -eq 15 ]] || fail "check passed (exit $rc) a 100/100 misconfiguration of a 25/75 plan"
ok "check fails the planted 100/100 (exit 15)"
echo "all accounting GPU checks passed"
