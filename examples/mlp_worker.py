#!/usr/bin/env python3
"""A small PyTorch MLP as a gpushare request-mode worker, whose batch comes from
gpushare (GPUSHARE_BATCH, each value of --batch in a sweep or tune):

    gpushare tune --out tn --strategy timeslice,mps --workers 1,2,4 --batch 8,32,128 --preload -- python3 examples/mlp_worker.py

(--preload: torch is imported once; each worker is forked at gs.batch(), before
the model touches the GPU.)

One request is one forward pass of a 4-layer MLP (hidden --hidden, fp16) over
GPUSHARE_BATCH random rows, synchronized. The gpushare lines are marked."""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import gpushare_client as gs  # gpushare
import torch

p = argparse.ArgumentParser()
p.add_argument("--hidden", type=int, default=2048)
p.add_argument("--layers", type=int, default=4)
p.add_argument("--device", default="cuda")
args = p.parse_args()

batch = gs.batch(8)  # gpushare: the batch of this run
layers = []
for _ in range(args.layers):
    layers += [torch.nn.Linear(args.hidden, args.hidden), torch.nn.GELU()]
model = torch.nn.Sequential(*layers).eval().to(device=args.device, dtype=torch.float16)
x = torch.randn(batch, args.hidden, device=args.device, dtype=torch.float16)


def forward():
    with torch.inference_mode():
        model(x)
    if args.device == "cuda":
        torch.cuda.synchronize()


for _ in range(gs.warmup_requests(5)):  # gpushare: warm-up requests
    forward()
if not gs.ready():  # gpushare: the start barrier
    sys.exit(0)
while gs.running():
    with gs.request():  # gpushare: one request
        forward()
