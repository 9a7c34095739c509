#!/usr/bin/env bash
# What does a slow disk add to each job of a farm? Runs farms of N
# `/bin/true` jobs at K = 1 slot (the case where every ended job is
# recorded alone) with the farm directory on FARM_TMP, first on a quiet
# disk, then while a background writer keeps the same file system busy
# (a loop of `dd ... conv=fsync` of 200 MiB), which makes each journal
# fsync wait behind the writer's flushes. With the journal's fsyncs in a
# thread of their own, the per-job cost should hardly change; pass a second
# build (OTHER_BUILD) to compare, e.g. one whose farm fsyncs inline.
#
# Usage: bench/farm_fsync.sh BUILD_DIR OUT_DIR
# Environment: N (default 1000), RUNS (default 3), FARM_TMP (default
# OUT_DIR/farms: must be on the disk to test), OTHER_BUILD (optional).
# Writes OUT_DIR/farm_fsync.md and prints it.
set -euo pipefail
B=$(cd "${1:?build dir}" && pwd)
O=${2:?out dir}
mkdir -p "$O"
O=$(cd "$O" && pwd)
N=${N:-1000} RUNS=${RUNS:-3}
T=${FARM_TMP:-$O/farms}
mkdir -p "$T"
unset CUDA_VISIBLE_DEVICES SLURM_JOB_ID SLURM_STEP_ID SLURM_ARRAY_TASK_ID
builds=("$B")
[[ -n "${OTHER_BUILD:-}" ]] && builds+=("$(cd "$OTHER_BUILD" && pwd)")
awk -v n="$N" 'BEGIN { for (i = 0; i < n; i++) print "/bin/true" }' >"$T/jobs.txt"

dd_pid=
stop_writer() { [[ -n "$dd_pid" ]] && kill -- -"$dd_pid" 2>/dev/null; wait "$dd_pid" 2>/dev/null || true; dd_pid=; rm -f "$T/ddload"; }
trap stop_writer EXIT
start_writer() {
	set -m
	(while :; do dd if=/dev/zero of="$T/ddload" bs=1M count=200 conv=fsync status=none; done) &
	dd_pid=$!
	set +m
	sleep 1
}
per_job() { # per_job GPUSHARE
	local d=$T/farm s e
	rm -rf "$d"
	s=$(date +%s.%N)
	"$1" farm --dir "$d" --strategy timeslice --slots 1 -q "$T/jobs.txt" >/dev/null
	e=$(date +%s.%N)
	python3 -c "print(f'{1e3 * ($e - $s) / $N:.2f}')"
}

res=$O/farm_fsync.md
{
	echo "# gpushare farm: per-job cost with a busy disk"
	echo
	echo "- machine: $(uname -srm), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
	echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ); farm directories on $(df -T "$T" | awk 'NR==2 {print $2}') ($T)"
	echo "- command: bench/farm_fsync.sh $1 $2 (N=$N, RUNS=$RUNS${OTHER_BUILD:+, OTHER_BUILD=$OTHER_BUILD})"
	echo
	echo "| build | disk | per job, each run (ms) |"
	echo "| --- | --- | --- |"
} >"$res"
for disk in quiet busy; do
	[[ $disk == busy ]] && start_writer
	for b in "${builds[@]}"; do
		runs=()
		for ((r = 0; r < RUNS; r++)); do runs+=("$(per_job "$b/gpushare")"); done
		echo "| $b | $disk | ${runs[*]} |" >>"$res"
	done
done
stop_writer
rm -rf "$T/farm"
cat "$res"
