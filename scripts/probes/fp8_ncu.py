"""Probe (issue 43): one FP8 GEMM at SIZE^3, e4m3 -> bf16, launched three times for ncu
(--launch-skip 2): zoo.scaled_mm or torch._scaled_mm, recipe tensor|row|block.
usage: fp8_ncu.py SIZE zoo|torch RECIPE"""
import sys

import torch

import zoo

size, who, recipe = int(sys.argv[1]), sys.argv[2], sys.argv[3]
gen = torch.Generator(device="cuda").manual_seed(0)
a = torch.randn(size, size, device="cuda", generator=gen)
b = torch.randn(size, size, device="cuda", generator=gen)
qa, sa = zoo.fp8.quantize(a, recipe)
qb, sb = zoo.fp8.quantize(b, recipe, operand="b")
fn = zoo.scaled_mm if who == "zoo" else torch._scaled_mm
for _ in range(3):
    fn(qa, qb, sa, sb, out_dtype=torch.bfloat16)
torch.cuda.synchronize()
