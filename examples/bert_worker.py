#!/usr/bin/env python3
"""BERT-base sequence classification as a gpushare request-mode worker.

    gpushare bench --strategy timeslice,mps --workers 3 -- python3 examples/bert_worker.py --batch 8 --seq 128

The model is built from a transformers BertConfig (BERT-base: 12 layers,
hidden 768, 12 heads) with random weights, so nothing is downloaded; without
transformers, a hand-written encoder of the same shape stands in. One request
is one forward pass over a batch of random token ids, synchronized.

The three gpushare lines are marked "gpushare". Run alone (no gpushare), the
script times --iters requests itself; under gpushare it also counts its own
requests over gpushare's measurement window. Either way it prints its own
rate to stderr and, with --self FILE, appends it to FILE as a JSON line, so
bench/gpu/byo.sh can compare the two views.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import gpushare_client as gs  # gpushare (1/3)
import torch

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


def hand_written_bert(vocab=30522, hidden=768, layers=12, heads=12, ffn=3072, max_pos=512, labels=2):
    """BERT-base's shape without transformers: embeddings, 12 post-norm encoder layers, pooler, classifier."""
    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = torch.nn.Embedding(vocab, hidden)
            self.pos = torch.nn.Embedding(max_pos, hidden)
            self.norm = torch.nn.LayerNorm(hidden)
            layer = torch.nn.TransformerEncoderLayer(hidden, heads, ffn, dropout=0.0, activation="gelu",
                                                     batch_first=True)
            self.layers = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.pool = torch.nn.Linear(hidden, hidden)
            self.cls = torch.nn.Linear(hidden, labels)

        def forward(self, ids):
            pos = torch.arange(ids.shape[1], device=ids.device)
            x = self.norm(self.tok(ids) + self.pos(pos)[None])
            x = self.layers(x)
            return self.cls(torch.tanh(self.pool(x[:, 0])))
    return Encoder()


def build(args):
    try:
        from transformers import BertConfig, BertForSequenceClassification
        model = BertForSequenceClassification(BertConfig(num_labels=2))
        kind = "transformers BertForSequenceClassification (BERT-base config, random weights)"
    except ImportError:
        model = hand_written_bert()
        kind = "hand-written BERT-base encoder (transformers not installed)"
    return model.eval().to(device=args.device, dtype=DTYPES[args.dtype]), kind


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batch", type=int, default=gs.batch(8), help="sequences per request (default $GPUSHARE_BATCH or 8)")
    p.add_argument("--seq", type=int, default=128, help="sequence length (default 128)")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="fp16")
    p.add_argument("--warmup", type=int, default=gs.warmup_requests(10), help="requests before ready")
    p.add_argument("--iters", type=int, default=200, help="timed requests when run alone")
    p.add_argument("--device", default="cuda")
    p.add_argument("--self", dest="self_file", help="append the self-timed rate to this file (JSON line)")
    args = p.parse_args()

    torch.manual_seed(1234 + gs.worker())
    model, kind = build(args)
    ids = torch.randint(0, 30522, (args.batch, args.seq), device=args.device)

    def one():
        with torch.inference_mode():
            model(ids)
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
    print("bert_worker: worker %d: %s, batch %d, seq %d: %d requests in %.3f s = %.2f req/s (self-timed%s)"
          % (gs.worker(), kind, args.batch, args.seq, n, secs, rate, ", under gpushare" if gs.active() else ""),
          file=sys.stderr)
    if args.self_file:
        with open(args.self_file, "a") as f:
            f.write(json.dumps({"example": "bert", "worker": gs.worker(), "under_gpushare": gs.active(),
                                "batch": args.batch, "seq": args.seq, "requests": n, "seconds": secs,
                                "requests_per_second": rate}) + "\n")


if __name__ == "__main__":
    main()
