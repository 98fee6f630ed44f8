"""What a graph of 10 GEMMs on 10 streams costs whoever launches them: the same fork/join
capture (events from the caller's stream to 10 side streams and back) around torch.mm, the
zoo's streams mode, and a one-element fill per stream (the launches alone), against
torch.bmm, each captured once per input set and replayed, device time with the GPU kept
ahead of the host (as `zoo batched`). Then the kernels' start and end offsets in one replay
of each (torch.profiler).

    python3 scripts/streams_floor.py [CONFIG[:nopdl][:noshare][/STREAMS] ...]   (configs for the
    streams mode; default auto; ":nopdl": its launches made without the dependent-launch
    attribute; ":noshare": each GEMM's grid as many CTAs as tiles (not its share of the GPU,
    registry.shared_clusters); "/STREAMS": that many streams instead of the default)
"""
import json
import os
import statistics
import sys
import tempfile

import torch
from torch.profiler import ProfilerActivity, profile

import zoo
from zoo import bench, gemm, registry

B, M, N, K = 10, 768, 768, 1024
h = torch.float16
limits = gemm.device_limits(0)
sets = bench.rotation_sets(B * (M * K + K * N) * 2, limits.l2_bytes)
inputs = [(torch.randn(B, M, K, device="cuda", dtype=h), torch.randn(B, K, N, device="cuda", dtype=h))
          for _ in range(sets)]
outs = [torch.empty(B, M, N, device="cuda", dtype=h) for _ in range(sets)]
side = [torch.cuda.Stream() for _ in range(B)]


def fork_join(body):
    def run():
        current = torch.cuda.current_stream()
        ready = current.record_event()
        for i, s in enumerate(side):
            s.wait_event(ready)
            with torch.cuda.stream(s):
                body(i)
        for s in side:
            current.wait_stream(s)
    return run


def graphs(make):
    """One captured graph per input set of make(set)."""
    out = []
    for s in range(sets):
        fn = make(s)
        fn()
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        g.replay()
        torch.cuda.synchronize()
        out.append(g)
    return out


cases = {
    "torch.bmm": lambda s: lambda: torch.bmm(*inputs[s], out=outs[s]),
    "torch.mm x10 on 10 streams": lambda s: fork_join(lambda i: torch.mm(inputs[s][0][i], inputs[s][1][i],
                                                                        out=outs[s][i])),
    "zoo.mm x10 on 10 streams": lambda s: fork_join(lambda i: zoo.mm(inputs[s][0][i], inputs[s][1][i],
                                                                    out=outs[s][i])),
    "fill x10 on 10 streams": lambda s: fork_join(lambda i: outs[s][i, 0, :8].fill_(0)),
    "fill x1": lambda s: lambda: outs[s][0, 0, :8].fill_(0),
}
no_pdl, no_share = set(), set()
for config in sys.argv[1:] or ["auto"]:
    config_flag, _, count = config.partition("/")
    name, *flags = config_flag.split(":")
    cfg = None if name == "auto" else name
    cases[f"zoo.bmm streams {config}"] = (lambda c, n: lambda s: lambda: zoo.bmm(
        *inputs[s], mode="streams", streams=n, out=outs[s], config=c))(cfg, int(count) if count else None)
    if "nopdl" in flags:
        no_pdl.add(f"zoo.bmm streams {config}")
    if "noshare" in flags:
        no_share.add(f"zoo.bmm streams {config}")
rule, share = registry.dependent_launch, registry.shared_clusters
made = {}
for name, make in cases.items():  # plans are made at a case's first call, under the rules set here
    registry.dependent_launch = (lambda *_: False) if name in no_pdl else rule
    registry.shared_clusters = (lambda units, all_units, resident: resident) if name in no_share else share
    made[name] = graphs(make)
registry.dependent_launch, registry.shared_clusters = rule, share
for name, gs in made.items():
    if "fill" not in name:
        gs[0].replay()
        torch.cuda.synchronize()
        bad = [j for j in range(B) if not bench.verify(inputs[0][0][j], inputs[0][1][j], outs[0][j]).ok]
        assert not bad, f"{name}: GEMMs {bad} wrong"
fns = {name: (lambda gs: lambda s: gs[s].replay())(gs) for name, gs in made.items()}
lead = bench.lead_cycles(limits)
t = bench.time_side_by_side(fns, sets, warmup=5, iters=60, graph=False, lead_cycles=lead)
ref = t["torch.bmm"].median_ms
print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}: {B} x [{M}, {K}, {N}] fp16, "
      "graph replays, median of 60")
for name, timing in t.items():
    print(f"  {name:34s} {1e3 * timing.median_ms:7.1f} us  torch.bmm / this {ref / timing.median_ms:5.2f}x")

print("\nkernel start / end offsets in one replay (us from the first start), torch.profiler:")
for name, gs in made.items():
    if name in ("torch.bmm", "fill x1"):
        continue
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            gs[0].replay()
            torch.cuda.synchronize()
    path = tempfile.mktemp(suffix=".json")
    prof.export_chrome_trace(path)
    kernels = sorted((e for e in json.load(open(path))["traceEvents"] if e.get("cat") == "kernel"),
                     key=lambda e: e["ts"])
    os.unlink(path)
    per = len(kernels) // 3
    g = kernels[-per:]
    t0 = g[0]["ts"]
    starts = [e["ts"] - t0 for e in g]
    gaps = [y - x for x, y in zip(starts, starts[1:])]
    print(f"  {name:34s} {per} kernels; starts every {statistics.median(gaps) if gaps else 0:.1f} us (median); "
          f"last ends at {max(e['ts'] + e['dur'] for e in g) - t0:.1f}: "
          + " ".join(f"{s:.1f}-{e['ts'] + e['dur'] - t0:.1f}" for s, e in zip(starts, g)))
