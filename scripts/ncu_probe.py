"""Launch one kernel/config twice at SIZE^3 for ncu to profile: the first launch compiles and
warms up, ncu skips it. usage: ncu_probe.py SIZE KERNEL CONFIG [fp16|fp32 out]
(KERNEL torch.mm: cuBLAS's kernel, for the reference's figures; profile it without --kernel-name)
(fp16 inputs; a kernel that computes fp32 inputs gets fp32 inputs, TF32 allowed where it rounds)"""
import sys

import torch

import zoo

size, kernel, config = int(sys.argv[1]), sys.argv[2], sys.argv[3]
cublas = kernel == "torch.mm"  # the reference itself (CONFIG is ignored): fp16 inputs
spec = None if cublas else zoo.registry.kernel(kernel)
in_dtype = torch.float16 if cublas else getattr(torch, spec.dtypes[0])
out_dtype = torch.float32 if in_dtype == torch.float32 or (len(sys.argv) > 4 and sys.argv[4] == "fp32") \
    else torch.float16
a = torch.randn(size, size, device="cuda", dtype=in_dtype)
b = torch.randn(size, size, device="cuda", dtype=in_dtype)
for _ in range(2):
    if cublas:
        zoo.bench.torch_mm(a, b, out_dtype)
    else:
        zoo.mm(a, b, out_dtype=out_dtype, kernel=kernel, config=config, allow_tf32=spec.tf32)
torch.cuda.synchronize()
