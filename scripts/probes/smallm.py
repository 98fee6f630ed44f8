"""Probe (issue 43): per-tensor FP8 at small M, the zoo's split counts and configs against
torch._scaled_mm (graph replays, inputs rotated out of L2), and the kernels torch runs."""
import torch, zoo
from zoo import fp8, scaled, registry, bench
real_split = registry.split_k
shapes = [(128, 4096, 4096), (1, 4096, 4096), (64, 4096, 4096), (128, 4096, 11008), (128, 11008, 4096),
          (1024, 11008, 4096), (4096, 4096, 4096)]
for m, n, k in shapes:
    sets = 6
    ins = []
    for s in range(sets):
        a = torch.randn(m, k, device="cuda"); w = torch.randn(n, k, device="cuda")
        qa, sa = fp8.quantize(a, "tensor", operand="a"); qb, sb = fp8.quantize(w.t(), "tensor", operand="b")
        ins.append((qa, qb, sa, sb))
    fns = {"torch": lambda i: torch._scaled_mm(*ins[i], out_dtype=torch.bfloat16)}
    info = {}
    variants = [(None, None, False), (1, None, False), (2, None, False), (4, None, False), (8, None, False),
                (None, "128x192p", False), (None, "128x128", True)] if m <= 1024 else \
               [(None, None, False), (None, "128x192p", False), (None, "128x128", True), (None, "128x256", True)]
    for forced, config, fast in variants:
        registry.split_k = real_split if forced is None else (lambda *a, f=forced, **kw: f)
        scaled._plans.clear()
        try:
            pl = scaled.plan(*ins[0], None, torch.bfloat16, fast, config=config)
        except Exception as e:
            print(m, n, k, forced, config, "error", e); continue
        finally:
            registry.split_k = real_split
        y = pl.run(*ins[0], None)
        ref = torch._scaled_mm(*ins[0], out_dtype=torch.bfloat16).float()
        name = f"s={forced or 'auto'} {config or ''}{' fast' if fast else ''}"
        info[name] = (pl.launch.choice[1], pl.launch.grid, (pl.launch.split_k or (0,))[0] > 0,
                      round(((y.float() - ref).norm() / ref.norm()).item(), 5))
        fns[name] = (lambda p: lambda i: p.run(*ins[i], None))(pl)
    t = bench.time_side_by_side(fns, sets, 10, 60)
    base = t["torch"].median_ms
    print(f"{m}x{n}x{k}: torch {base*1e3:.1f} us", flush=True)
    for name, tm in t.items():
        if name != "torch":
            print(f"   {name:24s} {tm.median_ms*1e3:7.1f} us  {100*base/tm.median_ms:5.1f}%  {info[name]}", flush=True)
    scaled._plans.clear()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for i in range(5):
            fns["torch"](i % sets); pl0 = scaled.plan(*ins[0], None, torch.bfloat16, False); pl0.run(*ins[i % sets], None)
        torch.cuda.synchronize()
    for e in prof.key_averages():
        if e.device_type == torch.autograd.DeviceType.CUDA or "CUDA" in str(e.device_type):
            print(f"   kernel {e.key[:110]}  avg {e.device_time_total / max(e.count,1):.1f} us x{e.count}")
