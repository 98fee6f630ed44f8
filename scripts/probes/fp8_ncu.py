import torch, zoo
from zoo import fp8
m = n = k = 4096
g = torch.Generator(device="cuda").manual_seed(0)
a = torch.randn(m, k, device="cuda", generator=g); w = torch.randn(n, k, device="cuda", generator=g)
for recipe in ("tensor", "block"):
    qa, sa = fp8.quantize(a, recipe); qb, sb = fp8.quantize(w.t(), recipe, operand="b")
    for fast in ((False, True) if recipe == "tensor" else (False,)):
        for _ in range(3): zoo.scaled_mm(qa, qb, sa, sb, use_fast_accum=fast)
        torch.cuda.synchronize()
