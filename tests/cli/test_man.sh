#!/usr/bin/env bash
# End-to-end test of the man pages the build generates from --help
# (man/help2man.py): gpushare(1) and gpushare-<command>(1) exist for every
# command of `gpushare --help`, each names its command and mentions every
# option its --help lists, and each renders without a warning (groff). Also: the
# top-level --help lists every exit status of cli/cli.h, and no --help points
# into the source tree (an installed gpushare has none).
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?set by ctest}" "${GPUSHARE_SOURCE_DIR:?set by ctest}"
SRC=$GPUSHARE_SOURCE_DIR
MAN=$(dirname "$GPUSHARE")/man
tmp=$(mktemp -d /tmp/gpushare-man-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# The options a help text lists: every --word in it.
options() { grep -o -- '--[a-z][a-z0-9-]*' "$1" | sort -u; }
# A page's text with roff's escaped minus signs unescaped.
page_text() { sed 's/\\-/-/g; s/\\e/\\/g' "$1"; }
renderer=
if command -v groff >/dev/null; then
	renderer=groff
else
	missing_tool "rendering the man pages: groff not installed (Debian package groff-base)"
fi
renders() { # renders PAGE: groff formats it without a warning
	[[ -z $renderer ]] && return 0 # reported above
	groff -man -Tutf8 -ww -z "$1" 2>"$tmp/render.err" && test ! -s "$tmp/render.err"
}

"$GPUSHARE" --help >"$tmp/top"
mapfile -t commands < <(awk '/^Commands:/ { on = 1; next } on && /^$/ { exit } on { print $1 }' "$tmp/top")
check "commands listed by gpushare --help (${commands[*]})" test "${#commands[@]}" -ge 6

check "gpushare.1 exists" test -s "$MAN/gpushare.1"
page_text "$MAN/gpushare.1" >"$tmp/top.man"
for o in $(options "$tmp/top"); do
	check "gpushare(1) mentions $o" grep -q -- "$o" "$tmp/top.man"
done
for c in "${commands[@]}"; do
	check "gpushare(1) lists $c and names gpushare-$c(1)" \
		bash -c "grep -qx '$c' '$tmp/top.man' && grep -q '^\.BR gpushare-$c (1)' '$tmp/top.man'"
done
check "gpushare(1) renders cleanly" renders "$MAN/gpushare.1"

for c in "${commands[@]}"; do
	page=$MAN/gpushare-$c.1
	"$GPUSHARE" "$c" --help >"$tmp/help-$c"
	if [[ ! -s "$page" ]]; then
		fail "gpushare-$c.1 missing"
		continue
	fi
	ok "gpushare-$c.1 exists"
	page_text "$page" >"$tmp/$c.man"
	check "gpushare-$c(1): NAME names gpushare-$c" grep -q "^gpushare-$c - " "$tmp/$c.man"
	check "gpushare-$c(1): its SYNOPSIS is the usage" \
		grep -qF "$(head -1 "$tmp/help-$c" | sed 's/^usage: //')" "$tmp/$c.man"
	missing=()
	for o in $(options "$tmp/help-$c"); do
		grep -q -- "$o" "$tmp/$c.man" || missing+=("$o")
	done
	check "gpushare-$c(1) mentions every option of '$c --help' (${#missing[@]} missing${missing[*]:+: ${missing[*]}})" \
		test "${#missing[@]}" -eq 0
	check "gpushare-$c(1) renders cleanly" renders "$page"
	if grep -q "^Examples:$" "$tmp/help-$c"; then
		check "gpushare-$c(1): the help's examples are its EXAMPLES section" bash -c "grep -qx .SH.EXAMPLES '$tmp/$c.man' && grep -qF -- \"$(grep -A1 "^Examples:$" "$tmp/help-$c" | tail -1 | sed "s/^ *//")\" '$tmp/$c.man'"
	fi
	check "'$c --help' names no path of the source tree" bash -c "! grep -nE '(docs|python|include)/[a-z_]+\.[a-z]+' '$tmp/help-$c'"
done

echo "== gpushare --help lists every exit status of cli/cli.h"
awk '/^enum cli_exit/ { on = 1; next } on && /^};/ { exit }
	on && match($0, /= *[0-9]+/) { s = substr($0, RSTART, RLENGTH); gsub(/[= ]/, "", s); print s }' "$SRC/cli/cli.h" >"$tmp/statuses"
check "cli/cli.h has statuses ($(tr '\n' ' ' <"$tmp/statuses"))" test -s "$tmp/statuses"
while read -r s; do
	check "gpushare --help lists exit status $s" grep -qE "^  $s +[^ ]" "$tmp/top"
done <"$tmp/statuses"
check "gpushare --help names no path of the source tree" bash -c "! grep -nE '(docs|python|include)/[a-z_]+\.[a-z]+' '$tmp/top'"

finish man
