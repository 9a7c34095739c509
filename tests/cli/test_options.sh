#!/usr/bin/env bash
# The option tables of cli/ against docs/cli.md and the shell completion.
# For every command of `gpushare --complete commands` (the dispatch table):
#   - every long option of its table (`gpushare --complete options CMD`, the
#     source of its --help) is in its --help and in docs/cli.md's section
#     "## gpushare CMD", and every --option that section names is one of the
#     command's (or --help / --version; for bench and sweep a workload's);
#   - the exit statuses its --help lists are the rows of docs/cli.md's "Exit
#     statuses" table whose "returned by" column says "all" or names it.
# The hidden --doc prints the option tables docs/cli.md is written from.
# And the completion: bash's offers the values of an option (strategies,
# workloads, enum values, `farm status`), not file names; zsh's parses.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?set by ctest}" "${GPUSHARE_SOURCE_DIR:?set by ctest}"
SRC=$GPUSHARE_SOURCE_DIR
DOC=$SRC/docs/cli.md
tmp=$(mktemp -d /tmp/gpushare-options-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

export GPUSHARE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 GPUSHARE_CUDA_LIBRARY=/nonexistent/libcuda.so.1
export GPUSHARE_MPS_CONTROL=/nonexistent/nvidia-cuda-mps-control

mapfile -t commands < <("$GPUSHARE" --complete commands)
check "gpushare --complete commands lists the commands (${commands[*]})" test "${#commands[@]}" -ge 8

# docs/cli.md's section of a command: from "## gpushare CMD" to the next "## ".
section() { awk -v h="## gpushare $1" '$0 == h { on = 1; next } on && /^## / { exit } on' "$DOC"; }
# The long options of a command's tables (a subcommand's too: farm status).
table_options() {
	"$GPUSHARE" --complete options "$1" | awk '$1 ~ /^--/ { print $1 }'
	if [[ $1 == farm ]]; then "$GPUSHARE" --complete options "farm status" | awk '$1 ~ /^--/ { print $1 }'; fi
}
# The workloads' options, which bench and sweep take too (listed by bench --help).
"$GPUSHARE" bench --help >"$tmp/bench-help"
awk '/^Workloads and their options:$/ { on = 1; next } on && /^$/ { exit } on && /^      --/ { print $1 }' \
	"$tmp/bench-help" | sort -u >"$tmp/wl-options"
check "bench --help lists the workloads' options ($(wc -l <"$tmp/wl-options"))" test -s "$tmp/wl-options"
# The statuses of a --help: the "  N  meaning" lines after "Exit statuses:".
help_statuses() { awk '/^Exit statuses:$/ { on = 1; next } on && /^$/ { exit } on && /^  [0-9]+ / { print $1 }' "$1" | sort -n; }
# docs/cli.md's table: "| N | `NAME` | meaning | returned by |"; the rows for CMD.
doc_statuses() {
	awk -v c="$1" '/^## Exit statuses$/ { on = 1; next } on && /^## / { exit }
		on && /^\| *[0-9]+ *\|/ { split($0, f, "|"); n = f[2]; gsub(/ /, "", n); by = f[5]
			if (by ~ /(^| )all( |$)/ || by ~ ("`" c "[` ]")) print n }' "$DOC" | sort -n
}

for cmd in "${commands[@]}"; do
	echo "== $cmd"
	"$GPUSHARE" "$cmd" --help >"$tmp/help"
	section "$cmd" >"$tmp/doc"
	check "docs/cli.md has a section for $cmd" test -s "$tmp/doc"
	table_options "$cmd" | sort -u >"$tmp/table"
	missing_help=() missing_doc=() unknown=()
	while read -r o; do
		[[ $o == --help ]] && continue
		grep -q -- "$o\b" "$tmp/help" || missing_help+=("$o")
		grep -q -- "$o\b" "$tmp/doc" || missing_doc+=("$o")
	done <"$tmp/table"
	check "every option of $cmd's table is in its --help${missing_help[*]:+ (missing: ${missing_help[*]})}" \
		test "${#missing_help[@]}" -eq 0
	check "every option of $cmd --help is in docs/cli.md's section${missing_doc[*]:+ (missing: ${missing_doc[*]})}" \
		test "${#missing_doc[@]}" -eq 0
	for o in $(grep -o -- '--[a-z][a-z0-9-]*' "$tmp/doc" | sort -u); do
		# --gres: Slurm's option, which the help of exec names
		[[ $o == --help || $o == --version || $o == --gres ]] && continue
		grep -qx -- "$o" "$tmp/table" && continue
		[[ $cmd == bench || $cmd == sweep ]] && grep -qx -- "$o" "$tmp/wl-options" && continue
		unknown+=("$o")
	done
	check "every option docs/cli.md names for $cmd is one of its options${unknown[*]:+ (not options: ${unknown[*]})}" \
		test "${#unknown[@]}" -eq 0
	help_statuses "$tmp/help" >"$tmp/hs"
	doc_statuses "$cmd" >"$tmp/ds"
	check "$cmd --help lists exit statuses ($(tr '\n' ' ' <"$tmp/hs"))" test -s "$tmp/hs"
	check "$cmd: the exit statuses of --help are docs/cli.md's ($(tr '\n' ' ' <"$tmp/ds"))" cmp -s "$tmp/hs" "$tmp/ds"
done

echo "== --doc (docs/cli.md's option tables, scripts/gen_cli_doc.py)"
run --doc bench
check "--doc bench: a Markdown table with every option of bench" \
	bash -c "test $rc -eq 0 && head -1 '$tmp/out' | grep -qx '| option | meaning | default |' && grep -q '^| \`--workers N\` | .* | \`4\` |$' '$tmp/out'"
run --doc "farm status"
check "--doc 'farm status': its options" bash -c "test $rc -eq 0 && grep -q -- '--failed' '$tmp/out'"
run --doc workloads
check "--doc workloads: the workloads' options" bash -c "test $rc -eq 0 && grep -q '| \`matmul\` |' '$tmp/out'"
for bad in "nosuchcmd" ""; do
	# shellcheck disable=SC2086 # split on purpose
	run --doc $bad
	check "--doc $bad: exit 2, one line on stderr" bash -c "test $rc -eq 2 -a \$(wc -l <'$tmp/err') -eq 1"
done

echo "== --complete"
run --complete values bench --strategy
check "values of bench --strategy: a list of the strategies" \
	bash -c "test $rc -eq 0 && head -1 '$tmp/out' | grep -qx list && grep -qx mps-split '$tmp/out' && grep -qx timeslice '$tmp/out'"
run --complete values bench --workload
check "values of bench --workload: the workloads" bash -c "grep -qx matmul '$tmp/out' && grep -qx spin '$tmp/out'"
run --complete subcommands farm
check "subcommands of farm: status" grep -qx status "$tmp/out"
for bad in "values bench --nosuch" "options nosuchcmd" "bogus" ""; do
	# shellcheck disable=SC2086 # split on purpose
	run --complete $bad
	check "--complete $bad: exit 2, one line on stderr" bash -c "test $rc -eq 2 -a \$(wc -l <'$tmp/err') -eq 1"
done

echo "== bash completion"
if command -v bash >/dev/null; then
	cat >"$tmp/comp.sh" <<EOF
. "$SRC/completion/gpushare.bash"
t() { COMP_WORDS=("\$@"); COMP_CWORD=\$((\${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _gpushare; echo "\${COMPREPLY[*]}"; }
EOF
	comp() { bash -c ". '$tmp/comp.sh'; cd '$tmp'; t \"\$@\"" _ "$GPUSHARE" "$@"; }
	touch "$tmp/a-file"
	check "gpushare <TAB>: the commands" bash -c "[[ '$(comp "")' == *bench*sweep* ]]"
	check "bench --strategy <TAB>: strategies, not files" \
		bash -c "[[ '$(comp bench --strategy "")' == 'timeslice mps mps-split mig sequential streams' ]]"
	check "bench --strategy mps,ti<TAB>: the list's next item" bash -c "[[ '$(comp bench --strategy mps,ti)' == mps,timeslice ]]"
	check "bench --strategy mps,<TAB>: the strategies not yet in the list" \
		bash -c "[[ '$(comp bench --strategy mps,)' == 'mps,timeslice mps,mps-split mps,mig mps,sequential mps,streams' ]]"
	check "bench --strategy mps,timeslice,m<TAB>: not mps again" \
		bash -c "[[ '$(comp bench --strategy mps,timeslice,m)' == 'mps,timeslice,mps-split mps,timeslice,mig' ]]"
	check "bench --workload <TAB>: workloads" bash -c "[[ '$(comp bench --workload "")' == *matmul*transformer* ]]"
	check "bench --mode <TAB>: request job" bash -c "[[ '$(comp bench --mode "")' == 'request job' ]]"
	check "exec --bind <TAB>: round-robin block" bash -c "[[ '$(comp exec --bind "")' == 'round-robin block' ]]"
	check "farm --strategy <TAB>: the sharing strategies" bash -c "[[ '$(comp farm --strategy "")' == 'mps mps-split timeslice' ]]"
	check "farm <TAB>: status (and job files)" bash -c "[[ '$(comp farm "")' == *status*a-file* ]]"
	check "farm status --j<TAB>: --json" bash -c "[[ '$(comp farm status --j)' == --json ]]"
	check "mps <TAB>: its subcommands" bash -c "[[ '$(comp mps "")' == 'start stop status set' ]]"
	check "mps stop --<TAB>: the options of stop, not those of start" \
		bash -c "[[ '$(comp mps stop --)' == *--force* && '$(comp mps stop --)' != *--gpus* ]]"
	check "mps start --priority <TAB>: 0 1" bash -c "[[ '$(comp mps start --priority "")' == '0 1' ]]"
	check "bench --duration <TAB>: nothing (not file names)" bash -c "[[ -z '$(comp bench --duration "")' ]]"
	check "sweep --q<TAB>: --quiet" bash -c "[[ '$(comp sweep --q)' == --quiet ]]"
fi
if command -v zsh >/dev/null; then
	check "the zsh completion parses" zsh -n "$SRC/completion/_gpushare"
else
	missing_tool "checking the zsh completion: zsh not installed"
fi

finish options
