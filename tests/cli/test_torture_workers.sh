#!/usr/bin/env bash
# Torture, class "hostile workers", through a sweep of your own command: a
# worker that writes binary garbage or one endless line on its report
# channel, one that never becomes ready, one that exits at once, one that
# ignores "stop". Each run is
# recorded as failed (or partial), the sweep goes on and exits 10, no process
# of the command outlives the sweep, every record is whole JSON, and the
# report is written. (Protocol details per message: test_cmd.sh.)
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?}" "${GPUSHARE_WORKER:?}" "${GPUSHARE_TEST_HELPERS:?}"
H=$GPUSHARE_TEST_HELPERS
tmp=$(mktemp -d /tmp/gpushare-torture-workers.XXXXXX)
cleanup() {
	pkill_ours
	rm -rf "$tmp"
}
# Processes of this test's private worker name only, each by its pid.
pkill_ours() {
	local p
	for p in $(pgrep -f "$tmp/" || true); do kill -9 "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
unset CUDA_MPS_PIPE_DIRECTORY GPUSHARE_MPS_CONTROL
private_xdg
ln -s "$H/test_worker" "$tmp/tw"
cp "$(command -v sleep)" "$tmp/gc-sleep"
cat >"$tmp/leaver.sh" <<EOF
#!/bin/sh
# A worker that starts a grandchild which would outlive it, then misbehaves.
"$tmp/gc-sleep" 300 &
exec "$tmp/tw" --request-us 200 --exit-after 3 --exit-code 7
EOF
chmod +x "$tmp/leaver.sh"

whole_records() {
	python3 -c '
import json, sys
n = 0
for l in open(sys.argv[1]):
    r = json.loads(l); n += 1
    assert r["status"] in ("ok", "partial", "failed"), r["status"]
print(n)' "$1"
}

# shellcheck disable=SC2054 # commas inside option values
SW=(sweep --strategy timeslice,sequential --workers 2 --repeats 1 --duration 300ms --warmup 20ms
	--start-timeout 1500ms -q)
# "leaver" (a grandchild outliving a command that exited by itself) joins the
# list once commands run in a process group that is killed when they end.
for bad in "--garbage" "--flood" "--never-ready" "--exit-now --exit-code 3" "--ignore-stop"; do
	name=${bad%% *}
	name=${name#--}
	out=$tmp/o-$name
	if [[ $bad == leaver ]]; then
		cmd=("$tmp/leaver.sh")
	else
		# shellcheck disable=SC2206 # the flags are words
		cmd=("$tmp/tw" --request-us 200 $bad --only-worker 1)
	fi
	start=$(date +%s)
	set +e
	timeout 120 "$GPUSHARE" "${SW[@]}" --out "$out" -- "${cmd[@]}" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	set -e
	took=$(($(date +%s) - start))
	check "$name: the sweep ends with exit 10 in ${took}s (got $rc: $(tail -c 300 "$tmp/err"))" test "$rc" -eq 10
	sleep 0.5
	left=$(pgrep -f "$tmp/" | wc -l || true)
	check "$name: no process of the command left ($left)" test "$left" -eq 0
	pkill_ours
	n=$(whole_records "$out/results.jsonl" 2>/dev/null || echo bad)
	check "$name: both runs recorded as whole records ($n)" test "$n" = 2
	check "$name: the report is written" test -s "$out/report.md"
	if grep -q "AddressSanitizer\|runtime error" "$tmp/err"; then fail "$name: sanitizer report"; fi
done

finish "torture (workers)"
