"""Which kernels torch.mm (cuBLAS) and zoo.mm run for each small/skinny shape, and their
device time per launch from torch.profiler (fp16 -> fp16, inputs reused: L2-warm).
usage: python3 scripts/kernel_names.py [MxNxK ...]   (default: the small and skinny suites)"""
import sys
from collections import defaultdict

import torch
from torch.profiler import ProfilerActivity, profile

import zoo
from zoo import bench

shapes = [tuple(int(x) for x in s.split("x")) for s in sys.argv[1:]] or \
    [s for name in ("small", "skinny") for s in bench.SUITES[name]]
for m, n, k in shapes:
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    for _ in range(3):
        torch.mm(a, b), zoo.mm(a, b)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            torch.mm(a, b)
            zoo.mm(a, b)
        torch.cuda.synchronize()
    times = defaultdict(list)
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            times[e.name].append(e.device_time if hasattr(e, "device_time") else e.cuda_time)
    print(f"{m}x{n}x{k}: " + "; ".join(f"{name[:90]} x{len(t)} {sum(t) / len(t):.2f} us"
                                        for name, t in times.items()))
