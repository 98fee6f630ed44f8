"""Session 5: split-K slices as one thread-block cluster, reduced through distributed shared
memory (probe_new/gemm_tma_wgmma.cu: probes/split-cluster.diff), against the kernel's reduction
through L2 (partials in the workspace, an acq_rel count), same configs and slice counts, side
by side with torch.mm (scripts/variant_probe.py's timer: graph replays, inputs out of L2, the
GPU idle before each call, every output checked).

    PYTHONPATH=. python3 results/h100-2026-11-25/session5/probes/split_cluster_probe.py [--json F] MxNxK ...
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "scripts"))
import variant_probe as vp  # noqa: E402
from zoo import bench, gemm  # noqa: E402

PROBE = "@probe_new/gemm_tma_wgmma.cu"
VARIANTS = ["16x128s/1", "16x128s/2", "16x128s/2" + PROBE, "16x128s/4", "16x128s/4" + PROBE,
            "32x64s/2", "32x64s/2" + PROBE]


def main(argv):
    argv, out_json = vp.json_arg(argv)
    lim = gemm.device_limits(0)
    rows = []
    print(f"{lim.part}; us per launch (graph replays, inputs out of L2, the GPU idle before each), % of torch.mm")
    for text in argv:
        _, n, k = (int(x) for x in text.split("x"))

        def make(a, b, c_of):
            out = {}
            for name in VARIANTS:
                launch = gemm.plan_launch(*vp.variant(name), 0, a, b, c_of(name), k, k, n, splits=vp.splits(name))
                if PROBE in name:  # the slices of a tile are one cluster
                    s = vp.splits(name)
                    assert launch.grid[0] % s == 0, (name, launch.grid)
                    launch.cluster = s
                out[name] = launch
            return out
        torch_us, timed = vp.time_shape(text, make, bench.lead_cycles(lim))
        print(f"{text}: torch.mm {torch_us:.1f} us")
        for name, (us, spread, ok, launch) in timed.items():
            rows.append({"shape": text, "variant": name, "us": us, "torch_us": torch_us, "pct": 100 * torch_us / us,
                         "spread": spread, "grid": launch.grid[0], "cluster": launch.cluster, "ok": ok})
            print(f"  {name:>40} {us:8.1f} us {100 * torch_us / us:6.1f}%  spread {100 * spread:4.1f}%  grid "
                  f"{launch.grid[0]}  cluster {launch.cluster}{'' if ok else '  WRONG'}", flush=True)
    if out_json:
        with open(out_json, "w") as f:
            json.dump({"device": lim.part, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
