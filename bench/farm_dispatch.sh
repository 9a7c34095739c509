#!/usr/bin/env bash
# What does gpushare farm cost per job, and does its memory stay flat in the
# number of jobs? Runs farms of N `/bin/true` jobs on the CPU (no GPU, no
# MPS: --strategy timeslice), so that the makespan is almost all dispatch:
# fork + exec through lib/sys/child.c, the job's output files, one fsync'ed
# journal record per job, the wait.
#
#   dispatch  N jobs (default 10000) at K = 1, 2 and 4 slots: makespan / N
#   baseline  the same N `/bin/true` from a shell loop (fork + exec + wait only)
#   floor     the same N `/bin/true` at the same K, from `xargs -P K` (fork +
#             exec + wait, K at once, nothing else): the farm at K is compared
#             with it (ratio), the supervision (mirror, keeper, journal) being
#             the difference
#   CPU       each row's CPU time (user + system, the command and every
#             descendant it waited for) and minor page faults, per job: where
#             the wall-clock ratio hides what the supervision costs
#   memory    peak RSS (/usr/bin/time -v) of farms of 1,000, N and 100,000 jobs
#             (MEM_SIZES), of `farm status` and of `--resume DIR` on each, and
#             the bytes per job between the sizes
#
# Usage: bench/farm_dispatch.sh BUILD_DIR OUT_DIR
# Environment: N (default 10000), SLOTS (default "1 2 4"), MEM_SIZES (default
# "1000 N 100000"), NO_MEMORY=1 (dispatch only), FARM_TMP (where the
# farm directories go; default OUT_DIR/farms: the journal's fsync cost depends
# on that file system). Writes OUT_DIR/farm_dispatch.md and prints it.
set -euo pipefail
B=$(cd "${1:?build dir}" && pwd)
O=${2:?out dir}
mkdir -p "$O"
O=$(cd "$O" && pwd)
G=$B/gpushare
N=${N:-10000}
SLOTS=${SLOTS:-1 2 4}
MEM_SIZES=${MEM_SIZES:-1000 $N 100000}
T=${FARM_TMP:-$O/farms}
mkdir -p "$T"
# No GPU: with a driver present the jobs would be placed on GPUs, which
# changes nothing here but the environment they get.
unset CUDA_VISIBLE_DEVICES SLURM_JOB_ID SLURM_STEP_ID SLURM_ARRAY_TASK_ID

jobs_file() { # jobs_file FILE COUNT
	awk -v n="$2" 'BEGIN { for (i = 0; i < n; i++) print "/bin/true" }' >"$1"
}
json_field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d$2)" "$1"; }

jobs_file "$T/jobs-$N.txt" "$N"
for n in $MEM_SIZES; do jobs_file "$T/jobs-$n.txt" "$n"; done
res=$O/farm_dispatch.md
{
	echo "# gpushare farm dispatch cost"
	echo
	echo "- machine: $(uname -srm), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
	echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ), gpushare $("$G" version | cut -d' ' -f2)"
	echo "- farm directories on: $(df -T "$T" | awk 'NR==2 {print $2}') ($T)"
	echo "- command: bench/farm_dispatch.sh $1 $2 (N=$N, SLOTS=\"$SLOTS\")"
	echo
	echo "| what | jobs | slots | makespan (s) | per job (ms) | jobs/s | CPU per job (ms) | minor faults per job |"
	echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
} >"$res"

# measured CMD...: run CMD (its output to /dev/null); print its wall seconds,
# then the CPU time (user + system) and minor page faults of it and all its
# descendants that were waited for, per job (getrusage of the children).
measured() {
	python3 - "$N" "$@" <<'PY'
import resource, subprocess, sys, time
n = int(sys.argv[1])
r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
t0 = time.monotonic()
rc = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL).returncode
w = time.monotonic() - t0
r = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = (r.ru_utime - r0.ru_utime) + (r.ru_stime - r0.ru_stime)
print(f"{w:.6f} {1e3 * cpu / n:.3f} {(r.ru_minflt - r0.ru_minflt) / n:.0f}")
sys.exit(rc)
PY
}

# row WHAT SLOTS SECONDS CPU FAULTS: one line of the table (N jobs).
row() {
	python3 -c "
import sys
what, k, s, cpu, flt = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4], sys.argv[5]
n = $N
print(f'| {what} | {n} | {k} | {s:.2f} | {1e3 * s / n:.3f} | {n / s:.0f} | {cpu} | {flt} |')" "$@" >>"$res"
}

read -r s cpu flt < <(measured bash -c 'for ((i = 0; i < $1; i++)); do /bin/true; done' sh "$N")
row "shell loop, fork + exec + wait only" 1 "$s" "$cpu" "$flt"

declare -A floor
for k in $SLOTS; do
	read -r s cpu flt < <(measured bash -c 'awk -v n="$1" "BEGIN { for (i = 0; i < n; i++) print i }" | xargs -P "$2" -n 1 /bin/true' sh "$N" "$k")
	floor[$k]=$s
	row "floor: xargs -P $k -n 1 /bin/true (fork + exec + wait, K at once)" "$k" "$s" "$cpu" "$flt"
done

for k in $SLOTS; do
	d=$T/farm-$N-k$k
	rm -rf "$d"
	read -r _ cpu flt < <(measured bash -c '"$1" farm --dir "$2" --strategy timeslice --slots "$3" --json -q "$4" >"$5"' \
		sh "$G" "$d" "$k" "$T/jobs-$N.txt" "$T/farm-$N-k$k.json")
	s=$(json_field "$T/farm-$N-k$k.json" "['run']['seconds']")
	done_=$(json_field "$T/farm-$N-k$k.json" "['summary']['done']")
	[[ $done_ == "$N" ]] || { echo "farm at K=$k did only $done_ of $N jobs" >&2; exit 1; }
	row "gpushare farm ($(python3 -c "print(f'{$s / ${floor[$k]}:.2f}')")x the floor at K=$k)" "$k" "$s" "$cpu" "$flt"
done
# Removed only after every row: a farm that follows the removal of another
# farm's 2 N files pays for that delete in its own fsyncs (2-4x slower on the
# H100 host's ext4, mounted with online discard; not so on tmpfs).
for k in $SLOTS; do rm -rf "$T/farm-$N-k$k"; done
[[ -n ${NO_MEMORY:-} ]] && { cat "$res"; exit 0; }

{
	echo
	echo "| peak RSS (KiB) | jobs | farm --slots 4 | farm status | farm --resume DIR |"
	echo "| --- | ---: | ---: | ---: | ---: |"
} >>"$res"
rss() { sed -n 's/.*Maximum resident set size (kbytes): //p' "$1"; }
prev_n= prev_kb=
per_job=
for n in $(printf '%s\n' $MEM_SIZES | sort -n | uniq); do
	d=$T/farm-rss-$n
	rm -rf "$d"
	/usr/bin/time -v "$G" farm --dir "$d" --strategy timeslice --slots 4 -q "$T/jobs-$n.txt" \
		>/dev/null 2>"$T/time-$n.txt"
	/usr/bin/time -v "$G" farm status "$d" >/dev/null 2>"$T/time-status-$n.txt"
	/usr/bin/time -v "$G" farm --resume "$d" --strategy timeslice --slots 4 -q >/dev/null 2>"$T/time-resume-$n.txt"
	kb=$(rss "$T/time-$n.txt")
	echo "| gpushare farm | $n | $kb | $(rss "$T/time-status-$n.txt") | $(rss "$T/time-resume-$n.txt") |" >>"$res"
	if [[ -n $prev_n ]]; then
		per_job+="$(python3 -c "print(f'{$prev_n} to {$n} jobs: {1024 * ($kb - $prev_kb) / ($n - $prev_n):+.2f} bytes per job')"); "
	fi
	prev_n=$n prev_kb=$kb
	rm -rf "$d"
done
{
	echo
	echo "Farm peak RSS growth: ${per_job%; }."
} >>"$res"
cat "$res"
