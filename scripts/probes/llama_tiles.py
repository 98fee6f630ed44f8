"""Probe (issue 40): Llama prefill's GEMMs (x @ W^T, fp16) on cuBLAS's tile shape (256x128,
with and without 2-CTA clusters along N) against the zoo's choice and torch.mm, CUDA-graph
replays, inputs rotated out of L2, alternating."""
import torch, zoo
from zoo import bench, gemm
lim = gemm.device_limits(0)
for m, n, k in [(2048, 8192, 2048), (2048, 2048, 8192), (2048, 2048, 2048), (2048, 32000, 2048)]:
    sets = bench.rotation_sets((m * k + k * n) * 2, lim.l2_bytes)
    xs = [torch.randn(m, k, device="cuda", dtype=torch.float16) for _ in range(sets)]
    ws = [torch.randn(n, k, device="cuda", dtype=torch.float16) / 32 for _ in range(sets)]
    fns = {"torch": lambda i: torch.mm(xs[i], ws[i].t())}
    for cfg in (None, "128x256", "256x128", "256x128c2"):
        name = cfg or "zoo default"
        try:
            y = zoo.mm(xs[0], ws[0].t(), config=cfg)
            assert bench.verify(xs[0], ws[0].t(), y).ok, name
        except Exception as e:
            print(m, n, k, name, "error", e); continue
        fns[name] = (lambda c: lambda i: zoo.mm(xs[i], ws[i].t(), config=c))(cfg)
    choice = gemm.plan_call(xs[0], ws[0].t(), None, None, None, None, None).launch.choice
    t = bench.time_side_by_side(fns, sets, 10, 100)
    base = t["torch"].median_ms
    print(f"{m}x{n}x{k} (default {choice[1]}): torch {base*1e3:.1f} us; " +
          "; ".join(f"{k2} {v.median_ms*1e3:.1f} us {100*base/v.median_ms:.1f}%" for k2, v in t.items() if k2 != "torch"),
          flush=True)
