#!/usr/bin/env bash
# Torture, class "very large inputs": a results file of 3,000 workload shapes
# (6,000 runs). The report must finish quickly (linear time), draw only the
# shapes it shows (at most 64), and say in its output that the others were
# left out; memory stays bounded (checked with a limit on the resident set).
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?}" "${GPUSHARE_WORKER:?}"
tmp=$(mktemp -d /tmp/gpushare-torture-scale.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
ln -s "$GPUSHARE_WORKER" "$tmp/gpushare-worker"
export GPUSHARE_WORKER="$tmp/gpushare-worker"
export CUDA_MPS_PIPE_DIRECTORY="$tmp/no-daemon"
private_xdg

run sweep --workload spin --request-us 100us --duration $((60 * TIME_FACTOR))ms --warmup 10ms --warmup-requests 1 -q --no-report \
	--strategy sequential --workers 1 --repeats 1 --out "$tmp/base"
[[ $rc -eq 0 ]] && ok "base sweep" || fail "base sweep: exit $rc: $(cat "$tmp/err")"

mkdir "$tmp/big"
python3 - "$tmp/base/results.jsonl" "$tmp/big/results.jsonl" <<'EOF'
import json, sys
base = json.loads(open(sys.argv[1]).readline())
with open(sys.argv[2], "w") as out:
    for s in range(3000):
        for strat in ("sequential", "timeslice"):
            r = json.loads(json.dumps(base))
            r["cell"]["shape"] = "spin:request-us=%dus" % (s + 1)
            r["cell"]["strategy"] = strat
            r["cell"]["key"] = "%s|%s|w1|b1" % (r["cell"]["shape"], strat)
            r["bench"]["results"][0]["aggregate"]["items_per_second"] = 1000.0 + s
            out.write(json.dumps(r) + "\n")
EOF
start=$(date +%s)
set +e
timeout 120 "$GPUSHARE" report "$tmp/big" -q >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
took=$(($(date +%s) - start))
echo "   report over 3000 shapes: exit $rc in ${took}s, $(du -sh "$tmp/big" | cut -f1)"
check "report over 3000 shapes: exit 0 (got $rc: $(head -c 300 "$tmp/err"))" test "$rc" -eq 0
check "it takes under 60 s (took ${took}s)" test "$took" -lt 60
grep -q "3000 workload shapes" "$tmp/err" && ok "stderr says shapes were left out" || fail "no note on stderr: $(cat "$tmp/err")"
grep -q "2936 more workload shapes" "$tmp/big/report.md" && ok "report.md says 2936 shapes are left out" \
	|| fail "report.md has no note: $(head -20 "$tmp/big/report.md")"
grep -q "2936 more workload shapes" "$tmp/big/report.html" && ok "report.html says so too" || fail "report.html has no note"
n=$(grep -c '^### ' "$tmp/big/report.md" || true)
check "report.md covers 64 shapes ($n)" test "$n" -eq 64
np=$(find "$tmp/big/plots" -name '*.png' | wc -l)
check "plots only for the shapes shown ($np PNG files, at most $((64 * 6)))" test "$np" -le $((64 * 6))
hs=$(stat -c %s "$tmp/big/report.html")
check "report.html stays small ($hs bytes < 20 MB)" test "$hs" -lt 20000000

finish "torture (scale)"
