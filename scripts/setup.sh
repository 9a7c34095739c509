#!/usr/bin/env bash
# Install the Debian/Ubuntu packages gpushare needs: those listed in
# scripts/deps.txt (always) and, with --test, scripts/deps-test.txt (what the
# tests drive: Prometheus, Chromium). Only missing packages are installed; a
# test package the distribution does not offer is skipped with a warning (the
# tests that need it then print SKIP).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
lists=("$here/deps.txt")
[[ "${1:-}" == "--test" ]] && lists+=("$here/deps-test.txt")
SUDO=
[[ $(id -u) -eq 0 ]] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
missing=() optional=()
for list in "${lists[@]}"; do
	while read -r p; do
		[[ -z "$p" || "$p" == \#* ]] && continue
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" && continue
		if [[ "$list" == *deps-test.txt ]]; then optional+=("$p"); else missing+=("$p"); fi
	done <"$list"
done
if ((${#missing[@]} + ${#optional[@]})); then
	$SUDO apt-get update -qq
fi
if ((${#missing[@]})); then
	echo "setup: installing ${missing[*]}"
	$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
for p in "${optional[@]}"; do
	if apt-cache policy "$p" 2>/dev/null | grep -q 'Candidate: [0-9]'; then
		echo "setup: installing $p"
		$SUDO apt-get install -y -qq --no-install-recommends "$p" >/dev/null
	else
		echo "setup: warning: package '$p' is not available here; tests that need it will be skipped" >&2
	fi
done
