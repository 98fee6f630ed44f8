# Host cost per GEMM under torch.compile: a chain of 16 GEMMs (64 x 2048 x 2048, fp16, device time
# small), torch.mm against zoo::mm as inductor's fallback kernel and as the zoo's lowering.
import time, torch, zoo
import torch._inductor.config as icfg
from zoo import inductor
icfg.fx_graph_cache = False
N = 16
x = torch.randn(64, 2048, device="cuda", dtype=torch.float16)
ws = [torch.randn(2048, 2048, device="cuda", dtype=torch.float16) / 45 for _ in range(N)]
def chain(mm):
    def f(x, *ws):
        for w in ws:
            x = mm(x, w.t())
        return x
    return f
def host(fn, n=400):
    for _ in range(30): fn()
    torch.cuda.synchronize(); t0 = time.perf_counter()
    for _ in range(n): fn()
    t1 = time.perf_counter(); torch.cuda.synchronize(); t2 = time.perf_counter()
    return (t1 - t0) / n / N * 1e6, (t2 - t0) / n / N * 1e6
with torch.inference_mode():
    ref = chain(torch.mm)(x, *ws)
    inductor._installed.append(True)          # no lowering: the op as inductor's fallback kernel
    f_fallback = torch.compile(chain(lambda a, b: torch.ops.zoo.mm(a, b)))
    y0 = f_fallback(x, *ws)
    inductor._installed.clear()
    f_lowered = torch.compile(chain(lambda a, b: torch.ops.zoo.mm(a, b)))
    y1 = f_lowered(x, *ws)
    f_torch = torch.compile(chain(torch.mm))
    f_torch(x, *ws)
    f_eager_zoo = chain(zoo.gemm.mm)
    f_eager_torch = chain(torch.mm)
    print("max diff fallback/lowered vs torch:", (y0 - ref).abs().max().item(), (y1 - ref).abs().max().item())
    paths = {"torch.mm eager": lambda: f_eager_torch(x, *ws), "gemm.mm eager": lambda: f_eager_zoo(x, *ws),
             "compiled torch.mm": lambda: f_torch(x, *ws), "compiled zoo fallback": lambda: f_fallback(x, *ws),
             "compiled zoo lowered": lambda: f_lowered(x, *ws)}
    res = {k: [] for k in paths}
    for r in range(5):
        for k, f in paths.items():
            res[k].append(host(f))
    print("us per GEMM, inference_mode, medians of 5 alternating rounds of 400 chains of 16: enqueue / wall")
    for k, v in res.items():
        e = sorted(a for a, _ in v); w = sorted(b for _, b in v)
        print(f"{k:24s} enqueue {e[2]:6.2f} (min {e[0]:.2f})  wall {w[2]:6.2f}")
