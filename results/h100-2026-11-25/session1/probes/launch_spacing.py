"""How far apart ten launches on ten streams, forked from one in a CUDA graph, start their
first blocks (%globaltimer stamps, launch_stamp.cu), by what the launch asks for: blocks,
threads, dynamic shared memory, parameter bytes, the dependent-launch attribute, and how
long each block runs (spin). Each case is captured once and replayed back to back 20 times
after a GPU sleep that keeps the host ahead; for each replay, the first block start of each
launch from the replay's first; medians over replays 4..19.

    python3 results/h100-2026-11-25/session1/probes/launch_spacing.py
"""
import ctypes
import statistics
from pathlib import Path

import torch

from zoo import bench, cuda, gemm

here = Path(__file__).resolve().parent
limits = gemm.device_limits(0)
B, REPLAYS = 10, 20
side = [torch.cuda.Stream() for _ in range(B)]
rec = torch.zeros(2 * 65536, dtype=torch.int64, device="cuda")
count = torch.zeros(1, dtype=torch.int32, device="cuda")

# name: (blocks, threads, smem KiB, parameter words, pdl, spin us[, streams[, wait]]): the ten
# launches go round-robin over `streams` side streams (default ten); pdl: each as a programmatic
# dependent of the launch before it in its stream; wait: where the kernel waits for that one
# (griddepcontrol.wait): 0 never, 1 at its start, 2 before it exits.
CASES = {
    "1 block, 128 threads": (1, 128, 0, 1, False, 0),
    "+ 512 B of parameters": (1, 128, 0, 64, False, 0),
    "+ 200 KiB shared memory": (1, 128, 200, 1, False, 0),
    "+ 384 threads": (1, 384, 0, 1, False, 0),
    "24 blocks": (24, 128, 0, 1, False, 0),
    "1 block spinning 10 us": (1, 128, 0, 1, False, 10),
    "24 blocks spinning 10 us": (24, 128, 0, 1, False, 10),
    "24 x 384 thr, 200 KiB, 10 us": (24, 384, 200, 1, False, 10),
    "the same + 512 B params": (24, 384, 200, 64, False, 10),
    "the same + dependent launch": (24, 384, 200, 64, True, 10),
    "24 x 384, 200 KiB, 512 B, 0 us": (24, 384, 200, 64, False, 0),
    "GEMM-like, 1 stream": (24, 384, 200, 64, False, 10, 1),
    "GEMM-like, 1 stream, dependent": (24, 384, 200, 64, True, 10, 1),
    "GEMM-like, 2 streams, dependent": (24, 384, 200, 64, True, 10, 2),
    "GEMM-like, 5 streams, dependent": (24, 384, 200, 64, True, 10, 5),
    "1 block, 1 stream, dependent": (1, 128, 0, 1, True, 0, 1),
    "1 block, 1 stream": (1, 128, 0, 1, False, 0, 1),
    "GEMM-like, 1 stream, dep., wait at start": (24, 384, 200, 64, True, 10, 1, 1),
    "GEMM-like, 1 stream, dep., wait at exit": (24, 384, 200, 64, True, 10, 1, 2),
    "GEMM-like, 2 streams, dep., wait at exit": (24, 384, 200, 64, True, 10, 2, 2),
}


def pad_of(words):
    """The Pad argument's bytes: launch_stamp.cu aligns it to 64 bytes, so it takes whole 8-word lines."""
    size = -(-words // 8) * 8
    return type(f"Pad{size}", (ctypes.Structure,), {"_fields_": [("w", ctypes.c_uint64 * size)]})()


for name, (blocks, threads, smem_kib, words, pdl, spin_us, *rest) in CASES.items():
    streams = rest[0] if rest else B
    wait_at = rest[1] if len(rest) > 1 else 0
    cubin = cuda.compile_cubin(here / "launch_stamp.cu", limits.arch, {"PAD_WORDS": words})
    fn = cuda.load_function(0, cubin, "stamp", smem_kib * 1024)
    args = [cuda.PackedArgs([(rec.data_ptr(), cuda.POINTER), (count.data_ptr(), cuda.POINTER), (i, cuda.INT32),
                             (spin_us * 1000, cuda.INT64), (wait_at, cuda.INT32), (pad_of(words), cuda.BY_VALUE)]) for i in range(B)]

    def body():
        current = torch.cuda.current_stream()
        ready = current.record_event()
        for s in side[:streams]:
            s.wait_event(ready)
        for i in range(B):
            s = side[i % streams]
            with torch.cuda.stream(s):
                fn.launch((blocks, 1, 1), threads, args[i], s.cuda_stream, 0, pdl=pdl)
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
    r = rec[:2 * n].view(n, 2).cpu().tolist()
    r.sort()
    offsets = []  # per replay: first start of each launch, sorted, from the replay's first
    for k in range(REPLAYS):
        part = r[k * B * blocks:(k + 1) * B * blocks]
        first = {}
        for t, meta in part:
            tag = meta & 0xFFFFFFFF
            first[tag] = min(first.get(tag, t), t)
        assert len(first) == B, (name, k, "replays overlap")
        t0 = min(first.values())
        offsets.append(sorted((t - t0) / 1e3 for t in first.values()))
    steady = offsets[4:]
    med = [statistics.median(o[j] for o in steady) for j in range(B)]
    print(f"{name:42s} {per_replay_us:6.1f} us a replay; launch starts (us): " + " ".join(f"{x:4.1f}" for x in med),
          flush=True)
