#!/usr/bin/env python3
"""PyTorch eager baseline for the transformer workload.

Runs a BERT-base encoder (12 layers, hidden 768, 12 heads, FFN 3072; the
encoder stack only: no embeddings, no pooler, no mask, like the workload)
in fp16 with random weights on random hidden states, batch 1 and sequence
128 by default. The encoder is built from transformers.BertConfig when
transformers imports (nothing is downloaded), else from a hand-written
torch.nn encoder of the same shapes. After a warm-up it times N forward
passes, each followed by torch.cuda.synchronize() (one request at a time,
as the worker does), and prints one JSON line:

  {"bench":"bert_torch","impl":"transformers.BertEncoder","attn":"sdpa",
   "device":"...","batch":1,"seq":128,"layers":12,"hidden":768,"heads":12,
   "iters":200,"requests_per_second":...,"mean_latency_seconds":...,
   "p50_latency_seconds":...,"tflops":...,"torch":"2.x"}

tflops counts the GEMM flops the workload counts:
layers * (24*T*H^2 + 4*B*S^2*H) with T = B*S tokens.
"""
import argparse
import json
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Layer(nn.Module):
    """A post-LN BERT layer: fused QKV, SDPA, output projection, FFN."""

    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)
        self.ln1 = nn.LayerNorm(hidden, eps=1e-12)
        self.up = nn.Linear(hidden, 4 * hidden)
        self.down = nn.Linear(4 * hidden, hidden)
        self.ln2 = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4)
        ctx = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, s, h)
        x = self.ln1(x + self.out(ctx))
        return self.ln2(x + self.down(F.gelu(self.up(x))))


class Encoder(nn.Module):
    def __init__(self, layers, hidden, heads):
        super().__init__()
        self.layers = nn.ModuleList(Layer(hidden, heads) for _ in range(layers))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def build(args):
    """(module taking hidden states, implementation name)."""
    if not args.hand_written:
        try:
            from transformers import BertConfig, BertModel

            cfg = BertConfig(hidden_size=args.hidden, num_hidden_layers=args.layers,
                             num_attention_heads=args.heads, intermediate_size=4 * args.hidden,
                             hidden_act="gelu", hidden_dropout_prob=0.0,
                             attention_probs_dropout_prob=0.0)
            cfg._attn_implementation = args.attn
            model = BertModel(cfg, add_pooling_layer=False)
            return model.encoder, "transformers.BertEncoder"
        except Exception as e:  # any import or API difference: fall back
            print(f"bert_torch: transformers unusable ({e!r}); using the hand-written encoder",
                  file=sys.stderr)
    return Encoder(args.layers, args.hidden, args.heads), "torch.nn"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--attn", default="sdpa", choices=["sdpa", "eager"],
                    help="transformers attention implementation")
    ap.add_argument("--hand-written", action="store_true",
                    help="use the torch.nn encoder even when transformers imports")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("bert_torch: no CUDA device", file=sys.stderr)
        return 1

    torch.manual_seed(0)
    enc, impl = build(args)
    enc = enc.half().cuda().eval()
    x = torch.randn(args.batch, args.seq, args.hidden, device="cuda", dtype=torch.float16)

    def step():
        out = enc(x)
        return out if torch.is_tensor(out) else out[0]

    lat = []
    with torch.inference_mode():
        for _ in range(args.warmup):
            y = step()
        torch.cuda.synchronize()
        if not torch.isfinite(y).all():
            print("bert_torch: output is not finite", file=sys.stderr)
            return 1
        t0 = time.perf_counter()
        for _ in range(args.iters):
            s = time.perf_counter()
            step()
            torch.cuda.synchronize()
            lat.append(time.perf_counter() - s)
        total = time.perf_counter() - t0

    T, H, S, B = args.batch * args.seq, args.hidden, args.seq, args.batch
    flops = args.layers * (24.0 * T * H * H + 4.0 * B * S * S * H)
    lat.sort()
    print(json.dumps({
        "bench": "bert_torch", "impl": impl,
        "attn": args.attn if impl != "torch.nn" else "sdpa",
        "device": torch.cuda.get_device_name(0),
        "batch": B, "seq": S, "layers": args.layers, "hidden": H, "heads": args.heads,
        "iters": args.iters,
        "requests_per_second": args.iters / total,
        "mean_latency_seconds": total / args.iters,
        "p50_latency_seconds": lat[len(lat) // 2],
        "tflops": flops * args.iters / total * 1e-12,
        "torch": torch.__version__,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
