#!/usr/bin/env python3
"""A protocol-version-2 worker for tests of `gpushare bench --load open --
python3 ...`, using python/gpushare_client.py's requests()/done(): gpushare
hands over each request and the worker answers when it is done. Each
request sleeps --request-ms."""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import gpushare_client as gs  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--request-ms", type=float, default=2.0)
args = p.parse_args()

gs.init(version=2)
for _ in range(gs.warmup_requests(3)):
    time.sleep(args.request_ms / 1000)
if not gs.ready():
    sys.exit(0)
for rid in gs.requests():
    time.sleep(args.request_ms / 1000)
    gs.done(rid)
