"""Where a small GEMM's kernel time goes: the zoo's choice for each shape built from
timeline.cu (the kernel with clock64 stamps printed by the first and last block), fired
three times at inputs out of L2 with the GPU idle before each (as zoo bench), each output checked.
`splits=N` among a config's fields fixes the K slices (splits=1: one tile per CTA); TIMELINE_CU
names another stamped copy of the kernel (the ninth session's: session9/probes/timeline.diff).

    patch -o results/h100-2026-11-24/session8/probes/timeline.cu kernels/sm90/gemm_tma_wgmma.cu \
        results/h100-2026-11-24/session8/probes/timeline.diff     (the kernel at 7576ce2)
    python3 results/h100-2026-11-24/session8/probes/timeline_probe.py [MxNxK[=CONFIG[:fields]] ...]
"""
import os
import sys
from dataclasses import replace
from pathlib import Path

import torch

from zoo import bench, gemm, registry

here = Path(__file__).resolve().parent
spec0 = registry.SM90_GEMM
spec = replace(spec0, name=spec0.name + "@timeline", source=Path(os.environ.get("TIMELINE_CU", here / "timeline.cu")))
lim = gemm.device_limits(0)
for arg in sys.argv[1:] or ["256x256x256", "512x512x512", "1024x1024x1024", "1000x1000x1000"]:
    text, _, variant = arg.partition("=")
    m, n, k = (int(x) for x in text.split("x"))
    _, cfg = registry.select(lim, registry.Problem(m, n, k))
    splits = None
    if variant:
        name, _, changes = variant.partition(":")
        fields = dict(kv.split("=") for kv in changes.split(",") if kv)
        splits = int(fields.pop("splits")) if "splits" in fields else None
        cfg = replace(spec.config(name), name=variant, **{f: int(v) for f, v in fields.items()})
    sets = bench.rotation_sets((m * k + k * n) * 2, lim.l2_bytes, max_sets=8)
    A = [torch.randn(m, k, device="cuda", dtype=torch.float16) for _ in range(sets)]
    B = [torch.randn(k, n, device="cuda", dtype=torch.float16) for _ in range(sets)]
    C = [torch.empty(m, n, device="cuda", dtype=torch.float16) for _ in range(sets)]
    launch = gemm.plan_launch(spec, cfg, 0, A[0], B[0], C[0], k, k, n, splits=splits)
    for i in range(3):
        torch.cuda.synchronize()
        print(f"== {text} {cfg.name} grid {launch.grid[0]} call {i}", flush=True)
        torch.cuda._sleep(bench.lead_cycles(lim))
        launch.fire_at(A[i % sets].data_ptr(), B[i % sets].data_ptr(), C[i % sets].data_ptr())
        torch.cuda.synchronize()
        assert bench.verify(A[i % sets], B[i % sets], C[i % sets]).ok, text
