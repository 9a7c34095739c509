#!/usr/bin/env bash
# Does a Prometheus scrape slow a benchmark? Runs `gpushare bench` in three
# configurations, alternating, RUNS times each:
#   off     no --metrics-listen
#   idle    --metrics-listen, nobody scrapes
#   scraped --metrics-listen and a scraper fetching /metrics once a second
# and prints the median aggregate throughput of each and its difference from
# `off` (the issue's bar: scraping once per second changes throughput < 1%).
#
# Usage: bench/metrics_overhead.sh BUILD_DIR OUT_DIR [extra bench options...]
# Environment: RUNS (default 5), DUR (default 5s), WARM (default 1s),
# WORKLOAD (default spin), WORKERS (default 2), INTERVAL (scrape period in s,
# default 1). Example on a GPU:
#   WORKLOAD=matmul bench/metrics_overhead.sh build out --size 1024 --dtype fp16
set -euo pipefail
B=$(cd "${1:?build dir}" && pwd)
O=${2:?out dir}
shift 2
mkdir -p "$O"
G=$B/gpushare
export GPUSHARE_WORKER=${GPUSHARE_WORKER:-$B/gpushare-worker}
RUNS=${RUNS:-5} DUR=${DUR:-5s} WARM=${WARM:-1s} WORKLOAD=${WORKLOAD:-spin} WORKERS=${WORKERS:-2}
INTERVAL=${INTERVAL:-1}
scraper=
trap '[[ -n $scraper ]] && kill "$scraper" 2>/dev/null || true' EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Fetch http://127.0.0.1:$1/metrics every INTERVAL seconds; count answers.
scrape_loop() {
	# exec: the background job is python itself, so killing $! stops it.
	exec python3 - "$1" "$INTERVAL" "$2" <<'PY'
import sys, time, urllib.request
port, interval, out = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
ok = 0
nxt = time.monotonic()
while True:
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read()
        ok += 1
        open(out, "w").write(str(ok))
    except Exception:
        pass
    nxt += interval
    time.sleep(max(0, nxt - time.monotonic()))
PY
}

run() { # run <config> <index>
	local cfg=$1 i=$2 port args=()

	shift 2
	if [[ $cfg != off ]]; then
		port=$(free_port)
		args=(--metrics-listen "127.0.0.1:$port")
	fi
	if [[ $cfg == scraped ]]; then
		scrape_loop "$port" "$O/scrapes_$i" &
		scraper=$!
	fi
	"$G" bench --workload "$WORKLOAD" --workers "$WORKERS" --strategy timeslice --duration "$DUR" \
		--warmup "$WARM" --quiet --json "${args[@]}" "$@" >"$O/${cfg}_$i.json" 2>"$O/${cfg}_$i.err"
	if [[ -n $scraper ]]; then
		kill "$scraper" 2>/dev/null || true
		wait "$scraper" 2>/dev/null || true
		scraper=
	fi
}

for i in $(seq "$RUNS"); do
	# Rotate the order so no configuration always runs first.
	case $((i % 3)) in
	0) order="off idle scraped" ;;
	1) order="idle scraped off" ;;
	2) order="scraped off idle" ;;
	esac
	for cfg in $order; do
		run "$cfg" "$i" "$@"
	done
done

python3 - "$O" "$RUNS" "$WORKLOAD" "$WORKERS" "$DUR" <<'PY' | tee "$O/summary.txt"
import glob, json, statistics, sys
o, runs, wl, workers, dur = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
def rate(f):
    return json.load(open(f))["results"][0]["aggregate"]["requests_per_second"]
rates = {c: [rate(f) for f in sorted(glob.glob(f"{o}/{c}_*.json"))] for c in ("off", "idle", "scraped")}
scrapes = []
for f in sorted(glob.glob(f"{o}/scrapes_*")):
    try: scrapes.append(int(open(f).read()))
    except ValueError: pass
base = statistics.median(rates["off"])
print(f"metrics overhead: workload {wl}, {workers} workers, timeslice, {dur} window, {runs} alternating runs each")
print(f"{'config':<8} {'median req/s':>14} {'vs off':>8}  runs")
for c in ("off", "idle", "scraped"):
    m = statistics.median(rates[c])
    print(f"{c:<8} {m:>14.1f} {100 * (m - base) / base:>+7.2f}%  {' '.join('%.0f' % r for r in rates[c])}")
print(f"scrapes per scraped run: {scrapes}")
PY
