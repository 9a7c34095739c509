#!/usr/bin/env bash
# Torture, class "malformed and hostile files": results files that end in a
# whitespace line (read past the buffer), FIFOs, links to /dev/zero, huge
# files, invalid UTF-8 and labels cut inside a character, a symbolic link
# planted as results.jsonl or as a report file, temporary files left by a
# writer killed mid-write, and --resume with other options than the recorded
# runs. Each case must end with a clear message and its documented status,
# quickly, without touching anything outside the directory.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?}" "${GPUSHARE_WORKER:?}"

tmp=$(mktemp -d /tmp/gpushare-torture-files.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
ln -s "$GPUSHARE_WORKER" "$tmp/gpushare-worker"
export GPUSHARE_WORKER="$tmp/gpushare-worker"
export CUDA_MPS_PIPE_DIRECTORY="$tmp/no-daemon"
private_xdg
unset GPUSHARE_MPS_CONTROL

SPIN=(sweep --workload spin --request-us 100us --duration 60ms --warmup 10ms --warmup-requests 1 -q --no-report)

# A bounded run: the status, or 124 when it hung.
trun() {
	set +e
	timeout 20 "$GPUSHARE" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	set -e
}
expect() { # expect STATUS TEXT DESCRIPTION
	if [[ $rc -eq $1 ]] && grep -q -- "$2" "$tmp/err"; then ok "$3"; else
		fail "$3: exit $rc (want $1 and '$2'): $(head -c 600 "$tmp/err")"; fi
}
valid_utf8() { python3 -c 'import sys; open(sys.argv[1], "rb").read().decode("utf-8")' "$1" 2>/dev/null; }

echo "== a real results file to start from"
run "${SPIN[@]}" --strategy sequential --workers 1 --repeats 2 --out "$tmp/base"
[[ $rc -eq 0 ]] && ok "base sweep" || fail "base sweep exited $rc: $(cat "$tmp/err")"
line=$(head -n 1 "$tmp/base/results.jsonl")

echo "== the last line is only whitespace (the loader must not scan past the buffer)"
mkdir "$tmp/ws"
{ echo "$line"; printf '   '; } >"$tmp/ws/results.jsonl"
# A fill byte of ' ' makes the uninitialised rest of the buffer look blank.
set +e
ASAN_OPTIONS=malloc_fill_byte=32:max_malloc_fill_size=4194304:detect_leaks=0 timeout 20 \
	"$GPUSHARE" report "$tmp/ws" -q >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
[[ $rc -eq 0 ]] && ! grep -q "AddressSanitizer" "$tmp/err" && ok "whitespace last line: read in bounds, exit 0" \
	|| fail "whitespace last line: exit $rc: $(head -c 600 "$tmp/err")"

echo "== inputs that are not regular files, or too large"
mkdir "$tmp/fifo" "$tmp/zero" "$tmp/huge" "$tmp/dir"
mkfifo "$tmp/fifo/results.jsonl"
trun report "$tmp/fifo" -q
expect 11 "not a regular file" "report on a FIFO: refused at once (exit 11)"
ln -s /dev/zero "$tmp/zero/results.jsonl"
trun report "$tmp/zero" -q
expect 11 "not a regular file" "report on a link to /dev/zero: refused (exit 11)"
truncate -s 2G "$tmp/huge/results.jsonl"
trun report "$tmp/huge" -q
expect 11 "more than" "report on a 2 GB file: refused before reading (exit 11)"
mkdir "$tmp/dir/results.jsonl"
trun report "$tmp/dir" -q
expect 11 "not a regular file" "report on a directory named results.jsonl (exit 11)"
mkdir "$tmp/fifo2"
mkfifo "$tmp/fifo2/results.jsonl"
trun "${SPIN[@]}" --strategy sequential --workers 1 --repeats 1 --out "$tmp/fifo2" --resume
[[ $rc -eq 11 ]] && ok "sweep --resume on a FIFO: refused (exit 11)" || fail "sweep on a FIFO: exit $rc: $(cat "$tmp/err")"

echo "== invalid UTF-8 and labels cut inside a character"
mkdir "$tmp/utf"
python3 - "$tmp/base/results.jsonl" "$tmp/utf/results.jsonl" <<'EOF'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
out = open(sys.argv[2], "wb")
for i, r in enumerate(recs):
    # 126 bytes of 'a' then a 3-byte character: a cut at 127 bytes splits it.
    label = "a" * 126 + "\u20ac" if i == 0 else "spin"
    r["cell"]["shape"] = label
    r["metadata"]["host"] = "h\udcff"  # a lone surrogate escape in JSON
    text = json.dumps(r, ensure_ascii=False).encode("utf-8", "surrogatepass")
    # A raw invalid byte inside the workload name, as a non-UTF-8 argument leaves it.
    text = text.replace(b'"workload": "spin"', b'"workload": "sp\xffin"')
    out.write(text + b"\n")
EOF
trun report "$tmp/utf" -q
[[ $rc -eq 0 ]] && ok "report over invalid UTF-8: exit 0" || fail "report over invalid UTF-8: exit $rc: $(cat "$tmp/err")"
for f in report.md report.html summary.json summary.csv; do
	if [[ -f "$tmp/utf/$f" ]] && valid_utf8 "$tmp/utf/$f"; then ok "$f is valid UTF-8"; else fail "$f missing or not UTF-8"; fi
done
for f in "$tmp"/utf/plots/*.svg; do
	[[ -f "$f" ]] || continue
	valid_utf8 "$f" && ok "plot $(basename "$f") is valid UTF-8" || fail "plot $(basename "$f") is not UTF-8"
	break
done
label=$(printf '\xe2\x82\xac%.0s' $(seq 1 60))  # 60 euro signs, 180 bytes
mkdir -p "$tmp/cmdlabel"
ln -sf "$(command -v true)" "$tmp/cmdlabel/$label" 2>/dev/null || true
if [[ -n "${GPUSHARE_TEST_HELPERS:-}" && -x "$GPUSHARE_TEST_HELPERS/test_worker" ]]; then
	ln -sf "$GPUSHARE_TEST_HELPERS/test_worker" "$tmp/cmdlabel/tw"
	run sweep --strategy sequential --workers 1 --repeats 1 --duration 60ms --warmup 10ms -q --out "$tmp/cmdl" \
		-- "$tmp/cmdlabel/tw" --request-us 100 "$label"
	if [[ -f "$tmp/cmdl/results.jsonl" ]]; then
		valid_utf8 "$tmp/cmdl/results.jsonl" && ok "a command label cut at its size ends between characters" \
			|| fail "command label cut inside a character"
		[[ -f "$tmp/cmdl/report.html" ]] && ok "its report is written" || fail "no report for the long label"
	else
		fail "command sweep with a long label: exit $rc: $(cat "$tmp/err")"
	fi
fi

bad=$(printf 'x\xff\xfey')
set +e
"$GPUSHARE" bench --workload spin --request-us 100us --duration 50ms --warmup 10ms --workers 1 \
	--strategy sequential --json --out "$tmp/b-$bad.json" >"$tmp/bench.json" 2>/dev/null
set -e
valid_utf8 "$tmp/bench.json" && python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/bench.json" \
	&& ok "bench --json with a non-UTF-8 argument: valid UTF-8 JSON" || fail "bench --json: invalid UTF-8 or JSON"
set +e
CUDA_MPS_PIPE_DIRECTORY="/tmp/$bad" GPUSHARE_NVML_LIBRARY=${GPUSHARE_TEST_HELPERS:-/x}/libfakenvml.so \
	"$GPUSHARE" info --json >"$tmp/info.json" 2>/dev/null
set -e
valid_utf8 "$tmp/info.json" && python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/info.json" \
	&& ok "info --json with a non-UTF-8 pipe directory: valid UTF-8 JSON" || fail "info --json: invalid UTF-8 or JSON"

echo "== links planted in a results directory"
mkdir "$tmp/victim" "$tmp/planted"
echo "precious" >"$tmp/victim/file"
ln -s "$tmp/victim/file" "$tmp/planted/results.jsonl"
trun "${SPIN[@]}" --strategy sequential --workers 1 --repeats 1 --out "$tmp/planted" --resume
[[ $rc -eq 11 ]] && grep -q "symbolic link" "$tmp/err" && ok "sweep refuses a linked results.jsonl (exit 11)" \
	|| fail "sweep with a linked results.jsonl: exit $rc: $(cat "$tmp/err")"
[[ "$(cat "$tmp/victim/file")" == precious ]] && ok "the link's target is untouched" || fail "the target was written"
cp -r "$tmp/base" "$tmp/rl"
ln -s "$tmp/victim/file" "$tmp/rl/report.md"
trun report "$tmp/rl" -q
[[ "$(cat "$tmp/victim/file")" == precious ]] && ok "report never writes through a planted report.md link" \
	|| fail "report wrote through a link"
[[ $rc -eq 11 ]] && grep -q "symbolic link" "$tmp/err" && ok "report names the planted link (exit 11)" \
	|| fail "report with a planted link: exit $rc: $(cat "$tmp/err")"

cp -r "$tmp/base" "$tmp/pl"
mkdir "$tmp/elsewhere"
ln -s "$tmp/elsewhere" "$tmp/pl/plots"
trun report "$tmp/pl" -q
[[ -z "$(ls -A "$tmp/elsewhere")" ]] && ok "report never writes plots through a planted plots/ link" \
	|| fail "plots written through a link: $(ls "$tmp/elsewhere" | head -3)"
[[ $rc -eq 11 ]] && grep -q "symbolic link" "$tmp/err" && ok "report names the planted plots/ link (exit 11)" \
	|| fail "report with a planted plots/ link: exit $rc: $(cat "$tmp/err")"

echo "== temporary files of a writer killed mid-write"
cp -r "$tmp/base" "$tmp/stale"
sleep 0.2 & dead=$!
wait "$dead"
echo partial >"$tmp/stale/.report.md.tmp-$dead-AbC123"
echo partial >"$tmp/stale/.summary.json.tmp-$$-XyZ789"   # a live writer's: kept
trun report "$tmp/stale" -q
[[ $rc -eq 0 ]] || fail "report in stale: exit $rc: $(cat "$tmp/err")"
[[ ! -e "$tmp/stale/.report.md.tmp-$dead-AbC123" ]] && ok "a dead writer's temporary file is removed" \
	|| fail "stale temporary file left: $(ls -a "$tmp/stale")"
[[ -e "$tmp/stale/.summary.json.tmp-$$-XyZ789" ]] && ok "a live writer's temporary file is kept" \
	|| fail "a live writer's temporary file was removed"

echo "== a run recorded twice (a file appended to itself) counts once"
mkdir "$tmp/twice"
cat "$tmp/base/results.jsonl" "$tmp/base/results.jsonl" >"$tmp/twice/results.jsonl"
trun report "$tmp/twice" -q
[[ $rc -eq 0 ]] && grep -q "line 3: cell .* repeat 0 is recorded already (line 1)" "$tmp/err" \
	&& ok "the second record is named and left out" || fail "duplicates: exit $rc: $(cat "$tmp/err")"
python3 - "$tmp/twice/summary.json" <<'EOF' && ok "summary counts each run once" || fail "summary counts duplicates"
import json, sys
d = json.load(open(sys.argv[1]))
cells = d["cells"]
assert cells and all(c["runs_ok"] == 2 for c in cells), cells
EOF

echo "== --resume with other options than the recorded runs"
cp -r "$tmp/base" "$tmp/res"
trun sweep --workload spin --request-us 200us --duration 60ms --warmup 10ms --warmup-requests 1 -q --no-report \
	--strategy sequential --workers 1 --repeats 3 --out "$tmp/res" --resume
expect 2 "request-us" "--resume with another request size: refused naming it (exit 2)"
trun sweep --workload spin --request-us 100us --duration 90ms --warmup 10ms --warmup-requests 1 -q --no-report \
	--strategy sequential --workers 1 --repeats 3 --out "$tmp/res" --resume
expect 2 "\--duration 60ms" "--resume with another duration: refused naming it (exit 2)"
trun "${SPIN[@]}" --strategy sequential --workers 1 --repeats 3 --out "$tmp/res" --resume
expect 2 "\--repeats 2" "--resume with more repeats than recorded: refused naming them (exit 2)"
n=$(wc -l <"$tmp/res/results.jsonl")
[[ $n -eq 2 ]] && ok "nothing appended by a refused resume" || fail "refused resume appended: $n lines"
trun "${SPIN[@]}" --strategy sequential --workers 1 --repeats 2 --out "$tmp/res" --resume
[[ $rc -eq 0 && $(wc -l <"$tmp/res/results.jsonl") -eq 2 ]] && ok "--resume of a finished sweep with its own options: exit 0, nothing run again" \
	|| fail "same-option resume: exit $rc, $(wc -l <"$tmp/res/results.jsonl") lines: $(cat "$tmp/err")"
head -n 1 "$tmp/base/results.jsonl" >"$tmp/res/results.jsonl"
trun sweep --out "$tmp/res" --resume -q --no-report
[[ $rc -eq 0 && $(wc -l <"$tmp/res/results.jsonl") -eq 2 ]] && ok "--resume alone runs the missing repeat of the recorded sweep" \
	|| fail "bare resume: exit $rc, $(wc -l <"$tmp/res/results.jsonl") lines: $(cat "$tmp/err")"

finish "torture (files)"
