"""Session 19, call 2: where the compiled zoo FP8 prefill's time goes: host time inside the op,
device gaps before each kernel, PDL off, and the staged lowering (out_dtype passed by name)."""
import os, sys, time, torch
sys.path.insert(0, os.path.dirname(__file__))
import torch._inductor.config as icfg
icfg.fx_graph_cache = False
from collections import defaultdict
from torch.profiler import profile, ProfilerActivity
from zoo import models, scaled
ref = models.llama_model(torch.bfloat16)
theirs, mine, line = models.fp8_pair(ref, "row")
del ref
prompt = torch.randint(0, 32000, (4, 512), device="cuda", generator=torch.Generator(device="cuda").manual_seed(1))

def warm(name, f):
    t = time.time()
    for _ in range(3):
        f(prompt)
    torch.cuda.synchronize()
    print(f"{name}: compiled and warmed in {time.time() - t:.0f} s", flush=True)

def alone(name, f, n=7, calls=5):
    walls, enq = [], []
    for _ in range(n):
        torch.cuda.synchronize(); t = time.perf_counter()
        for _ in range(calls):
            f(prompt)
        t1 = time.perf_counter(); torch.cuda.synchronize(); t2 = time.perf_counter()
        walls.append(1000 * (t2 - t) / calls); enq.append(1000 * (t1 - t) / calls)
    print(f"{name}: wall {sorted(walls)[n//2]:.2f} ms, enqueue {sorted(enq)[n//2]:.2f} ms (min wall {min(walls):.2f})", flush=True)

def gaps(name, f):
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        f(prompt); torch.cuda.synchronize()
    ev = sorted((e for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA), key=lambda e: e.time_range.start)
    ev = [e for e in ev if "Memset" not in e.name and "Memcpy" not in e.name] or ev
    span = (ev[-1].time_range.end - ev[0].time_range.start) / 1000
    busy = sum(e.time_range.end - e.time_range.start for e in ev) / 1000
    by = defaultdict(lambda: [0, 0.0, 0.0])
    end = ev[0].time_range.start
    for e in ev:
        g = max(0, e.time_range.start - end); end = max(end, e.time_range.end)
        k = by[e.name[:60]]; k[0] += 1; k[1] += g / 1000; k[2] += (e.time_range.end - e.time_range.start) / 1000
    print(f"--- {name}: device span {span:.2f} ms, busy {busy:.2f} ms, {len(ev)} kernels; gaps before each kind:")
    for k, (c, g, b) in sorted(by.items(), key=lambda r: -r[1][1])[:6]:
        print(f"   gap {g:7.3f} ms busy {b:7.3f} ms x{c:4d} {k}")
    sys.stdout.flush()

with torch.inference_mode():
    zoo_c, torch_c = torch.compile(mine), torch.compile(theirs)
    warm("zoo fp8", zoo_c); warm("torch fp8", torch_c)
    for _ in range(2):
        alone("zoo fp8", zoo_c); alone("torch fp8", torch_c)
    # host time inside the op's Python, per call
    acc = {"plan": [0.0, 0], "run": [0.0, 0]}
    def timing(name, fn):
        def timed(*a, **k):
            t = time.perf_counter(); r = fn(*a, **k); acc[name][0] += time.perf_counter() - t; acc[name][1] += 1; return r
        return timed
    plan0, run0 = scaled.plan, scaled.ScaledPlan.run
    scaled.plan, scaled.ScaledPlan.run = timing("plan", plan0), timing("run", run0)
    alone("zoo fp8 (op timed)", zoo_c)
    for k, (t, c) in acc.items():
        print(f"   scaled.{k}: {1e6 * t / max(c, 1):.1f} us per call over {c} calls", flush=True)
    scaled.plan, scaled.ScaledPlan.run = plan0, run0
    gaps("zoo fp8", zoo_c); gaps("torch fp8", torch_c)
    plans = list(scaled._plans.values())
    print("plans:", len(plans), "pdl:", [p.launch.pdl for p in plans if p.launch], flush=True)
    for p_ in plans:
        if p_.launch: p_.launch.pdl = False
    alone("zoo fp8, PDL off", zoo_c); alone("torch fp8", torch_c); alone("zoo fp8, PDL off", zoo_c)
    gaps("zoo fp8, PDL off", zoo_c)
    for p_ in plans:
        if p_.launch: p_.launch.pdl = True
    alone("zoo fp8, PDL on again", zoo_c)
    import inductor_staged
    inductor_staged._register()
    torch._dynamo.reset()
    low = torch.compile(mine)
    warm("zoo fp8 lowered", low); warm("torch fp8 again", torch_c)
    for _ in range(2):
        alone("zoo fp8 lowered", low); alone("torch fp8", torch_c)
    gaps("zoo fp8 lowered", low)
    for p_ in scaled._plans.values():
        if p_.launch: p_.launch.pdl = False
    alone("zoo fp8 lowered, PDL off", low); alone("torch fp8", torch_c)
    gaps("zoo fp8 lowered, PDL off", low)
