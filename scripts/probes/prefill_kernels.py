"""Probe (issue 40): Llama's compiled prefill (4 x 512, fp16, torch.compile default): each GEMM
kernel's device time by its place in a layer (q k v o gate up down, then lm_head), zoo vs torch,
from the profiler's kernel events in launch order; also back-to-back wall with CUDA events."""
import statistics, time, torch
from zoo import models
ref = models.llama_model(torch.float16)
mine, line = models.converted(ref)
prompt = torch.randint(0, 32000, (4, 512), device="cuda", generator=torch.Generator(device="cuda").manual_seed(1))
NAMES = ["q 2048x2048x2048", "k 2048x512x2048", "v 2048x512x2048", "o 2048x2048x2048",
         "gate 2048x8192x2048", "up 2048x8192x2048", "down 2048x2048x8192"]
with torch.inference_mode():
    fns = {"torch": torch.compile(ref), "zoo": torch.compile(mine)}
    for f in fns.values():
        for _ in range(3): f(prompt)
    torch.cuda.synchronize()
    # back to back, 10 calls a sample, alternating: host enqueue and device (events) per call
    for r in range(6):
        for name in (list(fns) if r % 2 == 0 else list(fns)[::-1]):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize(); t0 = time.perf_counter(); e0.record()
            for _ in range(10): fns[name](prompt)
            t1 = time.perf_counter(); e1.record(); torch.cuda.synchronize(); t2 = time.perf_counter()
            print(f"round {r} {name}: host {(t1-t0)*100:.3f} ms/call, wall {(t2-t0)*100:.3f}, events {e0.elapsed_time(e1)/10:.3f}", flush=True)
    from torch.profiler import profile, ProfilerActivity
    per = {}
    for name, f in fns.items():
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(5): f(prompt)
            torch.cuda.synchronize()
        ev = [e for e in prof.events() if e.device_type.name == "CUDA"]
        ev.sort(key=lambda e: e.time_range.start)
        gemms = [e for e in ev if ("zoo_gemm" in e.name or "nvjet" in e.name)]
        print(name, len(gemms), "gemm kernels in 5 prefills", flush=True)
        n = len(gemms) // 5
        slots = {}
        for p in range(5):
            for i, e in enumerate(gemms[p * n:(p + 1) * n]):
                key = NAMES[i % 7] if i < 112 else "lm_head 2048x32000x2048"
                slots.setdefault(key, []).append(e.time_range.elapsed_us())
        per[name] = slots
        # gaps: device idle between consecutive kernels, one prefill
        one = [e for e in ev][: len(ev) // 5]
        idle = sum(max(0, b.time_range.start - a.time_range.end) for a, b in zip(one, one[1:]))
        print(f"{name}: {len(one)} kernels a prefill, idle between them {idle:.0f} us", flush=True)
    for key in list(per["torch"]):
        t, z = per["torch"][key], per.get("zoo", {}).get(key, [float("nan")])
        print(f"{key:26s} n={len(t):3d}/{len(z):3d} torch {statistics.median(t):8.2f} us  zoo {statistics.median(z):8.2f} us  "
              f"sum torch {sum(t)/5:8.1f} zoo {sum(z)/5:8.1f} us/prefill", flush=True)
