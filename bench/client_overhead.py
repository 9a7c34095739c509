#!/usr/bin/env python3
"""The cost of an empty request through the Python client
(python/gpushare_client.py): under `gpushare bench -- python3 ...` every empty
`with gs.request(): pass` is reported; alone (the client inactive) the same
loop is timed here and printed in ns per request. bench/client_overhead.sh
runs both side by side."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import gpushare_client as gs  # noqa: E402

n = int(sys.argv[1]) if len(sys.argv) > 1 else 300000
if not gs.ready():
    sys.exit(0)
active = os.environ.get("GPUSHARE_REPORT_FD") is not None
i = 0
t0 = time.monotonic_ns()
while gs.running() and (active or i < n):
    with gs.request():
        pass
    i += 1
if not active:
    print("alone: %.1f ns per empty request (%d requests)" % ((time.monotonic_ns() - t0) / i, i))
