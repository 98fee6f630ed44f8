# Host cost per call of the zoo's op paths against torch.mm (small GEMM: device time negligible).
import time, torch, zoo
from typing import Optional
from zoo import gemm
lib = torch.library.Library("probe", "DEF")
lib.define("mm(Tensor a, Tensor b, ScalarType? out_dtype=None, str? kernel_name=None, str? config_name=None, bool? allow_tf32=None) -> Tensor")
def raw_impl(a, b, out_dtype=None, kernel_name=None, config_name=None, allow_tf32=None):
    return gemm.mm(a, b, out_dtype=out_dtype, kernel=kernel_name, config=config_name, allow_tf32=allow_tf32)
lib.impl("mm", raw_impl, "CUDA")
torch.library.register_fake("probe::mm", lambda a, b, out_dtype=None, kernel_name=None, config_name=None, allow_tf32=None: a.new_empty((a.shape[0], b.shape[1])), lib=lib)
a = torch.randn(64, 2048, device="cuda", dtype=torch.float16)
w = torch.randn(2048, 2048, device="cuda", dtype=torch.float16)
b = w.t()
def bench(fn, n=3000):
    for _ in range(200): fn()
    torch.cuda.synchronize(); t0 = time.perf_counter()
    for _ in range(n): fn()
    t1 = time.perf_counter(); torch.cuda.synchronize()
    return (t1 - t0) / n * 1e6
paths = {"torch.mm": lambda: torch.mm(a, b), "gemm.mm (eager)": lambda: gemm.mm(a, b),
         "torch.ops.zoo.mm": lambda: torch.ops.zoo.mm.default(a, b, None, None, None, None),
         "raw Library op": lambda: torch.ops.probe.mm.default(a, b, None, None, None, None)}
for ctx_name, ctx in (("inference_mode", torch.inference_mode), ("no_grad", torch.no_grad)):
    with ctx():
        res = {k: [] for k in paths}
        for r in range(5):
            for k, f in paths.items():
                res[k].append(bench(f))
        for k, v in res.items():
            v.sort()
            print(f"{ctx_name:15s} {k:20s} median {v[2]:6.1f} us host/call  (min {v[0]:.1f})", flush=True)
