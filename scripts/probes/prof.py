"""Session 19, call 1: why the compiled FP8 Llama prefill on zoo.scaled_mm is slower than on
torch._scaled_mm. Times the three compiled models in pairs and alone, splits wall time into
enqueue (host) and device, profiles one call of each, then the staged inductor lowering."""
import os, sys, time, json, torch
sys.path.insert(0, os.path.dirname(__file__))
import torch._inductor.config as icfg
icfg.fx_graph_cache = False  # the staged lowering must be compiled, not found in the cache
from torch._dynamo.utils import counters
from torch.profiler import profile, ProfilerActivity
from zoo import models
OUT = os.environ.get("OUT", "/tmp")
ref = models.llama_model(torch.bfloat16)
theirs, mine, line = models.fp8_pair(ref, "row")
print(line, flush=True)
prompt = torch.randint(0, ref.config.vocab_size, (4, 512), device="cuda", generator=torch.Generator(device="cuda").manual_seed(1))

def warm(name, f):
    t = time.time()
    for _ in range(3):
        f(prompt).logits
    torch.cuda.synchronize()
    print(f"{name}: compiled and warmed in {time.time() - t:.0f} s; graph breaks {sum(counters['graph_break'].values())}", flush=True)

def rounds(fns, n=7, calls=5):
    times = {k: [] for k in fns}
    for r in range(n):
        for name in (list(fns) if r % 2 == 0 else list(fns)[::-1]):
            torch.cuda.synchronize(); t = time.perf_counter()
            for _ in range(calls):
                fns[name](prompt).logits
            torch.cuda.synchronize(); times[name].append(1000 * (time.perf_counter() - t) / calls)
    return {k: sorted(v)[len(v) // 2] for k, v in times.items()}

def enqueue(f, calls=5):
    """ms per call for the host to return (device behind it), and wall with the sync."""
    torch.cuda.synchronize(); t = time.perf_counter()
    for _ in range(calls):
        f(prompt)
    t1 = time.perf_counter(); torch.cuda.synchronize(); t2 = time.perf_counter()
    return 1000 * (t1 - t) / calls, 1000 * (t2 - t) / calls

def prof(name, f):
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
        for _ in range(2):
            f(prompt).logits
        torch.cuda.synchronize()
    ev = [e for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    tot = sum(e.device_time for e in ev) / 2 / 1000
    ka = p.key_averages()
    rows = sorted(((e.key, e.count // 2, getattr(e, "device_time_total", 0) / 2 / 1000) for e in ka
                   if getattr(e, "device_time_total", 0) > 0 and e.device_type == torch.autograd.DeviceType.CUDA),
                  key=lambda r: -r[2])
    print(f"--- {name}: device kernel time {tot:.3f} ms per call, {len(ev)//2} kernels per call")
    for k, c, t in rows[:10]:
        print(f"  {t:8.3f} ms  x{c:4d}  {k[:110]}")
    cpu = sorted(((e.key, e.count // 2, e.cpu_time_total / 2 / 1000, e.self_cpu_time_total / 2 / 1000) for e in ka),
                 key=lambda r: -r[3])
    print(f"  host, by self time (ms per call):")
    for k, c, t, s in cpu[:12]:
        print(f"  self {s:7.3f} total {t:7.3f}  x{c:4d}  {k[:100]}")
    sys.stdout.flush()

with torch.inference_mode():
    runs = {"zoo fp8": torch.compile(mine), "torch fp8": torch.compile(theirs), "torch bf16": torch.compile(ref)}
    for n, f in runs.items():
        warm(n, f)
    print("three in turn:", rounds(runs), flush=True)
    print("zoo with torch fp8:", rounds({k: runs[k] for k in ("zoo fp8", "torch fp8")}), flush=True)
    print("zoo with bf16:", rounds({k: runs[k] for k in ("zoo fp8", "torch bf16")}), flush=True)
    for n, f in runs.items():
        print(f"{n} alone:", rounds({n: f}), "enqueue/wall ms:", [f"{x:.2f}" for x in enqueue(f)], flush=True)
    for n, f in runs.items():
        prof(n, f)
    # The staged lowering (48132c1): zoo::scaled_mm as an inductor extern kernel.
    import inductor_staged
    inductor_staged._register()
    torch._dynamo.reset()
    lowered = torch.compile(mine)
    warm("zoo fp8 lowered", lowered)
    warm("torch fp8 again", runs["torch fp8"])
    r2 = {"zoo fp8 lowered": lowered, "torch fp8": runs["torch fp8"]}
    print("lowered with torch fp8:", rounds(r2), flush=True)
    print("lowered alone:", rounds({"l": lowered}), "enqueue/wall:", [f"{x:.2f}" for x in enqueue(lowered)], flush=True)
    print("torch fp8 alone:", rounds({"t": runs["torch fp8"]}), "enqueue/wall:", [f"{x:.2f}" for x in enqueue(runs["torch fp8"])], flush=True)
    prof("zoo fp8 lowered", lowered)
