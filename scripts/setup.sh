#!/usr/bin/env bash
# Install the Debian/Ubuntu packages gpushare needs: those listed in
# scripts/deps.txt (always), with --test scripts/deps-test.txt (what the
# tests drive: cmocka, Prometheus, Chromium, clang) and with --ci
# scripts/deps-ci.txt (what CI itself needs); with --test also the npm
# packages of tests/k8s/ (npm ci). Only missing packages are
# installed. A test package the distribution does not offer is reported; under
# CI=true that is an error (CI runs every test), elsewhere a warning (the tests
# that need it then fail under CI=true or print "SKIP (missing tool)").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
lists=("$here/deps.txt")
testing=false
for arg in "$@"; do
	case $arg in
	--test) lists+=("$here/deps-test.txt") testing=true ;;
	--ci) lists+=("$here/deps-ci.txt") ;;
	*) echo "usage: scripts/setup.sh [--test] [--ci]" >&2; exit 2 ;;
	esac
done
SUDO=
if [[ $(id -u) -ne 0 ]]; then
	command -v sudo >/dev/null || { echo "setup: not root and no sudo: cannot install packages" >&2; exit 1; }
	SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp /tmp/gpushare-setup.XXXXXX)
trap 'rm -f "$log"' EXIT
# Run a command quietly; on failure print its output and what failed.
quiet() {
	if ! "$@" >"$log" 2>&1; then
		cat "$log" >&2
		echo "setup: failed: $*" >&2
		exit 1
	fi
}
# Command output is captured in variables, never piped into `grep -q`: under
# pipefail, grep -q exits at its first match and the writer then dies of
# SIGPIPE, which fails the pipeline although the text matched.
installed() {
	local st
	st=$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) || return 1
	[[ "$st" == *"ok installed"* ]]
}
available() {
	local policy re='Candidate: [^(]'
	policy=$(apt-cache policy "$1" 2>/dev/null) || return 1
	[[ "$policy" =~ $re ]]
}
missing=() optional=()
for list in "${lists[@]}"; do
	while read -r p; do
		[[ -z "$p" || "$p" == \#* ]] && continue
		installed "$p" && continue
		if [[ "$list" != */deps.txt ]]; then optional+=("$p"); else missing+=("$p"); fi
	done <"$list"
done
# The test-only npm packages of tests/k8s/ (the Kubernetes schemas of
# tests/cli/test_plan_k8s.sh), pinned by its package-lock.json, into
# tests/k8s/node_modules (ignored by git). npm comes with some nodejs builds
# (NodeSource) and is Debian's package npm elsewhere.
npm_packages() {
	local k8s=$here/../tests/k8s
	$testing || return 0
	if ! command -v npm >/dev/null; then
		if available npm; then
			echo "setup: installing npm"
			quiet $SUDO apt-get install -y -q --no-install-recommends npm
		fi
	fi
	if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
		if [[ "${CI:-}" == true ]]; then
			echo "setup: node and npm are needed for tests/k8s (CI=true: every test must run)" >&2
			exit 1
		fi
		echo "setup: warning: no node/npm: the Kubernetes schema test will print SKIP" >&2
		return 0
	fi
	[[ -f $k8s/node_modules/.package-lock.json && ! $k8s/package-lock.json -nt $k8s/node_modules/.package-lock.json ]] &&
		return 0
	echo "setup: installing the npm packages of tests/k8s (npm ci)"
	if ! (cd "$k8s" && npm ci --no-audit --no-fund --loglevel=error >"$log" 2>&1); then
		cat "$log" >&2
		if [[ "${CI:-}" == true ]]; then
			echo "setup: failed: npm ci in tests/k8s" >&2
			exit 1
		fi
		echo "setup: warning: npm ci in tests/k8s failed: the Kubernetes schema test will print SKIP" >&2
	fi
}
if ((${#missing[@]} + ${#optional[@]} == 0)); then
	npm_packages
	exit 0
fi
quiet $SUDO apt-get update -q
unavailable=()
for p in "${optional[@]}"; do
	if available "$p"; then missing+=("$p"); else unavailable+=("$p"); fi
done
if ((${#missing[@]})); then
	echo "setup: installing ${missing[*]}"
	quiet $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
if ((${#unavailable[@]})); then
	if [[ "${CI:-}" == true ]]; then
		echo "setup: test package(s) not available here: ${unavailable[*]} (CI=true: every test must run)" >&2
		exit 1
	fi
	echo "setup: warning: test package(s) not available here: ${unavailable[*]}; the tests that need them will print SKIP" >&2
fi
npm_packages
