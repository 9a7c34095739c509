#!/usr/bin/env bash
# Every text written for a terminal goes through the one sanitiser
# (gpushare_utf8_term): a command whose name holds an escape sequence (CSI
# colour, an OSC title ended by BEL) and a C1 control (U+009B, the one-byte
# CSI) is recorded as it is, and the bench table, the sweep's progress
# lines, the report's markdown and recommendation, `mps status --log` over a
# log holding the same bytes, the farm's dry-run listing and `farm status`
# print none of those bytes raw. JSON output stays exact: the bytes come back
# as they were recorded.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?}" "${GPUSHARE_WORKER:?}"
HELPERS=${GPUSHARE_TEST_HELPERS:?}

tmp=$(mktemp -d /tmp/gpushare-term.XXXXXX)
cleanup() {
	fake_mps_quit "$tmp/pipe" "$tmp/log"
	fake_mps_quit_left
	rm -rf "$tmp"
}
trap cleanup EXIT
private_xdg
export CUDA_MPS_PIPE_DIRECTORY=$tmp/no-daemon
unset GPUSHARE_MPS_CONTROL CUDA_VISIBLE_DEVICES SLURM_JOB_ID SLURM_STEP_ID SLURM_PROCID SLURM_NTASKS \
	SLURM_ARRAY_TASK_ID

# The planted name: ESC [31m, ESC ]0;t BEL, and U+009B (C1 CSI).
evil=$'w\e[31mred\e]0;t\a\xc2\x9b1m'
mkdir "$tmp/bin"
ln -s "$HELPERS/test_worker" "$tmp/bin/$evil"
cmd=$tmp/bin/$evil

# clean FILE: no C0 control but tab and newline, no DEL, no C1 control.
clean() {
	python3 - "$1" <<'PY'
import sys
t = open(sys.argv[1], "rb").read().decode("utf-8", "replace")
bad = [hex(ord(c)) for c in t if (ord(c) < 0x20 and c not in "\t\n") or 0x7f <= ord(c) <= 0x9f]
assert not bad, bad[:5]
PY
}
# shows FILE: the planted bytes appear escaped.
shows() { grep -qF 'w\x1B[31mred\x1B]0;t\x07\u009B1m' "$1"; }

echo "== bench: the table escapes the command; --json keeps it exact"
run bench --strategy timeslice --workers 1 --duration 100ms --warmup 20ms -- "$cmd" --request-us 300
cp "$tmp/out" "$tmp/bench.txt"
check "bench: exit 0 ($(head -c 200 "$tmp/err"))" test "$rc" = 0
check "  the table prints no control byte" clean "$tmp/bench.txt"
check "  it shows the command escaped" shows "$tmp/bench.txt"
run bench --strategy timeslice --workers 1 --duration 100ms --warmup 20ms --json -- "$cmd" --request-us 300
check "  --json: the command exactly as given" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["config"]["command"][0] == sys.argv[2], d["config"]["command"]' "$tmp/out" "$cmd"

echo "== sweep and report: progress lines, markdown and recommendation escape the recorded name"
run sweep --strategy timeslice --workers 1 --repeats 1 --duration 100ms --warmup 20ms --out "$tmp/sw" \
	-- "$cmd" --request-us 300
check "sweep: exit 0 ($(head -c 200 "$tmp/err"))" test "$rc" = 0
check "  its progress lines print no control byte" clean "$tmp/err"
check "  they show the shape escaped" shows "$tmp/err"
check "  its recommendation on stdout prints no control byte" clean "$tmp/out"
check "  the results file records the name exactly" python3 -c '
import json, sys
r = json.loads(open(sys.argv[1]).readline())
assert r["bench"]["config"]["command"][0] == sys.argv[2]' "$tmp/sw/results.jsonl" "$cmd"
run report "$tmp/sw"
check "report: exit 0 ($(head -c 200 "$tmp/err"))" test "$rc" = 0
check "  the markdown on stdout prints no control byte" clean "$tmp/out"
check "  it shows the shape escaped" shows "$tmp/out"

echo "== mps status --log: the daemon's log lines escaped"
export GPUSHARE_MPS_CONTROL=$HELPERS/fake_mps_control
fake_mps_start "$tmp/pipe" "$tmp/log"
printf '%s\n' "client $evil connected" >>"$tmp/log/control.log"
run mps status --pipe-dir "$tmp/pipe" --log-dir "$tmp/log" --log 1000
check "mps status: exit 0 ($(head -c 200 "$tmp/err"))" test "$rc" = 0
check "  the log lines print no control byte" clean "$tmp/out"
check "  they show the planted name escaped" shows "$tmp/out"
run mps status --pipe-dir "$tmp/pipe" --log-dir "$tmp/log" --log 1000 --json
check "  --json: the log exactly as written" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert "client " + sys.argv[2] + " connected" in d["log"], d["log"]' "$tmp/out" "$evil"

echo "== farm: the dry run and farm status escape job commands"
run farm --strategy timeslice --dir "$tmp/f-$evil" --slots 1 --dry-run --range 1..2 -- "$cmd" --job --exit-code 3
check "farm --dry-run: exit 0 ($(head -c 200 "$tmp/err"))" test "$rc" = 0
check "  its listing prints no control byte" clean "$tmp/out"
check "  it shows the command escaped" shows "$tmp/out"
run farm --strategy timeslice --dir "$tmp/f-$evil" --slots 1 -q --range 1..2 -- "$cmd" --job --request-us 1000 --exit-code 3
check "farm: its jobs failed, a failing exit ($(head -c 200 "$tmp/err"))" test "$rc" -ne 0
run farm status "$tmp/f-$evil"
check "farm status: the listing prints no control byte" clean "$tmp/out"
check "  it shows the failed job's command and the directory escaped" \
	test "$(grep -cF 'w\x1B[31mred\x1B]0;t\x07\u009B1m' "$tmp/out")" -ge 2

echo "== info: another process's command line escaped"
ln -s "$(command -v sleep)" "$tmp/bin/s$evil"
"$tmp/bin/s$evil" 60 &
spid=$!
GPUSHARE_NVML_LIBRARY=$HELPERS/libfakenvml.so FAKE_NVML_PIDS="$spid,0,0" run info
kill "$spid" 2>/dev/null || true
wait "$spid" 2>/dev/null || true
check "info: exit 0 ($(head -c 200 "$tmp/err"))" test "$rc" = 0
check "  it lists the process" grep -q "^ *$spid " "$tmp/out"
check "  the listing prints no control byte" clean "$tmp/out"
check "  it shows the command escaped" shows "$tmp/out"

finish "terminal text through the one sanitiser"
