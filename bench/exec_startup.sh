#!/usr/bin/env bash
# What does `gpushare exec` add to a rank's start? Two measurements, with the
# stand-in NVML (2 GPUs) and MPS control program of the test helpers, so it
# runs without a GPU (set REAL=1 to use the machine's NVML and MPS instead):
#
#  1. per rank, daemon already up: a holder rank of a hand-made Open MPI job
#     keeps the job's daemon running; then RANKS more ranks of that job run
#     `gpushare exec -- /bin/true` one after another, each timed, against
#     /bin/true alone; the median difference is the cost per rank.
#  2. whole jobs: `mpirun -np N gpushare exec -- /bin/true` against
#     `mpirun -np N /bin/true` for N in NPS, alternating, RUNS times each:
#     medians, the difference, and the difference per rank. This includes
#     the first rank's daemon start and the last rank's stop.
#
# Usage: bench/exec_startup.sh BUILD_DIR [OUT_DIR]
# Environment: RANKS (default 200), RUNS (default 7), NPS (default "8 48"),
# PARTS (default "1 2"), PROG (the rank's program in part 2, default
# /bin/true; Open MPI 4.1's mpirun was seen to hang with 48 ranks of
# /bin/true that exit at once, so PROG="/bin/sleep 0.2" gives a baseline that
# always completes). Each mpirun is bounded (120 s); a run that fails or hangs
# is counted and left out of the medians.
# Build with -DCMAKE_BUILD_TYPE=Release for numbers worth quoting.
set -euo pipefail
B=$(cd "${1:?build dir}" && pwd)
O=${2:-}
G=$B/gpushare
H=$B/tests/helpers
RANKS=${RANKS:-200} RUNS=${RUNS:-7} NPS=${NPS:-8 48} PARTS=${PARTS:-1 2} PROG=${PROG:-/bin/true}
tmp=$(mktemp -d)
holder=
cleanup() {
	[[ -n $holder ]] && kill "$holder" 2>/dev/null && wait "$holder" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -m 700 "$tmp/xdg"
export XDG_RUNTIME_DIR=$tmp/xdg
if [[ -z ${REAL-} ]]; then
	export GPUSHARE_NVML_LIBRARY=$H/libfakenvml.so FAKE_NVML_GPUS=2 GPUSHARE_MPS_CONTROL=$H/fake_mps_control
fi

now_us() { echo $(($(date +%s%N) / 1000)); }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

part1() {
	echo "== 1. per rank, daemon already up ($RANKS ranks, one at a time)"
	job=(OMPI_COMM_WORLD_LOCAL_SIZE=$((RANKS + 1)) OMPI_MCA_orte_ess_jobid=4242)
	env "${job[@]}" OMPI_COMM_WORLD_LOCAL_RANK=0 "$G" exec -- sleep 600 2>/dev/null &
	holder=$!
	for _ in $(seq 100); do
		[[ -n $(find "$XDG_RUNTIME_DIR/gpushare" -name 'nvidia-cuda-mps-control.pid' 2>/dev/null) ]] && break
		sleep 0.1
	done
	for ((r = 1; r <= RANKS; r++)); do
		t0=$(now_us)
		env "${job[@]}" OMPI_COMM_WORLD_LOCAL_RANK=$r "$G" exec -- /bin/true 2>/dev/null
		t1=$(now_us)
		env "${job[@]}" OMPI_COMM_WORLD_LOCAL_RANK=$r /bin/true
		t2=$(now_us)
		echo "$((t1 - t0)) $((t2 - t1))"
	done >"$tmp/per-rank"
	exec_med=$(cut -d' ' -f1 "$tmp/per-rank" | median)
	plain_med=$(cut -d' ' -f2 "$tmp/per-rank" | median)
	exec_p90=$(cut -d' ' -f1 "$tmp/per-rank" | sort -n | awk -v n="$RANKS" 'NR == int(n * 0.9 + 0.5) {print}')
	kill "$holder"
	wait "$holder" 2>/dev/null || true
	holder=
	printf 'per rank: exec /bin/true median %.1f ms (p90 %.1f ms), /bin/true %.1f ms, cost %.1f ms\n' \
		"$(echo "$exec_med / 1000" | bc -l)" "$(echo "$exec_p90 / 1000" | bc -l)" \
		"$(echo "$plain_med / 1000" | bc -l)" "$(echo "($exec_med - $plain_med) / 1000" | bc -l)"
}

part2() {
	echo "== 2. whole jobs under mpirun ($RUNS runs each, alternating): gpushare exec -- $PROG against $PROG"
	margs=(--oversubscribe)
	((EUID == 0)) && margs+=(--allow-run-as-root)
	printf '%-6s %12s %12s %12s %17s %s\n' np "plain_s" "exec_s" "diff_s" "diff_per_rank_ms" "failed(plain/exec)"
	for np in $NPS; do
		: >"$tmp/plain"
		: >"$tmp/exec"
		fp=0 fe=0
		for ((i = 0; i < RUNS; i++)); do
			t0=$(now_us)
			# shellcheck disable=SC2086 # PROG is a command line
			if timeout -k 5 120 mpirun "${margs[@]}" -np "$np" $PROG; then
				echo "$(($(now_us) - t0))" >>"$tmp/plain"
			else
				fp=$((fp + 1))
			fi
			t1=$(now_us)
			# shellcheck disable=SC2086
			if timeout -k 5 120 mpirun "${margs[@]}" -np "$np" "$G" exec -- $PROG 2>/dev/null; then
				echo "$(($(now_us) - t1))" >>"$tmp/exec"
			else
				fe=$((fe + 1))
			fi
		done
		p=$(median <"$tmp/plain")
		e=$(median <"$tmp/exec")
		if [[ -z $p || -z $e ]]; then
			printf '%-6s no successful run (failed %d/%d)\n' "$np" "$fp" "$fe"
			continue
		fi
		printf '%-6s %12.3f %12.3f %12.3f %17.1f %d/%d\n' "$np" "$(echo "$p / 1000000" | bc -l)" \
			"$(echo "$e / 1000000" | bc -l)" "$(echo "($e - $p) / 1000000" | bc -l)" \
			"$(echo "($e - $p) / 1000 / $np" | bc -l)" "$fp" "$fe"
	done
}

for part in $PARTS; do "part$part"; done
left=$(find "$XDG_RUNTIME_DIR/gpushare" -maxdepth 1 -name 'exec-*' 2>/dev/null | wc -l)
echo "job directories left: $left"
if [[ -n $O ]]; then
	mkdir -p "$O"
	[[ -e $tmp/per-rank ]] && cp "$tmp/per-rank" "$O/exec_startup_per_rank.txt"
fi
