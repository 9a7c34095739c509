#!/usr/bin/env bash
# End-to-end test of `gpushare info` without a GPU: the fake NVML and libcuda
# of tests/helpers stand in for the driver (GPUSHARE_NVML_LIBRARY,
# GPUSHARE_CUDA_LIBRARY), sleeping processes play the GPU's compute
# processes, and the fake MPS control program plays a daemon.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?set by ctest}" "${GPUSHARE_TEST_HELPERS:?set by ctest}"
H=$GPUSHARE_TEST_HELPERS
tmp=$(mktemp -d /tmp/gpushare-info-XXXXXX)
pids=()
cleanup() {
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

# Keep the environment of the machine running the test out of the way.
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY GPUSHARE_MPS_CONTROL FAKE_NVML_NOT_SUPPORTED \
	FAKE_NVML_INIT_ERROR FAKE_CUDA_HANG FAKE_CUDA_INIT_ERROR FAKE_CUDA_RECORD
private_xdg

# ---- no driver ----
set +e
GPUSHARE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 "$GPUSHARE" info >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
want="gpushare: no NVIDIA driver found: /nonexistent/libnvidia-ml.so.1: cannot open shared object file: No such file or directory"
check "no driver: exit status 3 (got $rc)" test "$rc" -eq 3
check "no driver: exactly one line on stderr: '$want'" test "$(cat "$tmp/err")" = "$want"
check "no driver: nothing on stdout" test ! -s "$tmp/out"
set +e
GPUSHARE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 "$GPUSHARE" info --json >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
check "no driver with --json: exit status 3, same message" test "$rc" -eq 3 -a "$(cat "$tmp/err")" = "$want"

# ---- options ----
set +e
"$GPUSHARE" info --bogus >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
check "unknown option: exit status 2 (got $rc)" test "$rc" -eq 2
check "unknown option: one line naming it" test "$(wc -l <"$tmp/err")" -eq 1 -a -n "$(grep -- "--bogus" "$tmp/err")"
set +e
"$GPUSHARE" info surplus >/dev/null 2>&1
rc=$?
set -e
check "unexpected argument: exit status 2 (got $rc)" test "$rc" -eq 2
"$GPUSHARE" info --help >"$tmp/help"
check "--help: lists --json and --help" grep -q -- "--json" "$tmp/help"
check "--help: lists the exit statuses" grep -qE "^  3 +no NVIDIA driver" "$tmp/help"
"$GPUSHARE" help info >"$tmp/help2"
check "gpushare help info: same text" cmp -s "$tmp/help" "$tmp/help2"

# ---- the fake driver ----
export GPUSHARE_NVML_LIBRARY=$H/libfakenvml.so GPUSHARE_CUDA_LIBRARY=$H/libfakecuda.so
fake_gpu_processes
# Until they run their commands, the three are copies of this shell.
ran() { grep -q "sleep" "/proc/$plain/cmdline" && grep -q nvidia-cuda-mps-server "/proc/$server/cmdline" &&
	grep -q "sleep" "/proc/$client/cmdline"; }
wait_for 100 0.1 ran

# A stale pid file at $CUDA_MPS_PIPE_DIRECTORY: its process is gone.
mkdir -m 700 "$tmp/stale"
true & dead=$!
wait "$dead"
echo "$dead" >"$tmp/stale/nvidia-cuda-mps-control.pid"

CUDA_MPS_PIPE_DIRECTORY=$tmp/stale "$GPUSHARE" info >"$tmp/report"
check "report: driver line" grep -q "^driver 580.159.04, CUDA 13.0, NVML 13.580.159.04$" "$tmp/report"
check "report: both GPUs" grep -q "^GPU 1: NVIDIA H100 80GB HBM3$" "$tmp/report"
check "report: MIG devices with profiles" grep -q "1g.18gb" "$tmp/report"
check "report: SM count from libcuda" grep -q "SMs *132$" "$tmp/report"
me=$(id -un)
check "report: the processes' columns name the user and the command" grep -Eq "^ +PID +KIND +USER +MEMORY +COMMAND$" "$tmp/report"
check "report: the MPS server process, its user and command line ($(grep -E "^ +$server " "$tmp/report"))" \
	grep -Eq "^ +$server +mps-server +$me +64.0 MiB +$tmp/bin/nvidia-cuda-mps-server 300$" "$tmp/report"
check "report: the MPS client process" grep -Eq "^ +$client +mps-client +$me +2.0 GiB +sleep 300$" "$tmp/report"
check "report: the plain process" grep -Eq "^ +$plain +plain +$me +1.0 GiB +sleep 300$" "$tmp/report"
check "report: stale pid file at \$CUDA_MPS_PIPE_DIRECTORY" grep -q "^  $tmp/stale (env): stale pid file (pid $dead gone)$" "$tmp/report"
check "report: gpushare's private pipe dir, no daemon" grep -q "^  $tmp/xdg/gpushare/mps/pipe (gpushare): none$" "$tmp/report"

CUDA_MPS_PIPE_DIRECTORY=$tmp/stale "$GPUSHARE" info --json >"$tmp/info.json"
check "--json: one valid JSON document" python3 -m json.tool "$tmp/info.json" /dev/null
check_json() { # check_json <description> <python expression on j>
	check "--json: $1" python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
plain, server, client, dead, tmp = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), sys.argv[7]
def gpu(i): return j["gpus"][i]
def proc(pid): return [p for p in gpu(1)["processes"] if p["pid"] == pid][0]
def mps(d): return [m for m in j["mps"] if m["pipe_dir"] == d][0]
ok = eval(sys.argv[2])
if not ok: print("  expression was false:", sys.argv[2], file=sys.stderr)
sys.exit(0 if ok else 1)' "$tmp/info.json" "$2" "$plain" "$server" "$client" "$dead" "$tmp"
}
check_json "versions" 'j["driver_version"] == "580.159.04" and j["cuda_driver_version"] == 13000 and j["nvml_version"] == "13.580.159.04"'
check_json "libcuda answered" 'j["sm_count_error"] is None'
check_json "two GPUs with index, name, UUID, PCI bus id" '[(g["index"], g["name"], g["uuid"], g["pci_bus_id"]) for g in j["gpus"]] == [(0, "NVIDIA H200", "GPU-8e4a3c1d-1f2b-4c5d-9e6f-0a1b2c3d4e5f", "00000000:19:00.0"), (1, "NVIDIA H100 80GB HBM3", "GPU-5f0c1e2a-9b3d-4c7e-8a1f-2b3c4d5e6f70", "00000000:3B:00.0")]'
check_json "memory in bytes" 'gpu(1)["mem_total_bytes"] == 81559 * 2**20 and gpu(1)["mem_used_bytes"] == 3584 * 2**20 and gpu(1)["mem_free_bytes"] == (81559 - 3584) * 2**20'
check_json "SM counts: libcuda for GPU 1, unknown (null) for the MIG GPU" 'gpu(1)["sm_count"] == 132 and gpu(0)["sm_count"] is None'
check_json "compute modes" 'gpu(0)["compute_mode"] == "Default" and gpu(1)["compute_mode"] == "Exclusive_Process"'
check_json "MIG modes and persistence" 'gpu(0)["mig_enabled"] is True and gpu(0)["mig_pending_enabled"] is True and gpu(1)["mig_enabled"] is False and gpu(0)["persistence_mode"] is True and gpu(1)["persistence_mode"] is False'
check_json "NOT_SUPPORTED utilization is null" 'gpu(0)["utilization_gpu_percent"] is None and gpu(0)["utilization_mem_percent"] is None and gpu(1)["utilization_gpu_percent"] == 87'
check_json "clocks, power in watts, temperature" 'gpu(1)["clock_sm_mhz"] == 1755 and gpu(1)["clock_sm_max_mhz"] == 1980 and gpu(1)["clock_mem_mhz"] == 2619 and abs(gpu(1)["power_watts"] - 612.345) < 1e-9 and gpu(1)["temperature_celsius"] == 71'
check_json "MIG devices" '[(m["index"], m["profile"], m["gpu_instance_id"], m["compute_instance_id"], m["sm_count"], m["mem_total_bytes"]) for m in gpu(0)["mig_devices"]] == [(0, "1g.18gb", 9, 0, 16, 16896 * 2**20), (2, "3g.71gb", 2, 0, 60, 71 * 2**30)] and gpu(0)["mig_devices"][0]["uuid"] == "MIG-11aa22bb-33cc-44dd-55ee-66ff77008811"'
check_json "processes classified" 'len(gpu(1)["processes"]) == 3 and proc(plain)["kind"] == "plain" and proc(server)["kind"] == "mps-server" and proc(client)["kind"] == "mps-client"'
check_json "process names and memory" 'proc(server)["name"] == "nvidia-cuda-mps" and proc(plain)["name"] == "sleep" and proc(client)["mem_used_bytes"] == 2 * 2**30 and proc(plain)["gpu_instance_id"] is None'
check_json "processes' user and command line" 'proc(plain)["user"] == "'"$(id -un)"'" and proc(plain)["command"] == "sleep 300" and proc(server)["command"].endswith("/nvidia-cuda-mps-server 300")'
check_json "no processes on the MIG GPU" 'gpu(0)["processes"] == []'
check_json "MPS: stale pid file at the env pipe dir" 'mps(tmp + "/stale")["state"] == "stale" and mps(tmp + "/stale")["pid"] == dead and mps(tmp + "/stale")["sources"] == ["env"] and mps(tmp + "/stale")["answers"] is None'
check_json "MPS: private and default pipe dirs listed" 'mps(tmp + "/xdg/gpushare/mps/pipe")["state"] == "absent" and mps(tmp + "/xdg/gpushare/mps/pipe")["sources"] == ["gpushare"] and mps("/tmp/nvidia-mps")["sources"] == ["default"]'

# NOT_SUPPORTED everywhere it can be: nulls, not a failure.
FAKE_NVML_NOT_SUPPORTED=nvmlDeviceGetPowerUsage,nvmlDeviceGetTemperature,nvmlDeviceGetMigMode \
	"$GPUSHARE" info --json >"$tmp/info.json"
check_json "NOT_SUPPORTED power, temperature, MIG mode are null" 'all(g["power_watts"] is None and g["temperature_celsius"] is None and g["mig_enabled"] is None for g in j["gpus"])'
FAKE_NVML_NOT_SUPPORTED=nvmlDeviceGetPowerUsage "$GPUSHARE" info >"$tmp/report"
check "report: NOT_SUPPORTED power shows as unknown" grep -q "power          unknown" "$tmp/report"

# Without libcuda, SM counts are unknown, and that is no error.
GPUSHARE_CUDA_LIBRARY=/nonexistent/libcuda.so.1 "$GPUSHARE" info --json >"$tmp/info.json"
check_json "no libcuda: sm_count null, reason given" 'gpu(1)["sm_count"] is None and "libcuda.so.1" in j["sm_count_error"]'

# A daemon that answers (the fake MPS control program).
if [[ -x $H/fake_mps_control ]]; then
	daemon_up=1
	fake_mps_start "$tmp/pipe" "$tmp/log"
	daemon=$(cat "$tmp/pipe/nvidia-cuda-mps-control.pid")
	CUDA_MPS_PIPE_DIRECTORY=$tmp/pipe CUDA_MPS_LOG_DIRECTORY=$tmp/log GPUSHARE_MPS_CONTROL=$H/fake_mps_control \
		"$GPUSHARE" info --json >"$tmp/info.json"
	check_json "MPS: running daemon at the env pipe dir answers" "mps(tmp + '/pipe')['state'] == 'running' and mps(tmp + '/pipe')['pid'] == $daemon and mps(tmp + '/pipe')['answers'] is True"
	CUDA_MPS_PIPE_DIRECTORY=$tmp/pipe CUDA_MPS_LOG_DIRECTORY=$tmp/log GPUSHARE_MPS_CONTROL=$H/fake_mps_control \
		"$GPUSHARE" info >"$tmp/report"
	check "report: running daemon answers" grep -q "^  $tmp/pipe (env): running, pid $daemon, answers$" "$tmp/report"

	# A private daemon of a bench run, with its owner (a sleeping process
	# playing the bench): listed with the owner's pid and command.
	run=$tmp/xdg/gpushare/bench-Ab12Cd
	mkdir -p -m 700 "$tmp/xdg/gpushare" "$run"
	sleep 300 & owner=$!; pids+=("$owner")
	echo "$owner 0" >"$run/owner"
	run_daemon_up=1
	fake_mps_start "$run/mps/pipe" "$run/mps/log"
	rdaemon=$(cat "$run/mps/pipe/nvidia-cuda-mps-control.pid")
	export GPUSHARE_MPS_CONTROL=$H/fake_mps_control
	"$GPUSHARE" info --json >"$tmp/info.json"
	check_json "private daemon of a bench run listed with its owner" "[(p['run'], p['pid'], p['owner_pid'], p['owner_alive'], p['owner_command'], p['pipe_dir']) for p in j['private_mps']] == [('bench', $rdaemon, $owner, True, 'sleep 300', '$run/mps/pipe')]"
	"$GPUSHARE" info >"$tmp/report"
	check "report: private daemon and its owner" grep -q "^  bench daemon pid $rdaemon, $run/mps/pipe$" "$tmp/report"
	check "report: the owner's pid and command" grep -q "^        owner pid $owner: sleep 300$" "$tmp/report"
	kill "$owner"; wait "$owner" 2>/dev/null || true
	"$GPUSHARE" info >"$tmp/report"
	check "report: a daemon whose owner is gone is said to be left behind" grep -q "owner pid $owner gone: left behind" "$tmp/report"
	fake_mps_quit "$run/mps/pipe" "$run/mps/log"
	run_daemon_up=
	unset GPUSHARE_MPS_CONTROL
else
	echo "skip: no fake_mps_control helper built; running-daemon checks not done"
fi
"$GPUSHARE" info --json >"$tmp/info.json"
check_json "no private daemons: an empty list" 'j["private_mps"] == []'

# ---- power limit, throttle reasons ----
check_json "power limit and throttle reasons" 'gpu(1)["power_limit_watts"] == 700 and gpu(1)["throttle_reasons"] == "sw_power_cap" and gpu(0)["throttle_reasons"] == "gpu_idle"'
FAKE_NVML_NOT_SUPPORTED=nvmlDeviceGetEnforcedPowerLimit,nvmlDeviceGetCurrentClocksEventReasons "$GPUSHARE" info --json >"$tmp/info.json"
check_json "NOT_SUPPORTED power limit and throttle reasons are null" 'all(g["power_limit_watts"] is None and g["throttle_reasons"] is None for g in j["gpus"])'
"$GPUSHARE" info >"$tmp/report"
check "report: power with its limit" grep -q "^  power          612.3 W (limit 700 W)$" "$tmp/report"
check "report: throttle reasons" grep -q "^  throttling     sw_power_cap$" "$tmp/report"

# ---- --query, --format ----
"$GPUSHARE" info --query index,name,utilization.gpu,memory.used,power.draw,power.limit,clocks.sm,temperature,throttle_reasons --format csv >"$tmp/q"
check "query: header with units" test "$(sed -n 1p "$tmp/q")" = "index, name, utilization.gpu [%], memory.used [MiB], power.draw [W], power.limit [W], clocks.sm [MHz], temperature.gpu [C], throttle_reasons"
check "query: GPU 0, utilization not supported is [N/A]" test "$(sed -n 2p "$tmp/q")" = "0, NVIDIA H200, [N/A], 53 MiB, 121.50 W, 700.00 W, 1980 MHz, 35 C, gpu_idle"
check "query: GPU 1" test "$(sed -n 3p "$tmp/q")" = "1, NVIDIA H100 80GB HBM3, 87 %, 3584 MiB, 612.35 W, 700.00 W, 1755 MHz, 71 C, sw_power_cap"
check "query: one line per GPU" test "$(wc -l <"$tmp/q")" -eq 3
"$GPUSHARE" info --query index,power.draw,clocks_event_reasons.active --format csv,noheader,nounits >"$tmp/q"
check "query: noheader, nounits" test "$(cat "$tmp/q")" = "$(printf '0, 121.50, gpu_idle\n1, 612.35, sw_power_cap')"
for bad in "--query foo" "--query index --format json" "--format csv" "--count 2" "--json --watch" "--watch 0" "--watch 1s 2s" "--query ,"; do
	set +e
	# shellcheck disable=SC2086
	"$GPUSHARE" info $bad >"$tmp/out" 2>"$tmp/err"
	rc=$?
	set -e
	check "info $bad: usage error, one line (got $rc: $(cat "$tmp/err"))" test "$rc" -eq 2 -a "$(wc -l <"$tmp/err")" -eq 1 -a ! -s "$tmp/out"
done

# ---- --watch: one line per GPU and interval when not on a terminal ----
"$GPUSHARE" info --watch 50ms --count 3 >"$tmp/w"
check "watch: a header once, then 2 GPUs x 3 intervals (got $(wc -l <"$tmp/w"))" test "$(grep -c '^#' "$tmp/w")" -eq 1 -a "$(grep -vc '^#' "$tmp/w")" -eq 6
check "watch: GPU 1's line has utilization, memory, power, limit, SM clock, temperature, throttling" grep -Eq '^ [0-9:]{8}\.[0-9]{3} +1 +87 +3584 +612 +700 +1755 +71 sw_power_cap$' "$tmp/w"
check "watch: the time stamps have milliseconds (a watch at 50ms has distinct ones)" \
	test "$(grep -v '^#' "$tmp/w" | awk '{ print $1 }' | sort -u | wc -l)" -ge 2
"$GPUSHARE" info --query timestamp,index --format csv,noheader >"$tmp/q"
check "query: timestamp to the millisecond, as nvidia-smi's ($(head -1 "$tmp/q"))" \
	grep -Eq '^[0-9]{4}/[0-9]{2}/[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}, 0$' "$tmp/q"
"$GPUSHARE" info --query index,utilization.gpu --format csv,noheader --watch 20ms --count 2 >"$tmp/w"
check "watch with query: CSV lines each interval" test "$(cat "$tmp/w")" = "$(printf '0, [N/A]\n1, 87 %%\n0, [N/A]\n1, 87 %%')"
if command -v script >/dev/null; then
	script -qec "$GPUSHARE info --watch 20ms --count 2" /dev/null >"$tmp/tty" 2>&1 || true
	check "watch on a terminal: the view is redrawn (clear screen twice)" test "$(grep -o $'\e\[2J' "$tmp/tty" | wc -l)" -eq 2
	check "watch on a terminal: a row per GPU" grep -q "NVIDIA H100 80GB HBM3.*612/700 W" "$tmp/tty"
	check "watch on a terminal: the processes with user, kind, memory and command" \
		bash -c "grep -Eq '^1 +$plain +$(id -un) +plain +1024  sleep 300' '$tmp/tty' && grep -Eq '^1 +$client +$(id -un) +mps-client +2048  sleep 300' '$tmp/tty'"
fi

finish
