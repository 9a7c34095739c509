#!/usr/bin/env bash
# GPU run of `gpushare sweep` + `gpushare report` (issue 4, Performance):
# {timeslice, mps, mps-split} x workers {1,3,5,7} x {matmul, transformer},
# 3 repeats, batch 1 = 72 runs, interleaved, one private MPS daemon for the
# whole sweep. Usage: bench/gpu/sweep.sh BUILD_DIR OUT_DIR
# Window per run: DUR (default 1s) after WARM (default 300ms); about 2 s per
# run with start-up, so the grid takes about 2.5 minutes on an H100.
# Writes OUT_DIR/sweep (results.jsonl, report.md/html, summary.*, plots/),
# logs, and prints the markdown tables and the recommendation at the end.
set -euo pipefail
# Live (non-zombie) processes whose arguments match $1.
left_running() { ps -eo pid=,stat=,args= | awk '$2 !~ /^Z/' | grep -E "$1" | grep -v grep || true; }
B=$(cd "${1:?build dir}" && pwd) O=${2:?out dir}
mkdir -p "$O"
G=$B/gpushare
DUR=${DUR:-1s} WARM=${WARM:-300ms} REPEATS=${REPEATS:-3}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$O/gpu.txt" 2>&1 || true
echo "GPU: $(cat "$O/gpu.txt")  date: $(date -u +%FT%TZ)" | tee "$O/summary.txt"
start=$(date +%s)
set +e
timeout 560 "$G" sweep --out "$O/sweep" \
	--workload matmul:size=2048:dtype=fp16,transformer:layers=6:seq=128 \
	--strategy timeslice,mps,mps-split --workers 1,3,5,7 --batch 1 --repeats "$REPEATS" \
	--duration "$DUR" --warmup "$WARM" --warmup-requests 2 --slo-p99 20 \
	>"$O/sweep.out" 2>"$O/sweep.err"
rc=$?
set -e
end=$(date +%s)
echo "sweep exit $rc after $((end - start)) s ($(wc -l <"$O/sweep/results.jsonl" 2>/dev/null || echo 0) runs recorded)" | tee -a "$O/summary.txt"
if [[ $rc -ne 0 ]]; then
	tail -20 "$O/sweep.err"
	# An interrupted or timed-out sweep keeps its runs: report what is there.
	"$G" report "$O/sweep" --slo-p99 20 -q >>"$O/sweep.out" 2>>"$O/sweep.err" || true
fi
# Every MPS daemon the sweep started must be gone.
left=$(left_running 'nvidia-cuda-mps-(control|server)')
if [[ -n "$left" ]]; then
	echo "WARNING: MPS processes still running:" | tee -a "$O/summary.txt"
	echo "$left" | tee -a "$O/summary.txt"
	for p in "${XDG_RUNTIME_DIR:-/tmp/gpushare-$(id -u)}"/gpushare/sweep-*/mps/pipe /tmp/gpushare-"$(id -u)"/sweep-*/mps/pipe; do
		[[ -d "$p" ]] && echo quit | CUDA_MPS_PIPE_DIRECTORY="$p" nvidia-cuda-mps-control || true
	done
else
	echo "no MPS daemon left running" | tee -a "$O/summary.txt"
fi
# Report speed on this machine: re-running the report of the real sweep.
t0=$(date +%s.%N); "$G" report "$O/sweep" --slo-p99 20 -q >/dev/null 2>&1 || true; t1=$(date +%s.%N)
echo "report of $(wc -l <"$O/sweep/results.jsonl") runs: $(python3 -c "print(round($t1 - $t0, 3))") s" | tee -a "$O/summary.txt"
echo
cat "$O/sweep/report.md" 2>/dev/null || echo "no report written"
