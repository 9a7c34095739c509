#!/usr/bin/env bash
# End-to-end test of the installed tree: `cmake --install` of this build into
# a temporary prefix puts every file in its place (bin, libexec/gpushare,
# include, lib + gpushare.pc, man pages, bash and zsh completion, docs); the
# installed gpushare finds its installed worker (no GPUSHARE_WORKER) and runs
# a bench from the prefix; a program builds against the installed headers and
# library through pkg-config; the bash completion loads and completes; and
# `pip install ./python` into a virtual environment gives `import gpushare_client`.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?set by ctest}" "${GPUSHARE_SOURCE_DIR:?set by ctest}"
SRC=$GPUSHARE_SOURCE_DIR
BUILD=$(dirname "$GPUSHARE")
tmp=$(mktemp -d /tmp/gpushare-install-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
private_xdg
P=$tmp/prefix

echo "== cmake --install --prefix $P"
if cmake --install "$BUILD" --prefix "$P" >"$tmp/install.log" 2>&1; then
	ok "cmake --install succeeded"
else
	fail "cmake --install failed: $(tail -5 "$tmp/install.log")"
	finish install
fi
(cd "$P" && find . -type f -o -type l | sort) >"$tmp/files"
has() { grep -qx "./$1" "$tmp/files"; }
check "bin/gpushare" has bin/gpushare
check "libexec/gpushare/gpushare-worker" has libexec/gpushare/gpushare-worker
check "no gpushare-worker in bin/" bash -c "! grep -q '^./bin/gpushare-worker' '$tmp/files'"
for h in "$SRC"/include/gpushare/*.h; do
	check "include/gpushare/$(basename "$h")" has "include/gpushare/$(basename "$h")"
done
lib=$(grep -m1 '/libgpushare\.a$' "$tmp/files" || true)
pc=$(grep -m1 '/pkgconfig/gpushare\.pc$' "$tmp/files" || true)
check "libgpushare.a installed (${lib:-none})" test -n "$lib"
check "gpushare.pc installed (${pc:-none})" test -n "$pc"
if [[ -e $BUILD/libgpushare-account.so ]]; then
	acc=$(grep -m1 '/gpushare/libgpushare-account\.so$' "$tmp/files" || true)
	check "libgpushare-account.so installed (${acc:-none})" test -n "$acc"
fi
check "man page gpushare(1)" has share/man/man1/gpushare.1
mapfile -t commands < <("$GPUSHARE" --help | awk '/^Commands:/ { on = 1; next } on && /^$/ { exit } on { print $1 }')
for c in "${commands[@]}"; do
	check "man page gpushare-$c(1)" has "share/man/man1/gpushare-$c.1"
done
check "the man pages name the documentation of this prefix ($P/share/doc/gpushare), not the configured one" \
	bash -c "grep -qxF '.IR ${P//-/\\-}/share/doc/gpushare .' '$P/share/man/man1/gpushare.1' && grep -qxF '.IR ${P//-/\\-}/share/doc/gpushare .' '$P/share/man/man1/gpushare-bench.1'"
check "bash completion in share/bash-completion/completions/gpushare" has share/bash-completion/completions/gpushare
check "zsh completion _gpushare" bash -c "grep -q '^./share/zsh/[a-z-]*/_gpushare$' '$tmp/files'"
check "documentation in share/doc/gpushare" has share/doc/gpushare/cli.md
check "Slurm examples in share/doc/gpushare/examples/slurm" has share/doc/gpushare/examples/slurm/farm.sbatch
check "Grafana dashboard in share/gpushare/grafana" has share/gpushare/grafana/gpushare-dashboard.json
check "DCGM recording rules in share/gpushare/grafana" has share/gpushare/grafana/recording-rules.yml

echo "== the installed gpushare"
(
	unset GPUSHARE_WORKER
	cd "$tmp"
	set +e
	"$P/bin/gpushare" --version >"$tmp/v.out" 2>&1
	echo $? >"$tmp/v.rc"
	"$P/bin/gpushare" bench --workload spin --strategy timeslice --workers 2 --duration 1s --warmup 0s --json -q \
		>"$tmp/bench.json" 2>"$tmp/bench.err"
	echo $? >"$tmp/bench.rc"
)
check "installed gpushare --version: $(cat "$tmp/v.out")" \
	bash -c "test \$(cat '$tmp/v.rc') -eq 0 && grep -qx 'gpushare [0-9.]*' '$tmp/v.out'"
check "installed gpushare finds libexec/gpushare/gpushare-worker and runs bench --workload spin (exit $(cat "$tmp/bench.rc"): $(head -c 300 "$tmp/bench.err"))" \
	test "$(cat "$tmp/bench.rc")" -eq 0
check "that bench measured requests from both workers" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
r = d["results"][0]
assert r["strategy"] == "timeslice", r["strategy"]
assert len(r["workers"]) == 2 and all(w["requests"] > 0 for w in r["workers"]), r["workers"]' "$tmp/bench.json"

echo "== a program built against the installed headers and library (pkg-config)"
if [[ -n "$pc" ]] && command -v pkg-config >/dev/null; then
	cat >"$tmp/use.c" <<'EOC'
#include <stdio.h>
#include <gpushare/client.h>
#include <gpushare/gpushare.h>
int main(void)
{
	struct gpushare_client gs;
	if (gpushare_client_init(&gs) != 0)
		return 1;
	printf("%s\n", gpushare_version());
	return 0;
}
EOC
	san=()
	grep -q '^GPUSHARE_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt" && san=("-fsanitize=address,undefined")
	# shellcheck disable=SC2046 # pkg-config's flags are words
	if cc "${san[@]}" -o "$tmp/use" "$tmp/use.c" \
		$(PKG_CONFIG_PATH=$(dirname "$P/${pc#./}") pkg-config --cflags --libs gpushare) \
		>"$tmp/cc.log" 2>&1; then
		ok "cc \$(pkg-config --cflags --libs gpushare) builds"
		check "the program prints the version" bash -c "test \"\$(env -u GPUSHARE_REPORT_FD '$tmp/use')\" = \"\$(cat '$tmp/v.out' | cut -d' ' -f2)\""
	else
		fail "building against the installed tree: $(head -c 600 "$tmp/cc.log")"
	fi
else
	fail "no gpushare.pc or no pkg-config"
fi

echo "== bash completion"
comp=$P/share/bash-completion/completions/gpushare
check "it loads and registers gpushare" bash -c "source '$comp' && complete -p gpushare | grep -q _gpushare"
complete_words() { # complete_words WORD... : the candidates for the last word
	PATH="$P/bin:$PATH" bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _gpushare; printf "%s\n" "${COMPREPLY[@]}"' \
		_ "$comp" "$@"
}
words=$(complete_words gpushare be)
check "gpushare be<TAB> completes to bench (got: $words)" test "$words" = bench
words=$(complete_words gpushare bench --work | tr '\n' ' ')
check "gpushare bench --work<TAB>: --workers --workload (got: $words)" test "$words" = "--workers --workload "
words=$(complete_words gpushare mps sta | tr '\n' ' ')
check "gpushare mps sta<TAB>: start status (got: $words)" test "$words" = "start status "

echo "== zsh completion"
if command -v zsh >/dev/null; then
	zcomp=$(grep -m1 '/_gpushare$' "$tmp/files")
	# _gpushare with zsh's completion builtins replaced by printers of what
	# they are given: the candidates for the last word.
	cat >"$tmp/zcomplete.zsh" <<'EOZ'
setopt extendedglob
_call_program() { shift; "$@" }
_describe() { print -rl -- "${(@)${(@P)4}%%:*}" }
compadd() { [[ $1 == -- ]] && shift; print -rl -- "$@" }
_files() { print -r -- "<files>" }
f=$1; shift
words=("$@"); CURRENT=$#words; PREFIX=$words[-1]
source $f
EOZ
	zcomplete() { PATH="$P/bin:$PATH" zsh -f "$tmp/zcomplete.zsh" "$P/$zcomp" "$@" | tr '\n' ' '; }
	check "zsh: the file parses" zsh -n "$P/$zcomp"
	words=$(zcomplete gpushare "")
	# Every command that the installed gpushare's --help lists, in any order.
	cmds=$("$P/bin/gpushare" --help | awk '/^Commands:/ { on = 1; next } on && /^$/ { exit } on { print $1 }' | tr '\n' ' ')
	check "zsh: gpushare <TAB>: the commands ($cmds) (got: $words)" bash -c '[[ $2 == *bench* ]] || exit 1; for c in $2; do [[ " $1 " == *" $c "* ]] || exit 1; done' _ "$words" "$cmds"
	words=$(zcomplete gpushare bench --wo)
	check "zsh: gpushare bench --<TAB>: its options, --workload among them" bash -c "[[ ' $words' == *' --workload '* && ' $words' == *' --strategy '* ]]"
	words=$(zcomplete gpushare mps "")
	check "zsh: gpushare mps <TAB>: start stop status set (got: $words)" test "$words" = "start stop status set "
else
	missing_tool "zsh completion: zsh not installed (Debian package zsh)"
fi

echo "== pip install ./python into a plain virtual environment, offline"
if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
	missing_tool "pip install: python3 venv/ensurepip not available (Debian package python3-venv)"
else
	# A copy of the sources, so that the build leaves nothing in the checkout.
	# A plain venv (no system site-packages) without setuptools, pip's build
	# isolation on and no index: the in-tree backend needs nothing more.
	cp -r "$SRC/python" "$tmp/python"
	python3 -m venv "$tmp/venv"
	"$tmp/venv/bin/python" -m pip uninstall -q -y setuptools >/dev/null 2>&1 || true
	if "$tmp/venv/bin/python" -m pip install -q --no-index "$tmp/python" >"$tmp/pip.log" 2>&1; then
		ok "pip install ./python (plain venv, no setuptools, offline)"
		rm -rf "$tmp/python"
		if (cd / && "$tmp/venv/bin/python" -c 'import gpushare_client; print(gpushare_client.__file__)') >"$tmp/py.out" 2>&1; then
			ok "import gpushare_client from the environment ($(cat "$tmp/py.out"))"
		else
			fail "import: $(cat "$tmp/py.out")"
		fi
		check "it is installed in the environment's site-packages" grep -q "^$tmp/venv/.*site-packages/gpushare_client.py$" "$tmp/py.out"
		check "its version is the project's" test "$("$tmp/venv/bin/python" -c 'import importlib.metadata as m; print(m.version("gpushare-client"))')" = "$(cut -d' ' -f2 <"$tmp/v.out")"
	else
		fail "pip install ./python: $(tail -5 "$tmp/pip.log")"
	fi
fi

finish install
