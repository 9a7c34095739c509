#!/usr/bin/env bash
# --gpus for bench and sweep with the stand-in NVML (three fake GPUs) and
# the spin workload: workers pinned round-robin to the chosen GPUs by UUID,
# one MPS daemon for all of them, results per GPU and in total (JSON and the
# table), GPU selection errors, and --gpus in a sweep's records.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?}" "${GPUSHARE_WORKER:?}" "${GPUSHARE_TEST_HELPERS:?}"
H=$GPUSHARE_TEST_HELPERS
tmp=$(mktemp -d /tmp/gpushare-gpus-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
private_xdg
export GPUSHARE_NVML_LIBRARY=$H/libfakenvml.so FAKE_NVML_GPUS=3
export GPUSHARE_MPS_CONTROL=$H/fake_mps_control
export CUDA_MPS_PIPE_DIRECTORY=$tmp/no-daemon
unset CUDA_VISIBLE_DEVICES
uuid() { printf 'GPU-fa4e0000-0000-4000-8000-%012x' "$1"; }
SPIN=(--workload spin --request-us 200us --duration 300ms --warmup 50ms --warmup-requests 1)

echo "== bench --gpus 0,2: four workers, two per GPU, per-GPU results"
run bench "${SPIN[@]}" --workers 4 --strategy timeslice,mps --gpus 0,2 --json
check "exit 0" test "$rc" = 0
check "JSON: per GPU two workers, their throughput summing to the total; pinned by UUID" python3 -c "
import json; d = json.load(open('$tmp/out'))
u0, u2 = '$(uuid 0)', '$(uuid 2)'
for r in d['results']:
    g = r['gpus']
    assert [(x['index'], x['uuid'], x['workers']) for x in g] == [(0, u0, 2), (2, u2, 2)], g
    assert all(x['items_per_second'] > 0 for x in g), g
    tot = r['aggregate']['items_per_second']
    assert abs(sum(x['items_per_second'] for x in g) - tot) <= 0.01 * tot + 1, (g, tot)
    assert [w['visible_devices'] for w in r['workers']] == [u0, u2, u0, u2]
assert d['results'][1]['mps']['daemon_started']"
run bench "${SPIN[@]}" --workers 3 --strategy timeslice --gpus all
check "table: one line per GPU" test "$(grep -c '^  GPU [0-2] GPU-fa4e.*: 1 workers' "$tmp/out")" = 3
run bench "${SPIN[@]}" --workers 2 --strategy timeslice --json
check "without --gpus: no per-GPU field, workers not pinned" python3 -c "
import json; d = json.load(open('$tmp/out')); r = d['results'][0]
assert 'gpus' not in r and all(w['visible_devices'] == '$(uuid 0)' for w in r['workers'])"
CUDA_VISIBLE_DEVICES=$(uuid 1),$(uuid 2) run bench "${SPIN[@]}" --workers 2 --strategy timeslice --gpus all --json
check "--gpus all follows CUDA_VISIBLE_DEVICES" python3 -c "
import json; d = json.load(open('$tmp/out'))
assert [x['index'] for x in d['results'][0]['gpus']] == [1, 2]"

echo "== errors"
run bench "${SPIN[@]}" --strategy timeslice --gpus 5
check "--gpus 5 of 3: exit 7" test "$rc" = 7
run bench "${SPIN[@]}" --strategy timeslice --gpus 0,,1
check "--gpus 0,,1: exit 2, names --gpus" bash -c "test $rc = 2 && grep -q -- '--gpus' '$tmp/err'"
CUDA_VISIBLE_DEVICES=0 run bench "${SPIN[@]}" --strategy timeslice --gpus 1
check "a GPU CUDA_VISIBLE_DEVICES does not allow: refused" test "$rc" -ne 0
FAKE_NVML_INIT_ERROR=9 run bench "${SPIN[@]}" --strategy timeslice --gpus all
check "--gpus without a driver: exit 3" test "$rc" = 3

echo "== sweep --gpus"
run sweep "${SPIN[@]}" --strategy timeslice --workers 2,4 --repeats 1 --gpus 1,2 --out "$tmp/sw" -q --no-report
check "sweep: exit 0" test "$rc" = 0
check "each record's bench document has per-GPU results" python3 -c "
import json
recs = [json.loads(l) for l in open('$tmp/sw/results.jsonl')]
assert len(recs) == 2
for rec in recs:
    g = rec['bench']['results'][0]['gpus']
    n = rec['cell']['workers']
    assert [x['index'] for x in g] == [1, 2] and [x['workers'] for x in g] == [n // 2, n // 2], g"

finish "--gpus"
