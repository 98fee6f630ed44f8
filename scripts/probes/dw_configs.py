"""dW = dY^T X (1024 x 1024 x 8192 bf16, A read column-major in place): cluster configs and K slices."""
import time
import torch
from zoo import bench, gemm, registry
t0 = time.time()
spec = registry.kernel("sm90_gemm_tma_wgmma")
lim = gemm.device_limits(0)
h = torch.bfloat16
sets = 4
gs = [torch.randn(8192, 1024, device="cuda", dtype=h) for _ in range(sets)]
xs = [torch.randn(8192, 1024, device="cuda", dtype=h) for _ in range(sets)]
cs = [torch.empty(1024, 1024, device="cuda", dtype=h) for _ in range(sets)]
want = torch.mm(gs[0].t().double(), xs[0].double())
fns = {"torch": lambda i: torch.mm(gs[i].t(), xs[i]), "zoo": lambda i: gemm.mm(gs[i].t(), xs[i])}
plan = gemm.plan_call(gs[0].t(), xs[0], None, None, None, None, None)
print("zoo's choice", plan.launch.choice, flush=True)
for name in ("64x128ppc2", "128x128c2", "128x128ppc2", "128x256c2", "128x128", "64x128pp"):
    cfg = spec.config(name)
    for splits in (1, 2, 4):
        if time.time() - t0 > 120:
            break
        try:
            launches = [gemm.plan_launch(spec, cfg, 0, gs[i].t(), xs[i], cs[i], 8192, 1024, 1024, splits=splits,
                                         a_col=True) for i in range(sets)]
        except Exception as exc:  # noqa: BLE001
            print(name, splits, "refused:", str(exc)[:120])
            continue
        cs[0].fill_(float("nan"))
        launches[0].fire()
        err = bench.relative_error(cs[0].float(), want)
        if not err < 1e-2:
            print(name, splits, "WRONG", err)
            continue
        fns[f"{name}/{splits}"] = (lambda ls: lambda i: ls[i].fire())(launches)
print(f"built in {time.time() - t0:.0f} s", flush=True)
t = bench.time_side_by_side(fns, sets, 3, 30, lead_cycles=bench.lead_cycles(lim))
ref = t["torch"].median_ms
for k, v in sorted(t.items(), key=lambda kv: kv[1].median_ms):
    print(f"{k:18s} {1e3 * v.median_ms:6.1f} us  {ref / v.median_ms:.2f}x of torch")
