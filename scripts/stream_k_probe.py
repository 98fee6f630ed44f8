"""Stream-K on and off, side by side with torch.mm in one run (NOTES.md, "Stream-K"): for each
shape, the launch zoo.mm would make (registry.stream_k_tiles decides the tail) and the same
launch with stream-K off, both built by gemm.plan_launch and fired at rotating inputs, timed
from CUDA-graph replays (bench.time_side_by_side), each output checked against float64.

    [PROBE_CONFIG=128x256] python3 scripts/stream_k_probe.py [MxNxK ...] [--json FILE]
"""
import json
import os
import sys

import torch

from variant_probe import json_arg  # this script's own directory is on sys.path
from zoo import bench, gemm, registry

H = torch.float16
SHAPES = ["4096x4096x4096", "8192x8192x8192", "6144x6144x6144", "3072x3072x3072", "4096x11008x4096",
          "1024x11008x4096", "16384x11008x4096", "16384x4096x11008", "2304x2048x8192", "2000x2600x3000"]


def launches(cfg_name, a, b, c):
    """(stream-K as the registry says, stream-K off) for this layout."""
    spec = registry.SM90_GEMM
    cfg = spec.config(cfg_name)
    k = a.shape[1]
    on = gemm.plan_launch(spec, cfg, 0, a, b, c, k, a.stride(0), b.stride(0))
    rule = registry.stream_k_tiles
    registry.stream_k_tiles = lambda *args, **kw: 0
    try:
        off = gemm.plan_launch(spec, cfg, 0, a, b, c, k, a.stride(0), b.stride(0))
    finally:
        registry.stream_k_tiles = rule
    return on, off


def main(argv):
    argv, out_json = json_arg(argv)
    cfg_name = os.environ.get("PROBE_CONFIG", "128x256")
    lim = gemm.device_limits(0)
    rows = []
    print(f"{lim.part}, config {cfg_name}; us per launch (graph replays, inputs out of L2), % of torch.mm")
    print(f"{'shape':>18} {'tail':>5} {'torch':>9} {'on':>9} {'off':>9} {'on %':>7} {'off %':>7}")
    for text in argv or SHAPES:
        m, n, k = (int(x) for x in text.split("x"))
        sets = bench.rotation_sets((m * k + k * n) * 2, lim.l2_bytes, max_sets=8)
        A = [torch.randn(m, k, device="cuda", dtype=H) for _ in range(sets)]
        B = [torch.randn(k, n, device="cuda", dtype=H) for _ in range(sets)]
        C = {name: [torch.empty(m, n, device="cuda", dtype=H) for _ in range(sets)] for name in ("torch", "on", "off")}
        on, off = launches(cfg_name, A[0], B[0], C["on"][0])
        fire = {"on": on, "off": off}

        def zoo_fn(name):
            return lambda s: fire[name].fire_at(A[s].data_ptr(), B[s].data_ptr(), C[name][s].data_ptr())
        fns = {"torch": lambda s: torch.mm(A[s], B[s], out=C["torch"][s]), "on": zoo_fn("on"), "off": zoo_fn("off")}
        iters = max(10, min(60, int(3e5 / max(m * n * k / 1e9, 1))))
        t = bench.time_side_by_side(fns, sets, warmup=5, iters=iters)
        ok = {name: bench.verify(A[0], B[0], C[name][0]).ok for name in ("on", "off")}
        us = {name: t[name].median_ms * 1e3 for name in fns}
        row = {"shape": text, "tail": on.stream_k, "us": us, "spread": {n_: t[n_].spread for n_ in fns},
               "pct_on": 100 * us["torch"] / us["on"], "pct_off": 100 * us["torch"] / us["off"], "ok": ok}
        rows.append(row)
        print(f"{text:>18} {on.stream_k:>5} {us['torch']:9.1f} {us['on']:9.1f} {us['off']:9.1f} "
              f"{row['pct_on']:6.1f}% {row['pct_off']:6.1f}%{'' if all(ok.values()) else '  WRONG ' + str(ok)}",
              flush=True)
        del A, B, C, on, off, fire
        torch.cuda.empty_cache()
    if out_json:
        with open(out_json, "w") as f:
            json.dump({"device": lim.part, "config": cfg_name, "torch": torch.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
