"""Small and ragged shapes through every config of a kernel, for compute-sanitizer:
  compute-sanitizer --tool racecheck python3 scripts/sanitize.py sm90_gemm_tma_wgmma
Each result is also verified against float64, so a clean report means a right answer too."""
import sys

import torch

import zoo
from zoo import bench, registry

spec = registry.kernel(sys.argv[1] if len(sys.argv) > 1 else "sm90_gemm_tma_wgmma")
gen = torch.Generator(device="cuda").manual_seed(0)
for cfg in spec.configs:
    # (77, 300, 1100) and (128, 512, 4096) take the split-K path on an H100/H200
    for m, n, k in [(256, 512, 128), (129, 200, 77), (1, 8, 8), (77, 300, 1100), (128, 512, 4096)]:
        for dtype, out_dtype in spec.entry:
            a = torch.randn(m, k, device="cuda", dtype=getattr(torch, dtype), generator=gen)
            b = torch.randn(k, n, device="cuda", dtype=getattr(torch, dtype), generator=gen)
            c = zoo.mm(a, b, out_dtype=getattr(torch, out_dtype), kernel=spec.name, config=cfg.name)
            torch.cuda.synchronize()
            check = bench.verify(a, b, c)
            if not check.ok:
                sys.exit(f"{cfg.name} {m}x{n}x{k} {dtype}->{out_dtype}: {check.describe()}")
print(f"{spec.name}: {len(spec.configs)} configs x 5 shapes x {len(spec.entry)} dtype pairs verified")
