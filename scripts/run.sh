#!/usr/bin/env bash
# The main job: install what gpushare needs, build it, show the GPUs and MPS
# state, and compare sharing strategies. On a GPU machine: a short MPS round
# trip (start, status, stop) and `gpushare bench` (4 workers of a cuBLAS
# matmul, time-slicing against MPS). Without a GPU: the same engine with the
# CPU-only spin workload.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh build -DCMAKE_BUILD_TYPE=Release >/dev/null
G=build/gpushare
echo "== gpushare info"
if "$G" info; then
	echo "== MPS round trip"
	"$G" mps start
	"$G" mps status
	"$G" mps stop --force
	echo "== gpushare bench (matmul, timeslice vs mps, 4 workers)"
	"$G" bench "$@"
else
	echo "== no GPU here: gpushare bench with the CPU-only spin workload"
	"$G" bench --workload spin --strategy timeslice,sequential,streams --workers 4 --duration 3s --warmup 500ms "$@"
fi
