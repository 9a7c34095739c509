#!/usr/bin/env bash
# GPU run of the Prometheus metrics (issue 5). Usage: bench/gpu/metrics.sh BUILD_DIR OUT_DIR
# 1. exporter with MPS: start a daemon (`gpushare mps start`), attach 3 MPS
#    clients (tests/helpers/mps_client --hold 20), save `gpushare exporter
#    --once` (and lint it with promtool when installed), stop the daemon;
# 2. a live bench scrape: matmul under timeslice and mps with --metrics-listen,
#    one exposition saved mid-run per strategy;
# 3. overhead: matmul fp16 1024, 2 workers, timeslice, with and without a
#    1 Hz scraper (bench/metrics_overhead.sh, 3 alternating runs each).
# Everything is written under OUT_DIR; a summary table is printed last.
# Every MPS daemon started here is stopped, also on failure.
set -uo pipefail
B=$(cd "${1:?build dir}" && pwd)
O=${2:?out dir}
mkdir -p "$O"
O=$(cd "$O" && pwd)
G=$B/gpushare
SRC=$(cd "$(dirname "$0")/../.." && pwd)
export GPUSHARE_WORKER=$B/gpushare-worker
PIPE=$O/mps/pipe LOG=$O/mps/log
clients=()
bench=
summary=()

cleanup() {
	for p in "${clients[@]}"; do kill "$p" 2>/dev/null || true; done
	[[ -n $bench ]] && kill -TERM "$bench" 2>/dev/null || true
	"$G" mps stop --force --pipe-dir "$PIPE" --log-dir "$LOG" >>"$O/mps_stop.log" 2>&1 || true
}
trap cleanup EXIT
log() { echo "== $*" | tee -a "$O/log.txt"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
fetch() { python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' "$1"; }
lint() { # lint <file> -> "ok", "FAIL(rc)" or "no promtool"
	if ! command -v promtool >/dev/null; then echo "no promtool"; return; fi
	promtool check metrics <"$1" >"$1.lint" 2>&1
	local rc=$?
	[[ $rc -eq 0 ]] && echo ok || echo "FAIL($rc)"
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$O/gpu.txt" 2>&1
log "GPU: $(cat "$O/gpu.txt")  date: $(date -u +%FT%TZ)"

# ---- 1. exporter with an MPS daemon and 3 clients ----
log "exporter with MPS: daemon + 3 clients"
mkdir -p "$PIPE" "$LOG"
chmod 700 "$O/mps" "$PIPE" "$LOG"
if "$G" mps start --pipe-dir "$PIPE" --log-dir "$LOG" >"$O/mps_start.log" 2>&1; then
	for i in 1 2 3; do
		CUDA_MPS_PIPE_DIRECTORY=$PIPE CUDA_MPS_LOG_DIRECTORY=$LOG \
			"$B/tests/helpers/mps_client" --hold 20 >"$O/mps_client_$i.json" 2>&1 &
		clients+=($!)
	done
	# Wait (bounded) until each client printed its line: its context exists.
	for _ in $(seq 100); do
		n=0
		for i in 1 2 3; do [[ -s $O/mps_client_$i.json ]] && n=$((n + 1)); done
		[[ $n -eq 3 ]] && break
		sleep 0.1
	done
	"$G" mps status --pipe-dir "$PIPE" --log-dir "$LOG" >"$O/mps_status.txt" 2>&1
	"$G" exporter --once --pipe-dir "$PIPE" >"$O/exporter_mps.prom" 2>"$O/exporter_mps.err"
	rc=$?
	summary+=("exporter --once with MPS: exit $rc, promtool $(lint "$O/exporter_mps.prom"), clients $(
		sed -n "s|^gpushare_mps_clients{pipe_dir=\"$PIPE\"} ||p" "$O/exporter_mps.prom"), mps-client processes $(
		grep -c 'kind="mps-client"' "$O/exporter_mps.prom" | tr -d ' ') (memory series)")
	log "exporter output: $O/exporter_mps.prom"
	for p in "${clients[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	clients=()
	"$G" mps stop --force --pipe-dir "$PIPE" --log-dir "$LOG" >"$O/mps_stop.log" 2>&1
	summary+=("mps stop: exit $?")
else
	summary+=("mps start failed: $(tail -1 "$O/mps_start.log")")
fi
"$G" exporter --once >"$O/exporter_plain.prom" 2>"$O/exporter_plain.err"
summary+=("exporter --once, no daemon: exit $?, promtool $(lint "$O/exporter_plain.prom")")

# ---- 2. live scrape of a GPU bench, one per strategy ----
log "live bench scrape: matmul, timeslice then mps"
port=$(free_port)
"$G" bench --workload matmul --size 1024 --dtype fp16 --workers 3 --strategy timeslice,mps --duration 4s \
	--warmup 1s --quiet --json --metrics-listen "127.0.0.1:$port" >"$O/live_bench.json" 2>"$O/live_bench.err" &
bench=$!
for strategy in timeslice mps; do
	got=0
	for _ in $(seq 300); do  # bounded: 30 s
		if fetch "http://127.0.0.1:$port/metrics" >"$O/live_$strategy.prom" 2>/dev/null &&
		   grep -q "gpushare_bench_phase{strategy=\"$strategy\",phase=\"measuring\"} 1" "$O/live_$strategy.prom"; then
			got=1
			break
		fi
		sleep 0.1
	done
	summary+=("live scrape $strategy: measuring seen $got, promtool $(lint "$O/live_$strategy.prom"), GPU util $(
		sed -n 's/^gpushare_gpu_utilization_ratio{gpu="0",[^}]*} //p' "$O/live_$strategy.prom")")
done
wait "$bench"
summary+=("live bench: exit $?")
bench=

# ---- 3. overhead of a 1 Hz scrape on a GPU workload ----
log "overhead: matmul fp16 1024, 2 workers"
RUNS=3 DUR=4s WARM=1s WORKLOAD=matmul WORKERS=2 \
	bash "$SRC/bench/metrics_overhead.sh" "$B" "$O/overhead" --size 1024 --dtype fp16 >"$O/overhead.log" 2>&1
summary+=("overhead: exit $?")

echo
echo "==== summary ===="
for s in "${summary[@]}"; do echo "$s"; done
cat "$O/overhead/summary.txt" 2>/dev/null
echo
echo "exporter output with 3 MPS clients ($O/exporter_mps.prom), MPS and process part:"
grep -E '^gpushare_(mps_|process_|gpu_processes|nvidia_driver_up)' "$O/exporter_mps.prom" 2>/dev/null | head -40
