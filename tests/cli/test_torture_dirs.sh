#!/usr/bin/env bash
# Torture, class "unsafe directories": private MPS directories under a parent
# that another user owns or anyone may write (exit 6), an XDG_RUNTIME_DIR of
# mode 0777 (exit 6), and, run as an unprivileged user (setpriv, uid 65534)
# where ownership matters, results and report files in a shared directory
# that belong to someone else or are links planted by someone else: refused,
# never written through.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?}" "${GPUSHARE_WORKER:?}" "${GPUSHARE_TEST_HELPERS:?}"
H=$GPUSHARE_TEST_HELPERS
tmp=$(mktemp -d /tmp/gpushare-torture-dirs.XXXXXX)
chmod 0755 "$tmp"
cleanup() {
	# Daemons a failing check may have started.
	for d in ww ww2 theirs/x sticky xdg777/gpushare/mps; do
		[[ -S "$tmp/$d/pipe/control" ]] && fake_mps_quit "$tmp/$d/pipe"
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY FAKE_MPS_START_FAIL
private_xdg
export GPUSHARE_MPS_CONTROL=$H/fake_mps_control GPUSHARE_NVML_LIBRARY=$H/libfakenvml.so
me=$(id -u)
other=$((me == 65534 ? 65533 : 65534))

expect() { # expect STATUS TEXT DESCRIPTION
	if [[ $rc -eq $1 ]] && grep -q -- "$2" "$tmp/err"; then ok "$3"; else
		fail "$3: exit $rc (want $1 and '$2'): $(head -c 400 "$tmp/err")"; fi
}

echo "== private MPS directories under unsafe parents"
mkdir -m 0777 "$tmp/ww"
chown "$other" "$tmp/ww"
run mps start --pipe-dir "$tmp/ww/pipe" --log-dir "$tmp/ww/log" --gpus 1
expect 6 "$tmp/ww" "a parent owned by another user and writable by anyone: exit 6"
[[ ! -e "$tmp/ww/pipe/nvidia-cuda-mps-control.pid" ]] && ok "no daemon started there" || fail "a daemon started"
mkdir -m 0777 "$tmp/ww2"
run mps start --pipe-dir "$tmp/ww2/pipe" --log-dir "$tmp/ww2/log" --gpus 1
expect 6 "writable by" "a parent of our own that anyone may write (not sticky): exit 6"
mkdir -m 0755 "$tmp/theirs"
chown "$other" "$tmp/theirs"
mkdir -m 0700 "$tmp/theirs/x" && chown "$me" "$tmp/theirs/x"
run mps start --pipe-dir "$tmp/theirs/x/pipe" --log-dir "$tmp/x-log" --gpus 1
expect 6 "owned by uid $other" "a parent owned by another user: exit 6"
mkdir -m 1777 "$tmp/sticky"
run mps start --pipe-dir "$tmp/sticky/pipe" --log-dir "$tmp/sticky/log" --gpus 1
[[ $rc -eq 0 ]] && ok "a sticky parent of root or this user (like /tmp) is fine" || fail "sticky parent: exit $rc: $(cat "$tmp/err")"
fake_mps_quit "$tmp/sticky/pipe" "$tmp/sticky/log"
mkdir -m 0777 "$tmp/xdg777"
XDG_RUNTIME_DIR=$tmp/xdg777 run mps start --gpus 1
expect 6 "xdg777" "an XDG_RUNTIME_DIR of mode 0777: exit 6"
fake_mps_quit "$tmp/xdg777/gpushare/mps/pipe" "$tmp/xdg777/gpushare/mps/log"
XDG_RUNTIME_DIR=$tmp/xdg777 run bench --workload spin --workers 1 --duration 50ms --strategy mps
expect 6 "xdg777" "bench with that XDG_RUNTIME_DIR: exit 6"

if [[ $me -ne 0 ]] || ! command -v setpriv >/dev/null; then
	echo "SKIP: the unprivileged part needs root and setpriv"
	finish "torture (dirs)"
	exit 0
fi

echo "== as an unprivileged user (uid 65534) in a shared directory"
# The binaries and helpers must be reachable by uid 65534.
as_nobody() {
	set +e
	setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent XDG_RUNTIME_DIR="$tmp/nx" \
		"$GPUSHARE" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	set -e
}
if ! setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$GPUSHARE"; then
	echo "SKIP: $GPUSHARE is not reachable by uid 65534"
	finish "torture (dirs)"
	exit 0
fi
mkdir -m 0700 "$tmp/nx" && chown 65534:65534 "$tmp/nx"
ln -s "$GPUSHARE_WORKER" "$tmp/gpushare-worker"
export GPUSHARE_WORKER="$tmp/gpushare-worker"
SPIN=(sweep --workload spin --request-us 100us --duration 60ms --warmup 10ms --warmup-requests 1 -q --no-report
	--strategy sequential --workers 1 --repeats 1)
mkdir -m 1777 "$tmp/shared"
# Root plants a link where the unprivileged user's sweep will write.
mkdir -m 0777 "$tmp/shared/out"
echo precious >"$tmp/precious"
ln -s "$tmp/precious" "$tmp/shared/out/results.jsonl"
as_nobody "${SPIN[@]}" --out "$tmp/shared/out" --resume
expect 11 "symbolic link" "a planted results.jsonl link is refused (exit 11)"
[[ "$(cat "$tmp/precious")" == precious ]] && ok "its target is untouched" || fail "the target was written"
rm "$tmp/shared/out/results.jsonl"
: >"$tmp/shared/out/results.jsonl"
chmod 0666 "$tmp/shared/out/results.jsonl"
as_nobody "${SPIN[@]}" --out "$tmp/shared/out" --resume
expect 11 "owned by uid 0" "another user's results.jsonl, writable by all, is refused (exit 11)"
[[ ! -s "$tmp/shared/out/results.jsonl" ]] && ok "nothing appended to it" || fail "appended to root's file"
rm -f "$tmp/shared/out/results.jsonl" "$tmp/shared/out/.gpushare-sweep.lock"
: >"$tmp/shared/out/.gpushare-sweep.lock"
chmod 0666 "$tmp/shared/out/.gpushare-sweep.lock"
as_nobody "${SPIN[@]}" --out "$tmp/shared/out"
expect 6 "lock" "another user's lock file is refused (exit 6)"
rm -f "$tmp/shared/out/.gpushare-sweep.lock"
as_nobody "${SPIN[@]}" --out "$tmp/shared/out"
check "the sweep runs once the directory is clean (exit $rc)" test "$rc" -eq 0
echo "theirs" >"$tmp/shared/out/report.md"
chmod 0666 "$tmp/shared/out/report.md"
as_nobody report "$tmp/shared/out" -q
expect 11 "owned by uid 0" "a report file of another user is refused (exit 11)"
[[ "$(cat "$tmp/shared/out/report.md")" == theirs ]] && ok "and left as it was" || fail "report.md replaced"

finish "torture (dirs)"
