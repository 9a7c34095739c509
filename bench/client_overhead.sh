#!/usr/bin/env bash
# The cost of an empty request with and without gpushare, side by side, for
# the C client (bench/client_overhead.c) and the Python client
# (bench/client_overhead.py): alone, each times its own loop (the client is
# inactive outside gpushare); under `gpushare bench -- CMD`, 1 / the measured
# rate is the cost per request with gpushare's reporting. The difference is
# what gpushare adds to a request. No GPU needed.
#
#   bench/client_overhead.sh BUILD [DURATION]
set -euo pipefail
B=$(cd "${1:?usage: bench/client_overhead.sh BUILD [DURATION]}" && pwd)
D=${2:-2s}
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
echo "== $(date -u +%FT%TZ), $(nproc) CPUs, $(uname -n)"
for kind in C Python; do
	if [[ $kind == C ]]; then cmd=("$B/bench/client_overhead"); else cmd=(python3 "$SRC/bench/client_overhead.py"); fi
	alone=$("${cmd[@]}" | sed -n 's/^alone: \([0-9.]*\) ns.*/\1/p')
	ips=$("$B/gpushare" bench --strategy timeslice --workers 1 --duration "$D" --warmup 200ms --json -q -- "${cmd[@]}" |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["results"][0]["aggregate"]["items_per_second"])')
	python3 -c "
a, r = float('$alone'), float('$ips')
w = 1e9 / r
print('$kind client: alone %.0f ns per empty request; under gpushare %.0f ns (%.3g req/s): gpushare adds %.2f us' % (a, w, r, (w - a) / 1e3))"
done
