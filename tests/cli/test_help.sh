#!/usr/bin/env bash
# End-to-end test of the command line's help and dispatch: `gpushare --help`,
# `gpushare help <cmd>`, `<cmd> --help` and `<cmd> -h` for every command of
# the dispatch table (read from `gpushare --help`, so a new command is
# covered without editing this file), usage errors of the dispatcher,
# `gpushare version`, and that docs/cli.md's exit status table and cli/cli.h's
# enum cli_exit list the same statuses under the same names.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?set by ctest}" "${GPUSHARE_SOURCE_DIR:?set by ctest}"
SRC=$GPUSHARE_SOURCE_DIR
tmp=$(mktemp -d /tmp/gpushare-help-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# Help must not need a driver, a daemon or a private directory.
export GPUSHARE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 GPUSHARE_CUDA_LIBRARY=/nonexistent/libcuda.so.1
export GPUSHARE_MPS_CONTROL=/nonexistent/nvidia-cuda-mps-control
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY

echo "== gpushare --help"
for form in --help -h help; do
	run "$form"
	check "gpushare $form: exit 0, nothing on stderr (got $rc)" test "$rc" -eq 0 -a ! -s "$tmp/err"
	check "gpushare $form: usage on stdout" grep -q "^usage: gpushare " "$tmp/out"
	cp "$tmp/out" "$tmp/top-$form"
done
check "gpushare -h and help print the same as --help" \
	bash -c "cmp -s '$tmp/top---help' '$tmp/top--h' && cmp -s '$tmp/top---help' '$tmp/top-help'"

# The commands: the indented lines after "Commands:" up to the blank line.
mapfile -t commands < <(awk '/^Commands:/ { on = 1; next } on && /^$/ { exit } on && /^  [a-z]/ { print $1 }' "$tmp/top---help")
echo "commands in the dispatch table: ${commands[*]}"
check "the command list is parsed (at least info, mps, bench, version)" \
	bash -c "printf '%s\n' ${commands[*]} | grep -qx info && printf '%s\n' ${commands[*]} | grep -qx mps \
		&& printf '%s\n' ${commands[*]} | grep -qx bench && printf '%s\n' ${commands[*]} | grep -qx version"

echo "== each command's help"
for cmd in "${commands[@]}"; do
	run "$cmd" --help
	check "$cmd --help: exit 0 (got $rc)" test "$rc" -eq 0
	check "$cmd --help: nothing on stderr" test ! -s "$tmp/err"
	check "$cmd --help: usage on stdout, naming the command" grep -q "^usage: gpushare $cmd\b" "$tmp/out"
	cp "$tmp/out" "$tmp/help-$cmd"
	run "$cmd" -h
	check "$cmd -h: exit 0, the same text" bash -c "test $rc -eq 0 -a ! -s '$tmp/err' && cmp -s '$tmp/out' '$tmp/help-$cmd'"
	run help "$cmd"
	check "help $cmd: exit 0, the same text" bash -c "test $rc -eq 0 -a ! -s '$tmp/err' && cmp -s '$tmp/out' '$tmp/help-$cmd'"
	check "docs/cli.md has a section for $cmd" grep -q "^## gpushare $cmd\$" "$SRC/docs/cli.md"
	# A help that cannot be written is an error, not a silent exit 0.
	if [[ -w /dev/full ]]; then
		set +e
		"$GPUSHARE" "$cmd" --help >/dev/full 2>"$tmp/err"
		rc=$?
		set -e
		check "$cmd --help >/dev/full: exit 11, one line on stderr (got $rc)" \
			test "$rc" -eq 11 -a "$(wc -l <"$tmp/err")" -eq 1
	fi
done

echo "== mps help"
for sub in start stop status set; do
	run mps "$sub" --help
	check "mps $sub --help: exit 0, the mps usage on stdout, nothing on stderr" \
		bash -c "test $rc -eq 0 -a ! -s '$tmp/err' && cmp -s '$tmp/out' '$tmp/help-mps'"
done
for opt in --pipe-dir --log-dir --timeout --json --gpus --thread-percentage --mem-limit --priority --force --log --server; do
	check "mps --help lists $opt" grep -q -- "$opt" "$tmp/help-mps"
done

echo "== usage errors of the dispatcher"
run
check "gpushare with no arguments: exit 2 (got $rc)" test "$rc" -eq 2
check "gpushare with no arguments: usage on stderr, nothing on stdout" \
	bash -c "grep -q '^usage: gpushare ' '$tmp/err' && test ! -s '$tmp/out'"
check "gpushare with no arguments: the same text as --help" cmp -s "$tmp/err" "$tmp/top---help"
for args in "nosuchcmd" "help nosuchcmd" "--bogus"; do
	# shellcheck disable=SC2086 # split on purpose
	run $args
	word=${args##* }
	check "gpushare $args: exit 2 (got $rc)" test "$rc" -eq 2
	check "gpushare $args: one line on stderr naming '$word', nothing on stdout" \
		bash -c "test \$(wc -l <'$tmp/err') -eq 1 -a ! -s '$tmp/out' && grep -qF \"'$word'\" '$tmp/err'"
	echo "   $(cat "$tmp/err")"
done

run nosuchcmd
check "an unknown command far from every command gets no guess" bash -c "! grep -q 'did you mean' '$tmp/err'"
for args in "benhc bench" "help rpeort report" "swep sweep" "pln plan"; do
	# shellcheck disable=SC2086 # split on purpose
	run ${args% *}
	check "gpushare ${args% *}: exit 2, 'did you mean '${args##* }'?'" \
		bash -c "test $rc -eq 2 && grep -qF \"did you mean '${args##* }'?\" '$tmp/err'"
done

echo "== an ambiguous option prefix is said to be one"
run bench --work 2
check "bench --work: exit 2 (got $rc)" test "$rc" -eq 2
check "bench --work: 'ambiguous', with --workers and --workload" \
	bash -c "grep -q \"option '--work' is ambiguous\" '$tmp/err' && grep -q -- --workers '$tmp/err' && grep -q -- --workload '$tmp/err'"
echo "   $(cat "$tmp/err")"
run sweep --work=2
check "sweep --work=2: ambiguous too (got: $(cat "$tmp/err"))" grep -q "option '--work' is ambiguous" "$tmp/err"
run bench --wrokers 2
check "bench --wrokers: still unknown, not ambiguous" \
	bash -c "test $rc -eq 2 && grep -q \"unknown option '--wrokers'\" '$tmp/err'"

echo "== version"
version=$(sed -n 's/^project(gpushare VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
check "the project version is read from CMakeLists.txt ($version)" test -n "$version"
run version
check "gpushare version: exit 0, prints 'gpushare $version'" \
	bash -c "test $rc -eq 0 -a ! -s '$tmp/err' && test \"\$(cat '$tmp/out')\" = 'gpushare $version'"
run --version
check "gpushare --version: the same" bash -c "test $rc -eq 0 && test \"\$(cat '$tmp/out')\" = 'gpushare $version'"
run version extra
check "gpushare version extra: exit 2, one line naming 'extra'" \
	bash -c "test $rc -eq 2 -a \$(wc -l <'$tmp/err') -eq 1 && grep -qF \"'extra'\" '$tmp/err'"

echo "== exit statuses: docs/cli.md and cli/cli.h list the same"
# cli/cli.h: "EXIT_NAME = N," inside enum cli_exit.
awk '/^enum cli_exit/ { on = 1; next } on && /^};/ { exit }
	on && match($0, /EXIT_[A-Z_]+ *= *[0-9]+/) { s = substr($0, RSTART, RLENGTH); gsub(/ /, "", s); split(s, a, "="); print a[2], a[1] }' \
	"$SRC/cli/cli.h" | sort -n >"$tmp/header"
# docs/cli.md: the rows "| N | `EXIT_NAME` | ..." of the table under "## Exit statuses".
awk '/^## Exit statuses$/ { on = 1; next } on && /^## / { exit }
	on && /^\| *[0-9]+ *\| *`EXIT_[A-Z_]+`/ { split($0, f, "|"); n = f[2]; name = f[3]; gsub(/[ `]/, "", n); gsub(/[ `]/, "", name); print n, name }' \
	"$SRC/docs/cli.md" | sort -n >"$tmp/doc"
echo "   cli/cli.h:   $(tr '\n' ' ' <"$tmp/header")"
echo "   docs/cli.md: $(tr '\n' ' ' <"$tmp/doc")"
check "cli/cli.h lists at least 0, 1, 2 and 130" \
	bash -c "grep -qx '0 EXIT_OK' '$tmp/header' && grep -qx '2 EXIT_USAGE' '$tmp/header' && grep -q '^130 ' '$tmp/header'"
missing_doc=$(comm -23 <(sort "$tmp/header") <(sort "$tmp/doc") | tr '\n' ',')
missing_hdr=$(comm -13 <(sort "$tmp/header") <(sort "$tmp/doc") | tr '\n' ',')
check "every status of cli/cli.h is in docs/cli.md's table${missing_doc:+ (missing: $missing_doc)}" test -z "$missing_doc"
check "every status of docs/cli.md's table is in cli/cli.h${missing_hdr:+ (not in cli.h: $missing_hdr)}" test -z "$missing_hdr"
check "no status number is listed twice in docs/cli.md" test -z "$(cut -d' ' -f1 "$tmp/doc" | uniq -d)"

finish help
