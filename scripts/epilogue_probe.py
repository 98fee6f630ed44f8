"""The sm90 kernel's two epilogues on small shapes, side by side with torch.mm (graph replays,
rotating inputs): C through shared memory and a TMA store (what zoo.mm uses when C is
16-byte aligned), or straight from the accumulators to global memory (the path for C that
TMA cannot address), forced here on aligned C. Same kernel, config and split.

    python3 scripts/epilogue_probe.py [MxNxK[:config] ...]
"""
import sys

import torch

import zoo
from zoo import bench, cuda, gemm, registry

DEFAULT = ["256x256x256", "512x512x512", "1000x1000x1000", "1024x1024x1024", "1x4096x4096",
           "16x4096x4096", "128x4096x4096", "16x11008x4096", "512x512x512:64x128pp", "512x512x512:16x128s"]


def launches(spec, cfg, a, b, c, direct: bool):
    real = cuda.tma_layout_problem
    if direct:  # C's map refused: the kernel stores C from registers
        cuda.tma_layout_problem = lambda address, *rest: "forced" if address in {t.data_ptr() for t in c} \
            else real(address, *rest)
    try:
        return [gemm.plan_launch(spec, cfg, 0, x, y, z, x.shape[1], x.stride(0), y.stride(0))
                for x, y, z in zip(a, b, c)]
    finally:
        cuda.tma_layout_problem = real


def main():
    h = torch.float16
    limits = gemm.device_limits(0)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; us per call (graph replays, median of 60)")
    print(f"{'shape':16s} {'config':12s} {'split':>5s} {'TMA epi':>8s} {'direct':>8s} {'zoo.mm':>8s} {'torch':>8s} "
          f"{'ok':>3s}")
    for arg in sys.argv[1:] or DEFAULT:
        shape, _, config = arg.partition(":")
        m, n, k = (int(x) for x in shape.split("x"))
        sets = bench.rotation_sets(2 * (m * k + k * n + m * n), limits.l2_bytes)
        a = [torch.randn(m, k, device="cuda", dtype=h) for _ in range(sets)]
        b = [torch.randn(k, n, device="cuda", dtype=h) for _ in range(sets)]
        c = [torch.empty(m, n, device="cuda", dtype=h) for _ in range(sets)]
        d = [torch.empty(m, n, device="cuda", dtype=h) for _ in range(sets)]
        spec, cfg = registry.select(limits, registry.Problem(m, n, k), config_name=config or None)
        tma, direct = launches(spec, cfg, a, b, c, False), launches(spec, cfg, a, b, d, True)
        assert tma[0].c_map and not direct[0].c_map
        fns = {"tma": lambda s: tma[s].fire(), "direct": lambda s: direct[s].fire(),
               "zoo.mm": lambda s: zoo.mm(a[s], b[s]), "torch": lambda s: torch.mm(a[s], b[s])}
        # The GPU sleeps 100 us before each replay, so the events see device time, not the host's.
        lead = bench.lead_cycles(limits, 100)
        t = bench.time_side_by_side(fns, sets, warmup=5, iters=60, graph=True, lead_cycles=lead)
        ok = all(bench.verify(x, y, z).ok and bench.verify(x, y, w).ok for x, y, z, w in zip(a, b, c, d))
        splits = tma[0].split_k is not None
        us = " ".join(f"{1e3 * t[name].median_ms:8.2f}" for name in fns)
        print(f"{shape:16s} {cfg.name:12s} {'yes' if splits else 'no':>5s} {us} {'yes' if ok else 'NO':>3s}")


if __name__ == "__main__":
    main()
