# A small PyTorch job: 200 fp16 512x512 matmuls, as a per-item inference would.
import torch
a = torch.randn(512, 512, device="cuda", dtype=torch.float16)
for _ in range(200):
    a = torch.tanh(a @ a)
torch.cuda.synchronize()
print(float(a.float().mean()))
