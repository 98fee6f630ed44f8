"""Where programmatic dependent launch loses (NOTES.md, "Programmatic dependent launch"): the
same zoo.mm launches with the attribute on and off, side by side with torch.mm in one process.

1. graph replays, one launch per graph (nothing before it to overlap): does the attribute
   alone change the kernel's device time?
2. eager, calls back to back (bench.wall_side_by_side, as `zoo bench --eager`): what the
   suite measures.
3. torch.profiler over 30 eager calls each way: per-kernel duration (first block's start to
   the end) and the period between consecutive kernel ends.

    python3 scripts/pdl_diag.py [MxNxK ...]
"""
import statistics
import sys

import torch

import zoo
from zoo import bench, gemm
from eager_probe import kernel_events  # noqa: E402 - scripts/, next to this one

PDL = [None]
# Each launch goes as a programmatic dependent when PDL[0] says so (None: as the registry says).
gemm.Launch.pdl = property(lambda self: self.__dict__["_pdl"] if PDL[0] is None else PDL[0],
                           lambda self, value: self.__dict__.__setitem__("_pdl", value))


def zoo_call(a, b, pdl):
    def call(s):
        PDL[0] = pdl
        return zoo.mm(a[s], b[s])
    return call


def kernel_spans(fn, calls=30):
    events = kernel_events(fn, 2, calls)
    durs = [e["dur"] for e in events]
    ends = [e["ts"] + e["dur"] for e in events]
    periods = [y - x for x, y in zip(ends, ends[1:])]
    starts_vs_prev_end = [e["ts"] - x for x, e in zip(ends, events[1:])]
    return (statistics.median(durs), statistics.median(periods), statistics.median(starts_vs_prev_end))


def main():
    shapes = [tuple(int(x) for x in s.split("x")) for s in sys.argv[1:]] or \
        [(128, 4096, 4096), (128, 11008, 4096), (128, 4096, 11008), (1024, 4096, 4096), (16384, 11008, 4096)]
    h = torch.float16
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    print(f"{'shape':18s} {'mode':10s} {'graph us':>9s} {'eager us':>9s} {'kern dur':>9s} {'period':>8s} "
          f"{'start-prev end':>14s}")
    for m, n, k in shapes:
        sets = bench.rotation_sets(2 * (m * k + k * n), torch.cuda.get_device_properties(0).L2_cache_size)
        a = [torch.randn(m, k, device="cuda", dtype=h) for _ in range(sets)]
        b = [torch.randn(k, n, device="cuda", dtype=h) for _ in range(sets)]
        fns = {"zoo off": zoo_call(a, b, False), "zoo on": zoo_call(a, b, True),
               "zoo rule": zoo_call(a, b, None), "torch": lambda s: torch.mm(a[s], b[s])}
        lead = bench.lead_cycles(gemm.device_limits(0), 100)  # device time, not the host's
        graph = bench.time_side_by_side(fns, sets, warmup=5, iters=40, graph=True, lead_cycles=lead)
        eager = bench.wall_side_by_side(fns, sets, warmup=5, iters=15)
        for name, fn in fns.items():
            dur, period, gap = kernel_spans(fn)
            print(f"{m}x{n}x{k:<8d} {name:10s} {1e3 * graph[name].median_ms:9.2f} "
                  f"{1e3 * eager[name].median_ms:9.2f} {dur:9.2f} {period:8.2f} {gap:14.2f}")
    PDL[0] = None


if __name__ == "__main__":
    main()
