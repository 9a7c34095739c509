#!/usr/bin/env python3
"""A request-mode worker for tests of --preload (no torch here): it logs
"start PID" when the interpreter starts it, sleeps --import-s (a heavy
import), then makes its first gpushare call, where under --preload the
process becomes the fork server. Each worker then logs what it got:
"worker PID PPID batch=B worker=I/N pct=P pipe=D preload_fd=0|1", and at
the start of each run it measures (a worker kept between runs measures
several): "run PID worker=I/N batch=B"."""
import argparse
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import gpushare_client as gs  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--log", required=True)
p.add_argument("--import-s", type=float, default=0.0)
p.add_argument("--thread", action="store_true", help="run a thread before the first gpushare call")
p.add_argument("--exit-if-preload", type=int, default=0, help="exit with this status before the first call "
               "when started as the fork server")
p.add_argument("--exit-after-ready", type=int, default=0, help="each worker exits with this status after ready")
p.add_argument("--background", action="store_true", help="each worker leaves a 'sleep 301' in its group")
p.add_argument("--request-ms", type=float, default=1.0)
p.add_argument("--v2", action="store_true", help="protocol version 2: gpushare hands the requests over")
p.add_argument("--init-s", type=float, default=0.0, help="each worker sleeps this long after its first gpushare "
               "call (a GPU worker's CUDA context and model load)")
args = p.parse_args()


def log(line):
    with open(args.log, "a") as f:
        f.write(line + "\n")


log("start %d" % os.getpid())
time.sleep(args.import_s)
if args.thread:
    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
if args.exit_if_preload and "GPUSHARE_PRELOAD_FD" in os.environ:
    sys.exit(args.exit_if_preload)
if args.v2:
    gs.init(version=2)  # the first gpushare call
batch = gs.batch(1)  # the first gpushare call (without --v2)
log("worker %d %d batch=%d worker=%d/%d pct=%s pipe=%s preload_fd=%d" % (
    os.getpid(), os.getppid(), batch, gs.worker(), gs.workers(),
    os.environ.get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "-"), os.environ.get("CUDA_MPS_PIPE_DIRECTORY", "-"),
    "GPUSHARE_PRELOAD_FD" in os.environ))
time.sleep(args.init_s)
if args.background:
    subprocess.Popen(["sleep", "301"])
for _ in range(gs.warmup_requests(2)):
    time.sleep(args.request_ms / 1000)
if not gs.ready():
    sys.exit(0)
if args.exit_after_ready:
    sys.exit(args.exit_after_ready)
seen = None


def new_run():
    """Log the start of each run this process measures."""
    global seen
    if gs.measure_start_ns() != seen:
        seen = gs.measure_start_ns()
        log("run %d worker=%d/%d batch=%d" % (os.getpid(), gs.worker(), gs.workers(), gs.batch(1)))


if args.v2:
    for rid in gs.requests():
        new_run()
        time.sleep(args.request_ms / 1000)
        gs.done(rid)
    sys.exit(0)
while gs.running():
    new_run()
    with gs.request():
        time.sleep(args.request_ms / 1000)
