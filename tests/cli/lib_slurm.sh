# shellcheck shell=bash
# A private one-node Slurm for end-to-end tests, sourced (not a test itself):
# munged + slurmctld + slurmd on loopback under a fresh /tmp directory, with
# their own munge socket and free ports, and fake GPUs as gres (gpu and mps)
# so that Slurm sets CUDA_VISIBLE_DEVICES. Nothing is written under /etc.
#
#   slurm_available          true when munged, slurmctld, slurmd and sbatch exist
#   slurm_needed WHAT        unless slurm_available: a missing tool (a failure
#                            under CI=true, lib.sh) and the end of the test WHAT
#   slurm_start [NGPUS]      start it (default 2 GPUs; SLURM_TEST_CPUS CPUs,
#                            default 8 whatever the machine has); exports
#                            SLURM_CONF and sets SLURM_DIR; returns 1 (with
#                            everything it started stopped) when it is not
#                            idle within 10 s
#   slurm_stop               stop the daemons by pid, then remove SLURM_DIR;
#                            safe to call twice and from an EXIT trap
#   slurm_wait_job JID [S]   wait (bounded, default 30 s) until the batch job
#                            has ended; prints its final state
#   slurm_diag [JID]         print (to stderr, never failing) what explains a
#                            job that does not start or end: the nodes'
#                            states and reasons, the queue, the job, and the
#                            tails of the daemons' logs (removed by slurm_stop)
#
# Gres of another shape (the lines `gpushare plan --for slurm` writes):
# SLURM_TEST_GRES_TYPES (GresTypes=, default gpu,mps or gpu,shard), SLURM_TEST_NODE_GRES
# (the node's Gres=, default gpu:N,mps:N*100) and SLURM_TEST_GRES_CONF (a file
# whose lines replace the gpu and mps lines of gres.conf) when set.
#
# Call slurm_start in the test's own shell (not in $(...)): the daemons must
# be its children, so that slurm_stop can `wait` for them (a daemon whose
# parent has gone lingers as a zombie until PID 1 reaps it).
# Typical use:
#   source "$GPUSHARE_SOURCE_DIR/tests/cli/lib_slurm.sh"
#   trap 'slurm_stop; rm -rf "$tmp"' EXIT
#   slurm_start 2 || { echo "FAIL: slurm did not start"; exit 1; }
# Optional, read by slurm_start: SLURM_TEST_SHARING=shard configures gres/shard
# (8 per GPU) instead of gres/mps (Slurm 22.05 miscounts mps beside shard);
# SLURM_TEST_CONF_EXTRA holds more slurm.conf lines (e.g. Prolog=, Epilog=).
# Settings follow the tested recipe (every wait bounded and checking that
# the daemons still live; char devices for the fake GPUs), but for
# MessageTimeout: Slurm's own 10 s, not the recipe's 2. On a loaded machine
# (CI's CPU-hog pass) slurmd can take over 2 s to answer; the controller then
# marks the node not responding, requeues the batch job it was launching and
# leaves it pending for minutes (a 6 s SIGSTOP of slurmd reproduces it: over
# 150 s pending with 2, started at once with 10). A dead controller still
# fails fast: every client call here is wrapped in `timeout`.

SLURM_DIR=
SLURM_PIDS=()

slurm_available() {
	command -v munged >/dev/null && command -v mungekey >/dev/null && command -v slurmctld >/dev/null &&
		command -v slurmd >/dev/null && command -v sbatch >/dev/null
}

slurm_needed() {
	slurm_available && return 0
	missing_tool "slurm-wlm or munge not installed (scripts/deps-test.txt)"
	finish "$1"
	exit 0
}

_slurm_free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# One attempt with the given ports; 0 when the node is idle.
_slurm_try_start() {
	local ngpus=$1 ctld_port=$2 slurmd_port=$3 ncpus=${SLURM_TEST_CPUS:-8} i D
	local sharing=${SLURM_TEST_SHARING:-mps} count=$((ngpus * 100)) flags=" Flags=all_sharing"
	[[ $sharing == shard ]] && count=$((ngpus * 8)) flags=""
	D=$(mktemp -d /tmp/slurm-test.XXXXXX) || return 1
	SLURM_DIR=$D
	chmod 755 "$D" # munged wants its socket directory (and parents) executable by all
	mkdir -p "$D/munge" "$D/state" "$D/spool/testnode" "$D/log" "$D/dev"
	for ((i = 0; i < ngpus; i++)); do
		# gres File= must be a character device, else CUDA_VISIBLE_DEVICES is empty
		mknod "$D/dev/gpu$i" c 195 "$i" 2>/dev/null || ln -s /dev/null "$D/dev/gpu$i"
	done
	mungekey --create --keyfile="$D/munge/munge.key" || return 1
	munged -F --key-file="$D/munge/munge.key" --socket="$D/munge/munge.sock" \
		--pid-file="$D/munge/munged.pid" --seed-file="$D/munge/munged.seed" \
		--log-file="$D/munge/munged.log" >"$D/log/munged.out" 2>&1 &
	SLURM_PIDS=($!)
	for ((i = 0; i < 100; i++)); do [[ -S $D/munge/munge.sock ]] && break; sleep 0.02; done
	[[ -S $D/munge/munge.sock ]] || { echo "lib_slurm: munged did not start; see $D/log" >&2; return 1; }
	cat >"$D/slurm.conf" <<EOF
ClusterName=testcluster
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$D/munge/munge.sock
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool/%n
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd-%n.pid
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
GresTypes=${SLURM_TEST_GRES_TYPES:-gpu,$sharing}
${SLURM_TEST_CONF_EXTRA:-}
NodeName=testnode NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=$ncpus RealMemory=2000 Gres=${SLURM_TEST_NODE_GRES:-gpu:$ngpus,$sharing:$count} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
	if [[ -n ${SLURM_TEST_GRES_CONF:-} ]]; then
		{ echo AutoDetect=off; cat "$SLURM_TEST_GRES_CONF"; } >"$D/gres.conf"
	else
		cat >"$D/gres.conf" <<EOF
AutoDetect=off
NodeName=testnode Name=gpu File=$D/dev/gpu[0-$((ngpus - 1))]
NodeName=testnode Name=$sharing Count=$count File=$D/dev/gpu[0-$((ngpus - 1))]$flags
EOF
	fi
	export SLURM_CONF=$D/slurm.conf
	slurmctld -f "$SLURM_CONF" -D -i >"$D/log/slurmctld.out" 2>&1 &
	SLURM_PIDS=($! "${SLURM_PIDS[@]}")
	slurmd -f "$SLURM_CONF" -N testnode -D >"$D/log/slurmd.out" 2>&1 &
	SLURM_PIDS=($! "${SLURM_PIDS[@]}") # stop order: slurmd, slurmctld, munged
	for ((i = 0; i < 100; i++)); do
		kill -0 "${SLURM_PIDS[@]}" 2>/dev/null || return 1
		[[ $(timeout 3 sinfo -h -o %T 2>/dev/null) == idle ]] && return 0
		sleep 0.1
	done
	echo "lib_slurm: node not idle after 10 s; see $D/log" >&2
	return 1
}

slurm_start() {
	local ngpus=${1:-2}
	for _ in 1 2 3; do
		# Free ports, picked now; another fixture may take one first, so a
		# failed start is retried on new ones.
		if _slurm_try_start "$ngpus" "$(_slurm_free_port)" "$(_slurm_free_port)"; then
			return 0
		fi
		grep -h "Address already in use" "$SLURM_DIR"/log/*.out >&2 || true
		slurm_stop
	done
	return 1
}

slurm_stop() {
	local pid st i
	for pid in "${SLURM_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null || continue
		for ((i = 0; i < 100; i++)); do # at most 10 s each; a zombie counts as gone
			st=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || break
			[[ $st == Z ]] && break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	SLURM_PIDS=()
	[[ -n $SLURM_DIR && $SLURM_DIR == /tmp/slurm-test.* ]] && rm -rf "$SLURM_DIR"
	SLURM_DIR=
}

slurm_wait_job() {
	local jid=$1 secs=${2:-30} st i
	for ((i = 0; i < secs * 5; i++)); do
		st=$(timeout 3 scontrol show job -o "$jid" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2)
		case $st in
		PENDING | RUNNING | CONFIGURING | COMPLETING | "") sleep 0.2 ;;
		*) echo "$st"; return 0 ;;
		esac
	done
	echo "TIMEOUT"
	return 1
}

slurm_diag() {
	local jid=${1-} f
	{
		echo "--- slurm_diag ${jid:+(job $jid) }at $(date +%T.%N)"
		timeout 10 sinfo -N -o '%N %T %E' 2>&1 || true
		timeout 10 squeue -o '%i %T %r %M %N' 2>&1 || true
		[[ -n $jid ]] && { timeout 10 scontrol show job "$jid" 2>&1 || true; }
		for f in "$SLURM_DIR"/log/*.log; do
			[[ -f $f ]] || continue
			echo "--- tail of $f"
			tail -n 40 "$f" || true
		done
		echo "--- end of slurm_diag"
	} >&2
}
