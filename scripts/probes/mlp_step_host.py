"""The MLP training step (models.bench_mlp_train's) at batch 16 and 8192: its host enqueue
time (no synchronize) against its wall time, alternating torch's and the zoo's, and the CUDA
API calls a step makes (torch.profiler), to see whether anything in a step waits for the GPU."""
import collections, statistics, time
import torch
from zoo import models

for batch in (16, 8192):
    ref = models.mlp(torch.bfloat16)
    mine, _ = models.converted(ref)
    x = torch.randn(batch, 1024, device="cuda", dtype=torch.bfloat16)
    steps = {}
    for name, model in (("torch", ref), ("zoo", mine)):
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)

        def step(model=model, opt=opt):
            opt.zero_grad(set_to_none=True)
            model(x).float().square().mean().backward()
            opt.step()
        steps[name] = step
    for s in steps.values():
        for _ in range(5):
            s()
    torch.cuda.synchronize()
    enq, wall = collections.defaultdict(list), collections.defaultdict(list)
    for r in range(30):
        for name in (("torch", "zoo") if r % 2 == 0 else ("zoo", "torch")):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            steps[name]()
            t1 = time.perf_counter()
            torch.cuda.synchronize()
            t2 = time.perf_counter()
            enq[name].append(1e3 * (t1 - t0)); wall[name].append(1e3 * (t2 - t0))
    for name in steps:
        print(f"batch {batch} {name}: enqueue {statistics.median(enq[name]):.3f} ms, wall {statistics.median(wall[name]):.3f} ms")
    for name, s in steps.items():
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(5):
                s()
            torch.cuda.synchronize()
        api = {e.key: e.count for e in prof.key_averages() if e.key.startswith(("cuda", "cu")) and e.count}
        kernels = sorted(((e.key[:60], e.count, e.device_time_total / 5) for e in prof.key_averages() if e.device_time_total > 0 and e.count), key=lambda r: -r[2])[:8]
        print(f"  {name} API calls (5 steps): {api}")
        print(f"  {name} device us/step by kernel: " + "; ".join(f"{k} x{c // 5} {t:.1f}" for k, c, t in kernels))
