"""Probe (issue 40): fp16 GEMMs over K <= 4096, x @ W^T and A @ B: 128x256 (the cooperative
tile) against 128x128pp (ping-pong, half its area) and torch.mm, with the zoo's choice named;
CUDA-graph replays, inputs rotated out of L2, two rounds in opposite orders."""
import torch, zoo
from zoo import bench, gemm
lim = gemm.device_limits(0)
shapes = [(2048, 2048, 2048), (2048, 8192, 2048), (4096, 4096, 2048), (4096, 8192, 2048), (8192, 8192, 2048),
          (16384, 4096, 2048), (16384, 2048, 2048), (2048, 2048, 1024), (1920, 2048, 2048), (1536, 2048, 2048),
          (1024, 4096, 4096), (2048, 4096, 4096), (8192, 1024, 4096), (4096, 4096, 4096), (16384, 4096, 4096),
          (4096, 11008, 4096)]
for m, n, k in shapes:
    for layout in ("x@W^T", "A@B"):
        sets = bench.rotation_sets((m * k + k * n) * 2, lim.l2_bytes)
        xs = [torch.randn(m, k, device="cuda", dtype=torch.float16) for _ in range(sets)]
        if layout == "x@W^T":
            bs = [(torch.randn(n, k, device="cuda", dtype=torch.float16) / 32).t() for _ in range(sets)]
        else:
            bs = [torch.randn(k, n, device="cuda", dtype=torch.float16) / 32 for _ in range(sets)]
        fns = {"torch": lambda i: torch.mm(xs[i], bs[i])}
        choice = gemm.plan_call(xs[0], bs[0], None, None, None, None, None).launch.choice[1]
        for cfg in ("128x256", "128x128pp"):
            y = zoo.mm(xs[0], bs[0], config=cfg)
            assert bench.verify(xs[0], bs[0], y).ok
            fns[cfg] = (lambda c: lambda i: zoo.mm(xs[i], bs[i], config=c))(cfg)
        res = {}
        for rnd in range(2):
            t = bench.time_side_by_side(fns, sets, 10, 100)
            for k2, v in t.items(): res.setdefault(k2, []).append(v.median_ms)
            fns = dict(reversed(list(fns.items())))
        base = sum(res["torch"]) / 2
        print(f"{m}x{n}x{k} {layout:6s} (zoo: {choice}) torch {base*1e3:7.1f} us; " + "; ".join(
            f"{k2} {sum(v)/2*1e3:7.1f} us {100*base/(sum(v)/2):5.1f}%" for k2, v in res.items() if k2 != "torch"), flush=True)
