#!/usr/bin/env bash
# Latency under offered load on a GPU: the transformer workload at batch 1
# with 7 workers under timeslice, mps and mps-split.
#   1. closed loop, to learn each strategy's capacity (places the rates);
#   2. latency-vs-offered-load curves: `gpushare sweep --load open` at
#      fractions of the largest capacity, report with the peaks within the
#      bound marked (OUT_DIR/curves/report.md, load_curve.csv, plots/);
#   3. `gpushare bench --find-peak`: the highest rate each strategy sustains
#      within p99 <= 10 ms, to 5% (OUT_DIR/peak.json).
# gpushare starts a private MPS daemon for the mps strategies of each run and
# stops it; at the end this script checks that no MPS daemon, server or
# worker is left, and stops any daemon left in its own run directories.
#
# Usage: bench/gpu/openloop.sh BUILD_DIR OUT_DIR
#        PHASES=closed,curves bench/gpu/openloop.sh BUILD_DIR OUT_DIR   then
#        PHASES=peak bench/gpu/openloop.sh BUILD_DIR OUT_DIR            (same OUT_DIR)
# PHASES (default closed,curves,peak) splits the work across commands that
# each must end within a time limit; the capacity of phase 1 is kept in
# OUT_DIR/capacity.txt for the later phases. With the defaults: closed
# about 30 s, curves about 4 minutes, peak about 6 to 9 minutes (each step
# offers at least 100 / (1 - 0.99) = 10,000 requests; TAIL lowers that).
# Environment: SLO_MS (default 10), FRACTIONS (default
# "0.1 0.2 0.3 0.4 0.5 0.6 0.7 0.8 0.9 1.0 1.1"), DUR (curve runs, default
# 5s), REPEATS (default 1), WARM (default 2s), PEAK_DUR (shortest find-peak
# step, default 5s), STRATEGIES (default timeslice,mps,mps-split), WL_ARGS.
# Device time: about 10 minutes with the defaults.
set -uo pipefail
B=$(cd "${1:?build dir}" && pwd)
O=${2:?out dir}
mkdir -p "$O"
O=$(cd "$O" && pwd)
G=$B/gpushare
export GPUSHARE_WORKER=${GPUSHARE_WORKER:-$B/gpushare-worker}
# The runs of this script keep their private directories (and any MPS
# daemon gpushare starts) in a user directory of their own, so the leftover
# check knows what is ours. Short: MPS socket paths are limited.
RUNTIME=$(mktemp -d /tmp/gs-ol.XXXXXX)
export XDG_RUNTIME_DIR="$RUNTIME"
SLO_MS=${SLO_MS:-10}
FRACTIONS=${FRACTIONS:-0.1 0.2 0.3 0.4 0.5 0.6 0.7 0.8 0.9 1.0 1.1}
DUR=${DUR:-5s} REPEATS=${REPEATS:-1} WARM=${WARM:-2s} PEAK_DUR=${PEAK_DUR:-5s}
STRATEGIES=${STRATEGIES:-timeslice,mps,mps-split}
PHASES=${PHASES:-closed,curves,peak} TAIL=${TAIL:-100}
has() { case ",$PHASES," in *",$1,"*) return 0;; esac; return 1; }
# WL_ARGS replaces the workload for a dry run without a GPU (e.g.
# "--workload spin --request-us 2ms --sleep on --workers 2").
read -r -a WL <<<"${WL_ARGS:---workload transformer --batch 1 --workers 7}"
log() { echo "== $*" | tee -a "$O/summary.txt"; }
left_running() { ps -eo pid=,stat=,args= | awk '$2 !~ /^Z/' | grep -E "$1" | grep -v grep || true; }

cleanup() {
	# A daemon gpushare left in our run directories (it should leave none).
	for pipe in "$RUNTIME"/gpushare/*/mps/pipe; do
		[[ -S "$pipe/control" ]] || continue
		echo "stopping a left-over MPS daemon at $pipe" | tee -a "$O/summary.txt"
		"$G" mps stop --force --pipe-dir "$pipe" --log-dir "${pipe%/pipe}/log" >>"$O/mps_stop.log" 2>&1 || true
	done
}
trap 'cleanup; rm -rf "$RUNTIME"' EXIT

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader >"$O/gpu.txt" 2>&1
log "GPU: $(cat "$O/gpu.txt")  date: $(date -u +%FT%TZ)"
before=$(left_running 'nvidia-cuda-mps-(control|server)')
[[ -n "$before" ]] && log "MPS processes running before the script (left alone): $before"

if has closed; then
	log "1. closed-loop capacity"
	"$G" bench "${WL[@]}" --strategy "$STRATEGIES" --duration 5s --warmup "$WARM" -q --json \
		>"$O/closed.json" 2>"$O/closed.err"
	echo "exit $?" >>"$O/closed.err"
	python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
print(max(r["aggregate"]["requests_per_second"] for r in d["results"]))' "$O/closed.json" >"$O/capacity.txt" 2>/dev/null \
		|| echo 0 >"$O/capacity.txt"
fi
cap=$(cat "$O/capacity.txt" 2>/dev/null || echo 0)
python3 -c 'import json,sys
for r in json.load(open(sys.argv[1]))["results"]:
    a = r["aggregate"]; print("%-10s closed loop %8.1f req/s  p50 %.2f ms  p99 %.2f ms" % (r["strategy"], a["requests_per_second"], a["p50_seconds"]*1e3, a["p99_seconds"]*1e3))' \
	"$O/closed.json" 2>&1 | tee -a "$O/summary.txt"
if ! python3 -c "import sys; sys.exit(0 if float('$cap') > 0 else 1)"; then
	log "no closed-loop capacity measured; stopping (see $O/closed.err)"
	exit 1
fi
read -r -a fractions <<<"$FRACTIONS"
rates=$(python3 -c 'import sys
cap = float(sys.argv[1])
print(",".join("%.6g" % round(cap * float(f), 1) for f in sys.argv[2:]))' "$cap" "${fractions[@]}")
log "largest closed-loop capacity $cap req/s; offered rates $rates"

if has curves; then
	log "2. latency-vs-load curves (sweep --load open)"
	rm -rf "$O/curves"
	"$G" sweep --out "$O/curves" "${WL[@]}" --strategy "$STRATEGIES" --load open --rate "$rates" \
		--duration "$DUR" --warmup "$WARM" --repeats "$REPEATS" --slo-p99 "$SLO_MS" -q >"$O/curves.out" 2>"$O/curves.err"
	echo "sweep exit $?" | tee -a "$O/summary.txt"
	sed -n '/## Recommendation/,/^## [^R]/p' "$O/curves/report.md" 2>/dev/null | tee -a "$O/summary.txt"
fi

if has peak; then
	log "3. find-peak within p99 <= ${SLO_MS} ms"
	start=$(python3 -c "print('%.6g' % (float('$cap') * 0.5))")
	"$G" bench "${WL[@]}" --strategy "$STRATEGIES" --load open --rate "$start" --find-peak --slo "p99=${SLO_MS}ms" \
		--resolution 0.05 --tail-samples "$TAIL" --duration "$PEAK_DUR" --warmup "$WARM" -q --json --out "$O/peak.json" \
		>"$O/peak.out" 2>"$O/peak.err"
	echo "find-peak exit $?" | tee -a "$O/summary.txt"
fi
[[ -f "$O/peak.json" ]] && python3 - "$O/peak.json" "$O/closed.json" <<'PY' 2>&1 | tee -a "$O/summary.txt"
import json, sys
peak = json.load(open(sys.argv[1]))
closed = {r["strategy"]: r["aggregate"]["requests_per_second"] for r in json.load(open(sys.argv[2]))["results"]}
print("| strategy | closed-loop req/s | peak within p99 bound (req/s) | missed at | p99 at the peak | steps |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for r in peak["results"]:
    p = r["peak"]
    print("| %s | %.1f | %s | %s | %.2f ms | %d%s |" % (
        r["strategy"], closed.get(r["strategy"], 0),
        "%.1f" % p["rate_per_second"] if p["found"] else "none",
        "%.1f" % p["missed_at_per_second"] if p["missed_at_per_second"] else "-",
        r["aggregate"]["p99_seconds"] * 1e3, len(p["steps"]), ("; " + p["note"]) if p["note"] else ""))
PY

cleanup
left=$(left_running "nvidia-cuda-mps-(control|server)|$GPUSHARE_WORKER")
if [[ -n "$left" && "$left" != "$before" ]]; then
	log "WARNING: processes left running: $left"
else
	log "no MPS daemon or worker left running by this script"
fi
log "results in $O (curves/report.md, curves/load_curve.csv, curves/plots/load_curve-1.svg, peak.json)"
