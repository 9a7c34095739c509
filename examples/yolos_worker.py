"""A YOLOS-small-shaped detector (ViT-small backbone: 12 layers, hidden 384,
6 heads, MLP 1536, patch 16, 100 detection tokens) as a gpushare
request-mode worker, with random weights (nothing is downloaded):

    gpushare tune --out tn --strategy timeslice,mps --workers 1,3,5,7 --preload -- python3 examples/yolos_worker.py

The model comes from transformers' YolosConfig when transformers imports,
else from a hand-written encoder of the same shapes. It is built on the CPU
before the first gpushare call, so that under --preload the import and the
build are paid once and each worker, forked at gs.batch(), only moves it to
the GPU (its CUDA context, its copy of the weights, its warm-up). One
request is one forward pass over GPUSHARE_BATCH random images of
--height x --width (default 512 x 864, YOLOS-small's fine-tuning size),
fp16, synchronized. The gpushare lines are marked."""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import gpushare_client as gs  # gpushare
import torch

p = argparse.ArgumentParser()
p.add_argument("--height", type=int, default=512)
p.add_argument("--width", type=int, default=864)
p.add_argument("--layers", type=int, default=12)
p.add_argument("--device", default="cuda")
p.add_argument("--hand-written", action="store_true", help="the torch.nn encoder even when transformers imports")
args = p.parse_args()
# One CPU thread: the work is on the GPU, and a thread pool started before
# the fork is no use to the forked workers.
torch.set_num_threads(1)
torch.manual_seed(0)


class HandWritten(torch.nn.Module):
    """YOLOS's shape without transformers: patch embedding, [CLS] and 100
    detection tokens, pre-norm ViT encoder, class and box heads."""

    def __init__(self, hidden=384, heads=6, ffn=1536, det=100, labels=92):
        super().__init__()
        self.patch = torch.nn.Conv2d(3, hidden, 16, 16)
        self.tokens = torch.nn.Parameter(torch.zeros(1, 1 + det, hidden))
        layer = torch.nn.TransformerEncoderLayer(hidden, heads, ffn, dropout=0.0, activation="gelu",
                                                 batch_first=True, norm_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, args.layers, enable_nested_tensor=False)
        self.cls = torch.nn.Linear(hidden, labels)
        self.box = torch.nn.Sequential(torch.nn.Linear(hidden, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 4))
        self.det = det

    def forward(self, pixels):
        x = self.patch(pixels).flatten(2).transpose(1, 2)
        x = torch.cat([self.tokens.expand(x.shape[0], -1, -1), x], 1)
        x = self.encoder(x)[:, -self.det:]
        return self.cls(x), self.box(x).sigmoid()


def build():
    if not args.hand_written:
        try:
            from transformers import YolosConfig, YolosForObjectDetection

            cfg = YolosConfig(hidden_size=384, num_hidden_layers=args.layers, num_attention_heads=6,
                              intermediate_size=1536, image_size=[args.height, args.width], num_detection_tokens=100)
            return YolosForObjectDetection(cfg)
        except Exception as e:  # any import or API difference: the hand-written one
            print("yolos_worker: transformers unusable (%r); the hand-written encoder" % (e,), file=sys.stderr)
    return HandWritten()


model = build().eval()
batch = gs.batch(1)  # gpushare: the batch of this run (under --preload, each worker starts here)
model = model.to(device=args.device, dtype=torch.float16)
x = torch.randn(batch, 3, args.height, args.width, device=args.device, dtype=torch.float16)


def forward():
    with torch.inference_mode():
        model(x)
    if args.device.startswith("cuda"):
        torch.cuda.synchronize()


try:
    forward()
except Exception as e:  # a transformers version whose model does not run in fp16 here: the hand-written one
    print("yolos_worker: worker %d: the transformers model failed (%r); the hand-written encoder" % (gs.worker(), e),
          file=sys.stderr)
    model = HandWritten().eval().to(device=args.device, dtype=torch.float16)
    forward()
for _ in range(gs.warmup_requests(5)):  # gpushare: warm-up requests
    forward()
if not gs.ready():  # gpushare: the start barrier
    sys.exit(0)
while gs.running():  # gpushare: kept between runs (tune --preload), this loop goes on into the next run
    with gs.request():  # gpushare: one request
        forward()
