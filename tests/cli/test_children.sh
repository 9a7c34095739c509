#!/usr/bin/env bash
# End-to-end tests of how gpushare ends its children (lib/sys/child.c): a job
# that forks background processes leaves none behind and gpushare says it
# killed them; a command that closes its report channel before it is ready
# fails at once, not at the start timeout; SIGHUP and SIGQUIT during a run
# stop the workers, the private MPS daemon and remove the run directory, as
# SIGINT and SIGTERM do. Every case checks with pgrep that nothing is left.
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?}" "${GPUSHARE_TEST_HELPERS:?}" "${GPUSHARE_WORKER:?}"
HELPERS=$GPUSHARE_TEST_HELPERS

tmp=$(mktemp -d /tmp/gpushare-children-test.XXXXXX)
cleanup() {
	pkill -KILL -f "$tmp/" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
private_xdg
export CUDA_MPS_PIPE_DIRECTORY="$tmp/no-daemon"
unset GPUSHARE_MPS_CONTROL

# Private names, so pgrep finds only this test's processes.
ln -s "$(command -v sleep)" "$tmp/napper"
ln -s "$GPUSHARE_WORKER" "$tmp/gpushare-worker"
export GPUSHARE_WORKER=$tmp/gpushare-worker

none_left() {
	local what=$1 i
	for i in $(seq 1 25); do
		pgrep -f "$tmp/" >/dev/null || { ok "$what: nothing left running"; return 0; }
		sleep 0.2
	done
	fail "$what: processes left: $(pgrep -af "$tmp/" || true)"
}

echo "== a job that forks: its background processes are killed and counted"
cat >"$tmp/forker" <<SH
#!/bin/sh
"$tmp/napper" 100 &
"$tmp/napper" 100 &
exit 0
SH
chmod +x "$tmp/forker"
set +e
"$GPUSHARE" bench -q --mode job --jobs 3 --workers 2 --strategy timeslice --json -- "$tmp/forker" \
	>"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
[[ $rc -eq 0 ]] && ok "forking job: exit 0" || fail "forking job: exit $rc: $(head -c 400 "$tmp/err")"
# Each worker ran 3 jobs, each of which left 2 processes (workers numbered from 1).
for w in 1 2; do
	grep -q "^gpushare: worker $w: the command left 6 processes behind in its process group; they were killed$" \
		"$tmp/err" && ok "forking job: worker $w says it killed the 6 processes its jobs left" \
		|| fail "forking job: worker $w: $(head -c 600 "$tmp/err")"
done
none_left "forking job"

echo "== a command that closes its report channel before ready fails at once"
cat >"$tmp/closer" <<'SH'
#!/bin/bash
eval "exec ${GPUSHARE_REPORT_FD}>&-"
exec sleep 30
SH
chmod +x "$tmp/closer"
SECONDS=0
set +e
"$GPUSHARE" bench -q --workers 2 --strategy timeslice --duration 1s --start-timeout 60s -- "$tmp/closer" \
	>"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
if [[ $rc -eq 8 ]] && grep -q "closed its report channel (GPUSHARE_REPORT_FD) before it said ready" "$tmp/err"; then
	ok "closed channel: exit 8, says why"
else
	fail "closed channel: exit $rc: $(head -c 600 "$tmp/err")"
fi
[[ $SECONDS -le $((10 * TIME_FACTOR < 50 ? 10 * TIME_FACTOR : 50)) ]] && ok "closed channel: noticed in ${SECONDS}s, not at the 60 s start timeout" \
	|| fail "closed channel: took ${SECONDS}s"
none_left "closed channel"

if [[ -x "$HELPERS/fake_mps_control" ]]; then
	export GPUSHARE_MPS_CONTROL="$HELPERS/fake_mps_control"
	for sig in HUP QUIT INT TERM; do
		echo "== SIG$sig during an mps run: workers, daemon and run directory go"
		"$GPUSHARE" bench -q --workload spin --strategy mps --workers 2 --duration 60s --warmup 0 \
			>"$tmp/out" 2>"$tmp/err" &
		pid=$!
		wait_for 100 0.1 pgrep -f "$tmp/gpushare-worker" >/dev/null || true
		sleep 0.5
		rundirs=$(find "$XDG_RUNTIME_DIR/gpushare" -maxdepth 1 -name 'bench-*' | wc -l)
		[[ $rundirs -eq 1 ]] && ok "SIG$sig: a run directory while running" || fail "SIG$sig: $rundirs run directories"
		kill -"$sig" "$pid"
		rc=0
		wait "$pid" || rc=$?
		[[ $rc -eq 130 ]] && ok "SIG$sig: exit 130" || fail "SIG$sig: exit $rc: $(head -c 400 "$tmp/err")"
		grep -q '"interrupted": true\|interrupted' "$tmp/out" "$tmp/err" && ok "SIG$sig: reported as interrupted" \
			|| fail "SIG$sig: not reported as interrupted"
		none_left "SIG$sig"
		pgrep -f "fake_mps_control" >/dev/null && pgrep -af fake_mps_control | grep -q "$XDG_RUNTIME_DIR" \
			&& fail "SIG$sig: the private MPS daemon is still running" || ok "SIG$sig: no MPS daemon left"
		left=$(find "$XDG_RUNTIME_DIR/gpushare" -maxdepth 1 -name 'bench-*' | wc -l)
		[[ $left -eq 0 ]] && ok "SIG$sig: run directory removed" || fail "SIG$sig: $left run directories left"
	done
	unset GPUSHARE_MPS_CONTROL
else
	fail "no fake_mps_control in GPUSHARE_TEST_HELPERS"
fi

finish children
