"""Which cuBLAS/CUTLASS kernel torch._scaled_mm runs per shape and recipe, and its device time."""
import sys, torch
from torch.profiler import profile, ProfilerActivity
from zoo import fp8
shapes = [tuple(map(int, s.split('x'))) for s in sys.argv[1].split(',')]
for recipe in sys.argv[2].split(','):
    for m, n, k in shapes:
        a = torch.randn(m, k, device='cuda'); b = torch.randn(k, n, device='cuda')
        qa, sa = fp8.quantize(a, recipe, operand='a'); qb, sb = fp8.quantize(b, recipe, operand='b')
        f = lambda: torch._scaled_mm(qa, qb, sa, sb, out_dtype=torch.bfloat16)
        try:
            for _ in range(5): f()
        except Exception as e:
            print(recipe, m, n, k, 'torch', str(e)[:100]); continue
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as p:
            for _ in range(20): f()
            torch.cuda.synchronize()
        for ev in p.key_averages():
            if ev.device_type.name == 'CUDA' and ev.count >= 20:
                print(f"{recipe:6} {m}x{n}x{k}: {ev.key[:150]}  x{ev.count} avg {ev.device_time_total/ev.count:.2f} us")
