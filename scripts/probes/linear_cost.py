# Host cost per call of zoo.nn.Linear against torch.nn.Linear at Llama-3.2-1B's shapes (inference_mode,
# 3-D inputs as the model passes them), and where a decode call's host time goes (cProfile).
import time, torch, zoo, cProfile, pstats, io
from zoo import gemm
def host(fn, n):
    for _ in range(20): fn()
    torch.cuda.synchronize(); t0 = time.perf_counter()
    for _ in range(n): fn()
    t1 = time.perf_counter(); torch.cuda.synchronize(); t2 = time.perf_counter()
    return (t1 - t0) / n * 1e6, (t2 - t0) / n * 1e6
shapes = [(2048, 2048), (2048, 512), (2048, 8192), (8192, 2048), (2048, 32000)]
with torch.inference_mode():
    for rows in (1, 2048):
        for k, n in shapes:
            ref = torch.nn.Linear(k, n, bias=False, device="cuda", dtype=torch.bfloat16)
            mine = zoo.nn.Linear.from_torch(ref)
            x = torch.randn(1 if rows == 1 else 4, 1 if rows == 1 else 512, k, device="cuda", dtype=torch.bfloat16)
            calls = 300 if rows == 1 else 60
            r = {"torch": [], "zoo": []}
            mine(x)
            for _ in range(5):
                r["torch"].append(host(lambda: ref(x), calls)); r["zoo"].append(host(lambda: mine(x), calls))
            plan = next(p for key, p in gemm._calls.items() if key and key[0] == (x.numel() // k, k) and key[2] == (k, n))
            med = {s: (sorted(a for a, _ in v)[2], sorted(b for _, b in v)[2]) for s, v in r.items()}
            print(f"M={x.numel() // k:5d} K={k:5d} N={n:5d}  enqueue torch {med['torch'][0]:7.2f} zoo {med['zoo'][0]:7.2f} us"
                  f"   wall torch {med['torch'][1]:8.2f} zoo {med['zoo'][1]:8.2f} us   zoo: {plan.launch.choice if plan.launch else None}"
                  f" copy_a {plan.copy_a} copy_b {plan.copy_b}", flush=True)
    ref = torch.nn.Linear(2048, 2048, bias=False, device="cuda", dtype=torch.bfloat16)
    mine = zoo.nn.Linear.from_torch(ref)
    x = torch.randn(1, 1, 2048, device="cuda", dtype=torch.bfloat16)
    for _ in range(100): mine(x)
    pr = cProfile.Profile(); pr.enable()
    for _ in range(3000): mine(x)
    pr.disable(); torch.cuda.synchronize()
    s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(18); print(s.getvalue()[:5000])
