"""Variants of one config (fields replaced: group_m, stages, ...) side by side with torch.mm
and with the config as listed, from CUDA-graph replays with inputs out of L2; each output
checked against float64. Stream-K as the registry says for each.

    PROBE_VARIANTS="128x256;128x256:group_m=4;16x128s/2;128x256@old/gemm_tma_wgmma.cu" \
        python3 scripts/variant_probe.py [MxNxK ...] [--idle] [--json FILE]

A variant is [KERNEL+]CONFIG[:field=value,...][/SPLITS][@kernel.cu]: KERNEL+ names another
kernel of the registry than the sm90 one (e.g. sm75_gemv_stream+1x256), /SPLITS cuts K into
that many slices by hand (else the registry's rule).

--idle: the GPU idles before each call, as `zoo bench` times (its clocks start from boost);
else the calls run back to back (sustained clocks).
"""
import json
import os
import sys
from dataclasses import replace
from pathlib import Path

import torch

from zoo import bench, gemm, registry

H = torch.float16


def variant(text):
    """'128x256:group_m=4,stages=3' -> (the sm90 spec, that config with those fields replaced);
    'CONFIG[:fields]@path.cu' builds it from another copy of the kernel source (an A/B of a
    kernel change in one run). A /SPLITS part is splits()'s."""
    text_cfg, _, source = text.partition("@")
    text_cfg = text_cfg.partition("/")[0]
    kernel, _, text_cfg = text_cfg.rpartition("+")
    name, _, changes = text_cfg.partition(":")
    spec = registry.kernel(kernel) if kernel else registry.SM90_GEMM
    if source:
        spec = replace(spec, name=f"{spec.name}@{Path(source).stem}", source=Path(source).resolve())
    cfg = spec.config(name)
    fields = dict(kv.split("=") for kv in changes.split(",") if kv)
    return spec, replace(cfg, name=text.replace("/", "_").replace("+", "_"), **{k: int(v) for k, v in fields.items()})


def splits(text):
    """The K slices a variant names ('16x128s/2' -> 2), or None for the registry's rule."""
    count = text.partition("@")[0].partition("/")[2]
    return int(count) if count else None


def json_arg(argv):
    """(argv without `--json FILE`, FILE or None)."""
    if "--json" not in argv:
        return argv, None
    i = argv.index("--json")
    return argv[:i] + argv[i + 2:], argv[i + 1]


def time_shape(text, make_launches, lead=0):
    """One shape MxNxK side by side: torch.mm and the launches make_launches(a, b, c_of) builds
    ({name: gemm.Launch}; c_of(name) is that launch's output), fired at rotating inputs out of
    L2 from CUDA-graph replays (a GPU idle `lead` cycles before each call), each output checked
    against float64. Returns (torch.mm us, {name: (us, spread, ok, launch)})."""
    m, n, k = (int(x) for x in text.split("x"))
    lim = gemm.device_limits(0)
    sets = bench.rotation_sets((m * k + k * n) * 2, lim.l2_bytes, max_sets=8)
    A = [torch.randn(m, k, device="cuda", dtype=H) for _ in range(sets)]
    B = [torch.randn(k, n, device="cuda", dtype=H) for _ in range(sets)]
    C = {}

    def c_of(name):
        return C.setdefault(name, [torch.empty(m, n, device="cuda", dtype=H) for _ in range(sets)])[0]
    launches = make_launches(A[0], B[0], c_of)

    def zoo_fn(name):
        return lambda s: launches[name].fire_at(A[s].data_ptr(), B[s].data_ptr(), C[name][s].data_ptr())
    c_of("torch")
    fns = {"torch": lambda s: torch.mm(A[s], B[s], out=C["torch"][s]), **{name: zoo_fn(name) for name in launches}}
    iters = max(10, min(60, int(3e5 / max(m * n * k / 1e9, 1))))
    t = bench.time_side_by_side(fns, sets, warmup=5, iters=iters, lead_cycles=lead)
    out = {name: (t[name].median_ms * 1e3, t[name].spread, bench.verify(A[0], B[0], C[name][0]).ok, launch)
           for name, launch in launches.items()}
    del A, B, C, launches
    torch.cuda.empty_cache()
    return t["torch"].median_ms * 1e3, out


def main(argv):
    argv, out_json = json_arg(argv)
    idle = "--idle" in argv
    argv = [a for a in argv if a != "--idle"]
    names = os.environ.get("PROBE_VARIANTS", "128x256;128x256:group_m=4;128x256:group_m=16").split(";")
    lim = gemm.device_limits(0)
    rows = []
    print(f"{lim.part}; us per launch (graph replays, inputs out of L2{', the GPU idle before each' if idle else ''}),"
          " % of torch.mm in the same run")
    for text in argv or ["4096x4096x4096", "8192x8192x8192"]:
        _, n, k = (int(x) for x in text.split("x"))
        torch_us, timed = time_shape(
            text, lambda a, b, c_of: {name: gemm.plan_launch(*variant(name), 0, a, b, c_of(name), k, k, n,
                                                             splits=splits(name)) for name in names},
            bench.lead_cycles(lim) if idle else 0)
        print(f"{text}: torch.mm {torch_us:.1f} us")
        for name, (us, spread, ok, launch) in timed.items():
            rows.append({"shape": text, "variant": name, "us": us, "torch_us": torch_us, "pct": 100 * torch_us / us,
                         "spread": spread, "grid": list(launch.grid), "stream_k": launch.stream_k, "ok": ok})
            grid = "x".join(str(g) for g in launch.grid if g > 1) or "1"
            print(f"  {name:>36} {us:9.1f} us {100 * torch_us / us:6.1f}%  spread {100 * spread:4.1f}%"
                  f"  grid {grid}  stream-K tail {launch.stream_k}{'' if ok else '  WRONG'}", flush=True)
    if out_json:
        with open(out_json, "w") as f:
            json.dump({"device": lim.part, "torch": torch.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
