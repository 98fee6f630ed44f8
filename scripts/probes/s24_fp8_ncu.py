"""One FP8 GEMM MxNxK (e4m3 -> bf16), launched three times for ncu (--launch-skip 2)."""
import sys
import torch
import zoo
m, n, k = map(int, sys.argv[1].split("x")); who, recipe = sys.argv[2], sys.argv[3]
gen = torch.Generator(device="cuda").manual_seed(0)
a = torch.randn(m, k, device="cuda", generator=gen)
b = torch.randn(n, k, device="cuda", generator=gen)
qa, sa = zoo.fp8.quantize(a, recipe)
qb, sb = zoo.fp8.quantize(b.t(), recipe, operand="b")
fn = zoo.scaled_mm if who == "zoo" else torch._scaled_mm
for _ in range(3):
    fn(qa, qb, sa, sb, out_dtype=torch.bfloat16)
torch.cuda.synchronize()
