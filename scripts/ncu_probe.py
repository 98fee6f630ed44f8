"""Launch one config twice at SIZE^3 (fp16 -> fp32) for ncu to profile: the first launch
compiles and warms up, ncu skips it. usage: ncu_probe.py SIZE CONFIG[,CONFIG...]"""
import sys

import torch

import zoo

size = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
names = sys.argv[2].split(",") if len(sys.argv) > 2 else ["128x128"]
a = torch.randn(size, size, device="cuda", dtype=torch.float16)
b = torch.randn(size, size, device="cuda", dtype=torch.float16)
for name in names:
    for _ in range(2):
        zoo.mm(a, b, out_dtype=torch.float32, config=name)
torch.cuda.synchronize()
