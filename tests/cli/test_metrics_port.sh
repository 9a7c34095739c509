#!/usr/bin/env bash
# --metrics-listen ...:0 says which port it took (bench, sweep, farm), and the
# port it names serves the command's metrics (the farm's families of
# docs/metrics.md while the farm runs).
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?set by ctest}"
tmp=$(mktemp -d /tmp/gpushare-mport-XXXXXX)
fpid=
trap '[[ -n "$fpid" ]] && kill -KILL "$fpid" 2>/dev/null; rm -rf "$tmp"' EXIT
unset CUDA_MPS_PIPE_DIRECTORY GPUSHARE_MPS_CONTROL CUDA_VISIBLE_DEVICES
private_xdg
export GPUSHARE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1
port_of() { sed -n 's|^gpushare: '"$1"': serving metrics at http://127.0.0.1:\([0-9][0-9]*\)/metrics$|\1|p' "$2"; }

run bench --workload spin --request-us 100 --strategy timeslice --workers 1 --duration 200ms --warmup 0 -q \
	--metrics-listen 127.0.0.1:0
p=$(port_of bench "$tmp/err")
check "bench --metrics-listen 127.0.0.1:0: exit 0 (got $rc)" test "$rc" -eq 0
check "bench --metrics-listen 127.0.0.1:0: names the port it took ('$p')" test -n "$p" -a "${p:-0}" -gt 0

run sweep --out "$tmp/sw" --workload spin:request-us=100 --strategy timeslice --workers 1 --repeats 1 \
	--duration 200ms --warmup 0 --no-report -q --metrics-listen 0
p=$(port_of sweep "$tmp/err")
check "sweep --metrics-listen 0: names the port it took ('$p')" test -n "$p" -a "${p:-0}" -gt 0

# The job runs until the test has scraped (a gate), however loaded the machine.
printf '%s\n' "sh -c 'while [ ! -e $tmp/gate ]; do sleep 0.05; done'" >"$tmp/jobs"
"$GPUSHARE" farm --dir "$tmp/f" --strategy timeslice --slots 1 -q --metrics-listen 0 "$tmp/jobs" \
	>"$tmp/f.out" 2>"$tmp/f.err" &
fpid=$!
has_port() { [[ -n "$(port_of farm "$tmp/f.err")" ]]; }
wait_for 100 0.05 has_port || true
p=$(port_of farm "$tmp/f.err")
check "farm --metrics-listen 0: names the port it took ('$p')" test -n "$p"
check "farm: that port serves the farm's metrics" python3 - "${p:-0}" <<'PY'
import sys, time, urllib.request
for _ in range(200):
    text = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=5).read().decode()
    if "gpushare_farm_jobs_running 1" in text:
        break
    time.sleep(0.05)
for name in ("gpushare_farm_jobs_queued", "gpushare_farm_jobs_done", "gpushare_farm_slots 1",
             'gpushare_farm_gpu_jobs_running{gpu="0",uuid=""} 1'):
    assert name in text, (name, text)
PY
touch "$tmp/gate"
set +e
wait "$fpid"
rc=$?
set -e
fpid=
check "farm: exit 0 (got $rc)" test "$rc" -eq 0

finish "metrics port"
