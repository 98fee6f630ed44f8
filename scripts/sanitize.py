"""Small and ragged shapes through every config of a kernel, for compute-sanitizer:
  compute-sanitizer --tool racecheck python3 scripts/sanitize.py sm90_gemm_tma_wgmma
Each result is checked against a float64 product computed on the CPU, so a clean report also
means a right answer, and the only GPU kernels in the process are the zoo's and torch's
elementwise ones (torch.mm's cuBLAS split-K kernels show racecheck hazards of their own)."""
import sys

import torch

import zoo
from zoo import registry

spec = registry.kernel(sys.argv[1] if len(sys.argv) > 1 else "sm90_gemm_tma_wgmma")
torch.backends.cuda.matmul.allow_tf32 = spec.tf32  # the TF32 kernel runs only where allowed


def check(a, b, c, what: str) -> None:
    """Normwise error against a float64 product on the CPU (no cuBLAS in this process)."""
    ref = a.cpu().double() @ b.cpu().double()
    err = ((c.cpu().double() - ref).norm() / ref.norm()).item()
    if not err < 1e-2:  # NaN fails too
        sys.exit(f"{what}: relative error {err:.3g}")


gen = torch.Generator(device="cuda").manual_seed(0)
shapes = [(256, 512, 128), (129, 200, 77), (1, 8, 8),
          (77, 300, 1100), (128, 512, 4096)]  # the last two take the split-K path on an H100/H200
for cfg in spec.configs:
    for m, n, k in shapes:
        for dtype, out_dtype in spec.entry:
            a = torch.randn(m, k, device="cuda", dtype=getattr(torch, dtype), generator=gen)
            b = torch.randn(k, n, device="cuda", dtype=getattr(torch, dtype), generator=gen)
            if registry.layout(False, False) not in registry.layouts_of(spec, cfg):  # a K-major B only
                b = b.t().contiguous().t()
            c = zoo.mm(a, b, out_dtype=getattr(torch, out_dtype), kernel=spec.name, config=cfg.name)
            check(a, b, c, f"{cfg.name} {m}x{n}x{k} {dtype}->{out_dtype}")
    # The grouped entry point (zoo.bmm): one launch over every shape above, from a table of
    # problems in device memory.
    for dtype, out_dtype in spec.entry:
        a_list = [torch.randn(m, k, device="cuda", dtype=getattr(torch, dtype), generator=gen) for m, _, k in shapes]
        b_list = [torch.randn(k, n, device="cuda", dtype=getattr(torch, dtype), generator=gen) for _, n, k in shapes]
        outs = zoo.bmm(a_list, b_list, out_dtype=getattr(torch, out_dtype), kernel=spec.name, config=cfg.name)
        for (m, n, k), a, b, c in zip(shapes, a_list, b_list, outs):
            check(a, b, c, f"grouped {cfg.name} {m}x{n}x{k} {dtype}->{out_dtype}")
print(f"{spec.name}: {len(spec.configs)} configs x {len(shapes)} shapes x {len(spec.entry)} dtype pairs verified, "
      "one GEMM per launch and grouped")
