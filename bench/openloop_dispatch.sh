#!/usr/bin/env bash
# Does the open-loop dispatcher keep up, and how close to schedule does it
# hand arrivals over? Runs `gpushare bench --load open` with the CPU `spin`
# workload and empty requests (--request-us 0), so the workers cost nothing
# and what is measured is gpushare: for each rate and arrival process, RUNS
# times, it prints the offered and achieved rates, arrivals that found a
# full queue, and the lateness distribution (publish time minus scheduled
# time of each arrival: p50, p99, p99.9, max). The target: 200,000
# arrivals/s kept up with, 99% handed over within 10 us of their time.
#
# Usage: bench/openloop_dispatch.sh BUILD_DIR OUT_DIR [extra bench options...]
# Environment: RATES (default "10000 100000 200000"), ARRIVALS (default
# "uniform poisson"), WORKERS (default 1), DISPATCH (default shared),
# RUNS (default 3), DUR (default 5s), WARM (default 1s).
# Writes OUT_DIR/<arrival>-<rate>-<run>.json and OUT_DIR/summary.md.
#
# MODE=floor: the dispatcher against its floor, a bare clock_nanosleep loop
# over the same uniform schedule (BUILD_DIR/bench/openloop_floor), on the
# host as it is ("idle") and beside a CPU hog ("busy": $STRESS, default
# `stress-ng --cpu 2`). ROUNDS (default 5) interleaved rounds; each round
# runs, per load and rate (RATES default "1000 10000 50000"), the floor, the
# floors of FLOORS (default "floor-short": the floor asking for the
# dispatcher's short scheduler slice, openloop_floor's SLICE_US of 100;
# "floor-wake": that, waking a partner process after each arrival as the
# dispatcher wakes its worker; "floor-wake-slice": the partner asking for
# the same slice, as the dispatcher's workers do), and the dispatcher under
# each of WAITS
# (default "auto auto-noslice": auto is how it waits by default, spin
# forces the spin before every arrival it did before it learned to sleep on
# a busy host, sleep never spins (GPUSHARE_DISPATCH_WAIT); a "-noslice"
# suffix leaves its thread and its workers the default slice,
# GPUSHARE_DISPATCH_SLICE_US=0, "-noworkerslice" only its workers,
# GPUSHARE_WORKER_SLICE_US=0),
# in an order that rotates from round to round. Uniform arrivals, DUR (default 3s)
# after WARM (default 1s); the floor runs WARM + DUR and, as the dispatcher,
# counts the lateness of every arrival. Writes OUT_DIR/runs.tsv (one line a
# run) and OUT_DIR/summary.md: median p99 lateness over the rounds for each,
# the dispatcher's over the floor's (ratio of the medians, and the median
# of the rounds' ratios), the achieved rate over the offered, and the share
# of its time the dispatcher spun.
set -euo pipefail
B=$(cd "${1:?build dir}" && pwd)
O=${2:?out dir}
shift 2
mkdir -p "$O"
G=$B/gpushare
export GPUSHARE_WORKER=${GPUSHARE_WORKER:-$B/gpushare-worker}

if [[ ${MODE:-} == floor ]]; then
	F=$B/bench/openloop_floor
	[[ -x $F ]] || { echo "openloop_dispatch.sh: no $F (build the bench/ programs)" >&2; exit 1; }
	RATES=${RATES:-1000 10000 50000} ROUNDS=${ROUNDS:-5} DUR=${DUR:-3s} WARM=${WARM:-1s}
	WORKERS=${WORKERS:-1} DISPATCH=${DISPATCH:-shared}
	WAITS=${WAITS:-auto auto-noslice} FLOORS=${FLOORS-floor-short} LOADS=${LOADS:-idle busy} STRESS=${STRESS:-stress-ng --cpu 2}
	secs() { python3 -c 'import sys; s = sys.argv[1]; print(float(s[:-2]) / 1e3 if s.endswith("ms") else float(s.rstrip("s")))' "$1"; }
	FLOOR_S=$(python3 -c "print($(secs "$WARM") + $(secs "$DUR"))")
	hog=
	stop_hog() { if [[ -n $hog ]]; then kill -- "-$hog" 2>/dev/null || kill "$hog" 2>/dev/null || true; wait "$hog" 2>/dev/null || true; hog=; fi; }
	trap stop_hog EXIT INT TERM
	T=$O/runs.tsv
	printf 'round\tload\trate\twho\toffered\tachieved\tlate_p50\tlate_p99\tlate_p999\tlate_max\tspinning\tloadavg\n' >"$T"
	{
		echo "machine: $(uname -n), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), kernel $(uname -r)"
		echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
		echo "command: MODE=floor ROUNDS=$ROUNDS RATES='$RATES' WAITS='$WAITS' LOADS='$LOADS' DUR=$DUR WARM=$WARM bench/openloop_dispatch.sh $B $O $*"
		echo "floor: $F RATE $FLOOR_S (floor-short: $F RATE $FLOOR_S 100; floor-wake: $F RATE $FLOOR_S 100 wake; floor-wake-slice: ... 100 wake-slice); dispatcher: GPUSHARE_DISPATCH_WAIT=W GPUSHARE_DISPATCH_SLICE_US=100 GPUSHARE_WORKER_SLICE_US=100 (both 0 for W-noslice, the worker's 0 for W-noworkerslice) $G bench --workload spin --request-us 0" \
			"--workers $WORKERS --strategy timeslice --load open --rate RATE --arrival uniform --dispatch $DISPATCH" \
			"--duration $DUR --warmup $WARM $*; busy: beside \`$STRESS\`"
	} >"$O/summary.md"
	for ((round = 1; round <= ROUNDS; round++)); do
		for load in $LOADS; do
			if [[ $load == busy ]]; then
				set -m
				bash -c "$STRESS" >/dev/null 2>&1 &
				hog=$!
				set +m
				sleep 1
			fi
			for rate in $RATES; do
				# shellcheck disable=SC2206 # the lists are words
				who=(floor $FLOORS $WAITS)
				# Rotate the order from round to round.
				for ((i = 0; i < ${#who[@]}; i++)); do
					w=${who[(i + round) % ${#who[@]}]}
					f=$O/$load-$rate-$w-$round.json
					la=$(cut -d' ' -f1 /proc/loadavg)
					if [[ $w == floor ]]; then
						"$F" "$rate" "$FLOOR_S" >"$f"
					elif [[ $w == floor-short ]]; then
						"$F" "$rate" "$FLOOR_S" 100 >"$f"
					elif [[ $w == floor-wake ]]; then
						"$F" "$rate" "$FLOOR_S" 100 wake >"$f"
					elif [[ $w == floor-wake-slice ]]; then
						"$F" "$rate" "$FLOOR_S" 100 wake-slice >"$f"
					else
						slice=100 wslice=100
						[[ $w == *-noslice ]] && slice=0 wslice=0
						[[ $w == *-noworkerslice ]] && wslice=0
						GPUSHARE_DISPATCH_SLICE_US=$slice GPUSHARE_WORKER_SLICE_US=$wslice \
							GPUSHARE_DISPATCH_WAIT=${w%-no*slice} "$G" bench --workload spin --request-us 0 --workers "$WORKERS" \
							--strategy timeslice --load open --rate "$rate" --arrival uniform --dispatch "$DISPATCH" \
							--duration "$DUR" --warmup "$WARM" -q --json "$@" >"$f"
					fi
					python3 - "$f" "$round" "$load" "$rate" "$w" "$la" >>"$T" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
o = d["results"][0]["open_loop"] if "results" in d else d
l = o["lateness"]
sp = o.get("dispatcher_spinning")
print("\t".join(sys.argv[2:6] + ["%.1f" % o["offered_per_second"], "%.1f" % o["achieved_per_second"]] +
                ["%.9f" % l[k] for k in ("p50_seconds", "p99_seconds", "p999_seconds", "max_seconds")] +
                ["-" if sp is None else "%.3f" % sp, sys.argv[6]]))
PY
				done
			done
			stop_hog
		done
	done
	echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$O/summary.md"
	python3 - "$T" "$FLOORS $WAITS" >>"$O/summary.md" <<'PY'
import csv, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
waits = sys.argv[2].split()
us = lambda s: "%.1f us" % (s * 1e6) if s < 1e-3 else "%.2f ms" % (s * 1e3)
cells = {}
for r in rows:
    cells.setdefault((r["load"], int(r["rate"])), {}).setdefault(r["who"], {})[int(r["round"])] = r
print()
print("| load | rate /s | floor p99 | " + " | ".join("%s p99 | %s / floor (medians; rounds' median) | %s achieved / offered (median; worst) | %s spun" % (w, w, w, w) for w in waits) + " | auto within 2x |")
print("| --- | ---: | ---: | " + " | ".join("---: | ---: | ---: | ---:" for w in waits) + " | --- |")
for (load, rate), c in sorted(cells.items(), key=lambda kv: (kv[0][0] != "idle", kv[0][1])):
    fl = c.get("floor", {})
    fp = st.median(float(r["late_p99"]) for r in fl.values())
    line = ["%s" % load, "{:,}".format(rate), us(fp)]
    ok = "-"
    for w in waits:
        runs = c.get(w, {})
        if not runs:
            line += ["-"] * 4
            continue
        p = st.median(float(r["late_p99"]) for r in runs.values())
        ratios = [float(runs[k]["late_p99"]) / float(fl[k]["late_p99"]) for k in runs if k in fl and float(fl[k]["late_p99"]) > 0]
        ach = [float(r["achieved"]) / float(r["offered"]) for r in runs.values()]
        worst = max(ach, key=lambda a: abs(a - 1))
        sp = [float(r["spinning"]) for r in runs.values() if r["spinning"] != "-"]
        line += [us(p), "%.2fx; %.2fx" % (p / fp, st.median(ratios)) if ratios else "-",
                 "%.4f; %.4f" % (st.median(ach), worst), "%.0f%%" % (100 * st.median(sp)) if sp else "-"]
        if w == "auto":
            ok = "yes" if p / fp <= 2 else "no"
    print("| " + " | ".join(line + [ok]) + " |")
print()
print("%d rounds; p99 lateness in each cell is the median over the rounds." % len({r["round"] for r in rows}))
PY
	cat "$O/summary.md"
	exit 0
fi
RATES=${RATES:-10000 100000 200000} ARRIVALS=${ARRIVALS:-uniform poisson}
WORKERS=${WORKERS:-1} DISPATCH=${DISPATCH:-shared} RUNS=${RUNS:-3} DUR=${DUR:-5s} WARM=${WARM:-1s}

{
	echo "machine: $(uname -n), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "command: $G bench --workload spin --request-us 0 --workers $WORKERS --strategy timeslice --load open" \
		"--rate R --arrival A --dispatch $DISPATCH --duration $DUR --warmup $WARM $*"
	echo
	echo "| arrival | rate /s | run | offered /s | achieved /s | ring full | late p50 | late p99 | late p99.9 | late max | latency p99 |"
	echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
} >"$O/summary.md"
for arrival in $ARRIVALS; do
	for rate in $RATES; do
		for ((run = 1; run <= RUNS; run++)); do
			f="$O/$arrival-$rate-$run.json"
			"$G" bench --workload spin --request-us 0 --workers "$WORKERS" --strategy timeslice --load open \
				--rate "$rate" --arrival "$arrival" --dispatch "$DISPATCH" --duration "$DUR" --warmup "$WARM" \
				-q --json "$@" >"$f"
			python3 - "$f" "$arrival" "$rate" "$run" >>"$O/summary.md" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["results"][0]
o = r["open_loop"]
us = lambda s: "%.1f us" % (s * 1e6)
print("| %s | %s | %s | %.0f | %.0f | %d | %s | %s | %s | %s | %s |" % (
    sys.argv[2], sys.argv[3], sys.argv[4], o["offered_per_second"], o["achieved_per_second"], o["ring_full"],
    us(o["lateness"]["p50_seconds"]), us(o["lateness"]["p99_seconds"]), us(o["lateness"]["p999_seconds"]),
    us(o["lateness"]["max_seconds"]), us(r["aggregate"]["p99_seconds"])))
PY
		done
	done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$O/summary.md"
cat "$O/summary.md"
