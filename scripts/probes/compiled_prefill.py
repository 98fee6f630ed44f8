"""Probe (issue 40): Llama's compiled prefill (4 x 512, fp16, torch.compile default), zoo layers
against torch's: wall, host enqueue, and the profiler's kernel time by kind, in turns."""
import collections, statistics, time, torch
from zoo import models
ref = models.llama_model(torch.float16)
mine, line = models.converted(ref)
print(line, flush=True)
prompt = torch.randint(0, 32000, (4, 512), device="cuda", generator=torch.Generator(device="cuda").manual_seed(1))
with torch.inference_mode():
    t0 = time.time()
    fns = {"torch": torch.compile(ref), "zoo": torch.compile(mine)}
    for f in fns.values():
        for _ in range(3): f(prompt)
    torch.cuda.synchronize(); print(f"compiled in {time.time() - t0:.0f} s", flush=True)
    wall, host = {k: [] for k in fns}, {k: [] for k in fns}
    for r in range(16):
        for name in (list(fns) if r % 2 == 0 else list(reversed(list(fns)))):
            torch.cuda.synchronize(); t0 = time.perf_counter(); fns[name](prompt); t1 = time.perf_counter()
            torch.cuda.synchronize(); t2 = time.perf_counter()
            host[name].append((t1 - t0) * 1e3); wall[name].append((t2 - t0) * 1e3)
    for name in fns:
        print(f"{name}: wall {statistics.median(wall[name]):.3f} ms, host enqueue {statistics.median(host[name]):.3f} ms", flush=True)
    from torch.profiler import profile, ProfilerActivity
    for name, f in fns.items():
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(5): f(prompt)
            torch.cuda.synchronize()
        sums = collections.Counter(); counts = collections.Counter()
        for e in prof.key_averages():
            if e.device_type.name != "CUDA" and getattr(e, "self_device_time_total", 0) == 0: continue
            t = getattr(e, "self_device_time_total", getattr(e, "self_cuda_time_total", 0)) / 5
            if t <= 0: continue
            kind = "gemm" if any(s in e.key for s in ("gemm", "nvjet", "zoo_", "cutlass", "sm90")) else "triton" if "triton" in e.key else "other"
            sums[kind] += t; counts[kind] += e.count / 5
        print(name, {k: (round(v, 1), counts[k]) for k, v in sums.items()}, "us per prefill", flush=True)
        top = sorted(((getattr(e, "self_device_time_total", 0) / 5, e.count // 5, e.key[:90]) for e in prof.key_averages()), reverse=True)[:12]
        for t, c, k in top: print(f"   {t:9.1f} us {c:4d}x {k}")
