"""Stream-K on and off, side by side with torch.mm in one run (NOTES.md, "Stream-K"): for each
shape, the launch zoo.mm would make (registry.stream_k_tiles decides the tail) and the same
launch with stream-K off, both built by gemm.plan_launch and fired at rotating inputs, timed
from CUDA-graph replays (variant_probe.time_shape), each output checked against float64.

    [PROBE_CONFIG=128x256] python3 scripts/stream_k_probe.py [MxNxK ...] [--json FILE]
"""
import json
import os
import sys

import torch

from variant_probe import json_arg, time_shape  # this script's own directory is on sys.path
from zoo import gemm, registry

SHAPES = ["4096x4096x4096", "8192x8192x8192", "6144x6144x6144", "3072x3072x3072", "4096x11008x4096",
          "1024x11008x4096", "16384x11008x4096", "16384x4096x11008", "2304x2048x8192", "2000x2600x3000"]


def launches(cfg_name, a, b, c_of):
    """{"on": stream-K as the registry says, "off": stream-K off} for this layout."""
    spec = registry.SM90_GEMM
    cfg = spec.config(cfg_name)
    k = a.shape[1]
    on = gemm.plan_launch(spec, cfg, 0, a, b, c_of("on"), k, a.stride(0), b.stride(0))
    rule = registry.stream_k_tiles
    registry.stream_k_tiles = lambda *args, **kw: 0
    try:
        off = gemm.plan_launch(spec, cfg, 0, a, b, c_of("off"), k, a.stride(0), b.stride(0))
    finally:
        registry.stream_k_tiles = rule
    return {"on": on, "off": off}


def main(argv):
    argv, out_json = json_arg(argv)
    cfg_name = os.environ.get("PROBE_CONFIG", "128x256")
    lim = gemm.device_limits(0)
    rows = []
    print(f"{lim.part}, config {cfg_name}; us per launch (graph replays, inputs out of L2), % of torch.mm")
    print(f"{'shape':>18} {'tail':>5} {'torch':>9} {'on':>9} {'off':>9} {'on %':>7} {'off %':>7}")
    for text in argv or SHAPES:
        torch_us, timed = time_shape(text, lambda a, b, c_of: launches(cfg_name, a, b, c_of))
        us = {"torch": torch_us, **{name: timed[name][0] for name in ("on", "off")}}
        ok = {name: timed[name][2] for name in ("on", "off")}
        tail = timed["on"][3].stream_k
        row = {"shape": text, "tail": tail, "us": us, "spread": {name: timed[name][1] for name in ("on", "off")},
               "pct_on": 100 * us["torch"] / us["on"], "pct_off": 100 * us["torch"] / us["off"], "ok": ok}
        rows.append(row)
        print(f"{text:>18} {tail:>5} {us['torch']:9.1f} {us['on']:9.1f} {us['off']:9.1f} "
              f"{row['pct_on']:6.1f}% {row['pct_off']:6.1f}%{'' if all(ok.values()) else '  WRONG ' + str(ok)}",
              flush=True)
    if out_json:
        with open(out_json, "w") as f:
            json.dump({"device": lim.part, "config": cfg_name, "torch": torch.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
