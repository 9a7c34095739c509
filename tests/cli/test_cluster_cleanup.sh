#!/usr/bin/env bash
# tests/cli/lib_cluster.sh leaves nothing behind, however a test ends (and
# starts three nodes as well as two): a
# start that fails stops what it started; cluster_stop ends what jobs leave
# running on the nodes (a job step, a process that escaped Slurm with
# setsid), removes the namespaces (so their links and bridge) and the
# directory, and may be called twice; and when the test's shell is SIGKILLed
# (no trap runs) the daemons and namespace holders die with it.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/cli/lib_cluster.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib_cluster.sh"

tmp=$(mktemp -d /tmp/gpushare-cluster-cleanup.XXXXXX)
chmod 755 "$tmp"
pids=()
# what the SIGKILLed shell left, should the check of it fail
killed_left() { [[ -s $tmp/info ]] && read -r _ _ _ rest <"$tmp/info" && echo "$rest"; }
cleanup() {
	local p d
	cluster_stop
	for p in $(killed_left || true); do kill -KILL "$p" 2>/dev/null || true; done
	if [[ -s $tmp/info ]]; then
		read -r d _ <"$tmp/info"
		[[ $d == /tmp/gpc.* ]] && rm -rf "$d"
	fi
	kill_pids
	rm -rf "$tmp"
}
trap cleanup EXIT
cluster_needed "cluster cleanup"
t_start=$(date +%s)
alive() { local s; s=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) && [[ $s != Z ]]; }
none_alive() {
	local p
	for p in "$@"; do alive "$p" && return 1; done
	return 0
}
# ns_pids ID...: processes whose network namespace is one of these
ns_pids() {
	# shellcheck disable=SC2012
	ls -l /proc/[0-9]*/ns/net 2>/dev/null | awk -v ids="$*" '
		BEGIN { n = split(ids, a, " "); for (i = 1; i <= n; i++) want[a[i]] = 1 }
		$NF in want { split($(NF - 2), p, "/"); print p[3] }'
}

echo "== a start that fails (slurmctld refuses its configuration) leaves nothing"
set +e
CLUSTER_CPUS=not-a-number CLUSTER_START_TIMEOUT=20 cluster_start 2 2>"$tmp/err"
rc=$?
set -e
check "cluster_start fails (rc $rc)" test "$rc" != 0
check "  and says so" grep -q "lib_cluster:" "$tmp/err"
check "  nothing of it left" cluster_check_clean

echo "== cluster_stop with work left on the nodes of a three-node cluster"
t0=$(date +%s)
if ! cluster_start 3; then
	fail "the three-node cluster did not become idle"
	finish
fi
ok "cluster idle in $(($(date +%s) - t0)) s ($CLUSTER_DIR)"
check "  three nodes, each its own host" test "$(cluster_exec ctl timeout 60 srun -N3 -n3 hostname | sort | tr '\n' ' ')" = "node1 node2 node3 "
ns_ids="${CLUSTER_NS_ID[*]}"
jid=$(cd "$tmp" && cluster_exec ctl sbatch --parsable -N3 -o "$tmp/job.out" --wrap "srun sleep 300")
cluster_exec ctl timeout 60 srun -w node3 -n1 bash -c "setsid sleep 301 </dev/null >/dev/null 2>&1 & echo \$! >$tmp/escaped"
running() { [[ $(cluster_exec ctl timeout 5 squeue -h -j "$jid" -o %T 2>/dev/null) == RUNNING ]]; }
check "a three-node job runs" wait_for 120 0.25 running
escaped=$(cat "$tmp/escaped")
check "a process escaped Slurm on node3 (pid $escaped, in node3's namespaces)" \
	test "$(readlink "/proc/$escaped/ns/net")" = "${CLUSTER_NS_ID[node3]}"
# the sleeps of this cluster's nodes: the job's (one per node) and the escaped one
sleeps() { pgrep -f "sleep 30[01]$" | while read -r p; do
	[[ " $ns_ids " == *" $(readlink "/proc/$p/ns/net" 2>/dev/null) "* ]] && echo "$p"
done || true; }
four_sleeps() { test "$(sleeps | wc -l)" -ge 4; }
check "  the job's sleeps and the escaped one run" wait_for 120 0.25 four_sleeps
stray=$(sleeps | tr '\n' ' ')
echo "   (sleeps: $stray)"
extra=$(cluster_extra_pids | wc -l)
check "cluster_extra_pids sees them ($extra processes)" test "$extra" -ge 4
t0=$(date +%s)
cluster_stop
echo "   (cluster_stop took $(($(date +%s) - t0)) s)"
# shellcheck disable=SC2086 # a list of pids
check "every one of them ended" none_alive $stray
check "nothing of the cluster left" cluster_check_clean
# shellcheck disable=SC2086 # a list of ids
check "  no process in its namespaces" test -z "$(ns_pids $ns_ids)"
cluster_stop
check "cluster_stop again: nothing to do, no error" cluster_check_clean

echo "== the test's shell is SIGKILLed: no trap runs"
# The shell writes what it started to info: directory, namespace ids, then pids.
bash -c '
	. "$1/lib_cluster.sh"
	cluster_start 1 || exit 1
	echo "$CLUSTER_DIR ${CLUSTER_NS_ID[ctl]} ${CLUSTER_NS_ID[node1]} ${CLUSTER_NS[*]} ${CLUSTER_DAEMONS[*]}" >"$2/info"
	kill -KILL $$' sh "$(dirname "${BASH_SOURCE[0]}")" "$tmp" >"$tmp/killed.out" 2>&1 &
pids+=($!)
wait "${pids[-1]}" || true
if [[ -s $tmp/info ]]; then
	read -r dir id0 id1 rest <"$tmp/info"
	# shellcheck disable=SC2086 # a list of pids
	check "its daemons and namespace holders die with it (PR_SET_PDEATHSIG)" wait_for 100 0.1 none_alive $rest
	ns_empty() { test -z "$(ns_pids "$@")"; }
	check "  its namespaces are left with no process" wait_for 100 0.1 ns_empty "$id0" "$id1"
	check "  and its directory is not mounted anywhere here" bash -c "! grep -qF ' $dir' /proc/self/mountinfo"
else
	fail "the cluster of the shell to kill did not start"
	cat "$tmp/killed.out"
fi

echo "   (whole test $(($(date +%s) - t_start)) s)"
finish "cluster cleanup"
