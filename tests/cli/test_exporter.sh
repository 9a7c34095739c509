#!/usr/bin/env bash
# End-to-end test of `gpushare exporter` without a GPU: the fake NVML of
# tests/helpers stands in for the driver, the fake MPS control program for a
# daemon with clients. Every exposition is linted with `promtool check
# metrics` (exit status 0 required). HTTP robustness: unknown path, wrong
# method, oversized request, a request with a body, a silent client that
# must not stall a concurrent scrape and is dropped after the 10 s
# connection timeout, a taken port, SIGTERM.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?set by ctest}" "${GPUSHARE_TEST_HELPERS:?set by ctest}"
H=$GPUSHARE_TEST_HELPERS
tmp=$(mktemp -d /tmp/gpushare-exporter-XXXXXX)
pids=()
exporter=
cleanup() {
	[[ -n $exporter ]] && kill "$exporter" 2>/dev/null || true
	kill_pids
	if [[ -n ${daemon_up:-} ]]; then
		fake_mps_quit "$tmp/pipe" "$tmp/log"
	fi
	if [[ -n ${run_daemon_up:-} ]]; then
		fake_mps_quit "$run/mps/pipe" "$run/mps/log"
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

if ! command -v promtool >/dev/null; then
	echo "FAIL: promtool not installed (Debian package prometheus, scripts/deps.txt)"
	exit 1
fi
lint() { promtool check metrics <"$1"; }
# No series written twice (promtool does not catch that).
no_duplicates() { [[ -z $(grep -v '^#' "$1" | sed 's/ [^ ]*$//' | sort | uniq -d) ]]; }

unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY GPUSHARE_MPS_CONTROL FAKE_NVML_NOT_SUPPORTED FAKE_NVML_INIT_ERROR
private_xdg

# ---- --once without a driver: exposition printed, exit 3 ----
set +e
GPUSHARE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 "$GPUSHARE" exporter --once >"$tmp/nodrv" 2>"$tmp/err"
rc=$?
set -e
check "no driver, --once: exit status 3 (got $rc)" test "$rc" -eq 3
check "no driver, --once: one line on stderr" test "$(wc -l <"$tmp/err")" -eq 1
check "no driver, --once: gpushare_nvidia_driver_up 0" grep -qx "gpushare_nvidia_driver_up 0" "$tmp/nodrv"
check "no driver, --once: promtool accepts it" lint "$tmp/nodrv"
check "no driver, --once: MPS pipe dirs reported down" grep -q "^gpushare_mps_daemon_up{pipe_dir=\"/tmp/nvidia-mps\"} 0$" "$tmp/nodrv"

# ---- options ----
set +e
"$GPUSHARE" exporter --bogus >/dev/null 2>"$tmp/err"; rc=$?
check "unknown option: exit 2 (got $rc)" test "$rc" -eq 2
"$GPUSHARE" exporter --listen 127.0.0.1:99999 >/dev/null 2>"$tmp/err"; rc=$?
check "bad --listen: exit 2, names the value (got $rc)" test "$rc" -eq 2 -a -n "$(grep -- "99999" "$tmp/err")"
"$GPUSHARE" exporter --pipe-dir relative >/dev/null 2>&1; rc=$?
check "relative --pipe-dir: exit 2 (got $rc)" test "$rc" -eq 2
set -e
"$GPUSHARE" exporter --help >"$tmp/help"
check "--help lists --listen, --once, the exit statuses" grep -q -- "--once" "$tmp/help"

# ---- the fake driver, an MPS daemon with two clients ----
export GPUSHARE_NVML_LIBRARY=$H/libfakenvml.so GPUSHARE_CUDA_LIBRARY=/nonexistent/libcuda.so.1
fake_gpu_processes
export GPUSHARE_MPS_CONTROL=$H/fake_mps_control
daemon_up=1
fake_mps_start "$tmp/pipe" "$tmp/log"
sleep 300 & c1=$!; pids+=("$c1")
sleep 300 & c2=$!; pids+=("$c2")
for c in "$c1" "$c2"; do
	echo "fake_attach $c" | CUDA_MPS_PIPE_DIRECTORY=$tmp/pipe "$H/fake_mps_control" >/dev/null
done
echo "set_default_active_thread_percentage 40" | CUDA_MPS_PIPE_DIRECTORY=$tmp/pipe "$H/fake_mps_control" >/dev/null
echo "set_default_device_pinned_mem_limit 0 4G" | CUDA_MPS_PIPE_DIRECTORY=$tmp/pipe "$H/fake_mps_control" >/dev/null

# A private daemon of a farm run, owned by $c1.
run=$tmp/xdg/gpushare/farm-Zz9Yx8
mkdir -p -m 700 "$tmp/xdg/gpushare" "$run"
echo "$c1 0" >"$run/owner"
run_daemon_up=1
fake_mps_start "$run/mps/pipe" "$run/mps/log"
rdaemon=$(cat "$run/mps/pipe/nvidia-cuda-mps-control.pid")
"$GPUSHARE" exporter --once --pipe-dir "$tmp/pipe" >"$tmp/once-private"
check "--once: the farm run's private daemon with its owner, bounded labels only (the pipe inside the run, the command name)" \
	grep -qx "gpushare_mps_private_daemon_info{run=\"farm\",pipe_dir=\"mps/pipe\",pid=\"$rdaemon\",owner_pid=\"$c1\",owner_alive=\"true\",owner_command=\"sleep\"} 1" "$tmp/once-private"
check "--once: no private daemon label holds the run's random directory or the owner's arguments" \
	bash -c "! grep '^gpushare_mps_private_daemon_info' '$tmp/once-private' | grep -e 'Zz9Yx8' -e 'sleep 300'"
check "--once with a private daemon: promtool accepts it" lint "$tmp/once-private"
fake_mps_quit "$run/mps/pipe" "$run/mps/log"
run_daemon_up=

"$GPUSHARE" exporter --once --pipe-dir "$tmp/pipe" >"$tmp/once"
check "--once: promtool accepts it" lint "$tmp/once"
check "--once: no series twice" no_duplicates "$tmp/once"
check "--once: driver up" grep -qx "gpushare_nvidia_driver_up 1" "$tmp/once"
check "--once: GPU utilization as a ratio" grep -q '^gpushare_gpu_utilization_ratio{gpu="1",uuid="GPU-5f0c1e2a-9b3d-4c7e-8a1f-2b3c4d5e6f70"} 0.87$' "$tmp/once"
check "--once: GPU memory total in bytes" grep -q "^gpushare_gpu_memory_total_bytes{gpu=\"1\",.*} $((81559 * 1048576))$" "$tmp/once"
check "--once: SM clock in hertz, power in watts, temperature" \
	bash -c "grep -q '^gpushare_gpu_sm_clock_hertz{gpu=\"1\",.*} 1755000000$' $tmp/once && grep -q '^gpushare_gpu_power_watts{gpu=\"1\",.*} 612.345$' $tmp/once && grep -q '^gpushare_gpu_temperature_celsius{gpu=\"1\",.*} 71$' $tmp/once && grep -q '^gpushare_gpu_power_limit_watts{gpu=\"1\",.*} 700$' $tmp/once && grep -q '^gpushare_gpu_clocks_event_reasons{gpu=\"1\",.*} 4$' $tmp/once"
check "--once: one 0/1 series per clocks-event reason (GPU 1: sw_power_cap 1, the 8 others 0)" \
	bash -c "grep -q '^gpushare_gpu_clocks_event_reason{gpu=\"1\",uuid=\"[^\"]*\",reason=\"sw_power_cap\"} 1$' $tmp/once &&
		test \$(grep -c '^gpushare_gpu_clocks_event_reason{gpu=\"1\",.*} 0$' $tmp/once) -eq 8 &&
		grep -q '^gpushare_gpu_clocks_event_reason{gpu=\"0\",uuid=\"[^\"]*\",reason=\"gpu_idle\"} 1$' $tmp/once"
check "--once: MIG instances with profile and memory" grep -q '^gpushare_mig_memory_total_bytes{gpu="0",mig_uuid="MIG-11aa22bb-33cc-44dd-55ee-66ff77008811",profile="1g.18gb",gpu_instance="9",compute_instance="0"} 17716740096$' "$tmp/once"
check "--once: MPS client process memory, kind mps-client" grep -q "^gpushare_process_gpu_memory_bytes{gpu=\"1\",uuid=\"[^\"]*\",pid=\"$client\",name=\"sleep\",kind=\"mps-client\",gpu_instance=\"\",slurm_job_id=\"4242\"} $((2 * 1073741824))$" "$tmp/once"
check "--once: a process outside Slurm: slurm_job_id empty" grep -q "pid=\"$plain\",.*,slurm_job_id=\"\"}" "$tmp/once"
check "--once: the MPS server process, kind mps-server" grep -q "pid=\"$server\",name=\"nvidia-cuda-mps\",kind=\"mps-server\"" "$tmp/once"
check "--once: process counts by kind" grep -q '^gpushare_gpu_processes{gpu="1",uuid="[^"]*",kind="mps-client"} 1$' "$tmp/once"
check "--once: MPS daemon up" grep -q "^gpushare_mps_daemon_up{pipe_dir=\"$tmp/pipe\"} 1$" "$tmp/once"
check "--once: MPS: one server, two clients" \
	bash -c "grep -q '^gpushare_mps_servers{pipe_dir=\"$tmp/pipe\"} 1$' $tmp/once && grep -q '^gpushare_mps_clients{pipe_dir=\"$tmp/pipe\"} 2$' $tmp/once"
check "--once: MPS client info names each client" \
	bash -c "grep -q 'gpushare_mps_client_info{.*,pid=\"$c1\",' $tmp/once && grep -q 'gpushare_mps_client_info{.*,pid=\"$c2\",' $tmp/once"
check "--once: MPS default thread percentage" grep -q "^gpushare_mps_default_active_thread_percent{pipe_dir=\"$tmp/pipe\"} 40$" "$tmp/once"
check "--once: MPS default memory limit in bytes" grep -q "^gpushare_mps_default_pinned_mem_limit_bytes{pipe_dir=\"$tmp/pipe\",device=\"0\"} 4294967296$" "$tmp/once"
check "--once: per-server thread percentage" grep -q "^gpushare_mps_server_active_thread_percent{pipe_dir=\"$tmp/pipe\",server_pid=\"[0-9]*\"} " "$tmp/once"
"$GPUSHARE" exporter --once --pipe-dir "$tmp/pipe" --no-processes >"$tmp/noproc"
check "--no-processes: no per-process series" bash -c "! grep -q gpushare_process_gpu_memory_bytes $tmp/noproc"

# ---- the server ----
# HTTP over python3 sockets: status line and headers of one request.
cat >"$tmp/http.py" <<'EOF'
import os, socket, sys, time
port, mode = int(sys.argv[1]), sys.argv[2]
# 5 s, times the machine's load (a scrape runs the MPS control program)
def req(data, timeout=5 * int(os.environ.get("TIME_FACTOR", "1"))):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(data)
    out = b""
    try:
        while True:
            b = s.recv(65536)
            if not b: break
            out += b
    except (ConnectionResetError, socket.timeout):
        pass
    s.close()
    return out
if mode == "get":
    sys.stdout.buffer.write(req(b"GET " + sys.argv[3].encode() + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))
elif mode == "post":
    sys.stdout.buffer.write(req(b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"))
elif mode == "body":
    sys.stdout.buffer.write(req(b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\nConnection: close\r\n\r\n" + b"x" * 100000))
elif mode == "bighead":
    # A 200 KiB header: far over the 32 KiB per-connection buffer.
    sys.stdout.buffer.write(req(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200000 + b"\r\n\r\n"))
elif mode == "silent":
    # Connect, send nothing; report how long until the server hangs up.
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(30)
    t = time.monotonic()
    try:
        s.recv(1)
    except (ConnectionResetError, socket.timeout):
        pass
    print(int((time.monotonic() - t) * 1000))
EOF
http() { TIME_FACTOR=$TIME_FACTOR python3 "$tmp/http.py" "$@"; }

"$GPUSHARE" exporter --listen 127.0.0.1:0 --pipe-dir "$tmp/pipe" 2>"$tmp/exporter.err" &
exporter=$!
served_port "$tmp/exporter.err"
check "server: says where it serves (port $port)" test -n "$port"

http "$port" silent >"$tmp/silent" &
silent=$!
pids+=("$silent")
sleep 0.3
start=$(date +%s%N)
http "$port" get /metrics >"$tmp/resp"
took=$((($(date +%s%N) - start) / 1000000))
check "server: a scrape beside a silent client answers 200" grep -q "^HTTP/1.1 200" "$tmp/resp"
check "server: ... within 3 s x $TIME_FACTOR (load) (took $took ms)" test "$took" -lt $((3000 * TIME_FACTOR))
check "server: Content-Type text/plain; version=0.0.4" grep -qi "^Content-Type: text/plain; version=0.0.4" "$tmp/resp"
sed '1,/^\r$/d' "$tmp/resp" >"$tmp/scraped"
check "server: promtool accepts the scraped exposition" lint "$tmp/scraped"
check "server: same families as --once" test "$(grep -c '^# TYPE' "$tmp/scraped")" -eq "$(grep -c '^# TYPE' "$tmp/once")"
http "$port" get /nope >"$tmp/resp"
check "server: unknown path: 404" grep -q "^HTTP/1.1 404" "$tmp/resp"
http "$port" get / >"$tmp/resp"
check "server: / is a landing page (200, HTML) that links /metrics" \
	bash -c "grep -q '^HTTP/1.1 200' '$tmp/resp' && grep -qi '^Content-Type: text/html' '$tmp/resp' && grep -q 'href=\"/metrics\"' '$tmp/resp'"
http "$port" post >"$tmp/resp"
check "server: POST: 405" grep -q "^HTTP/1.1 405" "$tmp/resp"
check "server: 405 says Allow: GET" grep -qi "^Allow: GET" "$tmp/resp"
http "$port" body >"$tmp/resp"
check "server: GET with a 100 kB body: 413" grep -q "^HTTP/1.1 413" "$tmp/resp"
http "$port" bighead >"$tmp/resp"
check "server: 200 KiB header: refused (4xx or closed), not served" bash -c "! grep -q '^HTTP/1.1 200' $tmp/resp && { ! test -s $tmp/resp || grep -q '^HTTP/1.1 4' $tmp/resp; }"
http "$port" get /metrics >"$tmp/resp"
check "server: still serving after the bad requests" grep -q "^HTTP/1.1 200" "$tmp/resp"
# Keep-alive (docs/metrics.md): three scrapes over one connection, as
# Prometheus scrapes; each line is the status, the Connection header and
# the client's local port (one port: one connection).
python3 - "$port" >"$tmp/keepalive" 2>&1 <<'PY' || true
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=60)
for i in range(3):
    c.request("GET", "/metrics")
    r = c.getresponse()
    r.read()
    print(r.status, r.getheader("Connection") or "-", c.sock.getsockname()[1] if c.sock else "closed")
PY
check "server: three scrapes on one kept-alive connection ($(tr '\n' ' ' <"$tmp/keepalive"))" \
	test "$(awk '$1 == 200 && $2 != "close" && $3 != "closed" { print $3 }' "$tmp/keepalive" | sort -u | wc -l) $(wc -l <"$tmp/keepalive")" = "1 3"

# A second exporter on the same port: one line, exit 13.
set +e
"$GPUSHARE" exporter --listen "127.0.0.1:$port" >/dev/null 2>"$tmp/err"
rc=$?
set -e
check "port taken: exit 13 (got $rc)" test "$rc" -eq 13
check "port taken: one line naming the address: $(head -1 "$tmp/err")" \
	bash -c "test \$(wc -l <$tmp/err) -eq 1 && grep -q '127.0.0.1:$port: Address already in use' $tmp/err"

# The silent client is dropped after the 10 s timeout.
wait "$silent" || true
dropped=$(cat "$tmp/silent")
check "server: silent client dropped at the 5 s request-head deadline ($dropped ms, expected 4500..9000)" \
	test "$dropped" -ge 4500 -a "$dropped" -le 9000

kill -TERM "$exporter"
start=$(date +%s)
set +e
wait "$exporter"
rc=$?
set -e
exporter=
check "SIGTERM: clean exit 0 (got $rc) within 5 s x $TIME_FACTOR (load)" test "$rc" -eq 0 -a $(($(date +%s) - start)) -le $((5 * TIME_FACTOR))
check "SIGTERM: says it stopped" grep -q "stopped by SIGTERM" "$tmp/exporter.err"

# Without a driver the server keeps running and says so.
GPUSHARE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 "$GPUSHARE" exporter --listen 127.0.0.1:0 \
	--pipe-dir "$tmp/pipe" 2>"$tmp/exporter2.err" &
exporter=$!
served_port "$tmp/exporter2.err"
http "$port" get /metrics >"$tmp/resp"
check "no driver, server: 200 with gpushare_nvidia_driver_up 0" \
	bash -c "grep -q '^HTTP/1.1 200' $tmp/resp && grep -q '^gpushare_nvidia_driver_up 0' $tmp/resp"
check "no driver, server: MPS still reported" grep -q "^gpushare_mps_clients{pipe_dir=\"$tmp/pipe\"} 2" "$tmp/resp"
kill -INT "$exporter"
set +e
wait "$exporter"
rc=$?
set -e
exporter=
check "SIGINT: clean exit 0 (got $rc)" test "$rc" -eq 0

finish
