"""(Session 3 copy of session 1's probe: also prints how late each grid's last CTA starts.)
The streams mode's ten grids in one graph replay, and grids capped at a share of the SMs.

Ten GEMMs of [768, 1024, 768] fp16, one launch each on ten side streams forked from and
joined back to the caller's (as zoo.bmm's streams mode), captured in a graph per input set.
Variants (label=CONFIG[:fields][/CAPS][@STREAMS]): CAPS absent: one tile per CTA (24 CTAs);
CAPS "share": each grid its share of the GPU (the streams mode since 2026-11-25, second
session: registry.shared_clusters); CAPS an int or a '+'-joined list of ten: each grid gets that
many CTAs and a stream-K build spreads the tiles past its whole waves over them along K
(fields must say stream_k=1 then). STREAMS (default ten): the launches go round-robin over
that many streams, a stream's later ones as independent programmatic dependents (as zoo.bmm's
streams mode).

1. Times each variant's replays side by side with torch.bmm and zoo.bmm(mode="streams")
   (bench.time_side_by_side, the GPU kept ahead of the host, inputs rotated out of L2).
2. Replays each variant built from streams_timeline.cu (the kernel with %globaltimer
   stamps per consumer: its block's start, first K-tile, MMAs done, end) back to back and prints, for the median replay, when
   each grid's first CTA started and its last ended, from the replay's first start (us).

    patch -o /tmp/streams_timeline.cu kernels/sm90/gemm_tma_wgmma.cu \\
        results/h100-2026-11-25/session1/probes/streams_timeline.diff
    TIMELINE_CU=/tmp/streams_timeline.cu python3 .../streams_timeline.py [--json F] [VARIANT ...]
"""
import collections
import ctypes
import json
import os
import statistics
import sys
from dataclasses import replace
from pathlib import Path

import torch

import zoo
from zoo import bench, gemm, registry
from cuda.bindings import driver

B, M, N, K = 10, 768, 768, 1024
h = torch.float16
args = sys.argv[1:]
json_path = None
if "--json" in args:
    i = args.index("--json")
    json_path = args[i + 1]
    del args[i:i + 2]
VARIANTS = args or ["pp=128x192pp", "coop=128x192", "sk13=128x192:stream_k=1/13",
                    "sk14=128x192:stream_k=1/14", "sk12=128x192:stream_k=1/12", "sk11=128x192:stream_k=1/11",
                    "ramp=128x192:stream_k=1/10+11+11+12+12+13+14+14+15+16"]

limits = gemm.device_limits(0)
spec0 = registry.SM90_GEMM
spec_tl = replace(spec0, name=spec0.name + "@tl", source=Path(os.environ["TIMELINE_CU"]))
sets = bench.rotation_sets(B * (M * K + K * N) * 2, limits.l2_bytes)
inputs = [(torch.randn(B, M, K, device="cuda", dtype=h), torch.randn(B, K, N, device="cuda", dtype=h))
          for _ in range(sets)]
outs = [torch.empty(B, M, N, device="cuda", dtype=h) for _ in range(sets)]
side = [torch.cuda.Stream() for _ in range(B)]


def parse(variant):
    label, _, rest = variant.partition("=")
    rest, _, streams = rest.partition("@")
    cfg_text, _, caps = rest.partition("/")
    name, _, changes = cfg_text.partition(":")
    fields = {f: int(v) for f, v in (kv.split("=") for kv in changes.split(",") if kv)}
    if caps == "share":  # each grid its share of the GPU, as the streams mode (registry.shared_clusters)
        return label, name, fields, "share", int(streams or B)
    if caps:
        caps = [int(c) for c in caps.split("+")]
        caps = caps * B if len(caps) == 1 else caps
        assert len(caps) == B
    return label, name, fields, caps or None, int(streams or B)


def launches(spec, name, fields, caps, s, streams):
    """The ten launches of input set s."""
    cfg = replace(spec.config(name), name=f"{name}:{fields}", **fields)
    a, b = inputs[s]
    out = []
    resident, tiles_rule, share = gemm._resident_clusters, registry.stream_k_tiles, registry.shared_clusters
    try:
        for i in range(B):
            if caps in (None, "share"):
                if caps is None:  # side by side, but a CTA per tile
                    registry.shared_clusters = lambda units, all_units, resident: resident
                out.append(gemm.plan_launch(spec, cfg, 0, a[i], b[i], outs[s][i], K, K, N,
                                            shared_units=B * cfg.tiles(M, N), independent=i >= streams))
                continue
            cap = caps[i]
            gemm._resident_clusters = lambda *_: cap
            tiles = cfg.tiles(M, N)
            registry.stream_k_tiles = lambda *_: tiles % cap if tiles > cap else 0
            out.append(gemm.plan_launch(spec, cfg, 0, a[i], b[i], outs[s][i], K, K, N, splits=1))
            assert out[-1].grid[0] == min(cap, tiles), out[-1].grid
    finally:
        gemm._resident_clusters, registry.stream_k_tiles, registry.shared_clusters = resident, tiles_rule, share
    return out


def fork_join(body, streams=B):
    current = torch.cuda.current_stream()
    ready = current.record_event()
    for st in side[:streams]:
        st.wait_event(ready)
    for i in range(B):
        with torch.cuda.stream(side[i % streams]):
            body(i)
    for st in side[:streams]:
        current.wait_stream(st)


def graph_of(fn):
    fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    g.replay()
    torch.cuda.synchronize()
    return g


def check(label, s=0):
    if os.environ.get("TL_NO_CHECK"):  # a probe kernel that computes nothing
        return
    bad = [j for j in range(B) if not bench.verify(inputs[s][0][j], inputs[s][1][j], outs[s][j]).ok]
    assert not bad, f"{label}: GEMMs {bad} wrong"


def variant_graphs(spec, variant):
    label, name, fields, caps, streams = parse(variant)
    gs = []
    for s in range(sets):
        ls = launches(spec, name, fields, caps, s, streams)
        outs[s].fill_(float("nan"))
        gs.append(graph_of(lambda: fork_join(lambda i: ls[i].fire(), streams)))
        check(label, s)
    return label, gs, ls


# ---- 1. Times, side by side.
made = {"torch.bmm": [graph_of(lambda s=s: torch.bmm(*inputs[s], out=outs[s])) for s in range(sets)],
        "zoo.bmm streams (auto)": [graph_of(lambda s=s: zoo.bmm(*inputs[s], mode="streams", out=outs[s]))
                                   for s in range(sets)]}
check("zoo.bmm streams")
grids = {}
for v in VARIANTS:
    label, gs, ls = variant_graphs(spec0, v)
    made[label] = gs
    grids[label] = [(l.grid[0], l.stream_k) for l in ls]
fns = {name: (lambda gs: lambda s: gs[s].replay())(gs) for name, gs in made.items()}
result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "times_us": {}, "timelines": {}}
for rnd in range(2):
    t = bench.time_side_by_side(fns, sets, warmup=5, iters=60, graph=False, lead_cycles=bench.lead_cycles(limits))
    ref = t["torch.bmm"].median_ms
    print(f"round {rnd}: {result['device']}, {B} x [{M}, {K}, {N}] fp16, graph replays, median of 60")
    for name, timing in t.items():
        result["times_us"].setdefault(name, []).append(1e3 * timing.median_ms)
        extra = f"  grids {grids[name]}" if name in grids else ""
        print(f"  {name:26s} {1e3 * timing.median_ms:7.1f} us  torch.bmm / this {ref / timing.median_ms:5.2f}x{extra}",
              flush=True)


# ---- 2. Timelines.
def global_of(fn, name):
    module = gemm.cuda._check(driver.cuFuncGetModule(fn.handle), "cuFuncGetModule")
    ptr, size = gemm.cuda._check(driver.cuModuleGetGlobal(module, name.encode()), "cuModuleGetGlobal")
    return int(ptr), size


REPLAYS = 24
for v in VARIANTS:
    label, gs, ls = variant_graphs(spec_tl, v)
    count_ptr, _ = global_of(ls[0].fn, "tl_count")
    rec_ptr, rec_size = global_of(ls[0].fn, "tl_rec")
    gemm.cuda._check(driver.cuMemsetD32(count_ptr, 0, 1), "cuMemsetD32")
    torch.cuda.synchronize()
    torch.cuda._sleep(bench.lead_cycles(limits))
    for _ in range(REPLAYS):
        gs[0].replay()
    torch.cuda.synchronize()
    check(label)
    host = (ctypes.c_uint64 * (rec_size // 8))()
    gemm.cuda._check(driver.cuMemcpyDtoH(ctypes.addressof(host), rec_ptr, rec_size), "cuMemcpyDtoH")
    count = (ctypes.c_uint32 * 1)()
    gemm.cuda._check(driver.cuMemcpyDtoH(ctypes.addressof(count), count_ptr, 4), "cuMemcpyDtoH")
    n = count[0]
    per = 2 * sum(l.grid[0] for l in ls)  # a record per consumer (two a CTA)
    assert n == per * REPLAYS, (n, per, REPLAYS)
    F = 6  # streams_timeline.diff's TL_FIELDS: C, block | smid | consumer, start, first K-tile, MMAs done, end
    recs = sorted((host[F * j + 2], host[F * j + 5], host[F * j], host[F * j + 1], host[F * j + 3], host[F * j + 4])
                  for j in range(n))
    gemm_of = {outs[0][i].data_ptr(): i for i in range(B)}
    replays = []
    # Replays run one after another (each joins before the next forks): cut by count.
    for r in range(REPLAYS):
        rs = recs[r * per:(r + 1) * per]
        assert sorted(collections.Counter(gemm_of[c] for _, _, c, *_ in rs).values()) == \
            sorted(2 * l.grid[0] for l in ls), f"replay {r} of {label} overlaps another"
        t0 = rs[0][0]
        span = max(r[1] for r in rs) - t0
        per_grid = {}
        for st, en, c, meta, first, mma in rs:
            g = per_grid.setdefault(gemm_of[c], [st, en, 0, [], [], [], st])
            g[0], g[1], g[6] = min(g[0], st), max(g[1], en), max(g[6], st)
            g[2] += 1
            if first:  # a consumer that had a tile: its waits and phases
                g[3].append(first - st), g[4].append(mma - first), g[5].append(en - mma)
        busy = {}
        for st, en, c, meta, *_ in rs:  # per CTA: its start to its later consumer's end
            key = (c, meta & 0xFFFF)
            busy[key] = max(busy.get(key, 0), en - st)
        replays.append({"span_us": span / 1e3, "sm_busy": sum(busy.values()) / (limits.sm_count * span),
                        "ctas": len(busy), "sms": len({(m >> 16) & 0xFFF for _, _, _, m, *_ in rs}),
                        "grids": [[(g[0] - t0) / 1e3, (g[1] - t0) / 1e3, g[2] // 2]
                                  + [statistics.median(x) / 1e3 if x else 0 for x in g[3:6]]
                                  + [(g[6] - g[0]) / 1e3]
                                  for g in (per_grid[i] for i in sorted(per_grid))],
                        "cta_us": sorted(d / 1e3 for d in busy.values())})
    gaps = [(recs[(r + 1) * per][0] - max(x[1] for x in recs[r * per:(r + 1) * per])) / 1e3
            for r in range(REPLAYS - 1)]
    steady = replays[4:]
    mid = sorted(steady, key=lambda x: x["span_us"])[len(steady) // 2]
    result["timelines"][label] = {"replays": replays, "gaps_us": gaps, "median": mid}
    print(f"\n{label} ({v}), instrumented, {REPLAYS} replays back to back: span (first CTA start to last end) "
          f"median {mid['span_us']:.1f} us (all {min(x['span_us'] for x in steady):.1f}-{max(x['span_us'] for x in steady):.1f}); "
          f"gap between replays {statistics.median(gaps):.1f} us; SMs busy {100 * mid['sm_busy']:.0f}% of the span; "
          f"{mid['ctas']} CTAs on {mid['sms']} SMs; CTA lengths {mid['cta_us'][0]:.1f}-{mid['cta_us'][-1]:.1f} us "
          f"(median {statistics.median(mid['cta_us']):.1f})")
    print("  grid: first start - last end (us), CTAs; medians over its consumers: start to first K-tile, "
          "first K-tile to MMAs done, MMAs done to end; its last CTA's start after its first")
    for i, (a0, a1, c, wait, mma, tail, late) in enumerate(mid["grids"]):
        print(f"  {i}: {a0:5.1f} - {a1:5.1f}  {c}   {wait:5.1f} {mma:5.1f} {tail:5.1f}  {late:4.2f}")
if json_path:
    Path(json_path).write_text(json.dumps(result, indent=1))
