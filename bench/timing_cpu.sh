#!/usr/bin/env bash
# The timing figures the test suite does not assert (a ratio of two rates
# measured one after the other moves with whatever else the machine runs):
# measured here R times each, on the CPU with the stand-ins for the GPU, and
# printed with their spread, for docs/benchmarks.md.
#
#   ceiling    spin, 2 workers, batch 3, request-us 200us, sequential with
#              --ceiling: E_N (one item costs request-us whatever the batch,
#              so near 1) and p50 / 600 us (3 spins of 200 us)
#   command    3 workers of the test worker in request mode, 2 ms requests,
#              timeslice: requests/s per worker against the 500/s bound
#   mix        spin 300us + spin 900us (sleep=on), 4 workers, timeslice:
#              items/s of the first over the second (about 3)
#   calibrate  farm of 40 jobs sleeping 0.4 s, --max-slots 4: jobs/s at
#              K = 4 over K = 1 (about 4)
#
#   bench/timing_cpu.sh BUILD OUT
#
# Env: R (5) repeats of each; HELPERS (BUILD/tests/helpers) where the fake
# NVML and the test worker are. Writes OUT/timing_cpu.md and prints it.
set -euo pipefail
B=$(cd "${1:?usage: bench/timing_cpu.sh BUILD OUT}" && pwd)
O=${2:?usage: bench/timing_cpu.sh BUILD OUT}
R=${R:-5}
H=${HELPERS:-$B/tests/helpers}
G=$B/gpushare
mkdir -p "$O"
O=$(cd "$O" && pwd)
rt=$(mktemp -d /tmp/gpushare-timing-cpu.XXXXXX)
trap 'rm -rf "$rt"' EXIT
export XDG_RUNTIME_DIR=$rt GPUSHARE_NVML_LIBRARY=$H/libfakenvml.so
unset CUDA_VISIBLE_DEVICES CUDA_MPS_PIPE_DIRECTORY SLURM_JOB_ID SLURM_STEP_ID SLURM_ARRAY_TASK_ID
py() { python3 -c "import json, sys; d = json.load(open(sys.argv[1])); $2" "$1"; }

ceiling=() p50=() command=() mix=() calibrate=()
for _ in $(seq 1 "$R"); do
	"$G" bench --workload spin --request-us 200us --duration 400ms --warmup 200ms --workers 2 --batch 3 \
		--strategy sequential --ceiling --json --quiet >"$rt/c.json"
	ceiling+=("$(py "$rt/c.json" 'print(d["results"][0]["aggregate"]["efficiency"])')")
	p50+=("$(py "$rt/c.json" 'print(d["results"][0]["aggregate"]["p50_seconds"] / 600e-6)')")
	"$G" bench --strategy timeslice --workers 3 --duration 1s --warmup 0.2s --batch 4 --json --quiet -- \
		"$H/test_worker" --request-us 2000 >"$rt/r.json"
	command+=("$(py "$rt/r.json" 'print(min(w["requests_per_second"] for w in d["results"][0]["workers"]))')")
	"$G" bench --workload 'spin:request-us=300us:sleep=on+spin:request-us=900us:sleep=on' --duration 600ms \
		--warmup 50ms --workers 4 --strategy timeslice --json --quiet >"$rt/m.json"
	mix+=("$(py "$rt/m.json" 'a, b = d["results"][0]["mix"]; print(a["items_per_second"] / b["items_per_second"])')")
	awk 'BEGIN { for (i = 0; i < 40; i++) print "sleep 0.4" }' >"$rt/jobs"
	rm -rf "$rt/farm"
	"$G" farm --dir "$rt/farm" --strategy timeslice --gpus 0 --max-slots 4 --json -q "$rt/jobs" >"$rt/f.json" || true
	calibrate+=("$(py "$rt/f.json" 'c = d["run"]["calibration"]; print(c[-1]["jobs_per_second"] / c[0]["jobs_per_second"])')")
done

row() { # row NAME WHAT VALUES...: the median, the range and every value
	local name=$1 what=$2
	shift 2
	python3 - "$name" "$what" "$@" <<'EOF'
import statistics, sys
v = [float(x) for x in sys.argv[3:]]
print("| %s | %s | %.3g | %.3g-%.3g | %s |" % (sys.argv[1], sys.argv[2], statistics.median(v), min(v), max(v),
                                           " ".join("%.3g" % x for x in v)))
EOF
}
{
	echo "# Timing figures on the CPU ($R runs each; $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs)"
	echo
	echo "| figure | what | median | range | runs |"
	echo "| --- | --- | ---: | ---: | --- |"
	row ceiling "E_N, spin sequential --ceiling (near 1)" "${ceiling[@]}"
	row ceiling "p50 / 600 us (3 spins of 200 us)" "${p50[@]}"
	row command "requests/s of the slowest worker, 2 ms requests (at most 500)" "${command[@]}"
	row mix "items/s of spin 300us over spin 900us (about 3)" "${mix[@]}"
	row calibrate "farm jobs/s at K = 4 over K = 1, 0.4 s sleeps (about 4)" "${calibrate[@]}"
} | tee "$O/timing_cpu.md"
