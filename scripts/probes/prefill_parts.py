"""Probe (issue 40): where Llama's eager prefill (4 x 512, fp16) differs, zoo layers against
torch's: wall, host enqueue, CUDA-graph replay (device only), and the profiler's kernel time
by kind (GEMM or not), the two models in turns."""
import statistics, time, torch
from zoo import models
ref = models.llama_model(torch.float16)
mine, line = models.converted(ref)
print(line, flush=True)
prompt = torch.randint(0, 32000, (4, 512), device="cuda", generator=torch.Generator(device="cuda").manual_seed(1))
with torch.inference_mode():
    fns = {"torch": lambda: ref(prompt).logits, "zoo": lambda: mine(prompt).logits}
    for f in fns.values():
        for _ in range(3): f()
    torch.cuda.synchronize()
    wall, host = {k: [] for k in fns}, {k: [] for k in fns}
    for r in range(12):
        for name in (fns if r % 2 == 0 else reversed(list(fns))):
            torch.cuda.synchronize(); t0 = time.perf_counter(); fns[name](); t1 = time.perf_counter()
            torch.cuda.synchronize(); t2 = time.perf_counter()
            host[name].append((t1 - t0) * 1e3); wall[name].append((t2 - t0) * 1e3)
    graphs = {k: models._graphed(f) for k, f in fns.items()}
    replay = {k: [] for k in fns}
    for r in range(12):
        for name, g in graphs.items():
            torch.cuda.synchronize(); s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record(); g(); e.record(); torch.cuda.synchronize(); replay[name].append(s.elapsed_time(e))
    for name in fns:
        print(f"{name}: wall {statistics.median(wall[name]):.3f} ms, host enqueue {statistics.median(host[name]):.3f} ms, "
              f"graph replay {statistics.median(replay[name]):.3f} ms", flush=True)
    del graphs
    for name, f in fns.items():
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(3): f()
            torch.cuda.synchronize()
        kinds = {}
        for e in prof.key_averages():
            t = e.device_time_total / 3
            if t <= 0: continue
            k = "gemm" if any(s in e.key.lower() for s in ("gemm", "nvjet", "zoo_", "cutlass", "sm90_xmma")) else "other"
            kinds[k] = kinds.get(k, 0) + t
            kinds.setdefault("top", []).append((t, e.key[:70], e.count // 3))
        top = sorted(kinds.pop("top"), reverse=True)[:8]
        print(f"{name}: kernels a prefill, us: " + ", ".join(f"{k} {v:.0f}" for k, v in kinds.items()), flush=True)
        for t, key, n in top: print(f"    {t:8.0f} us  x{n:4d}  {key}")
