#!/usr/bin/env bash
# Interleaved A/B of two builds of gpushare on the CPU alone (no GPU), for a
# change that must keep behaviour and numbers (a restructuring). Usage:
#   bench/ab_cpu.sh OLD_BUILD NEW_BUILD [ROUNDS]     (default 3 rounds)
# Each round, old then new: `bench` of 4 spin workers under timeslice (2 s,
# items/s), a farm of 1,000 `true` jobs on 4 slots (wall and CPU seconds,
# jobs ok) and a sweep of 8 short spin runs (wall seconds, runs ok). Run it in
# an empty scratch directory (it leaves the farm and sweep directories there).
# Build both without sanitizers (-DCMAKE_BUILD_TYPE=Release).
set -uo pipefail
OLD=$(cd "${1:?old build dir}" && pwd) NEW=$(cd "${2:?new build dir}" && pwd) R=${3:-3}
seq 1000 >args.txt
for i in $(seq 1 "$R"); do
	for side in old new; do
		b=$OLD; [[ $side == new ]] && b=$NEW
		export GPUSHARE_WORKER=$b/gpushare-worker
		ips=$("$b/gpushare" bench --workload spin --workers 4 --strategy timeslice --duration 2s -q --json 2>/dev/null |
			python3 -c "import json,sys; d=json.load(sys.stdin); print(round(d['results'][0]['aggregate']['items_per_second']))")
		rm -rf "f-$side-$i"
		/usr/bin/time -f "%e %U %S" -o t.txt "$b/gpushare" farm --dir "f-$side-$i" --strategy timeslice --slots 4 --args args.txt -q -- true >/dev/null 2>&1
		read -r fw fu fs <t.txt
		rm -rf "s-$side-$i"
		/usr/bin/time -f "%e %U %S" -o t.txt "$b/gpushare" sweep --out "s-$side-$i" --workload spin --strategy timeslice,sequential \
			--workers 1,2 --repeats 2 --duration 300ms --warmup 50ms -q --no-report >/dev/null 2>&1
		read -r sw su ss <t.txt
		ok=$(python3 -c "import json; print(sum(1 for l in open('s-$side-$i/results.jsonl') if json.loads(l).get('status')=='ok'))")
		fok=$(grep -c '"outcome":"ok"' "f-$side-$i/journal.jsonl")
		printf '%s %d: bench spin w4 %s items/s | farm 1000 true: %s s wall, %.2f s CPU, %s ok | sweep 8 runs: %s s wall, %s ok\n' \
			"$side" "$i" "$ips" "$fw" "$(python3 -c "print($fu + $fs)")" "$fok" "$sw" "$ok"
	done
done
