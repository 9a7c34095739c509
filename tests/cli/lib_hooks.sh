# shellcheck shell=bash disable=SC2034,SC2154 # set here for the test; $tmp and $GPUSHARE are the test's
# What the tests of the Slurm hooks by hand (no slurmd) share, sourced after
# lib.sh and lib_exec.sh (exec_setup done):
#   hook_state_dir X     $sd, a fresh state directory /tmp/gsX.XXXXXX (short:
#                        a daemon's pipe path is at most 80 characters) that
#                        other users may enter; $me and $myg, our user and
#                        group; the test's cleanup_sd runs at exit
#                        (EXEC_CLEANUP_MORE), before exec_cleanup's own
#   hook_epilogs [OPTION... --] JOB...
#                        each job's `gpushare slurm epilog` as this user, with
#                        the options: stops what a failed check left
#                        running; never fails

hook_state_dir() {
	me=$(id -u)
	myg=$(id -g)
	sd=$(mktemp -d "/tmp/gs$1.XXXXXX")
	chmod 755 "$sd"
	EXEC_CLEANUP_MORE=cleanup_sd
}

hook_epilogs() {
	local opts=() j
	if [[ " $* " == *" -- "* ]]; then
		while [[ $1 != -- ]]; do
			opts+=("$1")
			shift
		done
		shift
	fi
	for j in "$@"; do
		env SLURM_JOB_ID="$j" SLURM_JOB_UID="$me" SLURM_JOB_GID="$myg" "$GPUSHARE" slurm epilog "${opts[@]}" \
			>/dev/null 2>&1 || true
	done
}
