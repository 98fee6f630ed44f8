"""Session 9: the eighth session's timeline probe on the committed kernel (timeline.diff here:
its clock64 stamps, plus each consumer's K-tile count and the cycles it waited for K-tiles after
the first), and with `splits=N` to fix the K slices (splits=1: one tile per CTA, as the streams
mode launches 768x768x1024).

    patch -o /tmp/timeline.cu kernels/sm90/gemm_tma_wgmma.cu results/h100-2026-11-24/session9/probes/timeline.diff
    python3 results/h100-2026-11-24/session9/probes/timeline_probe.py 768x768x1024=128x192pp:splits=1 ...
"""
import sys
from dataclasses import replace
from pathlib import Path

import torch

from zoo import bench, gemm, registry

spec0 = registry.SM90_GEMM
spec = replace(spec0, name=spec0.name + "@timeline", source=Path("/tmp/timeline.cu"))
lim = gemm.device_limits(0)
for arg in sys.argv[1:]:
    text, _, variant = arg.partition("=")
    m, n, k = (int(x) for x in text.split("x"))
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
