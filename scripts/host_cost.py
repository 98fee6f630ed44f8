"""Host cost per call, zoo against torch side by side in one run (issue 18's table), and the
pieces of zoo.mm's hot path timed alone. Wall time of `calls` eager calls back to back, then a
synchronize: a call the GPU finishes sooner than the host issues it measures the host. zoo's
and torch's repeats take turns (the lent host's speed drifts), and the ratio is the median of
the per-repeat ratios.

    python3 scripts/host_cost.py [calls]
"""
import statistics
import sys
import time

import torch

import zoo
from zoo import cuda, gemm

CALLS = int(sys.argv[1]) if len(sys.argv) > 1 else 300


def _run_us(fn, calls) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return 1e6 * (time.perf_counter() - start) / calls


def per_call_us(fn, calls=CALLS, repeats=5) -> float:
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    return statistics.median(_run_us(fn, calls) for _ in range(repeats))


def side_by_side(zoo_fn, torch_fn, calls=CALLS, repeats=9) -> tuple[float, float, float]:
    """(zoo us, torch us, median of zoo/torch per repeat), the two taking turns."""
    for fn in (zoo_fn, torch_fn) * 20:
        fn()
    torch.cuda.synchronize()
    pairs = [(_run_us(zoo_fn, calls), _run_us(torch_fn, calls)) for _ in range(repeats)]
    return (statistics.median(z for z, _ in pairs), statistics.median(t for _, t in pairs),
            statistics.median(z / t for z, t in pairs))


def main():
    torch.manual_seed(0)
    h = torch.float16
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, {CALLS} calls back to back, "
          "9 repeats taking turns, medians")
    rows = []
    for m, n, k in ((64, 64, 64), (16, 4096, 4096), (1024, 1024, 1024), (128, 4096, 4096)):
        a = torch.randn(m, k, device="cuda", dtype=h)
        b = torch.randn(k, n, device="cuda", dtype=h)
        out = torch.empty(m, n, device="cuda", dtype=h)
        rows.append((f"mm {m}x{n}x{k}", *side_by_side(lambda: zoo.mm(a, b), lambda: torch.mm(a, b))))
        rows.append((f"mm {m}x{n}x{k} out=", *side_by_side(lambda: zoo.mm(a, b, out=out),
                                                           lambda: torch.mm(a, b, out=out))))
    a = torch.randn(10, 768, 1024, device="cuda", dtype=h)
    b = torch.randn(10, 1024, 768, device="cuda", dtype=h)
    rows.append(("bmm 10x768x1024x768", *side_by_side(lambda: zoo.bmm(a, b), lambda: torch.bmm(a, b))))
    rows.append(("bmm streams", *side_by_side(lambda: zoo.bmm(a, b, mode="streams"), lambda: torch.bmm(a, b),
                                              calls=30, repeats=5)))
    print(f"{'case':28s} {'zoo us':>8s} {'torch us':>9s} {'zoo/torch':>9s}")
    for name, z, t, ratio in rows:
        print(f"{name:28s} {z:8.1f} {t:9.1f} {ratio:9.2f}")

    # The pieces of one zoo.mm call, alone.
    a = torch.randn(16, 4096, device="cuda", dtype=h)
    b = torch.randn(4096, 4096, device="cuda", dtype=h)
    zoo.mm(a, b)
    plan = next(p for p in gemm._calls.values() if (p.m, p.n) == (16, 4096))
    c = torch.empty(16, 4096, device="cuda", dtype=h)
    dev = torch.cuda.current_device()
    template = torch.empty((), dtype=h, device=a.device).expand(16, 4096)
    stream = gemm.current_stream(dev)
    a_1024 = torch.randn(1024, 1024, device="cuda", dtype=h)
    zoo.mm(a_1024, a_1024)
    plan_1024 = next(p for p in gemm._calls.values() if (p.m, p.n) == (1024, 1024))
    print(f"\nplans: 16x4096x4096 {plan.launch.choice}, 1024^3 {plan_1024.launch.choice}")
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
        "  of it: stream capturing? (split-K)": gemm._capturing,
        "  of it: split_k_workspace": lambda: gemm.split_k_workspace(dev, stream, *plan.launch.split_k),
        "Launch.fire, no split-K (1024^3)": plan_1024.launch.fire,
        "increment_version(out)": lambda: torch.autograd.graph.increment_version(c),
        "zoo.mm": lambda: zoo.mm(a, b),
        "torch.mm": lambda: torch.mm(a, b),
    }
    print(f"\n{'piece of a 16x4096x4096 call':40s} {'us':>6s}")
    for name, fn in pieces.items():
        print(f"{name:40s} {per_call_us(fn, calls=1000):6.2f}")


if __name__ == "__main__":
    main()
