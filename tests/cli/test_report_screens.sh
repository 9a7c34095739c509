#!/usr/bin/env bash
# Screenshots of what people look at, taken with headless Chromium:
#  1. the sweep report (report.html) of a spin sweep with three strategies:
#     every figure's image loads in the browser (a check page on a loopback
#     HTTP server inspects the report in an iframe), the page and its
#     figures are not blank, the latency percentiles of several strategies
#     are drawn as small multiples (one panel per strategy) and the latency
#     tail is a log-log CCDF;
#  2. the Grafana dashboard (grafana/gpushare-dashboard.json), previewed
#     without Grafana: a private Prometheus scrapes the exporter (fake NVML,
#     fake MPS daemon), a bench and a farm with --metrics-listen; every
#     panel's PromQL expression ($instance, $strategy set to all,
#     $__rate_interval to 15s) must return data through the HTTP API, and
#     Prometheus's own graph page is screenshot for a few panels.
# Screenshots stay in the test's directory; GPUSHARE_SCREENSHOT_DIR=DIR
# copies them there to be looked at. Nothing reaches the network: Chromium
# resolves no name but loopback.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?set by ctest}" "${GPUSHARE_WORKER:?set by ctest}" "${GPUSHARE_TEST_HELPERS:?set by ctest}"
H=$GPUSHARE_TEST_HELPERS
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [[ -z $CHROMIUM ]]; then
	missing_tool "chromium (Debian package chromium)"
	finish "report screens"
	exit 0
fi
if ! command -v prometheus >/dev/null; then
	missing_tool "prometheus (Debian package prometheus)"
	finish "report screens"
	exit 0
fi

tmp=$(mktemp -d /tmp/gpushare-screens-XXXXXX)
pids=()
chrome_pid=
daemon_up=
cleanup() {
	local p
	[[ -n $chrome_pid ]] && kill -KILL -- "-$chrome_pid" 2>/dev/null
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	# A process that does not stop within 10 s is killed.
	for _ in $(seq 1 20); do
		local alive=
		for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
		[[ -z $alive ]] && break
		sleep 0.5
	done
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	[[ -n $daemon_up ]] && fake_mps_quit "$tmp/pipe" "$tmp/log"
	if [[ -n ${GPUSHARE_SCREENSHOT_DIR:-} ]] && compgen -G "$tmp/shots/*.png" >/dev/null; then
		mkdir -p "$GPUSHARE_SCREENSHOT_DIR" && cp "$tmp"/shots/*.png "$GPUSHARE_SCREENSHOT_DIR"/ &&
			echo "screenshots copied to $GPUSHARE_SCREENSHOT_DIR"
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
# A stop by a signal exits through the cleanup too.
trap 'exit 130' INT
trap 'exit 143' TERM
mkdir -p "$tmp/shots" "$tmp/www"
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY GPUSHARE_MPS_CONTROL FAKE_NVML_NOT_SUPPORTED FAKE_NVML_INIT_ERROR
private_xdg
ln -s "$GPUSHARE_WORKER" "$tmp/gpushare-worker"
export GPUSHARE_WORKER=$tmp/gpushare-worker

# chrome ARGS...: headless Chromium in a process group of its own (it
# starts helpers), with a private profile, no name resolved but loopback,
# stopped as a group after a generous bound.
chrome() {
	local t=0 rc=0
	setsid "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --disable-extensions \
		--disable-background-networking --disable-sync --disable-component-update --mute-audio \
		--host-resolver-rules="MAP * ~NOTFOUND, EXCLUDE 127.0.0.1" --hide-scrollbars \
		--user-data-dir="$tmp/chrome-profile" "$@" 2>>"$tmp/chrome.err" &
	chrome_pid=$!
	while kill -0 "$chrome_pid" 2>/dev/null; do
		if ((t++ > 240 * TIME_FACTOR)); then
			echo "chromium ran past $((120 * TIME_FACTOR)) s: stopped"
			kill -KILL -- "-$chrome_pid" 2>/dev/null
			break
		fi
		sleep 0.5
	done
	wait "$chrome_pid" || rc=$?
	kill -KILL -- "-$chrome_pid" 2>/dev/null || true
	chrome_pid=
	return "$rc"
}

# shot NAME URL WIDTH HEIGHT [extra args]: a screenshot into $tmp/shots.
shot() {
	local name=$1 url=$2 w=$3 h=$4
	shift 4
	chrome --window-size="$w,$h" --screenshot="$tmp/shots/$name.png" "$@" "$url" >/dev/null
}

# PNG statistics in pure Python (zlib; no imaging library needed): size,
# the share of pixels that are not white and how many are strongly
# coloured (a plot's lines and markers, not grey text and grids), both
# counted on every other pixel of every other row.
cat >"$tmp/png.py" <<'EOF'
import struct, sys, zlib
def load(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    assert depth == 8 and ctype in (2, 6), "8-bit RGB(A) only"
    bpp = 3 if ctype == 2 else 4
    raw, stride, prev, rows, o = zlib.decompress(idat), w * bpp, bytearray(w * bpp), [], 0
    for _ in range(h):
        f, line = raw[o], bytearray(raw[o + 1:o + 1 + stride]); o += 1 + stride
        if f == 1:
            for i in range(bpp, stride): line[i] = (line[i] + line[i - bpp]) & 255
        elif f == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif f == 3:
            for i in range(stride): line[i] = (line[i] + ((line[i - bpp] if i >= bpp else 0) + prev[i]) // 2) & 255
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0; b = prev[i]; c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line); prev = line
    return w, h, bpp, rows
w, h, bpp, rows = load(sys.argv[1])
nonwhite = coloured = 0
for line in rows[::2]:
    for x in range(0, w * bpp, 2 * bpp):
        r, g, b = line[x], line[x + 1], line[x + 2]
        if r < 235 or g < 235 or b < 235: nonwhite += 1
        if max(r, g, b) - min(r, g, b) > 70: coloured += 1
n = ((h + 1) // 2) * ((w + 1) // 2)
print("%d %d %.4f %d" % (w, h, nonwhite / n, coloured))
EOF
# not_blank NAME MIN_NONWHITE MIN_COLOURED: the screenshot has content.
not_blank() {
	local s w h frac col
	s=$(python3 "$tmp/png.py" "$tmp/shots/$1.png") || { fail "$1.png: cannot decode"; return; }
	read -r w h frac col <<<"$s"
	check "$1.png (${w}x$h): ${frac} of it not white (>= $2), $col strongly coloured sampled pixels (>= $3)" \
		python3 -c "import sys; sys.exit(0 if $frac >= $2 and $col >= $3 else 1)"
}

# Loopback HTTP for the pages (the check page reads the report in an
# iframe, which the browser allows only from the same origin).
port=$(free_port)
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$tmp/www" >"$tmp/http.log" 2>&1 &
pids+=($!)
wait_for 50 0.1 python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null ||
	fail "the loopback HTTP server did not start"

echo "== the sweep report in Chromium"
export GPUSHARE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1
run sweep --out "$tmp/www/sw" --workload spin:request-us=200 --strategy timeslice,sequential,streams --workers 1,3 \
	--batch 1,2 --repeats 2 --duration 100ms --warmup 0 -q
check "sweep of three strategies: exit 0 (got $rc: $(head -c 300 "$tmp/err"))" test "$rc" -eq 0
figs=$(find "$tmp/www/sw/plots" -name '*.png' | wc -l)
check "the report has figures ($figs)" test "$figs" -ge 8
check "latency percentiles of three strategies: small multiples (panel titles in the SVG)" \
	bash -c "grep -q 'font-weight=\"bold\"[^>]*>streams</text>' '$tmp/www/sw/plots/shape1-batch1-latency-vs-workers.svg' &&
		grep -q '>p99.9</text>' '$tmp/www/sw/plots/shape1-batch1-latency-vs-workers.svg'"
check "the latency tail is a CCDF on log axes" grep -q 'latency tail (CCDF)' "$tmp/www/sw/plots/shape1-batch1-cdf-w3.svg"
cat >"$tmp/www/check.html" <<'EOF'
<!DOCTYPE html>
<html><body><pre id="result">pending</pre>
<iframe id="f" src="sw/report.html" width="1000" height="800"></iframe>
<script>
document.getElementById("f").addEventListener("load", function () {
  var d = this.contentDocument, imgs = d.images, ok = 0, bad = [];
  for (var i = 0; i < imgs.length; i++) {
    if (imgs[i].complete && imgs[i].naturalWidth > 0 && imgs[i].naturalHeight > 0) ok++;
    else bad.push(imgs[i].alt);
  }
  document.getElementById("result").textContent = "images " + ok + " of " + imgs.length + " loaded; broken: [" +
    bad.join(",") + "]; figures " + d.querySelectorAll("figure[id]").length + "; tables " +
    d.querySelectorAll("table").length + "; title " + d.title;
});
</script></body></html>
EOF
chrome --dump-dom --virtual-time-budget=10000 "http://127.0.0.1:$port/check.html" >"$tmp/dom.html" || true
result=$(sed -n 's/.*<pre id="result">\([^<]*\)<.*/\1/p' "$tmp/dom.html")
echo "check page: $result"
check "every figure's image loads in Chromium ($result)" \
	grep -q "images $figs of $figs loaded; broken: \[\]; figures $figs; tables [1-9]" <<<"$result"

# A figure of the report on screen: view.html#NAME shows the report in a
# frame scrolled to the figure (headless Chromium ignores a URL's fragment).
cat >"$tmp/www/view.html" <<'EOF'
<!DOCTYPE html>
<html><head><style>html,body{margin:0;height:100%;overflow:hidden}iframe{border:0;width:100%;height:100%}</style></head>
<body><iframe id="f" src="sw/report.html"></iframe>
<script>
document.getElementById("f").addEventListener("load", function () {
  var el = this.contentDocument.getElementById(location.hash.slice(1));
  if (el) this.contentWindow.scrollTo(0, el.getBoundingClientRect().top + this.contentWindow.scrollY - 8);
});
</script></body></html>
EOF
shot report-top "http://127.0.0.1:$port/sw/report.html" 1000 1300
not_blank report-top 0.05 0
shot report-latency-panels "http://127.0.0.1:$port/view.html#shape1-batch1-latency-vs-workers" 1000 900 \
	--virtual-time-budget=5000
not_blank report-latency-panels 0.04 300
shot report-tail-ccdf "http://127.0.0.1:$port/view.html#shape1-batch1-cdf-w3" 1000 900 --virtual-time-budget=5000
not_blank report-tail-ccdf 0.04 200
check "the two figure screenshots differ" bash -c \
	"! cmp -s '$tmp/shots/report-latency-panels.png' '$tmp/shots/report-tail-ccdf.png'"

echo "== the Grafana dashboard's panels, through a private Prometheus"
export GPUSHARE_NVML_LIBRARY=$H/libfakenvml.so GPUSHARE_CUDA_LIBRARY=/nonexistent/libcuda.so.1
export GPUSHARE_MPS_CONTROL=$H/fake_mps_control
daemon_up=1
fake_mps_start "$tmp/pipe" "$tmp/log"
fake_gpu_processes
sleep 600 & c1=$!; pids+=("$c1")
echo "fake_attach $c1" | CUDA_MPS_PIPE_DIRECTORY=$tmp/pipe "$H/fake_mps_control" >/dev/null
pe=$(free_port) pb=$(free_port) pf=$(free_port) pp=$(free_port)
# The exporter has a runtime directory of its own: the bench's and the
# farm's run directories (no MPS daemon in them) would make each of its
# scrapes ask the fake control program about daemons that are not there.
mkdir -m 700 "$tmp/xdg-exporter"
XDG_RUNTIME_DIR=$tmp/xdg-exporter "$GPUSHARE" exporter --listen "127.0.0.1:$pe" --pipe-dir "$tmp/pipe" \
	>"$tmp/exporter.log" 2>&1 &
pids+=($!)
# A bench and a farm that outlast the checks (stopped by the cleanup).
GPUSHARE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 "$GPUSHARE" bench --workload spin --request-us 500us \
	--strategy timeslice --workers 2 --duration 600s --warmup 0 --metrics-listen "127.0.0.1:$pb" -q \
	>"$tmp/bench.log" 2>&1 &
pids+=($!)
# The farm's first job is an accounted client (the stand-in CUPTI: kernels
# 10% of the time, promised 1/3 as one of 3 time-sliced slots: held under
# its promise on a GPU with room), for the dashboard's client panels.
{
	echo "$H/account_driver 900" # not 600: test_account looks for its own probes by that
	for i in $(seq 1 3000); do echo "sleep 0.$((i % 5 + 3))"; done
	echo "false"
} >"$tmp/jobs"
GPUSHARE_ACCOUNT_DIR=$tmp/account GPUSHARE_CUPTI_LIBRARY=$H/libfakecupti.so FAKE_CUPTI_KERNELS=0:100:900 \
	GPUSHARE_ACCOUNT_PERIOD_MS=200 GPUSHARE_ACCOUNT_DUTY=0.5 \
	"$GPUSHARE" farm --dir "$tmp/farm" --strategy timeslice --slots 3 --account --metrics-listen "127.0.0.1:$pf" -q \
	"$tmp/jobs" >"$tmp/farm.log" 2>&1 &
pids+=($!)
cat >"$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: gpushare
    static_configs:
      - targets: ['127.0.0.1:$pb', '127.0.0.1:$pf']
  # One collection of the exporter asks the fake MPS control program
  # several times: 15 s on a loaded 2-CPU machine. Scraped more often, its
  # requests pile up.
  - job_name: gpushare-exporter
    scrape_interval: 30s
    scrape_timeout: 29s
    static_configs:
      - targets: ['127.0.0.1:$pe']
EOF
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/prom-data" \
	--web.listen-address="127.0.0.1:$pp" >"$tmp/prometheus.log" 2>&1 &
pids+=($!)

# Every panel's expressions, variables set as Grafana's "All" would.
python3 - "$SRC/grafana/gpushare-dashboard.json" >"$tmp/exprs" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
def walk(panels):
    for p in panels:
        if p.get("type") == "row":
            walk(p.get("panels", []))
        for t in p.get("targets", []):
            e = t["expr"].replace("$__rate_interval", "15s").replace('"$instance"', '".*"').replace('"$strategy"', '".*"')
            print("%s\t%s\t%s" % (p["id"], p["title"], e))
walk(d["panels"])
EOF
check "the dashboard has panels with expressions ($(wc -l <"$tmp/exprs"))" test "$(wc -l <"$tmp/exprs")" -ge 15
# Polls every expression through the HTTP API until each returns data or
# the deadline passes (rates need two scrapes of each target, the farm's
# failed job must have ended, the first samples take about 6 s); then one
# line per expression: the number of series (-1: no answer).
cat >"$tmp/query.py" <<'EOF'
import json, sys, time, urllib.parse, urllib.request
port, deadline = sys.argv[1], time.time() + float(sys.argv[3])
exprs = [l.rstrip("\n").split("\t") for l in open(sys.argv[2]) if l.strip()]
def series(expr):
    u = "http://127.0.0.1:%s/api/v1/query?%s" % (port, urllib.parse.urlencode({"query": expr}))
    try:
        d = json.load(urllib.request.urlopen(u, timeout=10))
        return len(d["data"]["result"]) if d.get("status") == "success" else -1
    except Exception:
        return -1
while True:
    counts = [series(e[2]) for e in exprs]
    if all(n > 0 for n in counts) or time.time() > deadline:
        break
    time.sleep(1)
for e, n in zip(exprs, counts):
    print("%s\t%s\t%d\t%s" % (e[0], e[1], n, e[2]))
EOF
python3 "$tmp/query.py" "$pp" "$tmp/exprs" $((60 * TIME_FACTOR)) >"$tmp/counts"
while IFS=$'\t' read -r id title n expr; do
	check "panel $id ($title): $expr: $n series" test "$n" -gt 0
done <"$tmp/counts"

# Prometheus's graph page for a few panels, the last two minutes.
graph() { # graph NAME EXPR
	local q
	q=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$2")
	shot "$1" "http://127.0.0.1:$pp/graph?g0.expr=$q&g0.tab=0&g0.range_input=2m" 1200 800 \
		--virtual-time-budget=15000
	not_blank "$1" 0.03 300
}
graph dashboard-p99-per-strategy "$(awk -F'\t' '$1 == 2 { print $3; exit }' "$tmp/exprs")"
graph dashboard-gpu-utilization "$(awk -F'\t' '$1 == 6 { print $3; exit }' "$tmp/exprs")"
graph dashboard-farm-jobs "$(awk -F'\t' '$1 == 12 { print $3; exit }' "$tmp/exprs")"

finish "report screens"
