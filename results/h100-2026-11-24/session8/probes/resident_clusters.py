"""Clusters of each size the H100 holds at once for the sm90 kernel (the driver's occupancy
calculator, as zoo.gemm asks it), for configs with and without clusters (eighth session, run3).

    python3 results/h100-2026-11-24/session8/probes/resident_clusters.py
"""
from dataclasses import replace

import torch

from zoo import gemm, registry

spec = registry.SM90_GEMM
torch.zeros(1, device="cuda")  # a current context for the driver calls
lim = gemm.device_limits(0)
for t in ["32x64s", "32x64s:cluster_m=2", "32x64s:cluster_m=2,cluster_n=2", "32x64s:cluster_m=4,cluster_n=2",
          "64x128pp", "64x128ppc2", "128x256", "128x256c2", "128x192ppc2", "128x192ppc2x2"]:
    name, _, ch = t.partition(":")
    fields = dict(kv.split("=") for kv in ch.split(",") if kv)
    c = replace(spec.config(name), name=t, **{k: int(v) for k, v in fields.items()})
    with torch.cuda.device(0):
        fn = gemm.compiled(spec, c, "float16", "float16", 0)
        print(t, "cluster", c.cluster_size, "resident clusters",
              fn.resident_clusters(c.threads, c.cluster_size, lim.sm_count), flush=True)
