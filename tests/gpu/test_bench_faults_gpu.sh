#!/usr/bin/env bash
# GPU test (label gpu): failures during a real GPU run.
#  - a GPU fault (illegal address, CUDA error 700) in one worker under MPS,
#    which MPS delivers to every client: the run stops, the faulting worker is
#    named, results are kept and marked partial (exit 10);
#  - the same fault under time-slicing;
#  - SIGINT in the middle of an MPS run: exit 130, what was measured is
#    printed, the daemon gpushare started is gone;
#  - the mig strategy on a GPU with MIG disabled: one clear line, exit 7;
#  - --ceiling reports the sharing efficiency E_N.
# No daemon or worker may be left running after any of them.
set -euo pipefail
G=${GPUSHARE:?}
D=$(mktemp -d /tmp/gsfault.XXXXXX)
trap 'rm -rf "$D"' EXIT
left_running() { ps -eo pid=,stat=,args= | awk '$2 !~ /^Z/' | grep -E "^ *[0-9]+ +[^ ]+ +[^ ]*(nvidia-cuda-mps|gpushare-worker)"; }
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }
nothing_left() { sleep 0.5; if left_running; then fail "$1: processes left running"; fi; }

# The fault comes about 1.5 s into the 4 s window: tiny runs about 9,000
# requests/s per worker under MPS and 1,800 time-sliced (3 workers, H200).
declare -A AFTER=([mps]=15000 [timeslice]=3000)
for strategy in mps timeslice; do
	rc=0
	"$G" bench --workload tiny --fault-after "${AFTER[$strategy]}" --workers 3 --strategy "$strategy" --duration 4s \
		--warmup 200ms --quiet --json >"$D/$strategy.json" 2>"$D/$strategy.err" || rc=$?
	[ "$rc" -eq 10 ] || fail "$strategy fault: exit $rc (expected 10): $(cat "$D/$strategy.err")"
	python3 - "$D/$strategy.json" "$strategy" <<'PY' || fail "$strategy fault: JSON"
import json, sys
d = json.load(open(sys.argv[1])); r = d["results"][0]
assert d["partial"] and r["partial"], "not partial"
assert r["failure"]["worker"] is not None, r["failure"]
codes = {w["index"] if "index" in w else i: w.get("cuda_error") for i, w in enumerate(r["workers"])}
assert 700 in codes.values(), codes
# A run cut short by a fault reads as failed: no aggregate figures, but
# what each worker measured before the fault is kept.
assert r["status"] == "failed" and r["aggregate"]["requests"] is None, (r["status"], r["aggregate"]["requests"])
assert sum(w["requests"] or 0 for w in r["workers"]) > 0, "measured requests not kept"
print(f"  {sys.argv[2]}: failure {r['failure']}; CUDA errors per worker {codes}")
PY
	grep -q "700\|illegal" "$D/$strategy.err" || fail "$strategy fault: message does not name the CUDA error: $(cat "$D/$strategy.err")"
	ok "$strategy: GPU fault reported ($(grep -m1 -E 'worker [0-9]' "$D/$strategy.err"))"
	nothing_left "$strategy fault"
done

"$G" bench --workload matmul --size 1024 --workers 3 --strategy mps --duration 20s --warmup 200ms \
	>"$D/int.out" 2>"$D/int.err" &
pid=$!
sleep 6
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
[ "$rc" -eq 130 ] || fail "SIGINT: exit $rc (expected 130): $(tail -3 "$D/int.err")"
grep -q "mps" "$D/int.out" || fail "SIGINT: nothing measured was printed"
ok "SIGINT mid-run: exit 130, results printed"
nothing_left "SIGINT"

rc=0
"$G" bench --workload matmul --strategy mig --workers 1 --duration 1s 2>"$D/mig.err" >/dev/null || rc=$?
if "$G" info --json | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if not any(g.get("mig_enabled") for g in d["gpus"]) else 1)' 2>/dev/null; then
	[ "$rc" -eq 7 ] && [ "$(wc -l <"$D/mig.err")" -eq 1 ] || fail "mig with MIG off: exit $rc: $(cat "$D/mig.err")"
	ok "mig with MIG disabled: exit 7: $(cat "$D/mig.err")"
else
	echo "SKIP: MIG is enabled here; mig strategy error path not checked"
fi

"$G" bench --workload matmul --size 1024 --workers 3 --strategy mps --ceiling --duration 2s --warmup 300ms \
	--quiet --json >"$D/ceil.json"
python3 - "$D/ceil.json" <<'PY' || fail "ceiling: JSON"
import json, sys
d = json.load(open(sys.argv[1]))
e = d["results"][0]["aggregate"]["efficiency"]
assert d["ceiling"] and e and 0 < e < 5, (d["ceiling"], e)
print(f"  E_3 = {e:.2f}")
PY
ok "--ceiling reports E_N"
nothing_left "ceiling"
echo "1 passed, 0 failed"
