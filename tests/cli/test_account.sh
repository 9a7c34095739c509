#!/usr/bin/env bash
# End-to-end test of the accounting library (libgpushare-account.so) without
# a GPU: tests/helpers/account_driver loads it as the CUDA driver does with
# CUDA_INJECTION64_PATH, and the stand-in CUPTI (libfakecupti.so) delivers
# scripted kernels (30% busy on device 0, 90% on device 1) and one
# allocation. Checked: one record per process and GPU, the owner (Slurm job
# and step, farm job, rank, a pod from a cgroup path is the unit test's), the
# promise from CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, the busier device reading
# busier, windows of a bounded part of the wall time, memory; and that the
# library does nothing, and harms nothing, without CUPTI, with a CUPTI that
# refuses, or when turned off.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/cli/lib_account.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib_account.sh"

tmp=$(mktemp -d /tmp/gpushare-account-XXXXXX)
stray= # a probe beside check's, killed at the end
cleanup() {
	[[ -n $stray ]] && kill "$stray" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

if ! account_built; then
	finish
	exit 0
fi

drive() { # drive DIR SECONDS [VAR=VALUE...]: the driver under the library, records in DIR
	local d=$1 s=$2
	shift 2
	under_library "$d" "$@" "$H/account_driver" "$s"
}

# ---- the record path ----
d=$tmp/rec
check "the driver runs under the library" drive "$d" 1.5 FAKE_CUPTI_KERNELS=0:300:700,1:900:100 \
	FAKE_CUPTI_MEMORY=1:1048576 SLURM_JOB_ID=4242 SLURM_STEP_ID=0 GPUSHARE_FARM_JOB=17 SLURM_PROCID=3 \
	CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25 FAKE_CUPTI_IGNORE_LIMIT=1
mapfile -t recs < <(find "$d" -name '*.rec' | sort)
check "one record per GPU (${#recs[@]})" test "${#recs[@]}" -eq 2
r0=$(find "$d" -name '*-0.rec')
r1=$(find "$d" -name '*-1.rec')
check "no temporary file is left" test -z "$(find "$d" -name '*.tmp')"
check "the magic line" test "$(head -n1 "$r0")" = "gpushare-account 1"
check "the owner: Slurm job" test "$(field "$r1" slurm_job)" = 4242
check "the owner: Slurm step" test "$(field "$r1" slurm_step)" = 0
check "the owner: farm job" test "$(field "$r1" farm_job)" = 17
check "the owner: rank" test "$(field "$r1" rank)" = 3
check "no pod outside Kubernetes" test -z "$(field "$r1" k8s_pod)"
check "the promise from the MPS percentage" test "$(field "$r0" promised)" = 0.250000
check "kernels were seen on both GPUs" test "$(field "$r0" kernels)" -gt 0 -a "$(field "$r1" kernels)" -gt 0
share() { awk '$1 == "busy_ns" { b = $2 } $1 == "window_ns" { w = $2 } END { if (w > 0) printf "%.3f", b / w }' "$1"; }
s0=$(share "$r0")
s1=$(share "$r1")
echo "shares: device 0 $s0 (scripted 0.30), device 1 $s1 (scripted 0.90)"
check "the busier GPU reads busier, each share in (0, 1]" \
	awk -v a="$s0" -v b="$s1" 'BEGIN { exit !(a > 0 && a < b && b <= 1) }'
check "windows cover part of the wall time only" \
	awk -v w="$(field "$r0" window_ns)" -v t="$(field "$r0" wall_ns)" 'BEGIN { exit !(w > 0 && w < t) }'
check "memory from the allocation record" test "$(field "$r1" memory_bytes)" = 1048576
check "the directory is the user's alone" test "$(stat -c %a "$d")" = 700

# GPUSHARE_ACCOUNT_MEMORY=0 leaves the memory activity off
d=$tmp/nomem
drive "$d" 0.5 FAKE_CUPTI_KERNELS=0:100:100 FAKE_CUPTI_MEMORY=0:1048576 GPUSHARE_ACCOUNT_MEMORY=0
check "GPUSHARE_ACCOUNT_MEMORY=0: kernels still" test "$(field "$(find "$d" -name '*.rec')" kernels)" -gt 0
check "GPUSHARE_ACCOUNT_MEMORY=0: no memory figure (no memory_bytes line)" test -z "$(field "$(find "$d" -name '*.rec')" memory_bytes)"
check "a window's mean kernel time and the fastest's" \
	test "$(field "$r0" window_mean_ns)" -gt 0 -a "$(field "$r0" best_mean_ns)" -gt 0

# GPUSHARE_ACCOUNT_PROMISED (what gpushare sets) wins over the MPS percentage
d=$tmp/promised
drive "$d" 0.5 FAKE_CUPTI_KERNELS=0:100:100 GPUSHARE_ACCOUNT_PROMISED=0.5 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25
check "GPUSHARE_ACCOUNT_PROMISED wins" test "$(field "$(find "$d" -name '*.rec')" promised)" = 0.500000

# a window under way when the process exits is closed and written (a 5 s window, a 0.5 s process)
d=$tmp/exit
drive "$d" 0.5 FAKE_CUPTI_KERNELS=0:100:100 GPUSHARE_ACCOUNT_PERIOD_MS=10000 GPUSHARE_ACCOUNT_DUTY=0.5
check "the window under way at exit is written" test "$(field "$(find "$d" -name '*.rec')" kernels)" -gt 0

# ---- the share attained by slowdown (what the conformance run compares) ----
# One saturating probe alone on the whole GPU, then under MPS limits of 25 and
# 75%, then under a server that ignores the limit (a planted 100/100).
mean() { awk '$1 == "kernel_ns" { k = $2 } $1 == "kernels" { n = $2 } END { if (n > 0) printf "%.1f", k / n }' "$1"; }
attained() { # attained DIR: alone mean / this mean
	awk -v a="$(mean "$(find "$tmp/alone" -name '*.rec')")" -v c="$(mean "$(find "$1" -name '*.rec')")" \
		'BEGIN { if (a > 0 && c > 0) printf "%.3f", (a >= c ? 1 : a / c) }'
}
within() { awk -v x="$1" -v p="$2" 'BEGIN { d = x - p; exit !(x != "" && d <= 0.05 && d >= -0.05) }'; }
drive "$tmp/alone" 0.5 FAKE_CUPTI_KERNELS=0:1000:0
drive "$tmp/c25" 0.5 FAKE_CUPTI_KERNELS=0:1000:0 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25
drive "$tmp/c75" 0.5 FAKE_CUPTI_KERNELS=0:1000:0 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=75
drive "$tmp/bad" 0.5 FAKE_CUPTI_KERNELS=0:1000:0 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25 FAKE_CUPTI_IGNORE_LIMIT=1
a25=$(attained "$tmp/c25")
a75=$(attained "$tmp/c75")
abad=$(attained "$tmp/bad")
echo "attained by slowdown: $a25 (promised 0.25), $a75 (0.75), planted 100/100: $abad (0.25)"
check "25% attained within 5 points" within "$a25" 0.25
check "75% attained within 5 points" within "$a75" 0.75
check "a limit not applied is outside 5 points" test -n "$abad" -a "$(within "$abad" 0.25 && echo in)" != in

# ---- gpushare check: the work rate, as the conformance run measures it ----
# The stand-in CUPTI shares the GPU among the live probes of one peers
# directory (MPS limits, MPS without limits, or time-slicing), and models a
# probe that sizes its grid from its context's SM count unless
# GPUSHARE_CHECK_SMS names the whole GPU's (the reduced count an MPS limit
# reports made every client read 100% before check passed the count on).
probe=("$H/account_driver" 600)
export GPUSHARE_CUPTI_LIBRARY="$H/libfakecupti.so" GPUSHARE_ACCOUNT_PERIOD_MS=200 GPUSHARE_ACCOUNT_DUTY=0.9 \
	FAKE_CUPTI_KERNELS=0:1000:0 FAKE_CUPTI_GRID_FROM_SMS=1
peers() { mkdir -p "$tmp/peers-$1" && echo "FAKE_CUPTI_PEERS=$tmp/peers-$1"; }
attained() { # attained FIELD: each client's FIELD of check's JSON, comma-separated
	python3 -c 'import json, sys
print(",".join("%.3f" % c[sys.argv[2]] for c in json.load(open(sys.argv[1]))["clients"]))' "$tmp/out" "$1"
}
near() { # near LIST WANT...: each value of LIST within 5 points of its WANT
	python3 -c 'import sys
got = [float(x) for x in sys.argv[1].split(",")]
assert len(got) == len(sys.argv) - 2 and all(abs(g - float(w)) <= 0.05 for g, w in zip(got, sys.argv[2:])), got' "$@"
}
run check --shares 25,75 --warmup 1 --seconds 1 --json -- env "$(peers ok)" "${probe[@]}"
check "check passes 25/75 applied (exit $rc)" test "$rc" -eq 0
check "check gives the clients the whole GPU's SM count" python3 -c '
import json, sys
assert json.load(open(sys.argv[1]))["sms"] == 132' "$tmp/out"
check "25/75: attained by work rate $(attained attained)" near "$(attained attained)" 0.25 0.75
run check --shares 25,75 --warmup 1 --seconds 1 -- env "$(peers text)" "${probe[@]}"
check "check's table: two clients pass" test "$(grep -c ' pass$' "$tmp/out")" -eq 2
check "check's table: the SM count" grep -q 'probe alone: .* kernels/s, mean kernel .* us, 132 SMs' "$tmp/out"
run check --shares 25,75 --warmup 1 --seconds 1 --json -- env "$(peers grid)" env -u GPUSHARE_CHECK_SMS "${probe[@]}"
check "a probe that sizes its grid from its context reads 100% (exit $rc)" test "$rc" -eq 15
check "... for each client: $(attained attained)" near "$(attained attained)" 1 1
run check --shares 25,75 --warmup 1 --seconds 1 --json -- env "$(peers bad)" FAKE_CUPTI_IGNORE_LIMIT=1 "${probe[@]}"
check "check fails a planted 100/100 (exit $rc)" test "$rc" -eq 15
check "check --json: both clients fail at half the GPU each ($(attained attained))" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["pass"] is False and [c["verdict"] for c in d["clients"]] == ["fail", "fail"], d
assert all(abs(c["attained"] - 0.5) < 0.05 for c in d["clients"]) and d["clients"][0]["promised"] == 0.25, d' "$tmp/out"
check "check names the failing client" grep -q 'client 0 (pid [0-9]*) promised 25.0% (expected 25.0%) attained [0-9.]*%' "$tmp/err"
check "under limits no client is judged by the others' figures" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["sharing"] is None and [c["expected"] for c in d["clients"]] == [0.25, 0.75], d' "$tmp/out"
# time-slicing: the stand-in keeps a kernel's time as alone's (a kernel that
# fits in its slice) while the work rate halves; the verdict goes by work
# rate, which holds whether kernel times grow (as the probe's did on an
# H200: docs/benchmarks.md) or not
run check --clients 2 --warmup 1 --seconds 1 --json -- env "$(peers ts)" FAKE_CUPTI_SHARING=timeslice "${probe[@]}"
check "time-slicing, 2 clients: pass (exit $rc)" test "$rc" -eq 0
check "time-slicing: attained by work rate $(attained attained)" near "$(attained attained)" 0.5 0.5
check "time-slicing: kernel times as the stand-in makes them ($(attained attained_by_kernel_time))" \
	near "$(attained attained_by_kernel_time)" 1 1
# switching between time-sliced contexts costs GPU time no client gets (about
# a tenth of an H200 for two probes): each client is judged against its part
# of what the clients attained together, and that total's shortfall (the
# sharing's cost) against --max-cost. The stand-in's switch of 200 us a
# process beside 1 ms kernels leaves each client 1 ms of every 2.4 ms, 41.7%
# (cost 16.7 points).
run check --clients 2 --warmup 1 --seconds 1 --json -- env "$(peers sw)" FAKE_CUPTI_SHARING=timeslice \
	FAKE_CUPTI_SWITCH_US=200 "${probe[@]}"
check "time-slicing with a switch cost: pass at --max-cost 20 (exit $rc, $(attained attained))" test "$rc" -eq 0
check "... each 41.7% attained, expected its half of the 83% together" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
s = d["sharing"]
assert abs(s["together"] - 0.833) < 0.05 and abs(s["cost"] - 0.167) < 0.05 and s["pass"] is True, d
for c in d["clients"]:
    assert abs(c["attained"] - 0.417) < 0.05 and abs(c["expected"] - s["together"] / 2) < 1e-3, c
    assert c["verdict"] == "pass", c' "$tmp/out"
run check --clients 2 --max-cost 10 --warmup 1 --seconds 1 -- env "$(peers sw2)" FAKE_CUPTI_SHARING=timeslice \
	FAKE_CUPTI_SWITCH_US=200 "${probe[@]}"
check "... the same over --max-cost 10: fail (exit $rc)" test "$rc" -eq 15
check "... the text names the cost" grep -q '^FAIL: the clients together attained .* the sharing cost .* points (at most 10)' "$tmp/out"
check "... and says both clients kept their part" grep -q '^FAIL: 2 of 2 clients within 5 points, the sharing.s cost over its bound' "$tmp/out"
check "... the warning says it" grep -q 'the sharing cost .* points, over --max-cost 10' "$tmp/err"
# another process on the GPU before the alone phase (NVML's list): its load
# would be in "alone", so no verdict is given
GPUSHARE_NVML_LIBRARY=$H/libfakenvml.so FAKE_NVML_PIDS="$$,0,0" \
	run check --clients 2 --warmup 1 --seconds 1 --json -- env "$(peers busy)" FAKE_CUPTI_SHARING=timeslice "${probe[@]}"
check "a GPU not idle: no pass (exit $rc)" test "$rc" -eq 15
check "... the other process counted, every verdict unknown" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["pass"] is False and d["other_processes"] == 1, d
assert [c["verdict"] for c in d["clients"]] == ["unknown", "unknown"], d' "$tmp/out"
GPUSHARE_NVML_LIBRARY=$H/libfakenvml.so FAKE_NVML_PIDS="$$,0,0" \
	run check --clients 2 --warmup 1 --seconds 1 -- env "$(peers busy2)" FAKE_CUPTI_SHARING=timeslice "${probe[@]}"
check "... and the text says why" grep -q "^unknown: 1 other process (pid $$) ran on the GPU" "$tmp/out"
# planted: a stray process on the GPU beside the plan's two
env "$(peers stray)" FAKE_CUPTI_SHARING=timeslice GPUSHARE_ACCOUNT_DIR="$tmp/stray-rec" \
	CUDA_INJECTION64_PATH="$LIB" "${probe[@]}" &
stray=$!
stray_in() { test -n "$(ls "$tmp/peers-stray" 2>/dev/null)"; }
wait_for 50 0.1 stray_in || true
run check --clients 2 --warmup 1 --seconds 1 --json -- env "$(peers stray)" FAKE_CUPTI_SHARING=timeslice "${probe[@]}"
kill "$stray" 2>/dev/null
wait "$stray" 2>/dev/null || true
stray=
check "time-slicing with a stray third process: fail (exit $rc, $(attained attained))" test "$rc" -eq 15
check "... the stray slowed the probe alone too: the clients together beat it" python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["sharing"]
assert s["pass"] is False and s["together"] > 1.25, s' "$tmp/out"
# a plan directory's shares
mkdir -p "$tmp/plan-split" "$tmp/plan-mig" "$tmp/plan-none"
cp "$GPUSHARE_SOURCE_DIR/tests/plan/golden/env-mps-split.env" "$tmp/plan-split/gpushare.env"
cp "$GPUSHARE_SOURCE_DIR/tests/plan/golden/mig-parted.yaml" "$tmp/plan-mig/"
run check --plan "$tmp/plan-split" --warmup 1 --seconds 1 -- env "$(peers plan)" "${probe[@]}"
check "check --plan: mps-split's 4 clients at 25% pass (exit $rc)" test "$rc" -eq 0
check "check --plan: the plan read" grep -q '^plan: mps-split, 4 clients at 25%' "$tmp/out"
check "check --plan: four clients" test "$(grep -c ' pass$' "$tmp/out")" -eq 4
run check --plan "$tmp/plan-mig" -- "${probe[@]}"
check "check --plan of a MIG plan: refused (exit $rc)" test "$rc" -eq 14
run check --plan "$tmp/plan-none" -- "${probe[@]}"
check "check --plan of a directory without a plan: exit 2 ($rc)" test "$rc" -eq 2
run check --plan "$tmp/plan-split" --clients 2 -- "${probe[@]}"
check "check --plan with --clients: exit 2 ($rc)" test "$rc" -eq 2
run check --warmup 0 --seconds 1 -- env GPUSHARE_CUPTI_LIBRARY=/nonexistent "${probe[@]}"
check "check without CUPTI: exit 8" test "$rc" -eq 8
run check --shares 25,0 -- "${probe[@]}"
check "check --shares 25,0: exit 2" test "$rc" -eq 2
if [[ ! -e $(dirname "$GPUSHARE")/gpushare-probe ]]; then
	run check --shares 25
	check "check without a probe, none built in: exit 8 ($rc)" test "$rc" -eq 8
	check "... and says so" grep -q 'built-in gpushare-probe is not installed' "$tmp/err"
fi
check "check leaves no probe behind" test -z "$(pgrep -f "$H/account_driver 600" || true)"
unset GPUSHARE_CUPTI_LIBRARY GPUSHARE_ACCOUNT_PERIOD_MS GPUSHARE_ACCOUNT_DUTY FAKE_CUPTI_KERNELS FAKE_CUPTI_GRID_FROM_SMS

# ---- nothing harmful ----
d=$tmp/none
check "without CUPTI the process runs" drive "$d" 0.3 GPUSHARE_CUPTI_LIBRARY=/nonexistent/libcupti.so
check "without CUPTI nothing is written" test ! -e "$d"
check "with a CUPTI that refuses the process runs" drive "$d" 0.5 FAKE_CUPTI_ENABLE_ERROR=1 \
	FAKE_CUPTI_KERNELS=0:100:100
check "with a CUPTI that refuses nothing is written" test -z "$(find "$d" -name '*.rec' 2>/dev/null)"
check "turned off, the process runs" drive "$d" 0.3 GPUSHARE_ACCOUNT=0 FAKE_CUPTI_KERNELS=0:100:100
check "turned off, nothing is written" test -z "$(find "$d" -name '*.rec' 2>/dev/null)"
check "an unwritable directory harms nothing" drive /proc/gpushare-account 0.5 FAKE_CUPTI_KERNELS=0:100:100

# ---- the exporter's series ----
if ! command -v promtool >/dev/null; then
	missing_tool "promtool (Debian package prometheus)"
else
	d=$tmp/exp
	printf '0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0f1e2d3c_aaaa_bbbb_cccc_123456789abc.slice/cri-containerd-abcdef0123456789abcdef0123456789.scope\n' >"$tmp/cgroup"
	drive "$d" 1 FAKE_CUPTI_KERNELS=0:500:500 FAKE_CUPTI_MEMORY=0:4096 GPUSHARE_ACCOUNT_CGROUP="$tmp/cgroup" \
		POD_NAMESPACE=ml CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50
	drive "$d" 1 FAKE_CUPTI_KERNELS=0:100:900 SLURM_JOB_ID=99 SLURM_STEP_ID=2 GPUSHARE_FARM_JOB=5 PMI_RANK=1
	# a planted record that is not one (bad label) and a stale one of a gone process
	printf 'gpushare-account 1\npid 1\nslurm_job a"b\n' >"$d/1-0.rec"
	GPUSHARE_ACCOUNT_DIR=$d "$GPUSHARE" exporter --once >"$tmp/exp.txt" 2>"$tmp/exp.err" || true
	check "the exposition lints" promtool check metrics <"$tmp/exp.txt"
	for fam in gpushare_client_gpu_seconds_total gpushare_client_sm_share_ratio gpushare_client_memory_bytes; do
		check "$fam: two clients" test "$(grep -c "^$fam{" "$tmp/exp.txt")" -eq 2
	done
	check "a promise only where one was made" \
		test "$(grep -c '^gpushare_client_share_promised_ratio{' "$tmp/exp.txt")" -eq 1
	check "a pod's client: namespace, pod UID and container" grep -q \
		'k8s_namespace="ml",k8s_pod="0f1e2d3c-aaaa-bbbb-cccc-123456789abc",k8s_container="abcdef012345"' "$tmp/exp.txt"
	check "a Slurm client: job, step, farm job and rank" grep -q \
		'slurm_job_id="99",slurm_step="2",k8s_namespace="",k8s_pod="",k8s_container="",farm_job="5",rank="1"' "$tmp/exp.txt"
	check "the promise of the pod's client" grep -q '^gpushare_client_share_promised_ratio{.*k8s_namespace="ml".*} 0.5$' \
		"$tmp/exp.txt"
	check "the planted record is not served" test -z "$(grep 'pid="1"' "$tmp/exp.txt")"
	check "records of processes gone less than a minute ago are kept" test "$(find "$d" -name '*.rec' | wc -l)" -eq 3
	check "a slowdown per client" test "$(grep -c '^gpushare_client_slowdown_ratio{' "$tmp/exp.txt")" -eq 2

	# held under the promise while the GPU had room: two clients promised
	# half each, attaining 30% and 20% (the GPU half idle); then 30% and 70%
	# (the GPU full: the one under its promise is not flagged)
	d=$tmp/room
	drive "$d" 1 FAKE_CUPTI_KERNELS=0:300:700 GPUSHARE_ACCOUNT_PROMISED=0.5 SLURM_JOB_ID=31
	drive "$d" 1 FAKE_CUPTI_KERNELS=0:200:800 GPUSHARE_ACCOUNT_PROMISED=0.5 SLURM_JOB_ID=32
	drive "$d" 1 FAKE_CUPTI_KERNELS=0:100:900 # no promise: no flag
	GPUSHARE_ACCOUNT_DIR=$d "$GPUSHARE" exporter --once >"$tmp/exp.txt" 2>"$tmp/exp.err" || true
	check "the flag lints" promtool check metrics <"$tmp/exp.txt"
	check "held with room: both promised clients flagged" \
		test "$(grep -c '^gpushare_client_held_under_promise{.*slurm_job_id="3[12]".*} 1$' "$tmp/exp.txt")" -eq 2
	check "no flag without a promise" test "$(grep -c '^gpushare_client_held_under_promise{' "$tmp/exp.txt")" -eq 2
	d=$tmp/full
	drive "$d" 1 FAKE_CUPTI_KERNELS=0:300:700 GPUSHARE_ACCOUNT_PROMISED=0.5 SLURM_JOB_ID=41
	drive "$d" 1 FAKE_CUPTI_KERNELS=0:700:300 GPUSHARE_ACCOUNT_PROMISED=0.5 SLURM_JOB_ID=42
	GPUSHARE_ACCOUNT_DIR=$d "$GPUSHARE" exporter --once >"$tmp/exp.txt" 2>"$tmp/exp.err" || true
	check "the GPU full: no client flagged" \
		test "$(grep -c '^gpushare_client_held_under_promise{.*} 0$' "$tmp/exp.txt")" -eq 2
fi

# ---- gpushare info --clients: the per-client table ----
d=$tmp/room
[[ -d $d ]] || {
	drive "$d" 1 FAKE_CUPTI_KERNELS=0:300:700 GPUSHARE_ACCOUNT_PROMISED=0.5 SLURM_JOB_ID=31
	drive "$d" 1 FAKE_CUPTI_KERNELS=0:200:800 GPUSHARE_ACCOUNT_PROMISED=0.5 SLURM_JOB_ID=32
	drive "$d" 1 FAKE_CUPTI_KERNELS=0:100:900
}
drive "$d" 1 FAKE_CUPTI_KERNELS=0:100:900 FAKE_CUPTI_MEMORY=0:20971520 GPUSHARE_FARM_JOB=7 PMI_RANK=2
export GPUSHARE_ACCOUNT_DIR=$d
run info --clients
check "info --clients (exit $rc)" test "$rc" -eq 0
check "info --clients: the columns" grep -q '^GPU *PID *USER *OWNER *PROMISED *ATTAINED *MEM MiB *SLOWDOWN *FLAG' "$tmp/out"
# no driver here (no libcuda): the records name no GPU, so each is placed by
# its ordinal, marked (test_account_gpus has them name their GPUs)
check "info --clients: a row per client, by ordinal" test "$(grep -c '^0\* ' "$tmp/out")" -eq 4
check "info --clients: the ordinal's mark explained" grep -q '^(\*: the CUDA device ordinal' "$tmp/out"
check "info --clients: a Slurm client promised 50%, held" grep -q '^0\* .* slurm:31 .* 50\.0% .*%.*x  HELD$' "$tmp/out"
check "info --clients: the farm job and rank, its memory" grep -q ' farm:7 rank:2 .* 20 ' "$tmp/out"
check "info --clients: no promise shows -" grep -q '^0\* .* - .*%' "$tmp/out"
run info --clients --json
check "info --clients --json" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
c = {x["owner"]["slurm_job_id"] or x["owner"]["farm_job"] or "none": x for x in d["clients"]}
assert len(d["clients"]) == 4, d
assert c["31"]["promised"] == 0.5 and 0.2 < c["31"]["attained"] < 0.4 and c["31"]["held_under_promise"] is True, c
assert c["none"]["promised"] is None and c["none"]["held_under_promise"] is None, c
assert c["7"]["memory_bytes"] == 20971520 and c["7"]["owner"]["rank"] == "2" and c["7"]["slowdown"] >= 1, c
assert all(x["device"] == 0 and x["gpu_uuid"] is None and x["gpu"] is None for x in d["clients"]), d' "$tmp/out"
run info --clients --watch 100ms --count 2
check "info --clients --watch: two tables ($rc)" test "$rc" -eq 0 -a "$(grep -c '^GPU ' "$tmp/out")" -eq 2
run info --clients --json --watch 100ms --count 2
check "info --clients --json --watch: a document a line" python3 -c '
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 2 and all(len(json.loads(l)["clients"]) == 4 for l in lines), lines' "$tmp/out"
export GPUSHARE_ACCOUNT_DIR=$tmp/none-here
run info --clients
check "info --clients without records says how to get them" grep -q 'no accounted client' "$tmp/out"
unset GPUSHARE_ACCOUNT_DIR
run info --clients --query index
check "info --clients --query: exit 2" test "$rc" -eq 2

finish account
