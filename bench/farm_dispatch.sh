#!/usr/bin/env bash
# What does gpushare farm cost per job, and does its memory stay flat in the
# number of jobs? Runs farms of N `/bin/true` jobs on the CPU (no GPU, no
# MPS: --strategy timeslice), so that the makespan is almost all dispatch:
# fork + exec through lib/sys/child.c, the job's output files, one fsync'ed
# journal record per job, the wait.
#
#   dispatch  N jobs (default 10000) at K = 1, 2 and 4 slots: makespan / N
#   baseline  the same N `/bin/true` from a shell loop (fork + exec + wait only)
#   floor     the same N `/bin/true` at the same K, from `xargs -P K -I{}` (fork +
#             exec + wait, K at once, nothing else; -I so that true gets no
#             argument, with which it sets up the locale): the farm at K is compared
#             with it (ratio), the supervision (mirror, keeper, journal) being
#             the difference
#   CPU       each row's CPU time (user + system, the command and every
#             descendant it waited for) and minor page faults, per job: where
#             the wall-clock ratio hides what the supervision costs
#   memory    peak RSS (/usr/bin/time -v) of farms of 1,000, N and 100,000 jobs
#             (MEM_SIZES), of `farm status` and of `--resume DIR` on each, and
#             the bytes per job between the sizes
#
#
# With COMPARE_DIRS set, only the comparison with `xargs -P K` instead:
#   compare   for each directory of COMPARE_DIRS (one per file system: tmpfs,
#             ext4, xfs...), each size of COMPARE_N (default "1000 10000") and
#             each K of COMPARE_K (default "1 4 16"): `gpushare farm --slots K`
#             of N `/bin/true` jobs against `xargs -P K -I{} /bin/true` of N
#             lines (the same program, without an argument), wall time and CPU (user + system of the command and
#             every descendant it waited for), ROUNDS rounds (default 3) whose
#             runs are interleaved (a round runs every cell once, in a new
#             shuffled order), medians; the farm's ratio to xargs and whether
#             it is within 1.3x. OTHER_BUILD=DIR adds the gpushare of another
#             build (the farm before a change) to every cell. Each farm
#             directory is removed, and its file system synced, between runs,
#             outside the timings.
#
# Usage: bench/farm_dispatch.sh BUILD_DIR OUT_DIR
# Environment: N (default 10000), SLOTS (default "1 2 4"), MEM_SIZES (default
# "1000 N 100000"), NO_MEMORY=1 (dispatch only), FARM_TMP (where the
# farm directories go; default OUT_DIR/farms: the journal's fsync cost depends
# on that file system); COMPARE_DIRS, COMPARE_N, COMPARE_K, ROUNDS,
# OTHER_BUILD (above). Writes OUT_DIR/farm_dispatch.md (or, compared,
# OUT_DIR/farm_vs_xargs.md) and prints it.
set -euo pipefail
B=$(cd "${1:?build dir}" && pwd)
O=${2:?out dir}
mkdir -p "$O"
O=$(cd "$O" && pwd)
G=$B/gpushare
if [[ -n ${COMPARE_DIRS:-} ]]; then
	OTHER=${OTHER_BUILD:+$(cd "$OTHER_BUILD" && pwd)/gpushare}
	unset CUDA_VISIBLE_DEVICES SLURM_JOB_ID SLURM_STEP_ID SLURM_ARRAY_TASK_ID
	exec python3 - "$G" "${OTHER:-}" "$O/farm_vs_xargs.md" "${COMPARE_N:-1000 10000}" "${COMPARE_K:-1 4 16}" \
		"${ROUNDS:-3}" "$*" $COMPARE_DIRS <<'PY'
import os, random, resource, shutil, statistics, subprocess, sys, time
g, other, res, sizes, ks, rounds, args = sys.argv[1:8]
dirs = sys.argv[8:]
sizes = [int(x) for x in sizes.split()]
ks = [int(x) for x in ks.split()]
rounds = int(rounds)
tools = ["xargs", "farm"] + (["farm before"] if other else [])

def fstype(d):
    return subprocess.run(["df", "--output=fstype", d], capture_output=True, text=True).stdout.split()[-1]

def load():
    return open("/proc/loadavg").read().split()[0]

def measured(cmd, stdin=None):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    rc = subprocess.run(cmd, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    w = time.monotonic() - t0
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    if rc != 0:
        sys.exit(f"{cmd[:3]} failed: exit {rc}")
    return w, (r.ru_utime - r0.ru_utime) + (r.ru_stime - r0.ru_stime)

for d in dirs:
    os.makedirs(d, exist_ok=True)
inputs = {}
for n in sizes:
    inputs[n] = os.path.join(dirs[0], f"jobs-{n}.txt"), os.path.join(dirs[0], f"args-{n}.txt")
    with open(inputs[n][0], "w") as f:
        f.write("/bin/true\n" * n)
    with open(inputs[n][1], "w") as f:
        f.write("".join(f"{i}\n" for i in range(n)))

def run(tool, d, n, k):
    if tool == "xargs":
        with open(inputs[n][1]) as a:
            # -I: one line a command, and no argument added (`/bin/true 17`
            # would set up the locale: 31 files opened, not 3)
            return measured(["xargs", "-P", str(k), "-I{}", "/bin/true"], stdin=a)
    fd = os.path.join(d, "farm")
    shutil.rmtree(fd, ignore_errors=True)
    subprocess.run(["sync", "-f", d])
    out = measured([g if tool == "farm" else other, "farm", "--dir", fd, "--strategy", "timeslice",
                    "--slots", str(k), "-q", inputs[n][0]])
    shutil.rmtree(fd, ignore_errors=True)
    subprocess.run(["sync", "-f", d])
    return out

cells = [(d, n, k, t) for d in dirs for n in sizes for k in ks for t in tools]
got = {c: [] for c in cells}
loads = [load()]
t_start = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
for r in range(rounds):
    order = cells[:]
    random.Random(r).shuffle(order)
    for c in order:
        got[c].append(run(c[3], c[0], c[1], c[2]))
    loads.append(load())
    print(f"round {r + 1} of {rounds} done, load average {loads[-1]}", file=sys.stderr)

cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"], capture_output=True, text=True).stdout.strip()
ver = subprocess.run([g, "version"], capture_output=True, text=True).stdout.split()
lines = [
    "# gpushare farm against xargs -P K",
    "",
    f"- machine: {os.uname().sysname} {os.uname().release} {os.uname().machine}, {os.cpu_count()} CPUs, {cpu}",
    f"- date: {t_start}, gpushare {ver[1] if len(ver) > 1 else '?'}",
    f"- load average (1 min) at the start and after each round: {', '.join(loads)}",
    f"- directories: " + ", ".join(f"{d} ({fstype(d)})" for d in dirs),
    f"- command: COMPARE_DIRS=\"{' '.join(dirs)}\" COMPARE_N=\"{' '.join(map(str, sizes))}\" "
    f"COMPARE_K=\"{' '.join(map(str, ks))}\" ROUNDS={rounds}" + (" OTHER_BUILD=..." if other else "") +
    f" bench/farm_dispatch.sh {args}",
    f"- medians of {rounds} interleaved rounds; CPU = user + system of the command and its descendants",
    "",
    "| fs | jobs | K | xargs wall (s) | farm wall (s) | wall ratio | xargs CPU (s) | farm CPU (s) | CPU ratio | within 1.3x |"
    + (" before: wall (s) | before: CPU (s) |" if other else ""),
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |" + (" ---: | ---: |" if other else ""),
]
for d in dirs:
    for n in sizes:
        for k in ks:
            med = {t: (statistics.median(w for w, _ in got[(d, n, k, t)]),
                       statistics.median(c for _, c in got[(d, n, k, t)])) for t in tools}
            xw, xc = med["xargs"]
            fw, fc = med["farm"]
            ok = "yes" if fw <= 1.3 * xw and fc <= 1.3 * xc else \
                ("wall only" if fw <= 1.3 * xw else ("CPU only" if fc <= 1.3 * xc else "no"))
            row = f"| {fstype(d)} | {n} | {k} | {xw:.2f} | {fw:.2f} | {fw / xw:.2f} | {xc:.2f} | {fc:.2f} | {fc / xc:.2f} | {ok} |"
            if other:
                bw, bc = med["farm before"]
                row += f" {bw:.2f} | {bc:.2f} |"
            lines.append(row)
lines += ["", "Every run (wall s / CPU s), in round order:", ""]
for c in cells:
    lines.append(f"- {fstype(c[0])} {c[1]} K={c[2]} {c[3]}: " + ", ".join(f"{w:.2f}/{u:.2f}" for w, u in got[c]))
open(res, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
fi
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
	read -r s cpu flt < <(measured bash -c 'awk -v n="$1" "BEGIN { for (i = 0; i < n; i++) print i }" | xargs -P "$2" -I{} /bin/true' sh "$N" "$k")
	floor[$k]=$s
	row "floor: xargs -P $k -I{} /bin/true (fork + exec + wait, K at once)" "$k" "$s" "$cpu" "$flt"
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
