# Next session's conv probe (issue 41). (1) Host us a conv, batch 1, chains of 8 (inference_mode):
# torch eager, zoo eager with x and w channels-last (read in place: 279fb38's addresses-only path),
# zoo eager with NCHW weights (laid out per call), torch compiled, zoo compiled (lowered).
# (2) The stem's flat K by chunk size (FLAT_K_CHUNK_BYTES): an im2col chunk that fits L2 is
# read back by its GEMM from L2; CUDA-graph replays side by side with cuDNN.
import time, torch, zoo
import torch._inductor.config as icfg
from zoo import bench, conv, gemm
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
cl = torch.channels_last
with torch.inference_mode():
    for c, hw, r, pad in [(64, 56, 3, 1), (256, 14, 1, 0), (512, 7, 3, 1)]:
        x = torch.randn(1, c, hw, hw, device="cuda", dtype=torch.float16).to(memory_format=cl)
        ws = [(torch.randn(c, c, r, r, device="cuda", dtype=torch.float16) / (c * r * r) ** 0.5) for _ in range(N)]
        wl = [w.to(memory_format=cl) for w in ws]
        ref = chain(torch.nn.functional.conv2d, wl, pad)(x)
        zl, zn = chain(zoo.conv2d, wl, pad), chain(zoo.conv2d, ws, pad)
        for f in (zl, zn):
            y = f(x); print(f"  rel err {((y.float() - ref.float()).norm() / ref.float().norm()).item():.1e}", end="")
        ct = torch.compile(dynamic=False)(chain(torch.nn.functional.conv2d, wl, pad))
        cz = torch.compile(dynamic=False)(chain(lambda x, w, b, s, p: zoo.conv2d(x, w, b, s, p), wl, pad))
        ct(x); cz(x)
        paths = {"torch eager": lambda: chain(torch.nn.functional.conv2d, wl, pad)(x), "zoo eager, in place": lambda: zl(x),
                 "zoo eager, NCHW w": lambda: zn(x), "compiled torch": lambda: ct(x), "compiled zoo": lambda: cz(x)}
        res = {k: [] for k in paths}
        for _ in range(5):
            for k, f in paths.items(): res[k].append(host(f))
        print(f"\nC=K={c} {hw}x{hw} {r}x{r}: us of host a conv, medians of 5 alternating rounds")
        for k, v in res.items():
            v.sort(); print(f"  {k:22s} {v[2]:7.2f} (min {v[0]:.2f})", flush=True)
    # the stem by chunk size
    shape = conv.Conv(32, 224, 224, 3, 64, 7, 7, (2, 2), (3, 3), (1, 1))
    gen = torch.Generator(device="cuda").manual_seed(0)
    x, w = conv.inputs(shape, torch.float16, gen)
    w = w.to(memory_format=cl)
    lim = gemm.device_limits(torch.cuda.current_device())
    print("L2 bytes", lim.l2_bytes, "per image im2col MB", shape.p * shape.q * conv.flat_k(shape) * 2 / 2**20)
    fns = {"cudnn": lambda i: torch.nn.functional.conv2d(x, w, None, 2, 3)}
    sizes = [2, 4, 8, 16, 32, 64, 128]
    for mb in sizes:
        def run(i, mb=mb):
            conv.FLAT_K_CHUNK_BYTES = mb << 20
            return zoo.conv2d(x, w, None, 2, 3, keep_layout=True)
        check = conv.verify(x, w, run(0), shape)
        print(f"  chunk {mb} MB verified {check.ok}")
        fns[f"{mb} MB"] = run
    t = bench.time_side_by_side(fns, 1, 3, 20, lead_cycles=bench.lead_cycles(lim))
    ref = t["cudnn"].median_ms
    for k, v in t.items():
        print(f"  stem {k:8s} {v.median_ms * 1e3:8.1f} us  ({ref / v.median_ms:.2f}x of cuDNN)", flush=True)
