# shellcheck shell=bash
# Open MPI for end-to-end tests, sourced (not a test itself).
#
#   mpi_available              true when mpirun is Open MPI's
#   mpi_run [-x VAR]... ARGS   mpirun --oversubscribe (and --allow-run-as-root
#                              as root) with the variables named by -x passed
#                              through, plus those in MPI_PASS (a space-separated
#                              list of names) and, when set, SLURM_CONF,
#                              GPUSHARE_NVML_LIBRARY and FAKE_NVML_GPUS
#
# Example: MPI_PASS="FOO BAR" mpi_run -np 3 ./prog
# On a 2-core machine -np above 2 needs --oversubscribe; root needs
# --allow-run-as-root; the shared-memory transport's single-copy mechanism is
# turned off, as containers often forbid the ptrace it needs.

mpi_available() {
	command -v mpirun >/dev/null && mpirun --version 2>&1 | grep -q "Open MPI"
}

mpi_run() {
	local args=(--oversubscribe --mca btl_vader_single_copy_mechanism none) v
	((EUID == 0)) && args+=(--allow-run-as-root)
	for v in ${MPI_PASS-} SLURM_CONF GPUSHARE_NVML_LIBRARY FAKE_NVML_GPUS; do
		[[ -n ${!v+x} ]] && args+=(-x "$v")
	done
	mpirun "${args[@]}" "$@"
}
