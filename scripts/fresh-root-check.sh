#!/usr/bin/env bash
# The README's two commands on a brand-new machine, and the Debian package:
#  1. create a minimal Debian 12 root with mmdebstrap (no compiler, no cmake,
#     no python3: what a new machine has);
#  2. in a copy of it, from a clean clone of this repository (the committed
#     HEAD), run ./scripts/run.sh, then CI=true ./scripts/test.sh: either
#     failing, or a test skipped for a missing tool, fails this check;
#  3. build the .deb there from run.sh's build/ (cd build && cpack -G DEB, as
#     the README says);
#  4. in a second, untouched copy of the fresh root, `apt-get install
#     ./gpushare_*.deb` (its Depends must bring everything) and run
#     gpushare --version, gpushare info (no driver: exit 3 and its message)
#     and a short bench of the CPU-only spin workload.
# Each stage is timed; the timings are printed at the end. Needs root (for
# chroot and mount) and network access to the Debian archive.
# Usage: scripts/fresh-root-check.sh [SUITE]   (default bookworm)
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD
SUITE=${1:-bookworm}
[[ $(id -u) -eq 0 ]] || { echo "fresh-root: needs root (chroot, mount)" >&2; exit 1; }
command -v mmdebstrap >/dev/null || { echo "fresh-root: mmdebstrap is missing (scripts/setup.sh --ci installs it)" >&2; exit 1; }

W=$(mktemp -d /tmp/gpushare-fresh.XXXXXX)
ROOTS=("$W/build" "$W/install")
mounted=()

unmount_all() {
	local i
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
		umount -l "${mounted[i]}" 2>/dev/null || true
	done
	mounted=()
}
cleanup() {
	local rc=$?
	unmount_all
	# Never remove a tree with something still mounted inside (a bind of
	# /dev under rm -rf would delete the host's device nodes).
	if findmnt -rn -o TARGET | grep -qF "$W/"; then
		echo "fresh-root: something is still mounted under $W; not removing it:" >&2
		findmnt -rn -o TARGET | grep -F "$W/" >&2
		exit 1
	fi
	rm -rf --one-file-system "$W"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mount_root() { # /proc, /sys (with the cgroups), /dev, /dev/pts and a private /dev/shm inside root $1
	# The root itself a mount point, as / is on a machine: `unshare
	# --mount` (the cluster tests' namespaces) makes / private, which the
	# kernel refuses for a chroot's plain directory. A slave copy: nothing
	# mounted or unmounted inside reaches the host.
	mount --bind "$1" "$1"
	mount --make-rslave "$1"
	mounted+=("$1")
	mount -t proc proc "$1/proc"
	mounted+=("$1/proc")
	mount -t sysfs sysfs "$1/sys" # hwloc (slurmd, Open MPI) reads the CPU topology there
	mounted+=("$1/sys")
	# slurmd needs the cgroup file systems. A slave copy: nothing done
	# under the root (the lazy unmount at the end) reaches the host's.
	mount --rbind /sys/fs/cgroup "$1/sys/fs/cgroup"
	mount --make-rslave "$1/sys/fs/cgroup"
	mounted+=("$1/sys/fs/cgroup")
	mount --bind /dev "$1/dev"
	mounted+=("$1/dev")
	mount --bind /dev/pts "$1/dev/pts"
	mounted+=("$1/dev/pts")
	mount -t tmpfs -o mode=1777,size=1g tmpfs "$1/dev/shm"
	mounted+=("$1/dev/shm")
}
# A command inside root $1, with a clean environment (nothing of the host's).
in_root() {
	local root=$1
	shift
	chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
}

stages=()
stage_start=0
begin() {
	stage_start=$(date +%s)
	echo
	echo "======== fresh-root: $1"
}
end() {
	local s=$(($(date +%s) - stage_start))
	stages+=("$(printf '%-58s %4d s' "$1" "$s")")
}
report_timings() {
	echo
	echo "======== fresh-root: timings"
	printf '  %s\n' "${stages[@]}"
	# ./scripts/test.sh's own stages, the last lines it printed.
	if [[ -f $W/test.log ]] && grep -q '^== test.sh: where the time went' "$W/test.log"; then
		echo "  of which ./scripts/test.sh:"
		sed -n '/^== test.sh: where the time went/,$ { /^  /p }' "$W/test.log" | sed 's/^/  /'
	fi
}

begin "mmdebstrap --variant=apt $SUITE"
mmdebstrap --quiet --variant=apt --include=ca-certificates "$SUITE" "$W/root.tar"
# mmdebstrap writes no /etc/hosts; a machine has the one the Debian
# installer writes (localhost and the host's own name).
for r in "${ROOTS[@]}"; do
	mkdir "$r"
	tar -C "$r" -xf "$W/root.tar"
	printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n' \
		"$(cat "$r/etc/hostname" 2>/dev/null || hostname)" >"$r/etc/hosts"
done
rm -f "$W/root.tar"
# A machine on this network trusts the network's own certificate
# authorities (those the host added under /usr/local/share/ca-certificates,
# such as an HTTPS proxy's): without them npm's registry is unreachable over
# TLS. The fresh roots get those, and nothing else of the host's.
local_cas=(/usr/local/share/ca-certificates/*.crt)
if [[ -e ${local_cas[0]} ]]; then
	for r in "${ROOTS[@]}"; do
		cp "${local_cas[@]}" "$r/usr/local/share/ca-certificates/"
		chroot "$r" /usr/sbin/update-ca-certificates >/dev/null
	done
	echo "fresh-root: the network's certificate authorities: ${local_cas[*]##*/}"
fi
end "create the fresh $SUITE root (mmdebstrap, two copies)"

R=${ROOTS[0]}
begin "git clone of $(git rev-parse --short HEAD) into the fresh root"
git clone -q "$SRC" "$R/src"
mount_root "$R"
end "clean clone"

begin "./scripts/run.sh (the main job)"
set +e
in_root "$R" bash -c 'cd /src && ./scripts/run.sh' 2>&1 | tee "$W/run.log"
rc=${PIPESTATUS[0]}
set -e
end "./scripts/run.sh (exit $rc)"
if ((rc != 0)); then
	report_timings
	echo "fresh-root: FAIL: ./scripts/run.sh exited $rc on a fresh $SUITE root" >&2
	exit 1
fi

begin "CI=true ./scripts/test.sh (every test)"
set +e
in_root "$R" env CI=true bash -c 'cd /src && ./scripts/test.sh' 2>&1 | tee "$W/test.log"
rc=${PIPESTATUS[0]}
set -e
end "CI=true ./scripts/test.sh (exit $rc)"
skipped=$(grep -E 'SKIP \(missing tool\)|not available here' "$W/test.log" || true)
if ((rc != 0)) || [[ -n "$skipped" ]]; then
	report_timings
	[[ -n "$skipped" ]] && echo "fresh-root: skipped or missing on a fresh root: $skipped" >&2
	echo "fresh-root: FAIL: CI=true ./scripts/test.sh exited $rc on a fresh $SUITE root" >&2
	exit 1
fi
test_summary=$(grep -E -m1 '^[0-9]+% tests passed' "$W/test.log" || true)

begin "cpack -G DEB"
set +e
in_root "$R" bash -c 'cd /src/build && cpack -G DEB' 2>&1 | tee "$W/cpack.log"
rc=${PIPESTATUS[0]}
set -e
deb=$(find "$R/src/build" -maxdepth 1 -name 'gpushare_*.deb' | head -1)
end "cpack -G DEB (exit $rc)"
if ((rc != 0)) || [[ -z "$deb" ]]; then
	report_timings
	echo "fresh-root: FAIL: cpack -G DEB did not make a package" >&2
	exit 1
fi
unmount_all
dpkg-deb --field "$deb" Package Version Architecture Depends Recommends Installed-Size
# Its files (the documentation counted, not listed).
dpkg-deb --contents "$deb" | awk '$NF !~ /\/$/ { if ($NF ~ /usr\/share\/doc\//) docs++; else print "  " $NF }
	END { print "  and " docs " files in ./usr/share/doc/gpushare/" }'

R=${ROOTS[1]}
begin "apt-get install ./$(basename "$deb") in an untouched fresh root"
mount_root "$R"
cp "$deb" "$R/tmp/"
set +e
in_root "$R" env DEBIAN_FRONTEND=noninteractive bash -c \
	"apt-get update -qq && cd /tmp && apt-get install -y -q ./$(basename "$deb")" >"$W/install.log" 2>&1
rc=$?
set -e
echo "\$ apt-get install ./$(basename "$deb")"
if ((rc == 0)); then
	# What apt chose to bring (the package's Depends at work), not every line.
	sed -n '/^The following NEW packages/,/^[0-9]* upgraded/p; /^Setting up gpushare/p' "$W/install.log"
else
	cat "$W/install.log"
fi
end "apt-get install ./$(basename "$deb") (exit $rc)"
if ((rc != 0)); then
	report_timings
	echo "fresh-root: FAIL: the package did not install" >&2
	exit 1
fi

begin "the installed package"
failed=0
echo "\$ gpushare --version"
in_root "$R" gpushare --version || failed=1
echo "\$ gpushare info"
set +e
in_root "$R" gpushare info 2>&1 | tee "$W/info.log"
rc=${PIPESTATUS[0]}
set -e
echo "(exit $rc)"
if ((rc != 3)) || ! grep -q "no NVIDIA driver found" "$W/info.log"; then
	echo "fresh-root: FAIL: gpushare info without a driver: expected exit 3 and 'no NVIDIA driver found'" >&2
	failed=1
fi
echo "\$ gpushare bench --workload spin --strategy timeslice --workers 2 --duration 1s"
in_root "$R" bash -c 'cd /tmp && gpushare bench --workload spin --strategy timeslice --workers 2 --duration 1s' ||
	failed=1
end "gpushare --version, info, bench from the package"
unmount_all

report_timings
echo "  test summary: ${test_summary:-?}"
if ((failed)); then
	echo "fresh-root: FAIL: a command of the installed package failed" >&2
	exit 1
fi
echo "fresh-root: OK: both README commands and the package work on a fresh $SUITE root"
