#!/usr/bin/env python3
"""torchvision ResNet-50 inference as a gpushare request-mode worker.

    gpushare bench --strategy timeslice,mps --workers 3 -- python3 examples/resnet_worker.py --batch 16

resnet50(weights=None): random weights, nothing downloaded. One request is
one forward pass over a batch of random 224x224 images, synchronized.

The three gpushare lines are marked "gpushare". Run alone, the script times
--iters requests itself; under gpushare it also counts its own requests over
gpushare's measurement window. Either way it prints its own rate to stderr
and, with --self FILE, appends it to FILE as a JSON line (bench/gpu/byo.sh
compares the two views).
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import gpushare_client as gs  # gpushare (1/3)
import torch
import torchvision

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batch", type=int, default=gs.batch(16), help="images per request (default $GPUSHARE_BATCH or 16)")
    p.add_argument("--size", type=int, default=224, help="image side (default 224)")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="fp16")
    p.add_argument("--warmup", type=int, default=gs.warmup_requests(10), help="requests before ready")
    p.add_argument("--iters", type=int, default=200, help="timed requests when run alone")
    p.add_argument("--device", default="cuda")
    p.add_argument("--self", dest="self_file", help="append the self-timed rate to this file (JSON line)")
    args = p.parse_args()

    torch.manual_seed(1234 + gs.worker())
    model = torchvision.models.resnet50(weights=None).eval()
    model = model.to(device=args.device, dtype=DTYPES[args.dtype], memory_format=torch.channels_last)
    x = torch.randn(args.batch, 3, args.size, args.size, device=args.device, dtype=DTYPES[args.dtype])
    x = x.contiguous(memory_format=torch.channels_last)

    def one():
        with torch.inference_mode():
            model(x)
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()

    for _ in range(args.warmup):
        one()
    gs.ready()  # gpushare (2/3): waits for every worker
    n, start, end = 0, 0, 0
    while gs.running() and (gs.active() or n < args.iters):
        t0 = time.monotonic_ns()
        with gs.request():  # gpushare (3/3)
            one()
        t1 = time.monotonic_ns()
        if not gs.active() or t0 >= gs.measure_start_ns():
            start = start or (gs.measure_start_ns() if gs.active() else t0)
            n, end = n + 1, t1
    secs = (end - start) / 1e9 if n else 0.0
    rate = n / secs if secs else 0.0
    print("resnet_worker: worker %d: resnet50, batch %d, %dx%d: %d requests in %.3f s = %.2f req/s (self-timed%s)"
          % (gs.worker(), args.batch, args.size, args.size, n, secs, rate, ", under gpushare" if gs.active() else ""),
          file=sys.stderr)
    if args.self_file:
        with open(args.self_file, "a") as f:
            f.write(json.dumps({"example": "resnet", "worker": gs.worker(), "under_gpushare": gs.active(),
                                "batch": args.batch, "requests": n, "seconds": secs,
                                "requests_per_second": rate}) + "\n")


if __name__ == "__main__":
    main()
