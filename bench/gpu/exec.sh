#!/usr/bin/env bash
# Several MPI ranks on one GPU under `gpushare exec`: examples/mpi_jacobi with
# 1, 2, 4 and 8 ranks on GPU 0, the same global problem split among them,
# under timeslice (no MPS), mps and mps-split, REPS times each. Writes under
# OUT_DIR: every run's output (runs/), exec.tsv (one line per run) and
# exec.md, the table of median time to solution (and its spread, and the
# slowest rank's start-up) for docs/benchmarks.md. After every run it checks
# that no MPS control daemon, gpushare keeper or mpi_jacobi is left.
#
# Usage: bench/gpu/exec.sh BUILD_DIR OUT_DIR
# Environment: RANKS (default "1 2 4 8"), STRATEGIES (default
# "timeslice mps mps-split"), REPS (default 3), NX (default 1024), GY (global
# rows, default 2048), ITERS (default 5000), GPU (default 0).
set -uo pipefail
B=$(cd "${1:?build dir}" && pwd) O=${2:?out dir}
G=$B/gpushare
J=$B/mpi_jacobi
RANKS=${RANKS:-1 2 4 8} STRATEGIES=${STRATEGIES:-timeslice mps mps-split} REPS=${REPS:-3}
NX=${NX:-1024} GY=${GY:-2048} ITERS=${ITERS:-5000} GPU=${GPU:-0}
mkdir -p "$O/runs"
[[ -x $J ]] || { echo "exec.sh: $J not built (needs CUDA and libopenmpi-dev)" >&2; exit 1; }
margs=(--oversubscribe)
((EUID == 0)) && margs+=(--allow-run-as-root)
# Live (non-zombie) processes whose command line matches $1.
left_running() { ps -eo pid=,stat=,args= | awk '$2 !~ /^Z/' | grep -E "$1" | grep -v grep; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR) print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$O/gpu.txt" 2>&1
echo "GPU: $(head -1 "$O/gpu.txt")  date: $(date -u +%FT%TZ)  nx=$NX global rows=$GY iters=$ITERS" | tee "$O/summary.txt"
printf 'strategy\tranks\trep\trc\ttime_to_solution_s\tstartup_s\tchecksum\tleft\n' >"$O/exec.tsv"
fail=0
for rep in $(seq "$REPS"); do
	for s in $STRATEGIES; do
		for r in $RANKS; do
			ny=$((GY / r))
			f=$O/runs/$s-$r-$rep.txt
			mpirun "${margs[@]}" -np "$r" "$G" exec --strategy "$s" --gpus "$GPU" -- \
				"$J" --nx "$NX" --ny "$ny" --iters "$ITERS" >"$f" 2>&1
			rc=$?
			line=$(grep '^mpi_jacobi: ranks=' "$f" | tail -1)
			tts=$(sed -n 's/.*time_to_solution_s=\([^ ]*\).*/\1/p' <<<"$line")
			st=$(sed -n 's/.*startup_s=\([^ ]*\).*/\1/p' <<<"$line")
			ck=$(sed -n 's/.*checksum=\([^ ]*\).*/\1/p' <<<"$line")
			sleep 1 # the keeper looks every 0.2 s
			left=$(left_running 'nvidia-cuda-mps|gpushare exec|mpi_jacobi' | wc -l)
			if ((left)); then
				left_running 'nvidia-cuda-mps|gpushare exec|mpi_jacobi' >>"$O/left.txt"
				fail=1
			fi
			((rc)) && fail=1
			printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$s" "$r" "$rep" "$rc" "${tts:-NA}" "${st:-NA}" "${ck:-NA}" \
				"$left" >>"$O/exec.tsv"
			echo "$s ranks=$r rep=$rep rc=$rc time_to_solution_s=${tts:-FAILED} left=$left"
		done
	done
done

{
	echo "| ranks on GPU $GPU | strategy | time to solution, median (s) | min - max (s) | slowest start-up, median (s) | runs ok |"
	echo "| ---: | --- | ---: | ---: | ---: | ---: |"
	for r in $RANKS; do
		for s in $STRATEGIES; do
			ok=$(awk -F'\t' -v s="$s" -v r="$r" '$1 == s && $2 == r && $4 == 0 && $5 != "NA"' "$O/exec.tsv")
			n=$(grep -c . <<<"$ok")
			[[ -z $ok ]] && n=0
			if ((n == 0)); then
				echo "| $r | $s | failed | | | 0/$REPS |"
				continue
			fi
			med=$(cut -f5 <<<"$ok" | median)
			lo=$(cut -f5 <<<"$ok" | sort -g | head -1)
			hi=$(cut -f5 <<<"$ok" | sort -g | tail -1)
			smed=$(cut -f6 <<<"$ok" | median)
			echo "| $r | $s | $med | $lo - $hi | $smed | $n/$REPS |"
		done
	done
} >"$O/exec.md"
tee -a "$O/summary.txt" <"$O/exec.md"
if [[ -s $O/left.txt ]]; then
	echo "LEFT RUNNING after some runs (see $O/left.txt)" | tee -a "$O/summary.txt"
fi
echo "pgrep after all runs:" | tee -a "$O/summary.txt"
left_running 'nvidia-cuda-mps|gpushare exec|mpi_jacobi' | tee -a "$O/summary.txt"
exit "$fail"
