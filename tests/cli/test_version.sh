#!/usr/bin/env bash
# End-to-end test of the version, which comes from one place (the project
# VERSION in CMakeLists.txt): `gpushare --version`, info --json, bench --json,
# a sweep's records and its report (markdown and summary.json), the
# gpushare_build_info metric, and the Python client's package metadata.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?set by ctest}" "${GPUSHARE_SOURCE_DIR:?set by ctest}" "${GPUSHARE_TEST_HELPERS:?set by ctest}"
SRC=$GPUSHARE_SOURCE_DIR
tmp=$(mktemp -d /tmp/gpushare-version-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
private_xdg

version=$(sed -n 's/^project(gpushare VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
check "the project version is read from CMakeLists.txt ('$version')" bash -c "[[ '$version' =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]"

run --version
check "gpushare --version: 'gpushare $version', exit 0 (got $rc: $(cat "$tmp/out"))" \
	bash -c "test $rc -eq 0 && test \"\$(cat '$tmp/out')\" = 'gpushare $version'"

echo "== info --json (the fake driver)"
GPUSHARE_NVML_LIBRARY=$GPUSHARE_TEST_HELPERS/libfakenvml.so GPUSHARE_CUDA_LIBRARY=$GPUSHARE_TEST_HELPERS/libfakecuda.so \
	GPUSHARE_MPS_CONTROL=/nonexistent/nvidia-cuda-mps-control run info --json
check "info --json: exit 0 (got $rc: $(head -c 300 "$tmp/err"))" test "$rc" -eq 0
check "info --json: gpushare_version is '$version'" \
	python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["gpushare_version"] == sys.argv[2]' "$tmp/out" "$version"

echo "== bench --json"
run bench --workload spin --strategy timeslice --workers 1 --duration 200ms --warmup 0s --json -q
check "bench --json: exit 0 (got $rc)" test "$rc" -eq 0
check "bench --json: metadata.gpushare_version is '$version'" \
	python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["metadata"]["gpushare_version"] == sys.argv[2]' "$tmp/out" "$version"

echo "== sweep records and report"
run sweep --out "$tmp/sweep" --workload spin --strategy timeslice --workers 1 --repeats 1 \
	--duration 200ms --warmup 0s -q
check "sweep: exit 0 (got $rc: $(head -c 300 "$tmp/err"))" test "$rc" -eq 0
check "sweep record: metadata.gpushare_version is '$version'" \
	python3 -c 'import json, sys; assert json.loads(open(sys.argv[1]).readline())["metadata"]["gpushare_version"] == sys.argv[2]' \
	"$tmp/sweep/results.jsonl" "$version"
check "report.md: names gpushare $version" grep -q "gpushare $version," "$tmp/sweep/report.md"
check "summary.json: gpushare_version is '$version'" \
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
found = []
def walk(o):
    if isinstance(o, dict):
        for k, v in o.items():
            if k == "gpushare_version": found.append(v)
            walk(v)
    elif isinstance(o, list):
        for v in o: walk(v)
walk(d)
assert found and all(v == sys.argv[2] for v in found), found' "$tmp/sweep/summary.json" "$version"

echo "== gpushare_build_info"
GPUSHARE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 run exporter --once --pipe-dir "$tmp/nopipe"
check "exporter --once: gpushare_build_info{version=\"$version\"} 1" grep -qx "gpushare_build_info{version=\"$version\"} 1" "$tmp/out"

echo "== the Python client"
pyver=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$SRC/python/pyproject.toml")
check "python/pyproject.toml has the project version ('$pyver')" test "$pyver" = "$version"

finish version
