"""One FP8 GEMM M x N x K launched three times for ncu (--launch-skip 2): zoo (config C) or torch."""
import sys, torch, zoo
m, n, k = map(int, sys.argv[1].split('x')); who = sys.argv[2]; recipe = sys.argv[3]
cfg = sys.argv[4] if len(sys.argv) > 4 else None
g = torch.Generator(device="cuda").manual_seed(0)
a = torch.randn(m, k, device="cuda", generator=g); b = torch.randn(k, n, device="cuda", generator=g)
qa, sa = zoo.fp8.quantize(a, recipe); qb, sb = zoo.fp8.quantize(b, recipe, operand="b")
fn = (lambda: zoo.scaled_mm(qa, qb, sa, sb, out_dtype=torch.bfloat16, config=cfg)) if who == "zoo" else \
     (lambda: torch._scaled_mm(qa, qb, sa, sb, out_dtype=torch.bfloat16))
for _ in range(3): fn()
torch.cuda.synchronize()
