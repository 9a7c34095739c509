#!/usr/bin/env bash
# Does the open-loop dispatcher keep up, and how close to schedule does it
# hand arrivals over? Runs `gpushare bench --load open` with the CPU `spin`
# workload and empty requests (--request-us 0), so the workers cost nothing
# and what is measured is gpushare: for each rate and arrival process, RUNS
# times, it prints the offered and achieved rates, arrivals that found a
# full queue, and the lateness distribution (publish time minus scheduled
# time of each arrival: p50, p99, p99.9, max). The target: 200,000
# arrivals/s kept up with, 99% handed over within 10 us of their time.
#
# Usage: bench/openloop_dispatch.sh BUILD_DIR OUT_DIR [extra bench options...]
# Environment: RATES (default "10000 100000 200000"), ARRIVALS (default
# "uniform poisson"), WORKERS (default 1), DISPATCH (default shared),
# RUNS (default 3), DUR (default 5s), WARM (default 1s).
# Writes OUT_DIR/<arrival>-<rate>-<run>.json and OUT_DIR/summary.md.
set -euo pipefail
B=$(cd "${1:?build dir}" && pwd)
O=${2:?out dir}
shift 2
mkdir -p "$O"
G=$B/gpushare
export GPUSHARE_WORKER=${GPUSHARE_WORKER:-$B/gpushare-worker}
RATES=${RATES:-10000 100000 200000} ARRIVALS=${ARRIVALS:-uniform poisson}
WORKERS=${WORKERS:-1} DISPATCH=${DISPATCH:-shared} RUNS=${RUNS:-3} DUR=${DUR:-5s} WARM=${WARM:-1s}

{
	echo "machine: $(uname -n), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "command: $G bench --workload spin --request-us 0 --workers $WORKERS --strategy timeslice --load open" \
		"--rate R --arrival A --dispatch $DISPATCH --duration $DUR --warmup $WARM $*"
	echo
	echo "| arrival | rate /s | run | offered /s | achieved /s | ring full | late p50 | late p99 | late p99.9 | late max | latency p99 |"
	echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
} >"$O/summary.md"
for arrival in $ARRIVALS; do
	for rate in $RATES; do
		for ((run = 1; run <= RUNS; run++)); do
			f="$O/$arrival-$rate-$run.json"
			"$G" bench --workload spin --request-us 0 --workers "$WORKERS" --strategy timeslice --load open \
				--rate "$rate" --arrival "$arrival" --dispatch "$DISPATCH" --duration "$DUR" --warmup "$WARM" \
				-q --json "$@" >"$f"
			python3 - "$f" "$arrival" "$rate" "$run" >>"$O/summary.md" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["results"][0]
o = r["open_loop"]
us = lambda s: "%.1f us" % (s * 1e6)
print("| %s | %s | %s | %.0f | %.0f | %d | %s | %s | %s | %s | %s |" % (
    sys.argv[2], sys.argv[3], sys.argv[4], o["offered_per_second"], o["achieved_per_second"], o["ring_full"],
    us(o["lateness"]["p50_seconds"]), us(o["lateness"]["p99_seconds"]), us(o["lateness"]["p999_seconds"]),
    us(o["lateness"]["max_seconds"]), us(r["aggregate"]["p99_seconds"])))
PY
		done
	done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$O/summary.md"
cat "$O/summary.md"
