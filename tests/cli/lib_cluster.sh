# shellcheck shell=bash
# A private Slurm cluster of several nodes on one machine, for end-to-end
# tests (sourced, not a test itself) and for trying gpushare by hand:
# slurmctld on a head node "ctl" and one slurmd on each of node1..nodeN, each
# node in network, UTS and mount namespaces of its own: its own host name,
# its own address (10.83.0.1 for ctl, 10.83.0.1X for nodeX) on a bridge that
# lives inside the head's namespace (nothing is added to the machine's own
# network: no link, no address, no route), its own munged (one key for all),
# its own node-local directory and fake GPUs (char devices) as gres gpu, mps
# and shard. Files outside the node-local directory are shared, as on a
# cluster with a shared file system. Nothing is written under /etc or /run.
#
#   cluster_available           true when every tool it needs exists (Slurm,
#                               munge, unshare, nsenter, setpriv, ip) and
#                               namespaces can be made (root)
#   cluster_needed WHAT         unless cluster_available: a missing tool (a
#                               failure under CI=true, lib.sh) and the end of
#                               the test WHAT
#   cluster_start N [NGPUS]     start it: N nodes (1..9, default 2) of NGPUS
#                               fake GPUs (default 2); sets CLUSTER_DIR and
#                               CLUSTER_NODES, exports SLURM_CONF and
#                               CLUSTER_LOCAL. Returns 1, with everything it
#                               started stopped, when the nodes are not all
#                               idle within CLUSTER_START_TIMEOUT s (default 60)
#   cluster_stop                stop everything it started, by pid: slurmd,
#                               slurmctld, munged, then whatever still runs
#                               in the cluster's namespaces (job steps, ranks,
#                               daemons they started), the namespaces (with
#                               their links and bridge) and CLUSTER_DIR;
#                               idempotent, for an EXIT trap
#   cluster_exec NODE CMD...    run CMD on NODE (ctl or nodeX): in its
#                               namespaces, in the current directory, with
#                               this environment. Slurm's clients (srun,
#                               sbatch, squeue, scancel) run on ctl: the
#                               machine's own namespace cannot reach the nodes
#   cluster_local NODE          NODE's node-local directory as seen from here;
#                               the node itself sees it at $CLUSTER_LOCAL
#                               (e.g. XDG_RUNTIME_DIR=$CLUSTER_LOCAL/xdg, made
#                               0700 on every node, is node-local)
#   cluster_wait_job JID [S]    wait (bounded, default 60 s) until a batch job
#                               has ended; prints its final state
#   cluster_pids [NODE...]      pids of the processes in the nodes'
#                               namespaces (default: all nodes and ctl)
#   cluster_extra_pids [NODE...]  those the cluster did not start itself (job
#                               steps, ranks, what they left; default: every
#                               compute node)
#   cluster_idle_nodes [S]      wait (bounded) until there are none
#   cluster_left                pids still in any namespace this cluster made
#   cluster_check_clean         after cluster_stop: nothing of the cluster is
#                               left (processes, namespaces, links, mounts,
#                               directory); says what is
#   cluster_report [JID...]     Slurm's word on the nodes and those jobs (state,
#                               reason) and the daemons' last log lines: for a
#                               check that failed
#   cluster_job_gpus JID...     Slurm's word on where jobs run, while they do:
#                               "JOBID NODE GPU" for each GPU `scontrol -d show
#                               job` says each job (each task of an array)
#                               holds on each node (GRES=...(IDX:1-2))
#   cluster_opened_outside ALLOC LOG   the lines of LOG, the stand-in
#                               driver's record of the GPUs processes opened
#                               (FAKE_CUDA_OPEN_LOG, tests/helpers/
#                               libfakecuda.c), of a job ALLOC (what
#                               cluster_job_gpus printed) names, on a GPU
#                               ALLOC does not give that job on that node
#
# Settings read by cluster_start: CLUSTER_CPUS (CPUs per node, default 8),
# CLUSTER_START_TIMEOUT (s, default 60), CLUSTER_CONF_EXTRA (more slurm.conf
# lines, e.g. Prolog= and Epilog=), CLUSTER_GRES_EXTRA (more GresTypes, e.g.
# "shard" on a cluster of mps nodes), CLUSTER_CONF_HOOK (a function run
# once slurm.conf and gres.conf are written, before any daemon starts: it
# may replace them; failing, the start fails) and CLUSTER_SHARING, the sharing gres
# of node1, node2, ... in turn (cycled): "mps" (the default: gres/mps, 100 per
# GPU, Flags=all_sharing), "shard" (gres/shard, 4 per GPU) or "none". Slurm
# 22.05 does not mix them: with mps and shard on one node --gres=mps:50 gave
# CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=625, and with shard anywhere in GresTypes
# it gave no CUDA_VISIBLE_DEVICES; a test of both starts one cluster for each.
#
# The layout of CLUSTER_DIR (a short /tmp path: munge's and slurmd's sockets
# are AF_UNIX paths): slurm.conf and gres.conf, log/ (every daemon's log),
# nodes/NODE/local (bind-mounted at CLUSTER_LOCAL = CLUSTER_DIR/local in
# NODE's mount namespace: munge/, spool/, dev/gpu*, xdg/), state/ (the
# controller's). The nodes' GPUs are char devices of major 195 (Slurm's
# File= must name char devices, else CUDA_VISIBLE_DEVICES comes out empty).
#
# Call cluster_start in the test's own shell (not in $(...)): the daemons are
# its children, so cluster_stop can `wait` for them, and they get SIGKILL
# should that shell die without its trap (PR_SET_PDEATHSIG, through setpriv).
# Typical use:
#   source "$GPUSHARE_SOURCE_DIR/tests/cli/lib_cluster.sh"
#   trap 'cluster_stop; rm -rf "$tmp"' EXIT
#   cluster_start 2 || { echo "FAIL: the cluster did not start"; exit 1; }
#   cluster_exec ctl srun -N2 -n4 hostname        # node1 node1 node2 node2
#   cluster_exec node2 ls "$CLUSTER_LOCAL"        # node2's own files
# By hand (as root): source it, cluster_start 2, then
#   cluster_exec ctl bash                         # a shell on the head node
# and cluster_stop when done.
#
# Settings follow the tested one-node recipe (tests/cli/lib_slurm.sh):
# MessageTimeout=10 (why not 2: see there), every wait bounded and checking
# that the daemons live, proctrack/linuxproc (no cgroups), config_overrides
# (8 CPUs per node on a small machine). Inside its namespaces the cluster
# uses Slurm's usual ports 6817 and 6818: they are private to it, so
# clusters of concurrent tests never collide.

CLUSTER_DIR=
CLUSTER_NODES=()
CLUSTER_LOCAL=
CLUSTER_SUBNET=10.83.0
declare -A CLUSTER_NS=()      # node -> pid of the process that holds its namespaces
declare -A CLUSTER_NS_ID=()   # node -> its network namespace (net:[inode])
CLUSTER_DAEMONS=()            # stop order: slurmd..., slurmctld, munged...

cluster_available() {
	local t
	for t in munged mungekey slurmctld slurmd sbatch srun squeue scontrol sinfo unshare nsenter setpriv ip; do
		command -v "$t" >/dev/null || return 1
	done
	unshare --net --uts --mount true 2>/dev/null
}

cluster_needed() {
	cluster_available && return 0
	missing_tool "slurm-wlm, munge, util-linux or iproute2 not installed (scripts/deps-test.txt), or no namespaces (not root)"
	finish "$1"
	exit 0
}

# _cluster_bg NODE CMD...: CMD on NODE in the background, killed should this
# shell die; its pid joins CLUSTER_DAEMONS (last started, first stopped).
_cluster_bg() {
	local node=$1
	shift
	setpriv --pdeathsig KILL nsenter -t "${CLUSTER_NS[$node]}" --net --uts --mount --root --wd="$CLUSTER_DIR" -- "$@" &
	CLUSTER_DAEMONS=($! "${CLUSTER_DAEMONS[@]}")
}

cluster_exec() {
	local node=$1
	shift
	[[ -n ${CLUSTER_NS[$node]-} ]] || { echo "cluster_exec: no node '$node'" >&2; return 2; }
	nsenter -t "${CLUSTER_NS[$node]}" --net --uts --mount --root --wd="$PWD" -- "$@"
}

cluster_local() { echo "$CLUSTER_DIR/nodes/$1/local"; }

# _cluster_ns NODE: a process holding fresh network, UTS and mount namespaces
# with host name NODE, loopback up and NODE's local directory at CLUSTER_LOCAL.
_cluster_ns() {
	local node=$1 pid i
	mkdir -p "$CLUSTER_DIR/nodes/$node/local"
	# shellcheck disable=SC2016
	setpriv --pdeathsig KILL unshare --net --uts --mount --propagation private -- sh -c '
		hostname "$1" && mount --bind "$2" "$3" && ip link set lo up && touch "$2/.ready" || exit 1
		exec sleep 100000' sh "$node" "$CLUSTER_DIR/nodes/$node/local" "$CLUSTER_LOCAL" \
		>>"$CLUSTER_DIR/log/ns-$node.out" 2>&1 &
	pid=$!
	CLUSTER_NS[$node]=$pid
	for ((i = 0; i < 100; i++)); do
		[[ -e $CLUSTER_DIR/nodes/$node/local/.ready ]] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	[[ -e $CLUSTER_DIR/nodes/$node/local/.ready ]] || {
		echo "lib_cluster: cannot make the namespaces of $node (unshare as root?); see $CLUSTER_DIR/log/ns-$node.out" >&2
		return 1
	}
	CLUSTER_NS_ID[$node]=$(readlink "/proc/$pid/ns/net")
}

# _cluster_node_setup NODE ADDR NGPUS: its link to the head's bridge, its
# address, its GPUs, its private directories and its munged.
_cluster_node_setup() {
	local node=$1 addr=$2 ngpus=$3 L i
	L=$(cluster_local "$node")
	chmod 755 "$L" # munged wants its socket directory (and parents) executable by all
	mkdir -p "$L/munge" "$L/spool" "$L/dev"
	mkdir -m 700 "$L/xdg"
	for ((i = 0; i < ngpus; i++)); do
		mknod "$L/dev/gpu$i" c 195 "$i" 2>/dev/null || ln -s /dev/null "$L/dev/gpu$i"
	done
	if [[ $node == ctl ]]; then
		cluster_exec ctl ip link add br0 type bridge &&
			cluster_exec ctl ip addr add "$addr/24" dev br0 &&
			cluster_exec ctl ip link set br0 up || return 1
	else
		cluster_exec ctl ip link add "v$node" type veth peer name eth0 netns "${CLUSTER_NS[$node]}" &&
			cluster_exec ctl ip link set "v$node" master br0 up &&
			cluster_exec "$node" ip addr add "$addr/24" dev eth0 &&
			cluster_exec "$node" ip link set eth0 up || return 1
	fi
	cp "$CLUSTER_DIR/munge.key" "$L/munge/munge.key"
	_cluster_bg "$node" munged -F --key-file="$CLUSTER_LOCAL/munge/munge.key" \
		--socket="$CLUSTER_LOCAL/munge/munge.sock" --pid-file="$CLUSTER_LOCAL/munge/munged.pid" \
		--seed-file="$CLUSTER_LOCAL/munge/munged.seed" --log-file="$CLUSTER_DIR/log/munged-$node.log" \
		>"$CLUSTER_DIR/log/munged-$node.out" 2>&1
	for ((i = 0; i < 200; i++)); do
		[[ -S $L/munge/munge.sock ]] && return 0
		kill -0 "${CLUSTER_DAEMONS[0]}" 2>/dev/null || break
		sleep 0.05
	done
	echo "lib_cluster: munged of $node did not start; see $CLUSTER_DIR/log" >&2
	return 1
}

_cluster_conf() {
	local nnodes=$1 ngpus=$2 ncpus=${CLUSTER_CPUS:-8} n last=$(($2 - 1)) D=$CLUSTER_DIR share gres files types
	cat >"$D/slurm.conf" <<EOF
ClusterName=gpushare-test
SlurmctldHost=ctl($CLUSTER_SUBNET.1)
SlurmctldPort=6817
SlurmdPort=6818
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$CLUSTER_LOCAL/munge/munge.sock
StateSaveLocation=$D/state
SlurmdSpoolDir=$CLUSTER_LOCAL/spool
SlurmctldPidFile=$CLUSTER_LOCAL/slurmctld.pid
SlurmdPidFile=$CLUSTER_LOCAL/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
MailProg=/bin/true
MessageTimeout=10
ReturnToService=2
SlurmdParameters=config_overrides
EOF
	types=gpu
	for ((n = 1; n <= nnodes; n++)); do
		share=$(_cluster_sharing "node$n")
		[[ $share == none || ,$types, == *,$share,* ]] || types+=,$share
	done
	[[ -z ${CLUSTER_GRES_EXTRA-} ]] || types+=,$CLUSTER_GRES_EXTRA
	echo "GresTypes=$types" >>"$D/slurm.conf"
	[[ -z ${CLUSTER_CONF_EXTRA-} ]] || printf '%s\n' "$CLUSTER_CONF_EXTRA" >>"$D/slurm.conf"
	echo "AutoDetect=off" >"$D/gres.conf"
	for ((n = 1; n <= nnodes; n++)); do
		share=$(_cluster_sharing "node$n")
		gres=gpu:$ngpus
		[[ $share == mps ]] && gres+=,mps:$((ngpus * 100))
		[[ $share == shard ]] && gres+=,shard:$((ngpus * 4))
		echo "NodeName=node$n NodeHostname=node$n NodeAddr=$CLUSTER_SUBNET.1$n CPUs=$ncpus RealMemory=2000" \
			"Gres=$gres State=UNKNOWN" >>"$D/slurm.conf"
		((ngpus > 0)) || continue
		files=$CLUSTER_LOCAL/dev/gpu[0-$last]
		echo "NodeName=node$n Name=gpu File=$files" >>"$D/gres.conf"
		[[ $share == mps ]] && echo "NodeName=node$n Name=mps Count=$((ngpus * 100)) File=$files Flags=all_sharing" >>"$D/gres.conf"
		[[ $share == shard ]] && echo "NodeName=node$n Name=shard Count=$((ngpus * 4)) File=$files" >>"$D/gres.conf"
	done
	echo "PartitionName=debug Nodes=node[1-$nnodes] Default=YES MaxTime=INFINITE State=UP" >>"$D/slurm.conf"
}

# _cluster_sharing NODE: the sharing gres of nodeX, the X-th item of
# CLUSTER_SHARING (cycled; default "mps").
_cluster_sharing() {
	local list x=${1#node}
	IFS=, read -ra list <<<"${CLUSTER_SHARING:-mps}"
	echo "${list[(x - 1) % ${#list[@]}]}"
}

# True when sinfo on ctl says all N nodes are idle.
_cluster_idle() {
	local out
	out=$(cluster_exec ctl timeout 5 sinfo -h -N -o '%N %T' 2>/dev/null) || return 1
	[[ $(grep -c ' idle$' <<<"$out") == "$1" ]]
}

cluster_start() {
	local nnodes=${1:-2} ngpus=${2:-2} secs=${CLUSTER_START_TIMEOUT:-60} n i D p
	((nnodes >= 1 && nnodes <= 9)) || { echo "cluster_start: 1 to 9 nodes" >&2; return 2; }
	_CLUSTER_LINKS=$(_cluster_links)
	D=$(mktemp -d /tmp/gpc.XXXXXX) || return 1
	_CLUSTER_WAS_DIR=$D
	CLUSTER_DIR=$D CLUSTER_LOCAL=$D/local CLUSTER_NODES=() CLUSTER_NS_ID=()
	chmod 755 "$D"
	mkdir -p "$D/log" "$D/state" "$D/local"
	mkdir -m 700 "$D/local/xdg"
	export CLUSTER_LOCAL SLURM_CONF=$D/slurm.conf
	mungekey --create --keyfile="$D/munge.key" || { cluster_stop; return 1; }
	for ((n = 1; n <= nnodes; n++)); do CLUSTER_NODES+=("node$n"); done
	_cluster_conf "$nnodes" "$ngpus"
	if [[ -n ${CLUSTER_CONF_HOOK:-} ]] && ! "$CLUSTER_CONF_HOOK"; then
		echo "lib_cluster: $CLUSTER_CONF_HOOK failed" >&2
		cluster_stop
		return 1
	fi
	if ! { _cluster_ns ctl && _cluster_node_setup ctl "$CLUSTER_SUBNET.1" 0; }; then
		cluster_stop
		return 1
	fi
	for n in "${CLUSTER_NODES[@]}"; do
		if ! { _cluster_ns "$n" && _cluster_node_setup "$n" "$CLUSTER_SUBNET.1${n#node}" "$ngpus"; }; then
			cluster_stop
			return 1
		fi
	done
	_cluster_bg ctl slurmctld -f "$SLURM_CONF" -D -i >"$D/log/slurmctld.out" 2>&1
	for n in "${CLUSTER_NODES[@]}"; do
		_cluster_bg "$n" slurmd -f "$SLURM_CONF" -D >"$D/log/slurmd-$n.out" 2>&1
	done
	for ((i = 0; i < secs * 4; i++)); do
		for p in "${CLUSTER_DAEMONS[@]}"; do
			kill -0 "$p" 2>/dev/null && continue
			echo "lib_cluster: a daemon (pid $p) died at start; see $D/log" >&2
			tail -n 5 "$D"/log/*.out >&2
			cluster_stop
			return 1
		done
		_cluster_idle "$nnodes" && return 0
		sleep 0.25
	done
	echo "lib_cluster: the nodes are not all idle after $secs s; see $D/log" >&2
	cluster_exec ctl timeout 5 sinfo -N >&2 || true
	cluster_stop
	return 1
}

# pids whose network namespace is one of NODES' (all when none is named)
_cluster_pids_in() {
	local ids=() n
	for n in "$@"; do [[ -n ${CLUSTER_NS_ID[$n]-} ]] && ids+=("${CLUSTER_NS_ID[$n]}"); done
	((${#ids[@]})) || return 0
	# one ls for all processes (a readlink each would take seconds on a busy machine)
	# shellcheck disable=SC2012
	ls -l /proc/[0-9]*/ns/net 2>/dev/null | awk -v ids="${ids[*]}" '
		BEGIN { n = split(ids, a, " "); for (i = 1; i <= n; i++) want[a[i]] = 1 }
		$NF in want { split($(NF - 2), p, "/"); print p[3] }'
}

cluster_pids() {
	if (($#)); then _cluster_pids_in "$@"; else _cluster_pids_in "${!CLUSTER_NS_ID[@]}"; fi
}
cluster_left() { _cluster_pids_in "${!CLUSTER_NS_ID[@]}"; }

# cluster_extra_pids [NODE...]: the processes on the nodes (default: every
# compute node) that the cluster itself did not start: job steps, ranks,
# whatever they left. Zombies do not count.
cluster_extra_pids() {
	local p st
	(($#)) || set -- "${CLUSTER_NODES[@]}"
	for p in $(_cluster_pids_in "$@"); do
		[[ " ${CLUSTER_NS[*]} ${CLUSTER_DAEMONS[*]} " == *" $p "* ]] && continue
		st=$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null) || continue
		[[ $st == Z ]] || echo "$p"
	done
}

# cluster_idle_nodes [S]: wait (bounded, default 30 s) until no process runs
# on any compute node but the cluster's own; lists them otherwise.
cluster_idle_nodes() {
	local i left secs=${1:-30}
	for ((i = 0; i < secs * 5; i++)); do
		left=$(cluster_extra_pids)
		[[ -z $left ]] && return 0
		sleep 0.2
	done
	echo "lib_cluster: still running on the nodes:" >&2
	ps -o pid,ppid,stat,args -p "$(paste -sd, <<<"$left")" >&2 || true
	return 1
}

# cluster_check_clean: after cluster_stop, nothing of the cluster is left: no
# process in its namespaces (so the namespaces, their links and the bridge
# are gone), no mount of its directory, the directory removed, and no link
# here named as the cluster's (br0, vnodeX) that was not here before
# cluster_start. Says what is left.
cluster_check_clean() {
	local bad=0 left
	left=$(cluster_left)
	[[ -z $left ]] || { echo "lib_cluster: processes left in the cluster's namespaces: $left" >&2; bad=1; }
	if [[ -n ${_CLUSTER_WAS_DIR-} ]]; then
		[[ ! -e $_CLUSTER_WAS_DIR ]] || { echo "lib_cluster: $_CLUSTER_WAS_DIR left" >&2; bad=1; }
		! grep -qF " $_CLUSTER_WAS_DIR" /proc/self/mountinfo ||
			{ echo "lib_cluster: a mount under $_CLUSTER_WAS_DIR left" >&2; bad=1; }
	fi
	[[ $(_cluster_links) == "${_CLUSTER_LINKS-}" ]] ||
		{ echo "lib_cluster: this namespace's links changed: $(_cluster_links)" >&2; bad=1; }
	return "$bad"
}
# the links here named as the cluster names its own (there should be none)
_cluster_links() {
	ip -o link show 2>/dev/null | awk -F': ' '$2 ~ /^(br0|vnode[0-9]+)(@|$)/ {print $2}' | sort | tr '\n' ' '
}

# _cluster_end PID: SIGTERM, up to 10 s (a zombie counts as gone), SIGKILL, wait.
_cluster_end() {
	local pid=$1 st i
	kill -TERM "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 0; }
	for ((i = 0; i < 100; i++)); do
		st=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || break
		[[ $st == Z ]] && break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

cluster_stop() {
	local pid n i left
	for pid in "${CLUSTER_DAEMONS[@]}"; do _cluster_end "$pid"; done
	CLUSTER_DAEMONS=()
	# What the daemons leave (job steps, ranks, the daemons ranks started):
	# every process in the cluster's namespaces, holders apart, by pid.
	for ((i = 0; i < 20; i++)); do
		left=$(_cluster_pids_in "${!CLUSTER_NS_ID[@]}" | grep -vxF -f <(printf '%s\n' "${CLUSTER_NS[@]}" 0) || true)
		[[ -z $left ]] && break
		for pid in $left; do kill -KILL "$pid" 2>/dev/null || true; done
		sleep 0.1
	done
	for n in "${!CLUSTER_NS[@]}"; do
		kill -KILL "${CLUSTER_NS[$n]}" 2>/dev/null || true
		wait "${CLUSTER_NS[$n]}" 2>/dev/null || true
	done
	# Wait (bounded) until the namespaces are gone: no process left in them.
	for ((i = 0; i < 50; i++)); do
		[[ -z $(cluster_left) ]] && break
		sleep 0.1
	done
	CLUSTER_NS=()
	[[ -n $CLUSTER_DIR && $CLUSTER_DIR == /tmp/gpc.* ]] && rm -rf "$CLUSTER_DIR"
	CLUSTER_DIR=
	CLUSTER_NODES=()
}

# cluster_report [JID...]: what Slurm says of the nodes and of those jobs
# (state and reason, as squeue and sinfo say), and the last lines of the
# controller's and the nodes' logs: printed when a check of a job fails.
cluster_report() {
	local n
	echo "   sinfo: $(cluster_exec ctl timeout 5 sinfo -h -N -o '%N %T %E' 2>&1 | tr '\n' ';')"
	echo "   squeue: $(cluster_exec ctl timeout 5 squeue -h -o '%i %T %r %N' 2>&1 | tr '\n' ';')"
	for n in "$@"; do
		echo "   job $n: $(cluster_exec ctl timeout 5 scontrol show job -o "$n" 2>&1 |
			grep -o 'JobState=[^ ]*\|Reason=[^ ]*\|ExitCode=[^ ]*\|NodeList=[^ ]*' | tr '\n' ' ')"
	done
	tail -n 15 "$CLUSTER_DIR/log/slurmctld.log" 2>/dev/null | sed 's/^/   slurmctld: /' || true
	for n in "${CLUSTER_NODES[@]}"; do
		tail -n 8 "$CLUSTER_DIR/log/slurmd-$n.log" 2>/dev/null | sed "s/^/   slurmd $n: /" || true
	done
}

cluster_wait_job() {
	local jid=$1 secs=${2:-60} st i
	for ((i = 0; i < secs * 4; i++)); do
		st=$(cluster_exec ctl timeout 5 scontrol show job -o "$jid" 2>/dev/null |
			grep -o 'JobState=[A-Z_]*' | cut -d= -f2)
		case $st in
		PENDING | RUNNING | CONFIGURING | COMPLETING | SUSPENDED | "") sleep 0.25 ;;
		*) echo "$st"; return 0 ;;
		esac
	done
	echo "TIMEOUT"
	return 1
}

cluster_job_gpus() {
	local j job nodes idx n i r a b c
	for j in "$@"; do cluster_exec ctl scontrol -d show job "$j" 2>/dev/null; done |
		sed -n 's/^JobId=\([0-9]*\) .*/job \1/p; s/^ *Nodes=\([^ ]*\) .*GRES=[^ ]*(IDX:\([0-9,-]*\)).*/gpus \1 \2/p' |
		while read -r a b c; do
			if [[ $a == job ]]; then
				job=$b
				continue
			fi
			nodes=$b idx=$c
			for n in $(cluster_exec ctl scontrol show hostnames "$nodes"); do
				IFS=, read -ra r <<<"$idx"
				for i in "${r[@]}"; do seq -f "$job $n %g" "${i%-*}" "${i#*-}"; done
			done
		done | sort -u
}

cluster_opened_outside() {
	awk 'NR == FNR { job[$1] = 1; ok[$1 " " $2 " " $3] = 1; next }
		{ split($2, j, "="); split($3, n, "="); split($4, g, "=") }
		(j[2] in job) && !((j[2] " " n[2] " " g[2]) in ok)' "$1" "$2"
}

