#!/usr/bin/env bash
# gpushare plan on measurements of a GPU: a sweep of a PyTorch worker of our
# own (examples/bert_worker.py, BERT-base, batch 8) under timeslice, mps and
# mps-split at 1, 2 and 4 workers, then `gpushare plan` for every target.
#   bench/gpu/plan.sh BUILD OUT
# Env: DUR (default 2s) window per run; REPEATS (default 2).
# Writes OUT/sweep (results, report) and OUT/plan-<target>.txt; prints the
# report's recommendation and each plan's first lines.
set -uo pipefail
B=$(cd "${1:?usage: bench/gpu/plan.sh BUILD OUT}" && pwd)
O=${2:?usage: bench/gpu/plan.sh BUILD OUT}
G=$B/gpushare
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DUR=${DUR:-2s} REPEATS=${REPEATS:-2}
mkdir -p "$O"
model=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $model  date: $(date -u +%FT%TZ)" | tee "$O/summary.txt"
t0=$(date +%s)
"$G" sweep --out "$O/sweep" --strategy timeslice,mps,mps-split --workers 1,2,4 --repeats "$REPEATS" \
	--duration "$DUR" --warmup 1s -q -- python3 "$SRC/examples/bert_worker.py" --batch 8 \
	>"$O/sweep.out" 2>"$O/sweep.err" || echo "sweep: exit $?" | tee -a "$O/summary.txt"
echo "sweep: $(($(date +%s) - t0)) s" | tee -a "$O/summary.txt"
"$G" report "$O/sweep" -q >/dev/null 2>>"$O/summary.txt"
grep -A3 -i "recommend" "$O/sweep/report.md" | head -8 | tee -a "$O/summary.txt"
for t in slurm k8s-device-plugin k8s-dra mig-parted env; do
	args=(--for "$t")
	[[ $t == slurm ]] && args+=(--out "$O/plan-slurm")
	if "$G" plan "$O/sweep" "${args[@]}" >"$O/plan-$t.txt" 2>"$O/plan-$t.err"; then
		echo "== plan --for $t: ok" | tee -a "$O/summary.txt"
	else
		echo "== plan --for $t: exit $? ($(tail -1 "$O/plan-$t.err"))" | tee -a "$O/summary.txt"
	fi
done
if [[ -d $O/plan-slurm ]]; then
	for f in "$O"/plan-slurm/*; do
		{
			echo "# ---- $(basename "$f")"
			cat "$f"
		} >>"$O/plan-slurm.txt"
	done
fi
left=$(ps -eo pid=,stat=,comm= | awk '$2 !~ /^Z/ && $3 ~ /nvidia-cuda-mps/')
[[ -z $left ]] || {
	echo "LEFT RUNNING: $left"
	exit 1
}
