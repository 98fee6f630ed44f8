"""How far apart ten launches start when they chain as programmatic dependents on 1 or 2
streams (as zoo.bmm's streams mode launches its GEMMs), by the registers a thread holds
(chain_stamp.cu with HOG 160: the GEMM's 168), and what else the GEMM does: a prefetch of a
by-value parameter as a tensor map, setmaxnreg, the memory system kept busy. Each case is
captured once and replayed back to back 20 times after a GPU sleep; per replay, each launch's
first and last block start from the replay's first start; medians over replays 4..19.

    [ONLY=SETMAXNREG,MEM] python3 results/h100-2026-11-25/session3/probes/chain_spacing.py
    (ONLY: just the cases whose extras include one of these)
"""
import ctypes
import os
import statistics
from pathlib import Path

import torch

from zoo import bench, cuda, gemm, sass

here = Path(__file__).resolve().parent
limits = gemm.device_limits(0)
B, REPLAYS = 10, 20
side = [torch.cuda.Stream() for _ in range(B)]
rec = torch.zeros(2 * 65536, dtype=torch.int64, device="cuda")
count = torch.zeros(1, dtype=torch.int32, device="cuda")


class Pad(ctypes.Structure):
    _fields_ = [("w", ctypes.c_uint64 * 64)]


STREAM_ELEMS = 1 << 26  # 256 MB of fp32 for MEM builds: far more than L2
src = torch.ones(STREAM_ELEMS, device="cuda")
# name: (defines, blocks, smem KiB, spin us, streams)
CASES = {}
for streams in (1, 2):
    for extra in ({}, {"PF_PARAM": 1}, {"SETMAXNREG": 1}, {"MEM": 1}, {"PF_PARAM": 1, "SETMAXNREG": 1, "MEM": 1}):
        if os.environ.get("ONLY") and not any(k in os.environ["ONLY"].split(",") for k in extra):
            continue
        if streams == 2 and extra and len(extra) == 1:
            continue
        CASES[f"{streams} stream(s), HOG 160 {' '.join(extra) or 'only'}"] = ({"HOG": 160, **extra}, 12, 192, 20, streams)

for name, (defines, blocks, smem_kib, spin_us, streams) in CASES.items():
    cubin = cuda.compile_cubin(here / "chain_stamp.cu", "sm_90a", defines)  # setmaxnreg needs sm_90a
    regs = sass.resources(cubin.image, "stamp").registers
    fn = cuda.load_function(0, cubin, "stamp", smem_kib * 1024)
    args = [cuda.PackedArgs([(rec.data_ptr(), cuda.POINTER), (count.data_ptr(), cuda.POINTER), (i, cuda.INT32),
                             (spin_us * 1000, cuda.INT64), (Pad(), cuda.BY_VALUE),
                             (src.data_ptr(), cuda.POINTER), (STREAM_ELEMS, cuda.INT64)]) for i in range(B)]

    def body():
        current = torch.cuda.current_stream()
        ready = current.record_event()
        for s in side[:streams]:
            s.wait_event(ready)
        for i in range(B):
            s = side[i % streams]
            with torch.cuda.stream(s):
                fn.launch((blocks, 1, 1), 384, args[i], s.cuda_stream, 0, pdl=True)
        for s in side[:streams]:
            current.wait_stream(s)

    body()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        body()
    g.replay()
    torch.cuda.synchronize()
    count.zero_()
    torch.cuda.synchronize()
    torch.cuda._sleep(bench.lead_cycles(limits))
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(REPLAYS):
        g.replay()
    end.record()
    torch.cuda.synchronize()
    per_replay_us = start.elapsed_time(end) * 1e3 / REPLAYS
    n = int(count.item())
    assert n == REPLAYS * B * blocks, (name, n)
    r = sorted(rec[:2 * n].view(n, 2).cpu().tolist())
    firsts, lasts = [], []
    for k in range(REPLAYS):
        part = r[k * B * blocks:(k + 1) * B * blocks]
        first, last = {}, {}
        for t, meta in part:
            tag = meta & 0xFFFFFFFF
            first[tag] = min(first.get(tag, t), t)
            last[tag] = max(last.get(tag, t), t)
        assert len(first) == B, (name, k, "replays overlap")
        t0 = min(first.values())
        firsts.append([(first[i] - t0) / 1e3 for i in range(B)])
        lasts.append([(last[i] - first[i]) / 1e3 for i in range(B)])
    med = [statistics.median(o[j] for o in firsts[4:]) for j in range(B)]
    spread = statistics.median(x for o in lasts[4:] for x in o)
    print(f"{name:40s} {regs:3d} regs {per_replay_us:6.1f} us a replay; block-start spread in a grid "
          f"{spread:4.2f} us; launch starts (us, in launch order): " + " ".join(f"{x:4.1f}" for x in med), flush=True)
