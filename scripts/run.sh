#!/usr/bin/env bash
# The main job: install what gpushare needs, build it, show the GPUs and MPS
# state, and compare sharing strategies. On a GPU machine: a short MPS round
# trip (start, status, stop) and `gpushare bench` (4 workers of a cuBLAS
# matmul, time-slicing against MPS). Without a GPU: the same engine with the
# CPU-only spin workload. The build needs no test package (BUILD_TESTING=OFF);
# its log is build/build.log, printed when the build fails. build/ is
# configured for the prefix /usr, the Debian package's: `cd build && cpack -G DEB`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "== building gpushare in build/"
mkdir -p build
if ! scripts/build.sh build -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
	-DCMAKE_INSTALL_PREFIX=/usr >build/build.log 2>&1; then
	cat build/build.log >&2
	echo "run: the build failed (log above, kept in build/build.log)" >&2
	exit 1
fi
G=build/gpushare
echo "== $("$G" --version) built: $G"
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
