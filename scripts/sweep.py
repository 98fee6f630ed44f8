"""Tile sweep for the sm_75 kernel on the device: verify and time each candidate (source
variant x tile config) side by side with torch.mm. Development tool; results go to NOTES.md.
usage: sweep.py SIZE fp16|fp32 [variant.cu ...]"""
import dataclasses
import sys
from pathlib import Path

import torch

from zoo import bench, configs, gemm, registry

BASE = registry.SM75_HGEMM
TILES = [(128, 128, 32, 64, 64), (128, 128, 64, 64, 64), (128, 256, 64, 64, 64)]
size = int(sys.argv[1])
od = torch.float32 if sys.argv[2] == "fp32" else torch.float16
variants = [BASE] + [dataclasses.replace(BASE, name=Path(p).stem, source=Path(p).resolve()) for p in sys.argv[3:]]
dev = torch.cuda.current_device()
lim = gemm.device_limits(dev)
sets = bench.rotation_sets(2 * 2 * size * size, lim.l2_bytes)
inputs = [(torch.randn(size, size, device="cuda", dtype=torch.float16),
           torch.randn(size, size, device="cuda", dtype=torch.float16)) for _ in range(sets)]
outs = [torch.empty(size, size, device="cuda", dtype=od) for _ in range(2)]
fns = {"torch.mm": lambda i: bench.torch_mm(*inputs[i], od)}
for spec in variants:
    for bm, bn, bk, wm, wn in TILES:
        cfg = configs.TileConfig(f"{bm}x{bn}x{bk}/w{wm}x{wn}", bm, bn, bk, wm, wn, 2, 32 * (bm // wm) * (bn // wn))
        if configs.problems(cfg, spec, lim):
            continue
        for (m, n, k) in [(1000, 1500, 777), (size, size, size)]:
            a = torch.randn(m, k, device="cuda", dtype=torch.float16)
            b = torch.randn(k, n, device="cuda", dtype=torch.float16)
            c = torch.full((m, n), float("nan"), device="cuda", dtype=od)
            gemm.launch(spec, cfg, dev, a, b, c, k, n)
            chk = bench.verify(a, b, c)
            if not chk.ok:
                print("WRONG", spec.name, cfg.name, m, n, k, chk.describe())
        fns[f"{spec.name} {cfg.name}"] = (lambda s, c: lambda i: gemm.launch(
            s, c, dev, inputs[i][0], inputs[i][1], outs[i % 2], size, size))(spec, cfg)
t = bench.time_side_by_side(fns, sets, 10, 60)
ref = t["torch.mm"].median_ms
print(f"{size}^3 fp16 -> {od}, {lim.part}")
for name, tm in t.items():
    print(f"{name:40s} {tm.median_ms:8.4f} ms {tm.tflops(2 * size**3):7.1f} TFLOP/s "
          f"{100 * ref / tm.median_ms:6.1f}% spread {100 * tm.spread:.1f}%")
