"""One zoo.mm (a config and split-K count forced) or torch.mm launch of MxNxK fp16 for ncu to
profile, after a warm-up launch (NOTES.md, "Narrow tiles for 128-row weights"):

    ncu --launch-skip 1 -k regex:'zoo_gemm|nvjet' python3 scripts/skinny_ncu.py 128x4096x4096 64x128pp 2
    ncu ... python3 scripts/skinny_ncu.py 128x4096x4096 torch
"""
import sys

import torch

import zoo
from eager_probe import force  # scripts/, next to this one

m, n, k = (int(x) for x in sys.argv[1].split("x"))
config = sys.argv[2]
splits = int(sys.argv[3]) if len(sys.argv) > 3 else None
a = torch.randn(m, k, device="cuda", dtype=torch.float16)
b = torch.randn(k, n, device="cuda", dtype=torch.float16)
if config == "torch":
    call = lambda: torch.mm(a, b)  # noqa: E731
else:
    force(kernel="sm90_gemm_tma_wgmma", config=config, splits=splits)
    call = lambda: zoo.mm(a, b)  # noqa: E731
for _ in range(2):
    c = call()
torch.cuda.synchronize()
err = (c.float() - a.float() @ b.float()).abs().max().item()
print(f"{sys.argv[1]} {config} splits={splits}: max abs error {err:.3g}")
