"""Probe (issue 40): host enqueue time of one Linear(1024, 1024) bf16 forward with grad enabled,
torch's against the zoo's, alternating, batch 16 and 8192 (synchronized before each call, the
call alone timed); then the zoo's forward under torch.profiler (CPU ops) at batch 8192."""
import statistics, time
import torch
import zoo
from zoo import models

for batch in (16, 8192):
    ref = models.mlp(torch.bfloat16, layers=1)
    mine, _ = models.converted(ref)
    x = torch.randn(batch, 1024, device="cuda", dtype=torch.bfloat16)
    t = {"torch": [], "zoo": []}
    nets = {"torch": ref, "zoo": mine}
    for r in range(300):
        for name in (("torch", "zoo") if r % 2 == 0 else ("zoo", "torch")):
            torch.cuda.synchronize()
            t0 = time.perf_counter(); y = nets[name](x); t1 = time.perf_counter()
            if r >= 20: t[name].append(1e6 * (t1 - t0))
            del y
    print(f"batch {batch}: forward with grad, host us: torch {statistics.median(t['torch']):.1f}, zoo {statistics.median(t['zoo']):.1f}")
    # eight layers and the loss, as the step
    ref8 = models.mlp(torch.bfloat16); mine8, _ = models.converted(ref8)
    t = {"torch": [], "zoo": []}; nets = {"torch": ref8, "zoo": mine8}
    for r in range(100):
        for name in (("torch", "zoo") if r % 2 == 0 else ("zoo", "torch")):
            torch.cuda.synchronize()
            t0 = time.perf_counter(); y = nets[name](x); t1 = time.perf_counter(); torch.cuda.synchronize(); t2 = time.perf_counter()
            if r >= 10: t[name].append((1e6 * (t1 - t0), 1e6 * (t2 - t0)))
            del y
    for name in t:
        print(f"batch {batch} 8 layers {name}: enqueue {statistics.median(a for a, b in t[name]):.1f} us, wall {statistics.median(b for a, b in t[name]):.1f} us")
    if batch == 8192:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(10):
                y = mine8(x)
            torch.cuda.synchronize()
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=18, max_name_column_width=60))
