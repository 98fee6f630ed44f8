"""Launch each named config once at 4096^3 (after a warm-up launch) for ncu to profile."""
import sys, torch, zoo
m = n = k = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
cfgs = sys.argv[2].split(",") if len(sys.argv) > 2 else ["128x128"]
a = torch.randn(m, k, device="cuda", dtype=torch.float16)
b = torch.randn(k, n, device="cuda", dtype=torch.float16)
for c in cfgs:
    for _ in range(2):
        zoo.mm(a, b, out_dtype=torch.float32, config=c)
torch.cuda.synchronize()
