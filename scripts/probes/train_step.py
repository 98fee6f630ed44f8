# The MLP training step (zoo bench --model mlp-train's): host enqueue time a step (no sync inside),
# wall a step, and the device's kernel time a step (torch.profiler), zoo and torch alternating.
import time, torch, zoo
from zoo import models
from torch.profiler import profile, ProfilerActivity
def med(v): return sorted(v)[len(v) // 2]
for batch in (16, 8192):
    ref = models.mlp(torch.bfloat16); mine, _ = models.converted(ref)
    x = torch.randn(batch, 1024, device="cuda", dtype=torch.bfloat16)
    steps = {}
    for name, model in (("zoo", mine), ("torch", ref)):
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        def step(model=model, opt=opt):
            opt.zero_grad(set_to_none=True); model(x).float().square().mean().backward(); opt.step()
        steps[name] = step
    for s in steps.values():
        for _ in range(5): s()
    torch.cuda.synchronize()
    r = {s: ([], []) for s in steps}
    for _ in range(7):
        for s, f in steps.items():
            torch.cuda.synchronize(); t0 = time.perf_counter()
            for _ in range(20): f()
            t1 = time.perf_counter(); torch.cuda.synchronize(); t2 = time.perf_counter()
            r[s][0].append((t1 - t0) / 20 * 1e3); r[s][1].append((t2 - t0) / 20 * 1e3)
    dev = {}
    for s, f in steps.items():
        with profile(activities=[ProfilerActivity.CUDA]) as p:
            for _ in range(10): f()
            torch.cuda.synchronize()
        ev = [e for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        dev[s] = sum(e.device_time for e in ev) / 10 / 1e3
        if batch == 8192:
            kt = {}
            for e in ev: kt[e.name[:60]] = kt.get(e.name[:60], 0) + e.device_time / 10
            print(f"  {s} kernels a step (us):", "; ".join(f"{k} {v:.0f}" for k, v in sorted(kt.items(), key=lambda kv: -kv[1])[:8]))
    print(f"batch {batch}: " + "  ".join(f"{s}: enqueue {med(a):.3f} wall {med(b):.3f} device {dev[s]:.3f} ms" for s, (a, b) in r.items()), flush=True)
