"""Host cost per call, zoo against torch side by side in one run (issue 18's table), and the
pieces of zoo.mm's hot path timed alone. Wall time of `calls` eager calls back to back, then a
synchronize: a call the GPU finishes sooner than the host issues it measures the host.

    python3 scripts/host_cost.py [calls]
"""
import statistics
import sys
import time

import torch

import zoo
from zoo import cuda, gemm

CALLS = int(sys.argv[1]) if len(sys.argv) > 1 else 300


def per_call_us(fn, calls=CALLS, repeats=5) -> float:
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        runs.append(1e6 * (time.perf_counter() - start) / calls)
    return statistics.median(runs)


def main():
    torch.manual_seed(0)
    h = torch.float16
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, {CALLS} calls back to back, median of 5")
    rows = []
    for m, n, k in ((64, 64, 64), (16, 4096, 4096), (1024, 1024, 1024), (128, 4096, 4096)):
        a = torch.randn(m, k, device="cuda", dtype=h)
        b = torch.randn(k, n, device="cuda", dtype=h)
        out = torch.empty(m, n, device="cuda", dtype=h)
        rows.append((f"mm {m}x{n}x{k}", per_call_us(lambda: zoo.mm(a, b)), per_call_us(lambda: torch.mm(a, b))))
        rows.append((f"mm {m}x{n}x{k} out=", per_call_us(lambda: zoo.mm(a, b, out=out)),
                     per_call_us(lambda: torch.mm(a, b, out=out))))
    a = torch.randn(10, 768, 1024, device="cuda", dtype=h)
    b = torch.randn(10, 1024, 768, device="cuda", dtype=h)
    rows.append(("bmm 10x768x1024x768", per_call_us(lambda: zoo.bmm(a, b)), per_call_us(lambda: torch.bmm(a, b))))
    rows.append(("bmm streams", per_call_us(lambda: zoo.bmm(a, b, mode="streams"), calls=30),
                 per_call_us(lambda: torch.bmm(a, b))))
    print(f"{'case':28s} {'zoo us':>8s} {'torch us':>9s} {'zoo/torch':>9s}")
    for name, z, t in rows:
        print(f"{name:28s} {z:8.1f} {t:9.1f} {z / t:9.2f}")

    # The pieces of one zoo.mm call, alone.
    a = torch.randn(16, 4096, device="cuda", dtype=h)
    b = torch.randn(4096, 4096, device="cuda", dtype=h)
    zoo.mm(a, b)
    plan = next(iter(gemm._calls.values()))
    c = torch.empty(16, 4096, device="cuda", dtype=h)
    dev = torch.cuda.current_device()
    template = torch.empty((), dtype=h, device=a.device).expand(16, 4096)
    pieces = {
        "torch.empty(16, 4096)": lambda: torch.empty((16, 4096), dtype=h, device=a.device),
        "a.new_empty((16, 4096))": lambda: a.new_empty((16, 4096)),
        "torch.empty_like(expanded scalar)": lambda: torch.empty_like(template),
        "layout key": lambda: (a.shape, a.stride(), b.shape, b.stride(), a.dtype, b.dtype, a.device,
                               a.data_ptr() % 16, b.data_ptr() % 16, None, None, None, False, None),
        "current_stream (raw)": lambda: gemm.current_stream(dev),
        "torch.cuda.current_stream().cuda_stream": lambda: torch.cuda.current_stream(dev).cuda_stream,
        "cuCtxGetCurrent": cuda.current_context,
        "Launch.fire_at (patch + launch)": lambda: plan.launch.fire_at(a.data_ptr(), b.data_ptr(), c.data_ptr()),
        "Launch.fire (launch)": plan.launch.fire,
        "zoo.mm": lambda: zoo.mm(a, b),
        "torch.mm": lambda: torch.mm(a, b),
    }
    print(f"\n{'piece of a 16x4096x4096 call':40s} {'us':>6s}")
    for name, fn in pieces.items():
        print(f"{name:40s} {per_call_us(fn, calls=1000):6.2f}")


if __name__ == "__main__":
    main()
