#!/usr/bin/env bash
# Bring your own workload on the GPU: the two PyTorch examples
# (examples/bert_worker.py, examples/resnet_worker.py) as request-mode
# workers of `gpushare bench -- CMD` under timeslice and mps with 1, 3 and 7
# workers, plus each script timing itself alone. Checks that gpushare's
# throughput agrees with the scripts' own timing: alone vs 1 worker under
# timeslice, and under gpushare worker by worker (each script also counts its
# own requests over gpushare's window).
#
#   bench/gpu/byo.sh BUILD_DIR OUT_DIR
#
# Needs python3 with torch, torchvision and transformers, and an NVIDIA GPU.
# gpushare starts and always stops its own MPS daemon; this script starts
# none. About 2.5 minutes on an H100. Results: OUT_DIR/<example>-<N>.json
# (one gpushare document per example and worker count), OUT_DIR/self*.jsonl
# (the scripts' own timing: alone, and per run under gpushare),
# OUT_DIR/*.log, OUT_DIR/summary.txt.
set -euo pipefail

build=${1:?usage: byo.sh BUILD_DIR OUT_DIR}
out=${2:?usage: byo.sh BUILD_DIR OUT_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
gpushare=$build/gpushare
mkdir -p "$out"
out=$(cd "$out" && pwd)
: >"$out/self.jsonl"
rm -f "$out"/self-*.jsonl

DURATION=${BYO_DURATION:-4s}
WARMUP=${BYO_WARMUP:-1s}
declare -A ARGS=([bert]="--batch 8 --seq 128" [resnet]="--batch 16")
declare -A SCRIPT=([bert]="$src/examples/bert_worker.py" [resnet]="$src/examples/resnet_worker.py")

failed=0
for ex in bert resnet; do
	echo "== $ex: the script alone, timing itself"
	# shellcheck disable=SC2086
	if ! timeout 120 python3 "${SCRIPT[$ex]}" ${ARGS[$ex]} --iters 400 --self "$out/self.jsonl" \
		>"$out/$ex-alone.log" 2>&1; then
		echo "FAILED: $ex alone (see $out/$ex-alone.log)"; tail -5 "$out/$ex-alone.log"; failed=1
	fi
	tail -1 "$out/$ex-alone.log"
	for n in 1 3 7; do
		echo "== $ex: $n worker(s) under timeslice and mps"
		rc=0
		# shellcheck disable=SC2086
		timeout 170 "$gpushare" bench --strategy timeslice,mps --workers "$n" --duration "$DURATION" \
			--warmup "$WARMUP" --start-timeout 90s --out "$out/$ex-$n.json" -v -- \
			python3 "${SCRIPT[$ex]}" ${ARGS[$ex]} --self "$out/self-$ex-$n.jsonl" >"$out/$ex-$n.log" 2>&1 || rc=$?
		if [[ $rc -ne 0 ]]; then
			echo "FAILED: $ex with $n workers: exit $rc (see $out/$ex-$n.log)"; tail -5 "$out/$ex-$n.log"; failed=1
		fi
		grep -E "^(strategy|timeslice|mps) " "$out/$ex-$n.log" || true
	done
done

if pgrep -f nvidia-cuda-mps-control >/dev/null; then
	echo "WARNING: an MPS control daemon is still running: $(pgrep -af nvidia-cuda-mps-control)"
fi

python3 - "$out" <<'PY' | tee "$out/summary.txt"
import json, os, sys
out = sys.argv[1]
def lines(path):
    return [json.loads(l) for l in open(path) if l.strip()] if os.path.exists(path) else []
alone = {s["example"]: s["requests_per_second"] for s in lines(os.path.join(out, "self.jsonl"))}
print("%-7s %-10s %3s %10s %10s %9s %9s %8s %11s %7s" % (
    "example", "strategy", "N", "req/s", "items/s", "p50 ms", "p99 ms", "fairness", "self req/s", "diff"))
worst = 0.0
for ex in ("bert", "resnet"):
    for n in (1, 3, 7):
        path = os.path.join(out, "%s-%d.json" % (ex, n))
        if not os.path.exists(path):
            print("%-7s %-10s %3d  (no result)" % (ex, "-", n))
            continue
        d = json.load(open(path))
        # Each script appends its own count over gpushare's window when it
        # exits: the first n lines are the first strategy's workers, and so on.
        own = lines(os.path.join(out, "self-%s-%d.jsonl" % (ex, n)))
        for k, r in enumerate(d["results"]):
            a = r["aggregate"]
            mine = own[k * n:(k + 1) * n]
            self_rate = sum(s["requests_per_second"] for s in mine) if len(mine) == n else None
            gs = sum(w["requests_per_second"] or 0 for w in r["workers"])
            diff = ""
            if self_rate is not None and gs:
                dev = (self_rate - gs) / gs
                worst = max(worst, abs(dev))
                diff = "%+.1f%%" % (dev * 100)
            print("%-7s %-10s %3d %10.1f %10.1f %9.2f %9.2f %8.2f %11s %7s%s" % (
                ex, r["strategy"], n, a["requests_per_second"] or 0, a["items_per_second"] or 0,
                (a["p50_seconds"] or 0) * 1e3, (a["p99_seconds"] or 0) * 1e3, a["fairness"] or 0,
                "%.1f" % self_rate if self_rate is not None else "-", diff,
                "  (%s)" % r["failure"]["message"] if r.get("failure") else ""))
print()
for ex in ("bert", "resnet"):
    path = os.path.join(out, "%s-1.json" % ex)
    if ex in alone and os.path.exists(path):
        r = json.load(open(path))["results"][0]
        gs = r["aggregate"]["requests_per_second"] or 0
        print("%-7s alone (self-timed) %.1f req/s; gpushare, 1 worker, %s: %.1f req/s (%+.1f%%)" % (
            ex, alone[ex], r["strategy"], gs, (gs - alone[ex]) / alone[ex] * 100 if alone[ex] else 0))
print("worst difference between gpushare and the scripts' own count over the same window: %.1f%%" % (worst * 100))
PY
exit $failed
