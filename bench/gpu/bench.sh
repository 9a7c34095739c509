#!/usr/bin/env bash
# GPU benchmarks of `gpushare bench` (issue: bench). Usage: bench/gpu/bench.sh BUILD_DIR OUT_DIR
# 1. harness overhead: gpushare-worker against bare loops of the same work
#    (matmul fp16 1024, tiny) and the spin workload with empty requests;
# 2. transformer (b1, seq 128) against PyTorch eager BERT-base;
# 3. 48 MPS workers run, the 49th is refused with CUDA error 808;
# 4. the comparison grid: matmul fp16 1024, tiny, transformer b1 under
#    timeslice, mps, mps-split, sequential, streams with 1, 3 and 7 workers.
# Everything is written under OUT_DIR; a summary is printed last.
set -uo pipefail
# Live (non-zombie) processes whose program matches $1; a container's init may
# leave exited daemons as zombies, which are not running.
left_running() { ps -eo pid=,stat=,args= | awk '$2 !~ /^Z/' | grep -E "^ *[0-9]+ +[^ ]+ +[^ ]*($1)"; }
B=$(cd "${1:?build dir}" && pwd) O=${2:?out dir}
mkdir -p "$O"
G=$B/gpushare
PHASES=${PHASES:-overhead,transformer,clients,grid}
DUR=${DUR:-3s} WARM=${WARM:-1s}
log() { echo "== $*" | tee -a "$O/summary.txt"; }
jq_py() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); $2" "$1"; }
has() { case ",$PHASES," in *",$1,"*) return 0;; esac; return 1; }

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader >"$O/gpu.txt" 2>&1
log "GPU: $(cat "$O/gpu.txt")  date: $(date -u +%FT%TZ)"

if has overhead; then
	log "harness overhead"
	for i in 1 2 3; do
		"$B/bench/bare_matmul" --size 1024 --dtype fp16 --iters 200000 >"$O/bare_matmul_$i.json" 2>&1
		"$G" bench --workload matmul --size 1024 --dtype fp16 --workers 1 --strategy sequential \
			--duration 5s --warmup 1s --quiet --json >"$O/worker_matmul_$i.json" 2>"$O/worker_matmul_$i.err"
		"$B/bench/bare_tiny" --iters 40000 >"$O/bare_tiny_$i.json" 2>&1
		"$G" bench --workload tiny --workers 1 --strategy sequential \
			--duration 5s --warmup 1s --quiet --json >"$O/worker_tiny_$i.json" 2>"$O/worker_tiny_$i.err"
	done
	"$G" bench --workload spin --request-us 0 --workers 1 --strategy sequential --duration 5s --warmup 1s \
		--quiet --json >"$O/spin0.json" 2>"$O/spin0.err"
	python3 - "$O" <<'PY' | tee -a "$O/summary.txt"
import json, sys, statistics, glob
o = sys.argv[1]
def rate_bare(f):
    d = json.loads(open(f).read().strip().splitlines()[-1]); return d.get("requests_per_second")
def rate_worker(f):
    d = json.load(open(f)); r = d["results"][0]; return r["aggregate"]["requests_per_second"]
for w in ("matmul", "tiny"):
    try:
        b = [rate_bare(f) for f in sorted(glob.glob(f"{o}/bare_{w}_*.json"))]
        h = [rate_worker(f) for f in sorted(glob.glob(f"{o}/worker_{w}_*.json"))]
        mb, mh = statistics.median(b), statistics.median(h)
        print(f"{w}: bare {mb:.1f} req/s, worker {mh:.1f} req/s, difference {100*(mh-mb)/mb:+.2f}% "
              f"(runs bare {['%.0f'%x for x in b]}, worker {['%.0f'%x for x in h]})")
    except Exception as e:
        print(f"{w}: could not compare: {e!r}")
try:
    d = json.load(open(f"{o}/spin0.json")); a = d["results"][0]["aggregate"]
    print(f"spin request-us 0: {a['requests_per_second']:.0f} req/s = {1e6/a['requests_per_second']:.3f} us per request of harness")
except Exception as e:
    print(f"spin0: {e!r}")
PY
fi

if has transformer; then
	log "transformer vs PyTorch eager"
	"$B/tests/helpers/transformer_check" >"$O/transformer_check.txt" 2>&1; echo "transformer_check exit $?" >>"$O/transformer_check.txt"
	tail -4 "$O/transformer_check.txt" | tee -a "$O/summary.txt"
	"$G" bench --workload transformer --workers 1 --strategy sequential --duration 5s --warmup 1s --quiet \
		--json >"$O/worker_transformer.json" 2>"$O/worker_transformer.err"
	python3 "$(dirname "$0")/../bert_torch.py" >"$O/bert_torch.json" 2>"$O/bert_torch.err"
	python3 - "$O" <<'PY' | tee -a "$O/summary.txt"
import json, sys
o = sys.argv[1]
try:
    w = json.load(open(f"{o}/worker_transformer.json"))["results"][0]["aggregate"]["requests_per_second"]
    t = json.loads(open(f"{o}/bert_torch.json").read().strip().splitlines()[-1])
    tr = t.get("requests_per_second")
    print(f"transformer b1 seq128: gpushare {w:.0f} req/s, PyTorch eager {tr:.0f} req/s ({t.get('model','')}), ratio {w/tr:.2f}x")
except Exception as e:
    print(f"transformer comparison failed: {e!r}")
PY
fi

if has clients; then
	log "48 MPS clients, then 49"
	"$G" bench --workload tiny --workers 48 --strategy mps --duration 2s --warmup 500ms --quiet --json \
		>"$O/mps48.json" 2>"$O/mps48.err"; echo "48 workers: exit $?" | tee -a "$O/summary.txt"
	"$G" bench --workload tiny --workers 49 --strategy mps --duration 2s --warmup 500ms --quiet \
		>"$O/mps49.txt" 2>"$O/mps49.err"; echo "49 workers: exit $? ($(grep -m1 808 "$O/mps49.err"))" | tee -a "$O/summary.txt"
	left_running 'nvidia-cuda-mps|gpushare-worker' && echo "LEFT RUNNING" | tee -a "$O/summary.txt"
fi

if has grid; then
	log "grid: workloads x strategies x workers ($DUR windows)"
	for wl in "matmul --size 1024 --dtype fp16" "tiny" "transformer"; do
		name=${wl%% *}
		for n in 1 3 7; do
			"$G" bench --workload $wl --batch 1 --workers $n \
				--strategy timeslice,mps,mps-split,sequential,streams --duration "$DUR" --warmup "$WARM" \
				--quiet --out "$O/grid_${name}_$n.json" >"$O/grid_${name}_$n.txt" 2>"$O/grid_${name}_$n.err"
			echo "$name n=$n: exit $?" >>"$O/summary.txt"
		done
	done
	python3 - "$O" <<'PY' | tee -a "$O/summary.txt"
import json, sys, glob, os
o = sys.argv[1]
rows = {}
for f in sorted(glob.glob(f"{o}/grid_*.json")):
    d = json.load(open(f))
    name = os.path.basename(f)[5:-5]
    wl, n = name.rsplit("_", 1)
    for r in d["results"]:
        a = r["aggregate"]
        rows.setdefault(wl, {}).setdefault(r["strategy"], {})[int(n)] = (a["requests_per_second"], a.get("p99_seconds") or a.get("latency", {}).get("p99_seconds"), r.get("partial"))
for wl, strat in rows.items():
    print(f"\n{wl}: aggregate req/s (p99 ms) by workers")
    print(f"{'strategy':12s}" + "".join(f"{n:>20d}" for n in (1, 3, 7)))
    for s, byn in strat.items():
        cells = []
        for n in (1, 3, 7):
            if n in byn:
                rps, p99, part = byn[n]
                cells.append(f"{rps:10.0f} ({(p99 or 0)*1e3:6.2f}){'!' if part else ' '}")
            else:
                cells.append(f"{'-':>20s}")
        print(f"{s:12s}" + "".join(f"{c:>20s}" for c in cells))
PY
fi
left_running 'nvidia-cuda-mps|gpushare-worker' && echo "WARNING: processes left running" | tee -a "$O/summary.txt"
exit 0
