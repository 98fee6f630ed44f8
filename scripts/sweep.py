"""Tile sweep for the sm_75 kernel on the device: verify and time each candidate config
side by side with torch.mm (development tool; the results go into NOTES.md)."""
import sys
import torch
from zoo import bench, configs, gemm, registry

spec = registry.SM75_HGEMM
CANDIDATES = [(128, 128, 32, 64, 64), (128, 256, 32, 64, 64), (256, 128, 32, 64, 64),
              (128, 128, 64, 64, 64), (128, 256, 64, 64, 64), (128, 128, 64, 64, 32), (128, 128, 32, 64, 32)]
size = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
od = torch.float32 if (len(sys.argv) < 3 or sys.argv[2] == "fp32") else torch.float16
groups = [8]
dev = torch.cuda.current_device()
lim = gemm.device_limits(dev)
sets = bench.rotation_sets(2 * 2 * size * size, lim.l2_bytes)
inputs = [(torch.randn(size, size, device="cuda", dtype=torch.float16),
           torch.randn(size, size, device="cuda", dtype=torch.float16)) for _ in range(sets)]
outs = [torch.empty(size, size, device="cuda", dtype=od) for _ in range(2)]
fns = {"torch.mm": lambda i: bench.torch_mm(*inputs[i], od)}
for bm, bn, bk, wm, wn in CANDIDATES:
    for g in groups:
        cfg = configs.TileConfig(f"{bm}x{bn}x{bk}/w{wm}x{wn}/g{g}", bm, bn, bk, wm, wn, 2, 32 * (bm // wm) * (bn // wn), g)
        if configs.problems(cfg, spec, lim):
            print("skip", cfg.name, configs.problems(cfg, spec, lim)); continue
        # correctness at a ragged shape and at the timed size
        for (m, n, k) in [(1000, 1500, 777), (size, size, size)]:
            a = torch.randn(m, k, device="cuda", dtype=torch.float16); b = torch.randn(k, n, device="cuda", dtype=torch.float16)
            c = torch.full((m, n), float("nan"), device="cuda", dtype=od)
            gemm.launch(spec, cfg, dev, a, b, c, k, n)
            chk = bench.verify(a, b, c)
            if not chk.ok: print("WRONG", cfg.name, m, n, k, chk.describe())
        fns[cfg.name] = (lambda cfg: lambda i: gemm.launch(spec, cfg, dev, inputs[i][0], inputs[i][1], outs[i % 2], size, size))(cfg)
t = bench.time_side_by_side(fns, sets, 10, 60)
ref = t["torch.mm"].median_ms
print(f"{size}^3 fp16 -> {od}, {lim.part}")
for name, tm in t.items():
    print(f"{name:28s} {tm.median_ms:8.4f} ms {tm.tflops(2*size**3):7.1f} TFLOP/s {100*ref/tm.median_ms:6.1f}% spread {100*tm.spread:.1f}%")
