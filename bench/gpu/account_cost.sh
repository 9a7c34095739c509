#!/usr/bin/env bash
# What libgpushare-account.so costs the process it is loaded into (issue 35:
# "at most 1% on the built-in transformer workload ... and on a launch-bound
# workload (tiny), as an A/B"). Per workload, interleaved rounds of
#   none      no library
#   launches  the library's default: launch timing (CUDA events, CUPTI
#             attached for each window only)
#   kernels   GPUSHARE_ACCOUNT_TIMING=kernels (CUPTI's kernel records, CUPTI
#             attached all along)
# each a `gpushare bench --workers 1 --strategy sequential` run; prints each
# round's items/s, then per variant the mean and its cost against none.
#
#   bench/gpu/account_cost.sh BUILD OUT
#
# Env: WORKLOADS ("transformer transformer:graph=off tiny"), ROUNDS (5),
# DURATION (4s), VARIANTS ("none launches kernels"), PERIOD_MS and DUTY (the
# library's defaults when unset). The summary gives each variant's cost with
# a 95% interval (Welch's t) against none.
set -euo pipefail
B=$(cd "${1:?usage: bench/gpu/account_cost.sh BUILD OUT}" && pwd)
O=${2:?usage: bench/gpu/account_cost.sh BUILD OUT}
mkdir -p "$O"
O=$(cd "$O" && pwd)
WORKLOADS=${WORKLOADS:-transformer transformer:graph=off tiny} ROUNDS=${ROUNDS:-5} DURATION=${DURATION:-4s}
VARIANTS=${VARIANTS:-none launches kernels}
LIB=$B/libgpushare-account.so
if [[ -z ${GPUSHARE_CUPTI_LIBRARY:-} ]]; then
	for c in /usr/local/cuda/lib64/libcupti.so /usr/local/cuda/extras/CUPTI/lib64/libcupti.so; do
		[[ -e $c ]] && export GPUSHARE_CUPTI_LIBRARY=$c && break
	done
fi
[[ -n ${GPUSHARE_CUPTI_LIBRARY:-} ]] || { echo "libcupti.so not found (set GPUSHARE_CUPTI_LIBRARY)" >&2; exit 1; }
knobs=()
[[ -n ${PERIOD_MS:-} ]] && knobs+=(GPUSHARE_ACCOUNT_PERIOD_MS=$PERIOD_MS)
[[ -n ${DUTY:-} ]] && knobs+=(GPUSHARE_ACCOUNT_DUTY=$DUTY)
echo "date $(date -u +%FT%TZ) gpu $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n1)"
: >"$O/rates.txt"
for wl in $WORKLOADS; do
	for i in $(seq "$ROUNDS"); do
		for v in $VARIANTS; do
			e=()
			case $v in
			launches) e=(CUDA_INJECTION64_PATH=$LIB "${knobs[@]}") ;;
			kernels) e=(CUDA_INJECTION64_PATH=$LIB GPUSHARE_ACCOUNT_TIMING=kernels "${knobs[@]}") ;;
			esac
			rm -rf "$O/rec"
			set +e
			env "${e[@]}" GPUSHARE_ACCOUNT_DIR="$O/rec" "$B/gpushare" bench --workload "$wl" --workers 1 \
				--strategy sequential --duration "$DURATION" -q --json >"$O/run.json" 2>"$O/run.err"
			rc=$?
			set -e
			rate=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
print("%.1f" % r["aggregate"]["items_per_second"] if r.get("status") == "ok" else "failed")' "$O/run.json" 2>/dev/null || echo failed)
			[[ $rc -eq 0 ]] || rate=failed
			timing=$(cat "$O"/rec/*.rec 2>/dev/null | awk '$1 == "timing" { print $2; exit }' || true)
			echo "$wl $v $i $rate ${timing:-kernels-or-none}" | tee -a "$O/rates.txt"
		done
	done
done
python3 - "$O/rates.txt" <<'PY'
import sys, statistics
# two-sided 95% quantiles of Student's t by degrees of freedom
T = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23, 12: 2.18,
     15: 2.13, 20: 2.09, 30: 2.04}
def t95(df):
    return next((T[k] for k in sorted(T) if k >= df), 1.96)
rows = [l.split() for l in open(sys.argv[1])]
for wl in dict.fromkeys(r[0] for r in rows):
    m = {}
    for v in dict.fromkeys(r[1] for r in rows if r[0] == wl):
        xs = [float(r[3]) for r in rows if r[0] == wl and r[1] == v and r[3] != "failed"]
        bad = sum(1 for r in rows if r[0] == wl and r[1] == v and r[3] == "failed")
        m[v] = (xs, bad)
    base = m.get("none", ([], 0))[0]
    for v, (xs, bad) in m.items():
        mean = statistics.mean(xs) if xs else None
        sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
        cost = ""
        if v != "none" and len(xs) > 1 and len(base) > 1:
            b, sb = statistics.mean(base), statistics.stdev(base)
            se2 = sd * sd / len(xs) + sb * sb / len(base)
            df = se2 * se2 / ((sd * sd / len(xs)) ** 2 / (len(xs) - 1) + (sb * sb / len(base)) ** 2 / (len(base) - 1)) if se2 > 0 else 30
            half = t95(int(df)) * se2 ** 0.5
            cost = "  cost %+.2f%% (95%% interval %+.2f%% to %+.2f%%)" % (100 * (1 - mean / b), 100 * (b - mean - half) / b,
                                                                     100 * (b - mean + half) / b)
        print("%-24s %-9s mean %s (sd %.1f, %d runs%s)%s" % (wl, v, "%.1f" % mean if mean else "-", sd, len(xs),
              ", %d failed" % bad if bad else "", cost))
PY
