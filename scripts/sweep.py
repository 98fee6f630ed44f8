"""Config sweep on the device: verify and time each (source variant x tile config) of one
kernel side by side with torch.mm. Development tool; results go to NOTES.md.
usage: sweep.py KERNEL SIZE DTYPE OUT_DTYPE [variant.cu ...]   e.g. sweep.py sm80_gemm_mma 4096 fp16 fp16
ZOO_SWEEP_ONLY=name,name limits the tile configs swept."""
import dataclasses
import os
import sys
from pathlib import Path

import torch

from zoo import bench, configs, gemm, registry

EXTRA = {  # tiles tried beyond the configs file: (block_m, block_n, block_k, warp_m, warp_n, stages, group_m)
    "sm75_hgemm_wmma": [(128, 128, 32, 64, 64, 2, 8), (128, 256, 32, 64, 64, 2, 8), (256, 128, 32, 64, 64, 3, 8)],
    "sm80_gemm_mma": [(256, 128, 64, 64, 64, 4, 8), (256, 128, 32, 64, 64, 2, 8), (128, 128, 32, 64, 64, 2, 8), (256, 128, 32, 64, 64, 3, 8)],
}
DT = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
# Ring depths beyond the configs file's are tried too (the sm80 and sm90 kernels take any
# STAGES >= 2; the sm75 WMMA kernel 2 or 3; the SIMT kernel has two buffers whatever STAGES says).
base = dataclasses.replace(registry.kernel(sys.argv[1]), stages=tuple(range(2, 9)))
size, dtype, od = int(sys.argv[2]), DT[sys.argv[3]], DT[sys.argv[4]]
variants = [base] + [dataclasses.replace(base, name=Path(p).stem, source=Path(p).resolve()) for p in sys.argv[5:]]
tiles = list(base.configs) + [configs.TileConfig(f"{bm}x{bn}x{bk}/w{wm}x{wn}/s{st}/g{g}", bm, bn, bk, wm, wn, st,
                                                 32 * (bm // wm) * (bn // wn), g)
                              for bm, bn, bk, wm, wn, st, g in EXTRA.get(base.name, [])]
only = [n for n in os.environ.get("ZOO_SWEEP_ONLY", "").split(",") if n]  # config names, else all
tiles = [t for t in tiles if not only or t.name in only]
dev = torch.cuda.current_device()
lim = gemm.device_limits(dev)
sets = bench.rotation_sets(2 * 2 * size * size, lim.l2_bytes)
inputs = [(torch.randn(size, size, device="cuda", dtype=dtype), torch.randn(size, size, device="cuda", dtype=dtype))
          for _ in range(sets)]
outs = [torch.empty(size, size, device="cuda", dtype=od) for _ in range(2)]
fns = {"torch.mm": lambda i: bench.torch_mm(*inputs[i], od)}
for spec in variants:
    for cfg in tiles:
        if configs.problems(cfg, spec, lim):
            continue
        for (m, n, k) in [(1000, 1504, 776), (size, size, size)]:  # rows 16-byte aligned
            a = torch.randn(m, k, device="cuda", dtype=dtype)
            b = torch.randn(k, n, device="cuda", dtype=dtype)
            c = torch.full((m, n), float("nan"), device="cuda", dtype=od)
            gemm.launch(spec, cfg, dev, a, b, c, k, k, n)
            chk = bench.verify(a, b, c)
            if not chk.ok:
                print("WRONG", spec.name, cfg.name, m, n, k, chk.describe())
        fns[f"{spec.name} {cfg.name}"] = (lambda s, c: lambda i: gemm.launch(
            s, c, dev, inputs[i][0], inputs[i][1], outs[i % 2], size, size, size))(spec, cfg)
t = bench.time_side_by_side(fns, sets, 10, 60)
ref = t["torch.mm"].median_ms
print(f"{size}^3 {sys.argv[3]} -> {sys.argv[4]}, {lim.part}")
for name, tm in t.items():
    print(f"{name:44s} {tm.median_ms:8.4f} ms {tm.tflops(2 * size**3):7.1f} TFLOP/s "
          f"{100 * ref / tm.median_ms:6.1f}% spread {100 * tm.spread:.1f}%")
