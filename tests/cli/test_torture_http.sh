#!/usr/bin/env bash
# Torture, class "slow and idle HTTP clients": the exporter's /metrics must
# be served within a second while 100 idle connections and 10 connections
# trickling a header byte at a time are open, from one address (127.0.0.2)
# and from the scraper's own (127.0.0.1); a trickler is dropped once the
# header deadline passes however steadily it sends; a malformed --listen
# address is refused (exit 2) without a name lookup.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?}" "${GPUSHARE_TEST_HELPERS:?}"
tmp=$(mktemp -d /tmp/gpushare-torture-http.XXXXXX)
pids=()
exporter=
cleanup() {
	[[ -n $exporter ]] && kill "$exporter" 2>/dev/null || true
	kill_pids
	rm -rf "$tmp"
}
trap cleanup EXIT
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY GPUSHARE_MPS_CONTROL
private_xdg
export GPUSHARE_NVML_LIBRARY=$GPUSHARE_TEST_HELPERS/libfakenvml.so GPUSHARE_CUDA_LIBRARY=/nonexistent/libcuda.so.1

cat >"$tmp/hostile.py" <<'EOF'
# hostile.py PORT SRC IDLE TRICKLE SECONDS: open IDLE silent connections and
# TRICKLE connections sending one header byte every 0.2 s, from address SRC;
# keep them for SECONDS. Prints "open N" once they are open, and "dropped N
# FIRST LAST" (how many tricklers the server dropped, the first and last
# drop, each counted from that connection's own connect: on a loaded machine
# opening them all takes a while) once every trickler is dropped, or at the
# end.
import socket, sys, time
port, src, idle, trickle, secs = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
def conn():
    s = socket.socket()
    s.bind((src, 0))
    s.settimeout(2)
    try:
        s.connect(("127.0.0.1", port))
    except OSError:
        return None
    return s
idles = [conn() for _ in range(idle)]
trick, since = [], []
for _ in range(trickle):
    trick.append(conn())
    since.append(time.monotonic())
print("open", sum(1 for s in idles + trick if s), flush=True)
hdr = b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + b"X-Slow: " + b"a" * 100000
pos, dropped, when, t0 = 0, set(), [], time.monotonic()
opened = sum(1 for s in trick if s)
def say():
    print("dropped", len(dropped), "%.1f %.1f" % (min(when, default=0), max(when, default=0)), flush=True)
while time.monotonic() - t0 < secs:
    if opened and len(dropped) == opened:
        say()
        time.sleep(max(0, secs - (time.monotonic() - t0)))
        sys.exit(0)
    for i, s in enumerate(trick):
        if s is None or i in dropped:
            continue
        try:
            s.send(hdr[pos:pos + 1])
        except OSError:
            dropped.add(i)
            when.append(time.monotonic() - since[i])
    pos += 1
    time.sleep(0.2)
say()
EOF

# A scrape from 127.0.0.1: prints the HTTP status and the seconds it took.
scrape() {
	curl -s -o /dev/null --max-time 10 -w '%{http_code} %{time_total}\n' "http://127.0.0.1:$1/metrics" || echo "000 10"
}

"$GPUSHARE" exporter --listen 127.0.0.1:0 2>"$tmp/exporter.err" &
exporter=$!
served_port "$tmp/exporter.err"
check "exporter serves (port $port)" test -n "$port"

echo "== 100 idle + 10 trickling connections from another address"
# The hostile connections stay open until the second scrape is done (16 s
# at most); the scrapes wait for their events: all open, all tricklers
# dropped (or the 16 s out).
python3 "$tmp/hostile.py" "$port" 127.0.0.2 100 10 16 >"$tmp/h1" &
hostile=$!
pids+=("$hostile")
wait_for 200 0.05 grep -q '^open' "$tmp/h1" || true
read -r code took < <(scrape "$port")
echo "   scrape: $code in ${took}s ($(head -n 1 "$tmp/h1"))"
check "a scrape is served within 1 s beside 110 hostile connections" \
	python3 -c "import sys; sys.exit(0 if '$code' == '200' and float('$took') < $TIME_FACTOR else 1)"
wait_for 200 0.1 grep -q '^dropped' "$tmp/h1" || true
read -r code took < <(scrape "$port")
check "and still after the header deadline passed (${took}s)" \
	python3 -c "import sys; sys.exit(0 if '$code' == '200' and float('$took') < $TIME_FACTOR else 1)"
kill "$hostile" 2>/dev/null || true
wait "$hostile" || true
read -r n_dropped first last < <(sed -n 's/^dropped //p' "$tmp/h1")
# Sending steadily, each one is dropped once its head is 5 s old (the send
# that notices comes a little later, later still on a loaded machine).
check "tricklers are dropped at the 5 s header deadline (${n_dropped:-0} of 10, after ${first:-?} to ${last:-?} s)" \
	python3 -c "import sys; sys.exit(0 if '${n_dropped:-0}' == '10' and 4.5 <= float('${first:-0}') and float('${last:-0}') <= 5 + 3 * $TIME_FACTOR else 1)"

echo "== the same from the scraper's own address"
python3 "$tmp/hostile.py" "$port" 127.0.0.1 100 10 4 >"$tmp/h2" &
hostile=$!
pids+=("$hostile")
wait_for 200 0.05 grep -q '^open' "$tmp/h2" || true
read -r code took < <(scrape "$port")
echo "   scrape: $code in ${took}s ($(head -n 1 "$tmp/h2"))"
check "a scrape from the same address is served within 1 s" \
	python3 -c "import sys; sys.exit(0 if '$code' == '200' and float('$took') < $TIME_FACTOR else 1)"
kill "$hostile" 2>/dev/null || true
wait "$hostile" || true
kill "$exporter" 2>/dev/null || true
wait "$exporter" 2>/dev/null || true
exporter=

echo "== malformed --listen: exit 2, no name lookup"
for bad in "not an address:9100" "999.1.1.1:9100" "[::1:9100" "127.0.0.1:" ":9100x"; do
	set +e
	if command -v strace >/dev/null; then
		ASAN_OPTIONS=detect_leaks=0 timeout 10 strace -f -e trace=connect -o "$tmp/strace" \
			"$GPUSHARE" exporter --listen "$bad" >/dev/null 2>"$tmp/err"
	else
		: >"$tmp/strace"
		timeout 10 "$GPUSHARE" exporter --listen "$bad" >/dev/null 2>"$tmp/err"
	fi
	rc=$?
	set -e
	[[ $rc -eq 2 ]] && ok "--listen '$bad': exit 2" || fail "--listen '$bad': exit $rc: $(cat "$tmp/err")"
	if grep -q "sin_port=htons(53)\|/run/systemd/resolve\|nscd" "$tmp/strace"; then
		fail "--listen '$bad' made a name lookup"
	fi
done

finish "torture (http)"
