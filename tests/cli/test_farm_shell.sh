#!/usr/bin/env bash
# Job lines are shell lines, as in GNU parallel: the same 50-line list (';',
# '|', '&&', redirections, variables, assignments, command substitution)
# under parallel and under gpushare farm gives each job the same exit status.
# Template arguments are quoted for the shell: a hostile value ('$(...)',
# backticks, ';', quotes) is printed, never run. --no-shell keeps the argv
# splitting; the dry run says how a COMMAND runs; a plain line keeps its
# signal and its refusal; a list given again on --resume keeps its mode.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/cli/lib_farm_env.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib_farm_env.sh"

: "${GPUSHARE:?set by ctest}"
tmp=$(mktemp -d /tmp/gpushare-fsh-XXXXXX)
trap 'pkill -KILL -f "$tmp/" 2>/dev/null || true; rm -rf "$tmp"' EXIT
farm_env_nodriver
F=(--strategy timeslice --slots 4 -q)

echo "== a 50-line list of shell lines: 43 meant to succeed, 7 to fail"
python3 - "$tmp/jobs50" <<'PY'
import sys
ok = [
    "sleep 0.1; echo ok {i}",
    "echo {i} a b | grep -q b",
    "ls /nonexistent-{i} 2>/dev/null || true",
    "test -n \"$HOME\" && echo \"$HOME\" >/dev/null",
    "FOO={i} sh -c 'test \"$FOO\" = {i}'",
    "x=$(echo {i}); test \"$x\" = {i}",
    "false || echo {i}",
    "cd / && test \"$(pwd)\" = /",
    "printf '%s\\n' \"a  {i}\" | wc -w | grep -qx 2",
    "/bin/echo plain {i}",
    "echo {i} >&2",
    "for n in 1 2; do test $n -le 2; done",
]
bad = [
    "echo bad {i} >&2; exit 3",
    "echo {i} | grep -q nothing-here",
    "FOO=1 sh -c 'exit $((FOO + 4))'",
    "x=$(echo 7); exit $x",
    "true && false",
    "sh -c 'exit 2'",
    "case {i} in none) ;; *) exit 4;; esac",
]
lines, b, o = [], 0, 0
for i in range(1, 51):
    if i % 7 == 3 and b < len(bad):
        lines.append(bad[b].format(i=i)); b += 1
    else:
        lines.append(ok[o % len(ok)].format(i=i)); o += 1
assert len(lines) == 50 and b == 7
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY
run farm --dir "$tmp/f50" "${F[@]}" "$tmp/jobs50"
check "gpushare: exit 8, 7 of the shard's 50 jobs failed (got $rc: $(head -c 300 "$tmp/err"))" \
	bash -c "test $rc = 8 && grep -q \"7 of the shard's 50 jobs failed\" '$tmp/err'"
journal "$tmp/f50" '
got = {r["job"]: (r["exit_code"] if r["exit_code"] is not None else -1) for r in recs}
open(sys.argv[1].replace("journal.jsonl", "../gpushare.status"), "w").write(
    "".join("%d %d\n" % (j, got[j]) for j in sorted(got)))'
if command -v parallel >/dev/null; then
	PARALLEL_SHELL=/bin/sh parallel --will-cite -j4 --joblog "$tmp/plog" -a "$tmp/jobs50" >/dev/null 2>&1 || true
	awk 'NR > 1 { print $1, $7 }' "$tmp/plog" | sort -n >"$tmp/parallel.status"
	check "GNU parallel and gpushare farm: the same exit status for each of the 50 jobs" \
		diff "$tmp/parallel.status" "$tmp/gpushare.status"
	check "  7 failed under parallel too" test "$(awk '$2 != 0' "$tmp/parallel.status" | wc -l)" = 7
else
	missing_tool "GNU parallel (the Debian package parallel): the job-file comparison"
fi
check "  the failed ones are the 7 meant to fail" bash -c "
test \"\$(awk '\$2 != 0 { print \$1 }' '$tmp/gpushare.status' | tr '\n' ' ')\" = '3 10 17 24 31 38 45 '"

echo "== the failure table: in job order, each line as written"
run farm status --failed "$tmp/f50"
check "farm status --failed: jobs 3, 10, ..., 45 in that order" bash -c "
test \"\$(awk '\$1 == \"failed\" { print \$2 }' '$tmp/out' | tr '\n' ' ')\" = '3 10 17 24 31 38 45 '"
check "  job 3's line as written, not /bin/sh -c '...'" grep -q " echo bad 3 >&2; exit 3$" "$tmp/out"
check "  and names --rerun-failed" grep -q "run the failed jobs again: gpushare farm --rerun-failed $tmp/f50" "$tmp/out"

echo "== template arguments are quoted for the shell: hostile values are printed, never run"
mkdir "$tmp/h"
cat >"$tmp/evil" <<EOF
\$(touch $tmp/pwned1)
\`touch $tmp/pwned2\`
a; touch $tmp/pwned3
it's "quoted" \\"
'; touch $tmp/pwned4; '
x\$(touch $tmp/pwned5)y
a\\nb
\$HOME *
 -n
EOF
run farm --dir "$tmp/t1" "${F[@]}" --args "$tmp/evil" -- "printf '%s\n' {} >$tmp/h/{#}"
check "exit 0 (got $rc: $(head -c 300 "$tmp/err"))" test "$rc" = 0
check "  nothing ran: no pwned file" bash -c "! ls '$tmp'/pwned* 2>/dev/null"
check "  each job printed its argument as written" python3 - "$tmp/evil" "$tmp/h" <<'PY'
import sys
args = open(sys.argv[1]).read().split("\n")[:-1]
for i, a in enumerate(args, 1):
    got = open("%s/%d" % (sys.argv[2], i)).read()
    assert got == a + "\n", (i, a, got)
PY
run farm --dir "$tmp/t2" "${F[@]}" --args "$tmp/evil" -- echo
check "no {}: the argument appended, quoted (exit $rc)" bash -c "test $rc = 0 && ! ls '$tmp'/pwned* 2>/dev/null &&
test \"\$(cat '$tmp/t2/out/1.1.out')\" = '\$(touch $tmp/pwned1)' && test \"\$(cat '$tmp/t2/out/5.1.out')\" = \"'; touch $tmp/pwned4; '\""
# The words after -- are one shell line, joined with spaces (as parallel
# joins them): printf's '%s\n' reaches the shell as %s\n.
run farm --dir "$tmp/t5" "${F[@]}" --range 1..1 -- printf '%s\n'
check "the words after -- are joined into one shell line, as in parallel" test "$(cat "$tmp/t5/out/1.1.out")" = "1n"
run farm --dir "$tmp/t3" "${F[@]}" --args "$tmp/evil" -- 'echo "{}"'
check "{} inside the template's own quotes: refused, exit 2 (got $rc)" bash -c "test $rc = 2 &&
grep -q 'inside double quotes' '$tmp/err' && ! ls '$tmp'/pwned* 2>/dev/null && test ! -e '$tmp/t3'"
run farm --dir "$tmp/t4" "${F[@]}" --range 1..3 -- "test {} -le 3 && echo {#}:{}"
check "--range: {} and {#} in a shell line (exit $rc)" bash -c "test $rc = 0 && test \"\$(cat '$tmp/t4/out/3.1.out')\" = 3:3"

echo "== --no-shell: words without a shell"
printf '%s\n' 'echo $HOME "a  b"' >"$tmp/jw"
run farm --dir "$tmp/w1" "${F[@]}" --no-shell "$tmp/jw"
check "--no-shell: \$HOME and the quoted blanks stay as written (exit $rc)" \
	bash -c "test $rc = 0 && test \"\$(cat '$tmp/w1/out/1.1.out')\" = '\$HOME a  b'"
printf '%s\n' 'echo a ; echo b' >"$tmp/jop"
run farm --dir "$tmp/w2" "${F[@]}" --no-shell "$tmp/jop"
check "--no-shell: an operator word refused, exit 2 (got $rc)" \
	bash -c "test $rc = 2 && grep -q \"';' is shell syntax, but --no-shell runs job lines without a shell\" '$tmp/err'"
run farm --dir "$tmp/w3" "${F[@]}" --shell --no-shell "$tmp/jop"
check "--shell with --no-shell: exit 2 (got $rc)" test "$rc" = 2
run farm --dir "$tmp/w4" "${F[@]}" "$tmp/jop"
check "the same line in the shell: two commands (exit $rc)" \
	bash -c "test $rc = 0 && test \"\$(tr '\n' ' ' <'$tmp/w4/out/1.1.out')\" = 'a b '"

echo "== the dry run shows what runs"
run farm --dir "$tmp/d1" --strategy timeslice --slots 2 --dry-run "$tmp/jobs50"
check "text: how a COMMAND runs, and job 3's line as written" bash -c "test $rc = 0 &&
grep -qx 'each COMMAND runs as: /bin/sh -c COMMAND' '$tmp/out' && grep -Eq '^ +2 +0 +1  echo 2 a b \\| grep -q b$' '$tmp/out' && grep -Eq '^ +3 +- +-  echo bad 3 >&2; exit 3$' '$tmp/out'"
run farm --dir "$tmp/d1" --strategy timeslice --slots 2 --dry-run --json "$tmp/jobs50"
check "--json: shell true, job 3's argv is /bin/sh -c LINE" python3 -c "
import json; d = json.load(open('$tmp/out'))
assert d['shell'] is True, d
assert d['job_list'][2]['argv'] == ['/bin/sh', '-c', 'echo bad 3 >&2; exit 3'], d['job_list'][2]"
run farm --dir "$tmp/d2" --strategy timeslice --dry-run --no-shell "$tmp/jw"
check "--no-shell: said, and the words shown quoted" bash -c "test $rc = 0 &&
grep -q 'runs as its words, without a shell' '$tmp/out' && grep -qF \"echo '\\\$HOME' 'a  b'\" '$tmp/out'"

echo "== a plain line runs without the shell: its signal and its refusal stay its own"
printf 'echo not a program\n' >"$tmp/noexec.sh"
printf '%s\n' "sh -c 'kill -9 \$\$'" "$tmp/noexec.sh" "/nonexistent/program" >"$tmp/jp"
run farm --dir "$tmp/p1" "${F[@]}" "$tmp/jp"
check "exit 8 (got $rc)" test "$rc" = 8
check "journal: signal 9; the script that is not executable and the missing program refused" journal "$tmp/p1" '
by = {r["job"]: r for r in recs}
assert by[1]["signal"] == 9 and by[1]["outcome"] == "failed", by[1]
assert by[2]["outcome"] == "refused" and by[3]["outcome"] == "refused", by'

echo "== --resume with the list given again keeps the first run's mode"
printf '%s\n' 'echo $HOME' 'true' >"$tmp/jr"
run farm --dir "$tmp/r1" "${F[@]}" --no-shell --halt 1 "$tmp/jr"
run farm --resume "$tmp/r1" --strategy timeslice -q "$tmp/jr"
check "no --shell/--no-shell on resume: the argv list is the same list (exit $rc: $(head -c 200 "$tmp/err"))" \
	test "$rc" = 0
check "  and job 1 ran without a shell" test "$(cat "$tmp/r1/out/1.1.out")" = '$HOME'
run farm --resume "$tmp/r1" --strategy timeslice -q --shell "$tmp/jr"
check "--shell given on resume of a --no-shell farm: a different list, refused (exit $rc)" test "$rc" = 2

finish "farm shell"
