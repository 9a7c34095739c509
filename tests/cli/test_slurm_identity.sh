#!/usr/bin/env bash
# The identities `gpushare slurm prolog|epilog` read from Slurm's
# environment, by hand (no slurmd; the stand-in NVML and MPS control
# program): SLURM_JOB_ID, SLURM_JOB_UID and SLURM_JOB_GID are numbers
# (digits only) or refused, exit 2, never read as root; a second prolog of
# one job id with other GPUs stops the daemons the first one started; the
# epilog acts on no state directory the prolog would refuse.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_exec.sh"
# shellcheck source=tests/cli/lib_hooks.sh
. "$(dirname "$0")/lib_hooks.sh"

exec_setup
hook_state_dir i
cleanup_sd() {
	chmod 755 "$sd/s" 2>/dev/null || true
	hook_epilogs --state-dir "$sd/s" -- 71 72 73
	rm -rf "$sd"
}

# hook ACTION JOB [VAR=VALUE...]: a gres/mps job's hook, on GPU 0 unless
# CUDA_VISIBLE_DEVICES is given; rc and $tmp/out hold its exit and output.
hook() {
	local action=$1 job=$2
	shift 2
	rc=0
	env -u SLURM_JOB_ID -u SLURM_JOB_UID -u SLURM_JOB_GID SLURM_JOB_ID="$job" CUDA_VISIBLE_DEVICES=0 \
		CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 "$@" "$GPUSHARE" slurm "$action" --state-dir "$sd/s" \
		>"$tmp/out" 2>&1 || rc=$?
}
said() { head -c 300 "$tmp/out" | tr '\n' ' '; }
records() { ls "$sd/s/jobs" 2>/dev/null | wc -l; }

echo "== the job's user and group: required, digits only"
for v in unset "" +$me -1 4294967295 "$me " 0x10 12ab; do
	before=$(starts)
	if [[ $v == unset ]]; then
		hook prolog 71 SLURM_JOB_GID=$myg
	else
		hook prolog 71 SLURM_JOB_UID="$v" SLURM_JOB_GID=$myg
	fi
	check "SLURM_JOB_UID '$v': exit 2, one line naming it, no daemon, no record ($(said))" \
		test "$rc $(wc -l <"$tmp/out") $(grep -c 'SLURM_JOB_UID' "$tmp/out") $(($(starts) - before)) $(records)" = \
		"2 1 1 0 0"
done
hook prolog 71 SLURM_JOB_UID=$me
check "SLURM_JOB_GID unset: exit 2 ($(said))" \
	test "$rc $(grep -c 'SLURM_JOB_GID is not set' "$tmp/out") $(records)" = "2 1 0"
hook prolog 71 SLURM_JOB_UID=$me SLURM_JOB_GID=+$myg
check "SLURM_JOB_GID '+$myg': exit 2 ($(said))" test "$rc $(records)" = "2 0"

echo "== the job id: a number"
for v in .1 . .. 1.5 +3 -3 1_2 " 7" 4294967296; do
	hook prolog "$v" SLURM_JOB_UID=$me SLURM_JOB_GID=$myg
	check "SLURM_JOB_ID '$v': exit 2, one line ($(said))" \
		test "$rc $(wc -l <"$tmp/out") $(grep -c "SLURM_JOB_ID" "$tmp/out") $(records)" = "2 1 1 0"
	hook epilog "$v" SLURM_JOB_UID=$me SLURM_JOB_GID=$myg
	check "  its epilog too" test "$rc" = 2
done

echo "== a second prolog of one job id with another GPU"
before=$(starts)
hook prolog 72 SLURM_JOB_UID=$me SLURM_JOB_GID=$myg
check "the first: a daemon on GPU 0 ($(said))" test "$rc $(($(starts) - before)) $(daemons_alive)" = "0 1 1"
first=$(tail -1 "$tmp/starts" | cut -d' ' -f1)
hook prolog 72 SLURM_JOB_UID=$me SLURM_JOB_GID=$myg CUDA_VISIBLE_DEVICES=1
check "the second, on GPU 1: started there ($(said))" test "$rc $(($(starts) - before))" = "0 2"
gone() { ! alive_pid "$1"; }
check "  the first daemon (GPU 0, no longer the job's) stopped" wait_for 100 0.1 gone "$first"
check "  one daemon runs, one record" test "$(daemons_alive) $(records)" = "1 1"
hook epilog 72 SLURM_JOB_UID=$me SLURM_JOB_GID=$myg
check "the epilog stops the second ($(said))" test "$rc $(grep -c '1 MPS daemon stopped' "$tmp/out")" = "0 1"
check "  no daemon left" no_daemon_left
# Another job still using the first GPU's daemon keeps it.
hook prolog 73 SLURM_JOB_UID=$me SLURM_JOB_GID=$myg
hook prolog 72 SLURM_JOB_UID=$me SLURM_JOB_GID=$myg
shared=$(tail -1 "$tmp/starts" | cut -d' ' -f1)
hook prolog 72 SLURM_JOB_UID=$me SLURM_JOB_GID=$myg CUDA_VISIBLE_DEVICES=1
check "a daemon job 73 still uses is kept" alive_pid "$shared"
hook epilog 72 SLURM_JOB_UID=$me SLURM_JOB_GID=$myg
hook epilog 73 SLURM_JOB_UID=$me SLURM_JOB_GID=$myg
check "  both epilogs: no daemon left" no_daemon_left

echo "== the epilog refuses a state directory others may write"
hook prolog 71 SLURM_JOB_UID=$me SLURM_JOB_GID=$myg
dpid=$(tail -1 "$tmp/starts" | cut -d' ' -f1)
chmod 777 "$sd/s"
hook epilog 71 SLURM_JOB_UID=$me SLURM_JOB_GID=$myg
check "world-writable: exit 6, one line, nothing stopped ($(said))" \
	test "$rc $(wc -l <"$tmp/out") $(grep -c 'writable by it alone' "$tmp/out") $(records)" = "6 1 1 1"
check "  the daemon still runs" alive_pid "$dpid"
chmod 755 "$sd/s"
hook epilog 71 SLURM_JOB_UID=$me SLURM_JOB_GID=$myg
check "made safe again: the epilog stops it ($(said))" test "$rc $(records)" = "0 0"
check "  no daemon left" no_daemon_left

finish "slurm hooks: identities"
