"""Probe kept in its commit only (NOTES.md, issue 40): the MLP training step, host and device cost, zoo vs torch."""
import copy, time, statistics, sys
import torch
import zoo
from zoo import nn as znn, bench, models

dtype = torch.bfloat16

def step_fn(model, x):
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    def step():
        opt.zero_grad(set_to_none=True)
        model(x).float().square().mean().backward()
        opt.step()
    return step

def wall(fns, calls=20, rounds=9):
    out = {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            torch.cuda.synchronize(); t = time.perf_counter()
            for _ in range(calls): f()
            torch.cuda.synchronize(); out[k].append((time.perf_counter() - t) / calls * 1e3)
    return {k: statistics.median(v) for k, v in out.items()}

def device_ms(f, steps=5):
    from torch.profiler import profile, ProfilerActivity
    f(); torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(steps): f()
        torch.cuda.synchronize()
    total = sum(e.device_time_total for e in p.key_averages() if e.device_type.name == "CUDA" and e.device_time_total)
    kernels = sorted(((e.key, e.device_time_total / steps, e.count // steps) for e in p.key_averages()
                      if e.device_time_total), key=lambda r: -r[1])[:12]
    return total / steps / 1e3, kernels

for batch in (16, 8192):
    ref = models.mlp(dtype)
    mine = copy.deepcopy(ref); znn.convert(mine)
    x = torch.randn(batch, 1024, device="cuda", dtype=dtype)
    slow = copy.deepcopy(ref); znn.convert(slow)
    fns = {"torch": step_fn(ref, x), "zoo": step_fn(mine, x)}
    for f in fns.values():
        for _ in range(5): f()
    fast_apply = znn._apply_linear
    res = wall(fns)
    znn._apply_linear = znn.LinearFunction.apply
    res_py = wall(fns)
    znn._apply_linear = fast_apply
    print(f"batch {batch}: wall ms/step torch {res['torch']:.3f} zoo {res['zoo']:.3f} ({res['torch']/res['zoo']:.2f}x); "
          f"with Function.apply: torch {res_py['torch']:.3f} zoo {res_py['zoo']:.3f} ({res_py['torch']/res_py['zoo']:.2f}x)")
    for name, f in fns.items():
        ms, top = device_ms(f)
        print(f"  {name}: device {ms:.3f} ms/step (sum of kernel times)")
        for k, t, c in top:
            print(f"     {t:9.1f} us  x{c:<3d} {k[:90]}")

# Host cost of one Linear(2048, 2048) forward with grad, and forward+backward, on (4, 2048)
lin = torch.nn.Linear(2048, 2048, device="cuda", dtype=dtype)
zl = znn.Linear.from_torch(lin)
x = torch.randn(4, 2048, device="cuda", dtype=dtype, requires_grad=True)
g = torch.randn(4, 2048, device="cuda", dtype=dtype)
def fwd(m): return lambda: m(x)
def fwdbwd(m): return lambda: m(x).backward(g)
for label, mk in (("forward (grad on)", fwd), ("forward+backward", fwdbwd)):
    fns = {"torch": mk(lin), "zoo": mk(zl)}
    for f in fns.values():
        for _ in range(20): f()
    res = {}
    samples = {k: [] for k in fns}
    for _ in range(9):
        for k, f in fns.items():
            torch.cuda.synchronize(); t = time.perf_counter()
            for _ in range(200): f()
            samples[k].append((time.perf_counter() - t) / 200 * 1e6)
            torch.cuda.synchronize()
    print(f"Linear(2048,2048) {label}: host us/call torch {statistics.median(samples['torch']):.1f}, zoo {statistics.median(samples['zoo']):.1f}")
with torch.no_grad():
    fns = {"torch": lambda: lin(x), "zoo": lambda: zl(x)}
    samples = {k: [] for k in fns}
    for _ in range(9):
        for k, f in fns.items():
            torch.cuda.synchronize(); t = time.perf_counter()
            for _ in range(200): f()
            samples[k].append((time.perf_counter() - t) / 200 * 1e6)
            torch.cuda.synchronize()
    print(f"Linear(2048,2048) no_grad: host us/call torch {statistics.median(samples['torch']):.1f}, zoo {statistics.median(samples['zoo']):.1f}")
