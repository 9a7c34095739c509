#!/usr/bin/env python3
"""A request-mode worker for tests of `gpushare bench -- python3 ...`, using
python/gpushare_client.py the way a PyTorch script would (no torch here):
each request sleeps --request-ms. With --self FILE it writes its own view of
its throughput over gpushare's measurement window, so tests can compare it
with what gpushare reports."""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import gpushare_client as gs  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--request-ms", type=float, default=2.0)
p.add_argument("--self", dest="self_file")
p.add_argument("--raise-after", type=int, default=-1, help="raise an exception after N requests")
args = p.parse_args()

for _ in range(gs.warmup_requests(3)):
    time.sleep(args.request_ms / 1000)
if not gs.ready():
    sys.exit(0)
n = 0
first = last = 0
while gs.running():
    t0 = time.monotonic_ns()
    with gs.request():
        time.sleep(args.request_ms / 1000)
        if n == args.raise_after:
            gs.fail("raised on purpose")
            sys.exit(5)
    t1 = time.monotonic_ns()
    # Its own count over gpushare's window, measured on its own clock reads.
    if t0 >= gs.measure_start_ns():
        n += 1
        first = first or t0
        last = t1
if args.self_file:
    window = (last - gs.measure_start_ns()) / 1e9 if n else 0
    with open(args.self_file, "a") as f:
        f.write("worker %d requests %d window %.6f rate %.3f\n"
                % (gs.worker(), n, window, n / window if window else 0))
