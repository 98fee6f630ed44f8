"""Issue 40 probe: where the zoo's whole-model gaps come from.
1. MLP training step (8 x Linear(1024,1024) bf16): device time per step (torch.profiler, sum of
   kernel times) and host time per step (the call's return, after a sync), zoo vs torch alternating.
2. The step's GEMMs alone at batch 8192 (fwd x W^T, dX = dY W, dW = dY^T X): device time from
   graph replays, zoo's choice and every sm90 config vs torch.
3. Llama-1B's Linear shapes at M = 2048 (prefill 4x512) and M = 1 (decode): same.
"""
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import zoo
from zoo import bench, gemm, models, registry

torch.backends.cuda.matmul.allow_tf32 = False
lim = gemm.device_limits(0)
LEAD = bench.lead_cycles(lim)
SM90 = registry.kernel("sm90_gemm_tma_wgmma")
TILES = ("128x256", "256x128", "128x192pp", "128x192", "128x128", "128x128pp", "64x128pp", "256x192")
CONFIGS = [c for c in SM90.configs if c.name in TILES]
print(torch.cuda.get_device_name(), torch.__version__, flush=True)


def mlp_step_parts():
    from torch.profiler import ProfilerActivity, profile
    for batch in (16, 8192):
        ref = models.mlp(torch.bfloat16)
        mine, _ = models.converted(ref)
        x = torch.randn(batch, 1024, device="cuda", dtype=torch.bfloat16)
        steps = {}
        for name, model in (("zoo", mine), ("torch", ref)):
            opt = torch.optim.SGD(model.parameters(), lr=1e-3)

            def step(model=model, opt=opt):
                opt.zero_grad(set_to_none=True)
                model(x).float().square().mean().backward()
                opt.step()
            steps[name] = step
        for _ in range(10):
            for s in steps.values():
                s()
        torch.cuda.synchronize()
        for name, s in steps.items():
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(10):
                    s()
                torch.cuda.synchronize()
            rows = prof.key_averages()
            total = sum(getattr(r, "self_device_time_total", getattr(r, "self_cuda_time_total", 0)) for r in rows) / 10
            print(f"\nbatch {batch} {name}: device busy {total:.1f} us per step; kernels:")
            for r in sorted(rows, key=lambda r: -getattr(r, "self_device_time_total", 0))[:8]:
                t = getattr(r, "self_device_time_total", 0) / 10
                if t > 0:
                    print(f"   {t:8.1f} us  x{r.count // 10:<3} {r.key[:110]}")
        host = {n: [] for n in steps}
        wall = {n: [] for n in steps}
        for _ in range(30):
            for n, s in steps.items():
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                s()
                t1 = time.perf_counter()
                torch.cuda.synchronize()
                t2 = time.perf_counter()
                host[n].append(1e6 * (t1 - t0))
                wall[n].append(1e6 * (t2 - t0))
        for n in steps:
            print(f"batch {batch} {n}: host {statistics.median(host[n]):.0f} us, wall {statistics.median(wall[n]):.0f} us "
                  f"(one step after a sync, median of 30)")


def gemm_table(title, cases, configs=True):
    """cases: (label, make(i) -> fns dict name -> fn(i), sets)."""
    print(f"\n{title}: device us (graph replays, inputs out of L2, median of 30)")
    for label, fns, sets in cases:
        t = bench.time_side_by_side(fns, sets, 3, 30, lead_cycles=LEAD)
        ref = t["torch"].median_ms
        cells = "  ".join(f"{k} {1e3 * v.median_ms:.1f} ({ref / v.median_ms:.2f}x)" for k, v in t.items())
        best = min((k for k in t if k != "torch"), key=lambda k: t[k].median_ms)
        print(f"{label:34s} {cells}   best {best}", flush=True)


def linear_cases(shapes, dtype=torch.float16, configs=True):
    cases = []
    for m, n, k in shapes:
        per = (m * k + n * k) * 2
        sets = bench.rotation_sets(per, lim.l2_bytes)
        xs = [torch.randn(m, k, device="cuda", dtype=dtype) for _ in range(sets)]
        ws = [torch.randn(n, k, device="cuda", dtype=dtype) / k ** 0.5 for _ in range(sets)]
        fns = {"torch": lambda i, xs=xs, ws=ws: F.linear(xs[i], ws[i]),
               "zoo": lambda i, xs=xs, ws=ws: gemm.linear(xs[i], ws[i])}
        if configs:
            for c in CONFIGS:
                try:
                    gemm.mm(xs[0], ws[0].t(), config=c.name)
                except zoo.ZooError:
                    continue
                fns[c.name] = lambda i, xs=xs, ws=ws, c=c.name: gemm.mm(xs[i], ws[i].t(), config=c)
        cases.append((f"x W^T {m}x{n}x{k}", fns, sets))
    return cases


def mlp_gemms():
    m, d = 8192, 1024
    h = torch.bfloat16
    sets = 4
    xs = [torch.randn(m, d, device="cuda", dtype=h) for _ in range(sets)]
    gs = [torch.randn(m, d, device="cuda", dtype=h) for _ in range(sets)]
    ws = [torch.randn(d, d, device="cuda", dtype=h) / 32 for _ in range(sets)]
    cases = []
    for label, make in (("fwd x W^T 8192x1024x1024", lambda i: (xs[i], ws[i].t())),
                        ("dX = dY W 8192x1024x1024", lambda i: (gs[i], ws[i])),
                        ("dW = dY^T X 1024x1024x8192", lambda i: (gs[i].t(), xs[i]))):
        fns = {"torch": lambda i, make=make: torch.mm(*make(i)), "zoo": lambda i, make=make: gemm.mm(*make(i))}
        for c in CONFIGS:
            try:
                gemm.mm(*make(0), config=c.name)
            except zoo.ZooError:
                continue
            fns[c.name] = lambda i, make=make, c=c.name: gemm.mm(*make(i), config=c)
        cases.append((label, fns, sets))
    gemm_table("MLP step GEMMs (bf16)", cases)


def _run_us(fn, calls):
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return 1e6 * (time.perf_counter() - start) / calls


def host_pair(label, zoo_fn, torch_fn, calls=200, repeats=9):
    for fn in (zoo_fn, torch_fn) * 20:
        fn()
    torch.cuda.synchronize()
    pairs = [(_run_us(zoo_fn, calls), _run_us(torch_fn, calls)) for _ in range(repeats)]
    z, t = statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)
    r = statistics.median(p[0] / p[1] for p in pairs)
    print(f"{label:44s} zoo {z:7.1f} us  torch {t:7.1f} us  zoo/torch {r:.2f}", flush=True)


def training_host():
    """Host us per call of a training layer's pieces (batch 16: the GPU waits on the host)."""
    print("\ntraining host cost per call, Linear(1024, 1024) bf16, batch 16 (alternating, medians of 9 x 200)")
    h = torch.bfloat16
    ref = torch.nn.Linear(1024, 1024).to("cuda", h)
    mine = zoo.nn.Linear.from_torch(ref)
    x = torch.randn(16, 1024, device="cuda", dtype=h, requires_grad=True)
    g = torch.randn(16, 1024, device="cuda", dtype=h)
    w = ref.weight.detach()
    xd = x.detach()
    host_pair("forward, grad on", lambda: mine(x), lambda: ref(x))
    host_pair("forward + backward", lambda: mine(x).backward(g), lambda: ref(x).backward(g))
    with torch.no_grad():
        host_pair("forward, no_grad", lambda: mine(x), lambda: ref(x))
    host_pair("mm(g, w)  (dX)", lambda: gemm.mm(g, w), lambda: torch.mm(g, w))
    host_pair("mm(g.t(), x)  (dW)", lambda: gemm.mm(g.t(), xd), lambda: torch.mm(g.t(), xd))
    host_pair("g.sum(0) / g.t()", lambda: g.sum(0), lambda: g.t())
    yz, yt = mine(x), ref(x)
    host_pair("backward alone (retain_graph)", lambda: yz.backward(g, retain_graph=True),
              lambda: yt.backward(g, retain_graph=True))


def step_graphs():
    """The training step replayed from a CUDA graph (whole-network capture, torch's recipe):
    device time alone, zoo vs torch alternating."""
    print("\ntraining step from a CUDA graph, 8 x Linear(1024, 1024) bf16 + SGD: device us per step")
    for batch in (16, 8192):
        ref = models.mlp(torch.bfloat16)
        mine, _ = models.converted(ref)
        x = torch.randn(batch, 1024, device="cuda", dtype=torch.bfloat16)
        fns = {}
        for name, model in (("torch", ref), ("zoo", mine)):
            opt = torch.optim.SGD(model.parameters(), lr=1e-3)
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    opt.zero_grad(set_to_none=True)
                    model(x).float().square().mean().backward()
                    opt.step()
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            opt.zero_grad(set_to_none=True)
            with torch.cuda.graph(graph):
                model(x).float().square().mean().backward()
                opt.step()
            fns[name] = lambda i, g=graph: g.replay()
        t = bench.time_side_by_side(fns, 1, 3, 30, graph=False)
        print(f"batch {batch}: torch {1e3 * t['torch'].median_ms:.1f} us, zoo {1e3 * t['zoo'].median_ms:.1f} us, "
              f"speed-up {t['torch'].median_ms / t['zoo'].median_ms:.3f}x", flush=True)


if __name__ == "__main__":
    parts = sys.argv[1:] or ["mlp", "mlpgemm", "llama"]
    if "graph" in parts:
        step_graphs()
    if "host" in parts:
        training_host()
    if "mlp" in parts:
        mlp_step_parts()
    if "mlpgemm" in parts:
        mlp_gemms()
    if "llama" in parts:
        gemm_table("Llama prefill Linear shapes (fp16)", linear_cases(
            [(2048, 2048, 2048), (2048, 512, 2048), (2048, 8192, 2048), (2048, 2048, 8192), (2048, 32000, 2048)]))
        gemm_table("Llama decode Linear shapes (fp16)", linear_cases(
            [(1, 2048, 2048), (1, 512, 2048), (1, 8192, 2048), (1, 2048, 8192), (1, 32000, 2048)], configs=False))
