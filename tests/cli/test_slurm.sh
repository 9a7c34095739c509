#!/usr/bin/env bash
# Slurm-native sharing under a private Slurm (fake GPUs, the stand-in NVML
# and MPS control program): exec and farm honour Slurm's gres/mps share
# (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: the cap, split by mps-split, a larger
# --thread-percentage refused, said once per job, in --dry-run --json) and
# gres/shard count (SLURM_SHARDS_ON_NODE bounds farm's slots); exec joins a
# daemon that already answers (--mps-pipe-dir, CUDA_MPS_PIPE_DIRECTORY, the
# prolog's) and leaves it running; `gpushare slurm prolog|epilog` as
# slurm.conf's Prolog=/Epilog=: one daemon per GPU and user for gres/mps
# jobs, kept while two concurrent jobs use it, stopped after the last (and
# after scancel), none for whole GPUs, idempotent; nothing left afterwards.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_slurm.sh"
. "$(dirname "$0")/lib_exec.sh"

EXEC_CLEANUP_MORE=slurm_stop
exec_setup

slurm_needed "Slurm-native sharing"

sd=$tmp/sd # the prolog's state directory, also where exec looks
export GPUSHARE_SLURM_DIR=$sd
# The hooks slurmd runs (as root, with the job's environment only): on
# once $tmp/hooks-on exists.
for h in prolog epilog; do
	cat >"$tmp/$h.sh" <<EOF
#!/bin/bash
[ -e "$tmp/hooks-on" ] || exit 0
export GPUSHARE_NVML_LIBRARY=$GPUSHARE_NVML_LIBRARY FAKE_NVML_GPUS=2 GPUSHARE_MPS_CONTROL=$GPUSHARE_MPS_CONTROL
export FAKE_MPS_START_LOG=$FAKE_MPS_START_LOG GPUSHARE_SLURM_DIR=$sd
echo "\$(date +%T.%N) $h job \$SLURM_JOB_ID" >>"$tmp/hooks.log"
exec "$GPUSHARE" slurm $h >>"$tmp/hooks.log" 2>&1
EOF
	chmod +x "$tmp/$h.sh"
done
export SLURM_TEST_CONF_EXTRA="Prolog=$tmp/prolog.sh
Epilog=$tmp/epilog.sh"

# One GPU in Slurm (both gres/mps jobs land on it); the stand-in NVML has two.
if ! slurm_start 1; then
	fail "the private Slurm did not become idle"
	finish
fi
ok "slurm (gres/mps, 1 GPU) idle in $SLURM_DIR"

sr() {
	set +e
	timeout 120 srun "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	set -e
}
pcts() { sed -n 's/.* pct=\(.*\)$/\1/p' "$tmp/out" | sort | tr '\n' ' '; }
pipes() { sed -n 's/.* pipe=\([^ ]*\) .*/\1/p' "$tmp/out" | sort -u | tr '\n' ' '; }
# gpushare's own lines on stderr (srun adds its "srun: error: ..." ones)
own_lines() { grep -c '^gpushare' "$tmp/err" || true; }

echo "== exec under --gres=mps:50: the share is the cap"
sr -n 2 --gres=mps:50 "$GPUSHARE" exec -- "$tmp/app-show.sh"
check "exit 0" test "$rc" = 0
check "mps: both ranks at 50%" test "$(pcts)" = "50 50 "
check "said once for the job" test "$(grep -c "honours Slurm's share: gres/mps 50%" "$tmp/err")" = 1
check "  daemon stopped" no_daemon_left
sr -n 2 --gres=mps:50 "$GPUSHARE" exec --strategy mps-split -- "$tmp/app-show.sh"
check "mps-split: 50% split between the 2 ranks on the GPU" test "$(pcts)" = "25 25 "
check "  said with the split" grep -q "mps-split: 25% per rank (2 ranks on its GPU)" "$tmp/err"
sr -n 1 --gres=mps:50 "$GPUSHARE" exec --strategy mps-split --thread-percentage 20 -- "$tmp/app-show.sh"
check "--thread-percentage 20 within the share" test "$(pcts)" = "20 "
sr -n 1 --gres=mps:50 "$GPUSHARE" exec --strategy mps-split --thread-percentage 80 -- "$tmp/app-show.sh"
check "--thread-percentage 80 above it: exit 2" test "$rc" = 2
check "  one line naming the share" \
	test "$(own_lines) $(grep -c "above Slurm's gres/mps share of 50%" "$tmp/err")" = "1 1"
sr -n 1 --gres=mps:50 "$GPUSHARE" exec --strategy timeslice -- "$tmp/app-show.sh"
check "timeslice cannot keep it: exit 2" test "$rc" = 2
sr -n 1 --gres=mps:50 "$GPUSHARE" exec --dry-run --json
check "--dry-run --json says the share" python3 -c '
import json, sys
o = json.loads(open(sys.argv[1]).readline())
assert o["slurm"]["mps_percentage"] == 50, o
assert o["thread_percentage"] == 50 and o["set"]["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "50", o
assert o["daemon"]["source"] == "job", o' "$tmp/out"
sr -n 1 --gres=gpu:1 "$GPUSHARE" exec -- "$tmp/app-show.sh"
check "a whole GPU: no share, none set" test "$(pcts)$(grep -c honours "$tmp/err" || true)" = "unset 0"

echo "== farm under --gres=mps:50"
sr -n 1 --gres=mps:50 "$GPUSHARE" farm --dir "$tmp/f1" --slots 2 --range 1..2 --no-shell -- \
	sh -c 'echo pct=$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE'
check "exit 0" test "$rc" = 0
check "  every job at 50%" test "$(cat "$tmp"/f1/out/*.out | sort | tr '\n' ' ')" = "pct=50 pct=50 "
check "  the summary says it" grep -q "slurm: honoured gres/mps 50%" "$tmp/out"
check "  the journal's header too" grep -q '"slurm":"gres/mps 50%' "$tmp/f1/journal.jsonl"
sr -n 1 --gres=mps:50 "$GPUSHARE" farm --dir "$tmp/f2" --strategy mps-split --slots 2 --range 1..2 --no-shell -- \
	sh -c 'echo pct=$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE'
check "mps-split: 25% each for 2 slots" test "$(cat "$tmp"/f2/out/*.out | sort | tr '\n' ' ')" = "pct=25 pct=25 "
check "  daemons stopped" no_daemon_left

echo "== exec joins a daemon that already answers"
fake_mps_start "$tmp/site/pipe" "$tmp/site/log"
before=$(starts)
sr -n 2 --gres=gpu:1 "$GPUSHARE" exec --mps-pipe-dir "$tmp/site/pipe" -- "$tmp/app-show.sh"
check "--mps-pipe-dir: exit 0, both ranks on it" test "$rc $(pipes)" = "0 $tmp/site/pipe "
check "  no daemon started" test "$(starts)" = "$before"
check "  said once" test "$(grep -c "joined the MPS daemon.* at $tmp/site/pipe (--mps-pipe-dir)" "$tmp/err")" = 1
check "  left running" test "$(daemons_alive)" = 1
CUDA_MPS_PIPE_DIRECTORY=$tmp/site/pipe sr -n 2 --gres=gpu:1 "$GPUSHARE" exec -- "$tmp/app-show.sh"
check "found at CUDA_MPS_PIPE_DIRECTORY" test "$rc $(pipes)$(starts)" = "0 $tmp/site/pipe $before"
check "  said" grep -q "(CUDA_MPS_PIPE_DIRECTORY); it is left running" "$tmp/err"
fake_mps_quit "$tmp/site/pipe" "$tmp/site/log"
check "  (the site's daemon stopped by the test)" no_daemon_left
mkdir -p "$tmp/nodaemon"
sr -n 1 --gres=gpu:1 "$GPUSHARE" exec --mps-pipe-dir "$tmp/nodaemon" -- "$tmp/app-show.sh"
check "--mps-pipe-dir with no daemon: exit 5, one line" \
	test "$rc $(own_lines) $(grep -c "no MPS control daemon answers at '$tmp/nodaemon'" "$tmp/err")" = "5 1 1"

echo "== dcgm-exporter's job mapping (--hpc-job-mapping-dir)"
map=$tmp/map
mkdir -p "$map"
printf '%s\n' '#!/bin/sh' 'echo "map=$(cat "$1/0" | tr "\n" ,)"' >"$tmp/app-map.sh"
chmod +x "$tmp/app-map.sh"
sr -n 2 --gres=gpu:1 "$GPUSHARE" exec --hpc-job-mapping-dir "$map" -- "$tmp/app-map.sh" "$map"
jid=$(grep -o 'job slurm-[0-9]*' "$tmp/err" | head -1 | sed 's/job slurm-//')
check "exec: the job's id in the GPU's file while it runs, once" test "$rc $(sort -u "$tmp/out")" = "0 map=$jid,"
check "  removed after the last rank" test -z "$(ls "$map")"
sr -n 1 --gres=gpu:1 "$GPUSHARE" farm --dir "$tmp/f6" --slots 1 --range 1..1 --hpc-job-mapping-dir "$map" -- \
	"$tmp/app-map.sh" "$map"
check "farm: the job's id in the GPU's file while it runs" grep -qx "map=[0-9]*," "$tmp"/f6/out/*.out
check "  removed at the end" test -z "$(ls "$map")"

echo "== gpushare slurm prolog/epilog by hand"
run slurm prolog
check "outside Slurm: exit 2, one line" \
	test "$rc $(wc -l <"$tmp/err") $(grep -c "not run by Slurm: SLURM_JOB_ID is not set" "$tmp/err")" = "2 1 1"
before=$(starts)
# hook N prolog|epilog: job 9N of uid 0 with gres/mps on GPU 0, by hand
hook() {
	env -u SLURM_JOB_ID SLURM_JOB_ID="9$1" SLURM_JOB_UID=0 SLURM_JOB_GID=0 CUDA_VISIBLE_DEVICES=0 \
		CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 "$GPUSHARE" slurm "$2" --state-dir "$tmp/sd2" >"$tmp/out" 2>&1 || rc=$?
}
hook 1 prolog
check "prolog: the daemon started" grep -q "job 91: 1 GPU, 1 MPS daemon started" "$tmp/out"
hook 1 prolog
check "  again (idempotent): already running" grep -q "1 already running (the job was recorded already)" "$tmp/out"
hook 2 prolog
check "  a second job: joins it" grep -q "job 92: 1 GPU, 0 MPS daemons started, 1 already running$" "$tmp/out"
check "  one daemon" test "$(($(starts) - before)) $(daemons_alive)" = "1 1"
dpid=$(tail -1 "$tmp/starts" | cut -d' ' -f1)
check "  without the first job's share as its default" \
	bash -c "! tr '\\0' '\\n' </proc/$dpid/environ | grep -q CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"
hook 1 epilog
check "epilog of the first: kept" grep -q "job 91: 0 MPS daemons stopped, 1 still used" "$tmp/out"
hook 1 epilog
check "  again (idempotent): no record" grep -q "job 91 has no record here" "$tmp/out"
hook 2 epilog
check "epilog of the second: stopped" grep -q "job 92: 1 MPS daemon stopped" "$tmp/out"
check "  no daemon left" no_daemon_left
# A prolog that cannot start the daemon: one line, exit 4; its epilog forgets the job.
GPUSHARE_MPS_CONTROL=/nonexistent/nvidia-cuda-mps-control hook 6 prolog
check "prolog without the control program: one line naming it" \
	test "$(wc -l <"$tmp/out") $(grep -c "did not start: no file '/nonexistent/nvidia-cuda-mps-control'" "$tmp/out")" = "1 1"
hook 6 epilog
check "  its epilog: nothing to stop, the record gone" \
	test "$(grep -c "job 96: 0 MPS daemons stopped" "$tmp/out") $(ls "$tmp/sd2/jobs" | wc -l)" = "1 0"
# The job mapping: any GPU job, two at once on one GPU's file.
maph() {
	env -u SLURM_JOB_ID SLURM_JOB_ID="9$1" SLURM_JOB_UID=0 SLURM_JOB_GID=0 ${3:+CUDA_VISIBLE_DEVICES=$3} \
		"$GPUSHARE" slurm "$2" --state-dir "$tmp/sd2" --hpc-job-mapping-dir "$map" >"$tmp/out" 2>&1 || true
}
maph 3 prolog 0
maph 4 prolog 0,1
check "prolog --hpc-job-mapping-dir: GPU 0 has both jobs, GPU 1 one" \
	test "$(tr '\n' , <"$map/0") $(tr '\n' , <"$map/1")" = "93,94, 94,"
maph 3 epilog
check "  the epilog removes the job" test "$(tr '\n' , <"$map/0") $(tr '\n' , <"$map/1")" = "94, 94,"
maph 4 epilog
check "  the last: no file left" test -z "$(ls "$map")"
maph 5 prolog
check "  a job without GPUs: nothing mapped" test "$(ls "$map" | wc -l) $(grep -c 'no MPS daemon$' "$tmp/out")" = "0 1"
check "  no job record, no daemon directory" test "$(ls "$tmp/sd2/jobs" | wc -l) $(ls -d "$tmp"/sd2/mps-* 2>/dev/null | wc -l)" = "0 0"
# A gapped device list: Slurm's indices are positions in gres.conf's File=
# list, so its GPU 1 is /dev/nvidia2; NVML (the stand-in's order differs from
# the minors: /dev/nvidia2 is NVML's GPU 0) names it 0, and so does
# dcgm-exporter, which reads the files named by the GPU's id
# (NVIDIA/dcgm-exporter, internal/pkg/transformation/hpc.go: getGPUFiles).
mkdir -p "$tmp/gapconf"
printf '%s\n' 'AutoDetect=off' '# the other nodes' 'NodeName=other[1-2] Name=gpu File=/dev/nvidia[0-3]' \
	'NodeName=gapnode,gap[3-4] Name=gpu File=/dev/nvidia[0,2]  # ours' >"$tmp/gapconf/gres.conf"
mapg() {
	SLURM_CONF=$tmp/gapconf/slurm.conf SLURMD_NODENAME=gapnode FAKE_NVML_GPUS=3 FAKE_NVML_MINORS=2,0,1 maph "$@"
}
mapg 7 prolog 1
check "prolog, gres.conf File=/dev/nvidia[0,2]: Slurm's GPU 1 (/dev/nvidia2) is NVML's 0" \
	test "$(ls "$map" | tr '\n' ,) $(tr '\n' , <"$map/0")" = "0, 97,"
mapg 8 prolog 0,1
check "  Slurm's GPUs 0,1 are NVML's 1 and 0" \
	test "$(ls "$map" | tr '\n' ,) $(tr '\n' , <"$map/0") $(tr '\n' , <"$map/1")" = "0,1, 97,98, 98,"
mapg 7 epilog
mapg 8 epilog
check "  the epilogs remove them" test -z "$(ls "$map")"
SLURM_CONF=$tmp/gapconf/slurm.conf SLURMD_NODENAME=elsewhere FAKE_NVML_GPUS=3 FAKE_NVML_MINORS=2,0,1 maph 7 prolog 1
check "  a node gres.conf lists no File= for: Slurm's index as NVML's" test "$(ls "$map" | tr '\n' ,)" = "1,"
maph 7 epilog
# MIG devices Slurm gave (named by their UUIDs) go to the files dcgm-exporter
# reads for them, <parent GPU's NVML index>.<GPU instance id>
# (NVIDIA/dcgm-exporter since 4.5.3-4.8.2, internal/pkg/transformation/hpc.go:
# hpcMapper.Process keys a MIG device's metrics by GPU "." GPUInstanceID, and
# getGPUFiles reads the names <GPU_ID>.<GPU_INSTANCE_ID>). The stand-in NVML's
# default layout: GPU 0 has MIG devices of GPU instances 9 and 2, GPU 1 none.
mig9=MIG-11aa22bb-33cc-44dd-55ee-66ff77008811 mig2=MIG-99aa88bb-77cc-66dd-55ee-44ff33002211
FAKE_NVML_GPUS='' maph 9 prolog "$mig9,$mig2,1"
check "prolog, two MIG devices and a whole GPU: files 0.9, 0.2 and 1 ($(head -c 200 "$tmp/out"))" \
	test "$(ls "$map" | sort | tr '\n' ,) $(cat "$map/0.9" "$map/0.2" "$map/1" 2>/dev/null | tr '\n' ,)" = "0.2,0.9,1, 99,99,99,"
FAKE_NVML_GPUS='' maph 9 epilog
check "  the epilog removes the job from them" test -z "$(ls "$map")"
FAKE_NVML_GPUS='' maph 9 prolog MIG-00000000-0000-4000-8000-000000000000
check "  a MIG device NVML does not show: nothing mapped, a warning naming it, the prolog succeeds ($(head -c 200 "$tmp/out"))" \
	test "$(ls "$map" | wc -l) $(grep -c "warning: .*MIG device 'MIG-00000000-0000-4000-8000-000000000000'" "$tmp/out")" = "0 1"
FAKE_NVML_GPUS='' maph 9 epilog
# Or by Slurm's index of a gres.conf MultipleFiles= line (a MIG device: its
# parent /dev/nvidiaN and its capability files), whose GPU instance the
# driver's mig-minors file names ("gpu0/gi9/access 84").
mkdir -p "$tmp/migconf"
printf '%s\n' 'NodeName=mignode Name=gpu File=/dev/nvidia1' \
	'NodeName=mignode Name=gpu Type=1g.18gb MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap84,/dev/nvidia-caps/nvidia-cap85' \
	>"$tmp/migconf/gres.conf"
printf '%s\n' 'config 1' 'monitor 2' 'gpu0/gi2/access 21' 'gpu0/gi2/ci0/access 22' 'gpu0/gi9/access 84' \
	'gpu0/gi9/ci0/access 85' >"$tmp/migconf/mig-minors"
mapm() { SLURM_CONF=$tmp/migconf/slurm.conf SLURMD_NODENAME=mignode FAKE_NVML_GPUS='' maph "$@"; }
GPUSHARE_MIG_MINORS=$tmp/migconf/mig-minors mapm 9 prolog 0,1
check "prolog, Slurm's GPU 0 (/dev/nvidia1) and 1 (a MIG device of GPU 0, instance 9): files 1 and 0.9 ($(head -c 200 "$tmp/out"))" \
	test "$(ls "$map" | sort | tr '\n' ,)" = "0.9,1,"
mapm 9 epilog
GPUSHARE_MIG_MINORS=$tmp/migconf/none mapm 9 prolog 1
check "  its instance unknown to the driver: nothing mapped, a warning naming it ($(head -c 250 "$tmp/out"))" \
	test "$(ls "$map" | wc -l) $(grep -c "warning: .*Slurm's GPU 1 is a MIG device of gres.conf" "$tmp/out")" = "0 1"
mapm 9 epilog
# Include lines followed as Slurm follows them (src/common/parse_config.c,
# _parse_include_directive: "include" in any case, a relative name from the
# including file's directory), loops and missing files refused by name.
mkdir -p "$tmp/incconf/gres.d"
printf '%s\n' 'AutoDetect=off' 'include gres.d/nodes.conf' >"$tmp/incconf/gres.conf"
printf '%s\n' '# ours, from gres.d/' 'Include gpus.conf' >"$tmp/incconf/gres.d/nodes.conf"
printf '%s\n' 'NodeName=gapnode Name=gpu File=/dev/nvidia[0,2]' >"$tmp/incconf/gres.d/gpus.conf"
mapi() {
	SLURM_CONF=$tmp/incconf/slurm.conf SLURMD_NODENAME=gapnode FAKE_NVML_GPUS=3 FAKE_NVML_MINORS=2,0,1 maph "$@"
}
mapi 7 prolog 1
check "prolog, File=/dev/nvidia[0,2] through two Include lines: Slurm's GPU 1 is NVML's 0 ($(head -c 200 "$tmp/out"))" \
	test "$(ls "$map" | tr '\n' ,) $(tr '\n' , <"$map/0" 2>/dev/null)" = "0, 97,"
mapi 7 epilog
echo 'Include ../gres.conf' >>"$tmp/incconf/gres.d/gpus.conf"
mapi 7 prolog 1
check "  an Include loop: refused by name, nothing mapped, the prolog still succeeds ($(head -c 300 "$tmp/out"))" \
	test "$(grep -c "gres.d/gpus.conf' line 2: Include '.*/gres.d/../gres.conf' is a loop" "$tmp/out") $(ls "$map" | wc -l)" = "1 0"
printf '%s\n' 'NodeName=gapnode Name=gpu File=/dev/nvidia[0,2]' 'include missing.conf' >"$tmp/incconf/gres.d/gpus.conf"
mapi 7 prolog 1
check "  an Include of a missing file: named, with the line that includes it ($(head -c 300 "$tmp/out"))" \
	test "$(grep -c "gres.d/gpus.conf' line 2: Include '.*/gres.d/missing.conf': No such file" "$tmp/out") $(ls "$map" | wc -l)" = "1 0"
mapi 7 epilog

echo "== the epilog acts on a job's daemon as the job's user, never as root"
# The daemon's directory is the user's: what it holds is stopped and removed
# with the user's rights (root would follow whatever the user put there).
if [[ $(id -u) -eq 0 ]] && id nobody >/dev/null 2>&1; then
	nob=$(id -u nobody)
	nobg=$(id -g nobody)
	sd3=$(mktemp -d /tmp/gsn.XXXXXX)   # short: the daemon's pipe path is at most 80 characters
	chmod 755 "$sd3"
	hookn() {
		env -u SLURM_JOB_ID -u FAKE_MPS_START_LOG SLURM_JOB_ID="8$1" SLURM_JOB_UID="$nob" SLURM_JOB_GID="$nobg" \
			CUDA_VISIBLE_DEVICES=0 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 "$GPUSHARE" slurm "$2" --state-dir "$sd3/sd" \
			>"$tmp/out" 2>&1 || rc=$?
	}
	rc=0
	hookn 1 prolog
	base=$(ls -d "$sd3"/sd/mps-"$nob"-* 2>/dev/null | head -1 || true)
	[[ -n $base ]] || base=$sd3/none
	dpid=$(cat "$base/pipe/nvidia-cuda-mps-control.pid" 2>/dev/null || echo 0)
	check "prolog for uid $nob: its daemon runs as that user" \
		test "$rc $(stat -c %u "/proc/$dpid" 2>/dev/null)" = "0 $nob"
	# A directory of root's inside the user's log directory: the user cannot
	# empty it, root could.
	mkdir -m 700 "$base/log/root-dir"
	touch "$base/log/root-dir/file"
	rc=0
	hookn 1 epilog
	check "epilog: the daemon stopped (exit $rc: $(head -c 200 "$tmp/out"))" \
		bash -c "[[ $rc -eq 0 ]] && grep -q 'job 81: 1 MPS daemon stopped' '$tmp/out'"
	gone() { ! alive_pid "$1"; }
	check "  and is gone" gone "$dpid"
	check "  as the user: root's directory in the user's is still there, the pipe directory gone" \
		bash -c "[[ -e '$base/log/root-dir/file' && ! -e '$base/pipe' ]]"
	rc=0
	env -u SLURM_JOB_ID SLURM_JOB_ID=89 SLURM_JOB_UID=12ab SLURM_JOB_GID=0 CUDA_VISIBLE_DEVICES=0 \
		CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 "$GPUSHARE" slurm prolog --state-dir "$sd3/sd" >"$tmp/out" 2>&1 || rc=$?
	check "a garbled SLURM_JOB_UID: refused (exit $rc), never read as uid 0" \
		bash -c "[[ $rc -ne 0 ]] && grep -q \"SLURM_JOB_UID='12ab' is not a number\" '$tmp/out' && ! ls -d '$sd3'/sd/mps-0-* 2>/dev/null"
	rm -rf "$sd3"
else
	echo "SKIP: the epilog as another user needs root and the user nobody"
fi

echo "== Prolog=/Epilog= in slurm.conf: two concurrent gres/mps jobs on one GPU"
touch "$tmp/hooks-on"
before=$(starts)
sr -n 1 --gres=gpu:1 true
check "a whole GPU: the prolog starts nothing" test "$rc $(starts)" = "0 $before"
check "  and says so" wait_for 50 0.1 grep -q "holds no gres/mps" "$tmp/hooks.log"
cat >"$tmp/app-wait.sh" <<'EOF'
#!/bin/bash
d=$(dirname "$0")
echo "job=$SLURM_JOB_ID pipe=$CUDA_MPS_PIPE_DIRECTORY pct=$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE" >"$d/up-$SLURM_JOB_ID"
for ((i = 0; i < 600; i++)); do [ -e "$d/go-$SLURM_JOB_ID" ] && exit 0; sleep 0.2; done
exit 1
EOF
chmod +x "$tmp/app-wait.sh"
rm -f "$tmp"/up-* "$tmp"/go-*
j1=$(sbatch --parsable -n 1 --gres=mps:50 -o "$tmp/j1.out" --wrap "srun $GPUSHARE exec -- $tmp/app-wait.sh")
j2=$(sbatch --parsable -n 1 --gres=mps:50 -o "$tmp/j2.out" --wrap "srun $GPUSHARE exec -- $tmp/app-wait.sh")
both_up() { test -e "$tmp/up-$j1" && test -e "$tmp/up-$j2"; }
check "jobs $j1 and $j2 run at once" wait_for 600 0.1 both_up
both_up || { cat "$tmp/j1.out" "$tmp/j2.out" "$tmp/hooks.log"; }
prolog_pipe=$sd/mps-$(id -u)-$uuid0/pipe
check "  one daemon, started by the prolog" test "$(($(starts) - before)) $(daemons_alive)" = "1 1"
check "  both joined it, at 50% each" test "$(cat "$tmp/up-$j1" "$tmp/up-$j2" | sed 's/^job=[0-9]* //' | sort -u)" = \
	"pipe=$prolog_pipe pct=50"
check "  exec said it joined the prolog's daemon" grep -q "started by gpushare slurm prolog" "$tmp/j1.out"
touch "$tmp/go-$j1"
check "job $j1 completed" test "$(slurm_wait_job "$j1" 60)" = COMPLETED
check "  its epilog kept the daemon for job $j2" wait_for 100 0.1 grep -q "job $j1: 0 MPS daemons stopped, 1 still used" "$tmp/hooks.log"
check "  the daemon runs" test "$(daemons_alive)" = 1
touch "$tmp/go-$j2"
check "job $j2 completed" test "$(slurm_wait_job "$j2" 60)" = COMPLETED
check "  the last epilog stopped the daemon" no_daemon_left
no_job_record() { test -z "$(ls "$1/jobs")"; } # read again at each try
check "  no job record left" wait_for 50 0.1 no_job_record "$sd"

echo "== scancel of a gres/mps job"
before=$(starts)
j3=$(sbatch --parsable -n 1 --gres=mps:30 -o "$tmp/j3.out" --wrap "srun $GPUSHARE exec -- $tmp/app-wait.sh")
check "job $j3 runs under the prolog's daemon" wait_for 600 0.1 test -e "$tmp/up-$j3"
check "  at 30%" grep -q "pipe=$prolog_pipe pct=30" "$tmp/up-$j3"
scancel "$j3"
check "scancel: the job ends" test "$(slurm_wait_job "$j3" 60)" = CANCELLED
check "  the epilog stopped the daemon" no_daemon_left
check "  no job record left" wait_for 50 0.1 no_job_record "$sd"
rm -f "$tmp/hooks-on"
slurm_stop

echo "== farm under --gres=shard:2"
export SLURM_TEST_SHARING=shard
if ! slurm_start 2; then
	fail "the private Slurm with gres/shard did not become idle"
	finish
fi
sr -n 1 --gres=shard:2 "$GPUSHARE" farm --dir "$tmp/f3" --slots 3 --range 1..2 -- true
check "--slots 3 above 2 shards on 1 GPU: exit 2, one line" \
	test "$rc $(own_lines) $(grep -c "above Slurm's gres/shard count: SLURM_SHARDS_ON_NODE=2 allows 2 slots per GPU" "$tmp/err")" = "2 1 1"
sr -n 1 --gres=shard:2 "$GPUSHARE" farm --dir "$tmp/f4" --slots 2 --range 1..4 -- true
check "--slots 2: exit 0" test "$rc" = 0
check "  the summary says it" grep -q "slurm: honoured gres/shard 2 (SLURM_SHARDS_ON_NODE); the shards bound" "$tmp/out"
sr -n 1 --gres=shard:2 "$GPUSHARE" farm --dir "$tmp/f5" --range 1..12 --json -- true
check "calibration within the shards: at most 2 slots" python3 -c '
import json, sys
run = json.load(open(sys.argv[1]))["run"]
assert run["slurm"].startswith("gres/shard 2"), run
assert all(c["slots"] <= 2 for c in run["calibration"]) and run["slots"] <= 2, run' "$tmp/out"
check "  daemons stopped" no_daemon_left

echo "== nothing left"
check "no daemon of this test alive" test "$(daemons_alive)" = 0
check "no program of this test alive" no_app_left
check "no exec job directory" test "$(job_entries)" = 0
finish "Slurm-native sharing"
