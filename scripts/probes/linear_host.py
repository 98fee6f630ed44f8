# Host us a call of a Linear at Llama 3.2 1B's decode shapes (inference_mode, (1, 1, K) inputs):
# torch.nn.Linear, zoo.nn.Linear (gemm.linear: plan by w's layout), and the previous forward
# (gemm.mm on w.t()), alternating rounds; then the parts of a call timed alone.
import time, torch, zoo
from zoo import gemm
def host(fn, n):
    for _ in range(20): fn()
    torch.cuda.synchronize(); t0 = time.perf_counter()
    for _ in range(n): fn()
    t1 = time.perf_counter(); torch.cuda.synchronize()
    return (t1 - t0) / n * 1e6
def med(v): return sorted(v)[len(v) // 2]
H = torch.bfloat16
class Before(zoo.nn.Linear):  # the forward before gemm.linear (e77357f), eager no-grad branch
    def forward(self, x):
        w, bias = self.weight, self.bias
        if torch.compiler.is_compiling() or zoo.ops._dtensor(x, w, bias): raise RuntimeError
        x2 = x if x.dim() == 2 else x.reshape(-1, self.in_features)
        y = gemm.mm(x2, w.t(), bias=bias)
        return y if x.dim() == 2 else y.view(*x.shape[:-1], self.out_features)
with torch.inference_mode():
    for k, n in ((2048, 2048), (2048, 512), (2048, 8192), (8192, 2048)):
        ref = torch.nn.Linear(k, n, bias=False, device="cuda", dtype=H)
        mine = zoo.nn.Linear.from_torch(ref)
        x = torch.randn(1, 1, k, device="cuda", dtype=H)
        w = ref.weight
        before = Before.from_torch(ref)
        fns = {"torch": lambda: ref(x), "zoo": lambda: mine(x), "zoo-before": lambda: before(x)}
        for f in fns.values(): f()
        r = {s: [] for s in fns}
        for _ in range(7):
            for s, f in fns.items(): r[s].append(host(f, 400))
        print(f"1x{n}x{k}: " + "  ".join(f"{s} {med(v):6.2f}" for s, v in r.items()), flush=True)
    # parts of one decode call, 1 x 2048 x 2048
    ref = torch.nn.Linear(2048, 2048, bias=False, device="cuda", dtype=H)
    mine = zoo.nn.Linear.from_torch(ref); x = torch.randn(1, 1, 2048, device="cuda", dtype=H); mine(x)
    w = ref.weight; x2 = x.reshape(-1, 2048)
    plan = next(p for key, p in gemm._calls.items() if key[0] == gemm._LINEAR and key[1] == (1, 1, 2048))
    c = torch.empty(1, 2048, device="cuda", dtype=H)
    xp, wp, cp = x2.data_ptr(), w.data_ptr(), c.data_ptr()
    L = plan.launch
    parts = {
        "module call (torch)": lambda: ref(x),
        "F.linear": lambda: torch.nn.functional.linear(x, w),
        "zoo Linear": lambda: mine(x),
        "Linear.forward": lambda: mine.forward(x),
        "gemm.linear(x, w)": lambda: gemm.linear(x, w),
        "plan.run": lambda: plan.run(x, w, None, xp, wp, None, None),
        "launch.fire_at": lambda: L.fire_at(xp, wp, cp),
        "fn.launch": lambda: L.fn.launch(L.grid, L.threads, L.args, 0, L.device_index, L.cluster, L.pdl),
        "x.new_empty": lambda: x2.new_empty((1, 2048)),
        "w.t()": lambda: w.t(),
        "x.reshape": lambda: x.reshape(-1, 2048),
        "y.view": lambda: c.view(x.shape[:-1] + (2048,)),
        "is_compiling": torch.compiler.is_compiling,
        "torch.mm": lambda: torch.mm(x2, w.t()),
    }
    r = {s: [] for s in parts}
    for _ in range(5):
        for s, f in parts.items(): r[s].append(host(f, 1000))
    for s, v in r.items(): print(f"  {s:22s} {med(v):6.2f} us", flush=True)
    print("decode plan:", plan.launch.choice, "pdl", L.pdl, "cluster", L.cluster)
