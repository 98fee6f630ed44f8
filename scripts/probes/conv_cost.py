# Host cost per conv (inference_mode, batch 1: device time small): torch's conv2d, zoo.conv2d with its maps
# patched (now) or encoded per call (before), and under torch.compile (inductor's fallback kernel, the lowering).
import time, torch, zoo
import torch._inductor.config as icfg
from zoo import conv, inductor
icfg.fx_graph_cache = False
torch.backends.cudnn.benchmark = True
N = 8
def host(fn, n=200):
    for _ in range(20): fn()
    torch.cuda.synchronize(); t0 = time.perf_counter()
    for _ in range(n): fn()
    t1 = time.perf_counter(); torch.cuda.synchronize()
    return (t1 - t0) / n / N * 1e6
def chain(f, ws, pad):
    def g(x):
        for w in ws:
            x = f(x, w, None, 1, pad)
        return x
    return g
cases = [(64, 56, 3, 1), (256, 14, 1, 0), (512, 7, 3, 1)]
with torch.inference_mode():
    data = []
    for c, hw, r, pad in cases:
        x = torch.randn(1, c, hw, hw, device="cuda", dtype=torch.float16).to(memory_format=torch.channels_last)
        ws = [(torch.randn(c, c, r, r, device="cuda", dtype=torch.float16) / (c * r * r) ** 0.5).to(memory_format=torch.channels_last) for _ in range(N)]
        data.append((x, ws, pad))
    inductor._installed.append(True)
    fallback = [torch.compile(dynamic=False)(chain(lambda x, w, b, s, p: zoo.conv2d(x, w, b, s, p), ws, pad)) for x, ws, pad in data]
    for f, (x, _, _) in zip(fallback, data): f(x)
    inductor._installed.clear()
    lowered = [torch.compile(dynamic=False)(chain(lambda x, w, b, s, p: zoo.conv2d(x, w, b, s, p), ws, pad)) for x, ws, pad in data]
    ctorch = [torch.compile(dynamic=False)(chain(torch.nn.functional.conv2d, ws, pad)) for x, ws, pad in data]
    for i, ((c, hw, r, pad), (x, ws, _)) in enumerate(zip(cases, data)):
        ref = chain(torch.nn.functional.conv2d, ws, pad)(x)
        zf = chain(zoo.conv2d, ws, pad)
        y = zf(x)
        print(f"C=K={c} {hw}x{hw} {r}x{r}: rel err eager {((y.float()-ref.float()).norm()/ref.float().norm()).item():.1e}, "
              f"lowered {((lowered[i](x).float()-ref.float()).norm()/ref.float().norm()).item():.1e}, "
              f"fallback {((fallback[i](x).float()-ref.float()).norm()/ref.float().norm()).item():.1e}")
        plans = [p for p in conv._plans.values() if getattr(p, 'shape', None) is not None and p.shape.channels == c and p.shape.height == hw]
        def encoded():
            saved = [p.map_fields for p in plans]
            for p in plans: p.map_fields = None
            try: zf(x)
            finally:
                for p, f in zip(plans, saved): p.map_fields = f
        paths = {"torch eager": lambda: chain(torch.nn.functional.conv2d, ws, pad)(x), "zoo eager (maps patched)": lambda: zf(x),
                 "zoo eager (maps encoded)": encoded, "compiled torch": lambda: ctorch[i](x),
                 "compiled zoo fallback": lambda: fallback[i](x), "compiled zoo lowered": lambda: lowered[i](x)}
        res = {k: [] for k in paths}
        for _ in range(5):
            for k, f in paths.items():
                res[k].append(host(f))
        print("  us of host a conv (enqueue), medians of 5 alternating rounds; plans patched:", [p.map_fields is not None for p in plans])
        for k, v in res.items():
            v.sort(); print(f"  {k:26s} {v[2]:7.2f} (min {v[0]:.2f})", flush=True)
