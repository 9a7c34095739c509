#!/usr/bin/env bash
# Per-client accounting against NVML's per-process SM utilisation, without
# MPS (issue 35: "each process's attained share agrees with NVML's
# per-process SM utilisation within 5 points"). Each case runs probes
# (gpushare-probe, GPUSHARE_PROBE_DUTY below 1 for a partial load) under
# libgpushare-account.so, time-sliced, while `nvidia-smi pmon -s u` samples
# every process's SM utilisation (NVML's nvmlDeviceGetProcessUtilization)
# once a second; per process it prints NVML's mean SM %, the record's busy
# share (gpushare_client_sm_share_ratio) and its work rate over the rate of
# the saturating probe alone (what `gpushare check` judges by), and the share
# `gpushare exporter` serves while the probes run (NVML's where it can
# attribute it, source="nvml"; the record's elsewhere).
#
#   bench/gpu/account_nvml.sh BUILD OUT
#
# Env: CASES ("1 0.5 1,1 0.25,0.25 1,1,1": the probes' duties per case),
# SECS (14: each probe's run; pmon samples the middle SECS-6 seconds),
# DUTY (0.2: the library's window duty, for more sampled time).
set -euo pipefail
B=$(cd "${1:?usage: bench/gpu/account_nvml.sh BUILD OUT}" && pwd)
O=${2:?usage: bench/gpu/account_nvml.sh BUILD OUT}
mkdir -p "$O"
O=$(cd "$O" && pwd)
CASES=${CASES:-1 0.5 1,1 0.25,0.25 1,1,1} SECS=${SECS:-14} DUTY=${DUTY:-0.2}
LIB=$B/libgpushare-account.so PROBE=$B/gpushare-probe
if [[ -z ${GPUSHARE_CUPTI_LIBRARY:-} ]]; then
	for c in /usr/local/cuda/lib64/libcupti.so /usr/local/cuda/extras/CUPTI/lib64/libcupti.so; do
		[[ -e $c ]] && export GPUSHARE_CUPTI_LIBRARY=$c && break
	done
fi
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
pgrep -x nvidia-cuda-mps-server >/dev/null && { echo "an MPS server runs: this compares without MPS" >&2; exit 1; }
n=0
for c in $CASES; do
	n=$((n + 1))
	d=$O/case$n
	mkdir -p "$d/rec"
	pids=()
	IFS=, read -ra duties <<<"$c"
	for u in "${duties[@]}"; do
		GPUSHARE_ACCOUNT_DIR=$d/rec GPUSHARE_ACCOUNT_DUTY=$DUTY CUDA_INJECTION64_PATH=$LIB \
			GPUSHARE_PROBE_DUTY=$u "$PROBE" "$SECS" >/dev/null 2>>"$d/probe.err" &
		pids+=($!)
		echo "$! $u" >>"$d/pids"
	done
	sleep 3
	nvidia-smi pmon -s u -d 1 -c $((SECS - 6)) >"$d/pmon.txt" 2>&1 || true
	# the share the exporter serves now (NVML's where it can attribute it)
	GPUSHARE_ACCOUNT_DIR=$d/rec "$B/gpushare" exporter --once >"$d/exporter.txt" 2>&1 || true
	wait "${pids[@]}" || echo "case $n: a probe failed: $(cat "$d/probe.err")"
	pids=()
done
python3 - "$O" "$n" <<'PY' | tee "$O/summary.txt"
import glob, os, sys
o, n = sys.argv[1], int(sys.argv[2])
def rec(path):
    r = {}
    for line in open(path):
        k, _, v = line.strip().partition(" ")
        r[k] = v
    return r
rate_alone = None
import re
print("case  pid      duty  NVML sm%  busy share  work rate  rate share  served (source)")
for i in range(1, n + 1):
    d = f"{o}/case{i}"
    sm = {}
    for line in open(f"{d}/pmon.txt"):
        f = line.split()
        if not f or f[0].startswith("#") or len(f) < 4:
            continue
        try:
            sm.setdefault(int(f[1]), []).append(float(f[3]) if f[3] != "-" else 0.0)
        except ValueError:
            pass
    served = {}
    for line in open(f"{d}/exporter.txt", errors="replace"):
        m = re.match(r'gpushare_client_sm_share_ratio\{.*pid="(\d+)".*source="(\w+)"\} (\S+)', line)
        if m:
            served[int(m.group(1))] = "%.3f (%s)" % (float(m.group(3)), m.group(2))
    for line in open(f"{d}/pids"):
        pid, duty = line.split()
        pid = int(pid)
        recs = glob.glob(f"{d}/rec/{pid}-*.rec")
        if not recs:
            print(f"{i:<5} {pid:<8} {duty:<5} no record")
            continue
        r = rec(recs[0])
        w = int(r["window_ns"])
        busy = int(r["busy_ns"]) / w
        rate = int(r["kernels"]) / (w / 1e9)
        if rate_alone is None:
            rate_alone = rate  # case 1: one saturating probe alone
        s = sm.get(pid, [])
        nv = sum(s) / len(s) if s else float("nan")
        print(f"{i:<5} {pid:<8} {duty:<5} {nv:8.1f}  {busy:10.3f}  {rate:9.1f}  {rate / rate_alone:10.3f}  {served.get(pid, '-')}")
PY
