#!/usr/bin/env bash
# End-to-end test of `gpushare bench --metrics-listen` with the spin workload
# (no GPU): option errors, a taken port, an exposition linted by promtool
# mid-run, and a real Prometheus server on loopback that scrapes the running
# bench every 200 ms and whose HTTP API must agree with gpushare's own --json
# result: the histogram's count and histogram_quantile(0.5).
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?set by ctest}" "${GPUSHARE_WORKER:?set by ctest}"
tmp=$(mktemp -d /tmp/gpushare-metrics-XXXXXX)
prom=
bench=
cleanup() {
	# Always stop Prometheus and the bench, even when a check failed.
	[[ -n $prom ]] && kill -TERM "$prom" 2>/dev/null && wait "$prom" 2>/dev/null || true
	[[ -n $bench ]] && kill -TERM "$bench" 2>/dev/null && wait "$bench" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

for tool in promtool prometheus; do
	if ! command -v "$tool" >/dev/null; then
		echo "FAIL: $tool not installed (Debian package prometheus, scripts/deps.txt)"
		exit 1
	fi
done

unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY GPUSHARE_MPS_CONTROL
private_xdg
export GPUSHARE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1

get() { python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' "$1"; }

# ---- option errors ----
set +e
"$GPUSHARE" bench --workload spin --metrics-listen 127.0.0.1:70000 >/dev/null 2>"$tmp/err"; rc=$?
check "bad --metrics-listen: exit 2 naming it (got $rc)" test "$rc" -eq 2 -a -n "$(grep -- --metrics-listen "$tmp/err")"
"$GPUSHARE" bench --workload spin --metrics-buckets 0.01,0.001 >/dev/null 2>"$tmp/err"; rc=$?
check "decreasing --metrics-buckets: exit 2 (got $rc)" test "$rc" -eq 2 -a -n "$(grep -- --metrics-buckets "$tmp/err")"
set -e

# ---- a taken port: one line, exit 13, no worker started ----
hold_port "$tmp/holder" 30
wait_for 50 0.05 test -s "$tmp/holder" || true
taken=$(cat "$tmp/holder")
set +e
"$GPUSHARE" bench --workload spin --strategy timeslice --workers 1 --duration 0.2s --warmup 0s -q \
	--metrics-listen "$taken" >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
kill "$holder" 2>/dev/null || true
wait "$holder" 2>/dev/null || true
check "port taken: exit 13 (got $rc)" test "$rc" -eq 13
check "port taken: one line: $(head -1 "$tmp/err")" \
	bash -c "test \$(wc -l <$tmp/err) -eq 1 && grep -q -- '--metrics-listen: cannot listen on 127.0.0.1:$taken: Address already in use' $tmp/err"

# ---- Prometheus scraping a running bench ----
port=$(free_port)
pport=$(free_port)
mkdir "$tmp/data"
cat >"$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 200ms
  scrape_timeout: 200ms
  evaluation_interval: 1s
scrape_configs:
  - job_name: gpushare
    static_configs:
      - targets: ['127.0.0.1:$port']
EOF
promtool check config "$tmp/prometheus.yml" >/dev/null
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/data" \
	--web.listen-address="127.0.0.1:$pport" >"$tmp/prometheus.log" 2>&1 &
prom=$!
ready=0
for _ in $(seq 100); do  # bounded: 10 s
	if get "http://127.0.0.1:$pport/-/ready" >/dev/null 2>&1; then ready=1; break; fi
	sleep 0.1
done
check "prometheus ready on 127.0.0.1:$pport" test "$ready" -eq 1

# Buckets around the 1 ms spin request: (0.00099, 0.00101] holds the median.
buckets=0.0005,0.0009,0.00099,0.00101,0.0011,0.0015,0.002,0.005,0.01,0.05
"$GPUSHARE" bench --workload spin --request-us 1ms --strategy timeslice --workers 2 --duration 6s --warmup 1s -q \
	--metrics-listen "$port" --metrics-buckets "$buckets" --json >"$tmp/bench.json" 2>"$tmp/bench.err" &
bench=$!
# Mid-run: the exposition is valid and carries the live histogram.
seen=0
for _ in $(seq 60); do  # bounded: 6 s
	if get "http://127.0.0.1:$port/metrics" >"$tmp/live" 2>/dev/null &&
	   grep -q 'gpushare_bench_phase{strategy="timeslice",phase="measuring"} 1' "$tmp/live"; then
		seen=1
		break
	fi
	sleep 0.1
done
check "mid-run: phase measuring" test "$seen" -eq 1
check "mid-run: promtool accepts the exposition" promtool check metrics <"$tmp/live"
version=$(sed -n 's/^project(gpushare VERSION \([0-9.]*\).*/\1/p' "$GPUSHARE_SOURCE_DIR/CMakeLists.txt")
check "mid-run: gpushare_build_info{version=\"$version\"} 1 (the version of CMakeLists.txt)" \
	grep -qx "gpushare_build_info{version=\"$version\"} 1" "$tmp/live"
check "mid-run: a histogram per worker with the given buckets" \
	bash -c "grep -q 'gpushare_request_duration_seconds_bucket{strategy=\"timeslice\",workload=\"spin\",worker=\"1\",le=\"0.00101\"}' $tmp/live"
check "mid-run: requests counters" grep -q '^gpushare_requests_total{strategy="timeslice",workload="spin",worker="0"} [0-9]' "$tmp/live"
check "mid-run: driver down reported" grep -qx "gpushare_nvidia_driver_up 0" "$tmp/live"
set +e
wait "$bench"
rc=$?
set -e
bench=
check "bench ran (exit $rc)" test "$rc" -eq 0

# Query Prometheus after the run: last_over_time over the last minute sees the
# final scraped values (instant queries would see the staleness marker written
# when the target went away).
query() { # query <promql> -> the single value, or "none"
	python3 - "http://127.0.0.1:$pport/api/v1/query" "$1" <<'EOF'
import json, sys, urllib.parse, urllib.request
data = urllib.parse.urlencode({"query": sys.argv[2]}).encode()
j = json.load(urllib.request.urlopen(sys.argv[1], data=data, timeout=5))
r = j["data"]["result"]
print(r[0]["value"][1] if j["status"] == "success" and r else "none")
EOF
}
count=none
for _ in $(seq 40); do  # bounded: 20 s (the first scrape can take 5-6 s to show)
	count=$(query 'sum(last_over_time(gpushare_request_duration_seconds_count{job="gpushare"}[1m]))')
	[[ $count != none ]] && break
	sleep 0.5
done
q50=$(query 'histogram_quantile(0.5, sum by (le) (last_over_time(gpushare_request_duration_seconds_bucket{job="gpushare"}[1m])))')
w0=$(query 'last_over_time(gpushare_requests_total{job="gpushare",worker="0"}[1m])')
echo "prometheus: count $count, histogram_quantile(0.5) $q50, worker 0 requests $w0"

# Tolerances.
# - count: Prometheus holds the last scrape before the bench exited; the
#   window's final requests can fall after it. With a 200 ms scrape interval
#   that is at most ~0.2 s of the 6 s window (3%); allow 15% for a loaded CI
#   machine whose scrapes run late. It can never exceed gpushare's count.
# - quantile: gpushare reports the middle of the 1/64-wide log-linear bucket
#   holding the median; histogram_quantile interpolates linearly inside the
#   Prometheus bucket (0.00099, 0.00101] holding it. Both lie in that bucket,
#   widened by one log-linear bucket because a le bucket counts the whole
#   log-linear bucket holding le: |difference| <= 0.00002 + 0.00101/64.
check "prometheus answered count and quantile" test "$count" != none -a "$q50" != none
if [[ $count != none && $q50 != none ]]; then
	check "count and p50 agree with --json within the bucket resolution" python3 - "$tmp/bench.json" "$count" "$q50" "$w0" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
agg = j["results"][0]["aggregate"]
count, q50 = float(sys.argv[2]), float(sys.argv[3])
w0 = float(sys.argv[4]) if sys.argv[4] != "none" else -1
n, p50 = agg["requests"], agg["p50_seconds"]
w0_json = j["results"][0]["workers"][0]["requests"]
print(f"  gpushare: requests {n}, p50 {p50:.6f} s; prometheus: count {count:.0f}, quantile {q50:.6f} s; "
      f"worker 0: {w0_json} vs {w0:.0f}")
ok = n > 1000 and 0.85 * n <= count <= n
ok = ok and abs(q50 - p50) <= 0.00002 + 0.00101 / 64
ok = ok and 0.85 * w0_json <= w0 <= w0_json
sys.exit(0 if ok else 1)
EOF
fi

if ((failures > 0)); then
	echo "$failures check(s) failed"
	tail -5 "$tmp/prometheus.log" || true
	exit 1
fi
echo "all checks passed"
