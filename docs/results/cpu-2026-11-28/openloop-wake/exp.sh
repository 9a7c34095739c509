#!/bin/bash
# beside stress-ng --cpu 2: sleeper with slice, alone vs waking a partner per arrival, vs the dispatcher
B=/work/main/build-rel
export GPUSHARE_WORKER=$B/gpushare-worker
set -m; stress-ng --cpu 2 >/dev/null 2>&1 & hog=$!; set +m; sleep 1
for round in 1 2 3 4 5; do
 for rate in 1000 10000; do
  /tmp/slice/fw $rate 3 100 0 | sed "s/^/r$round $rate /"
  /tmp/slice/fw $rate 3 100 1 | sed "s/^/r$round $rate /"
  GPUSHARE_DISPATCH_WAIT=sleep $B/gpushare bench --workload spin --request-us 0 --workers 1 --strategy timeslice --load open --rate $rate --arrival uniform --duration 3s --warmup 1s -q --json | python3 -c "import json,sys; o=json.load(sys.stdin)['results'][0]['open_loop']; print('r$round $rate dispatcher-sleep p99=%.1fus'%(o['lateness']['p99_seconds']*1e6))"
 done
done
kill -- -$hog; wait $hog 2>/dev/null
