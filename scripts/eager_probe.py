"""Where an eager zoo.mm call of a 128-row LLM shape spends its time, against torch.mm in the
same run (NOTES.md, "Narrow tiles for 128-row weights"):

1. host: the cost of issuing a call alone. The GPU is held by a sleep kernel while `calls`
   calls are issued, so the wall time is the host's only (the sleep outlasts them: checked).
2. eager: wall time per call, inputs rotating out of L2 (bench.wall_side_by_side, as
   `zoo bench --eager`), for the auto choice and other configs and split-K counts forced,
   with each one's device time from graph replays after a lead (bench.time_side_by_side).
3. torch.profiler over eager calls (rotating inputs): each kernel's duration, the gap from
   the end of one to the start of the next, and torch's kernel names, eager and captured.

    [PROBE_CONFIGS=C,C] [PROBE_SPLITS=1,2] [PROBE_NO_HOST=1] python3 scripts/eager_probe.py [MxNxK ...]
"""
import json
import os
import statistics
import sys
import tempfile
import time

import torch
from torch.profiler import ProfilerActivity, profile

import zoo
from zoo import bench, cuda, gemm

H = torch.float16
CONFIGS = os.environ.get("PROBE_CONFIGS", "64x128pp,128x128,64x64s,64x128ppc2,128x128pp").split(",")
SPLITS = [int(x) for x in os.environ.get("PROBE_SPLITS", "1,2,3,4").split(",")]
CHOOSE = gemm._choose


def force(kernel=None, config=None, splits=None, pdl=None):
    """zoo.mm's plans made with this kernel/config/split count (None: the registry's), and
    the dependent-launch attribute set (None: registry.dependent_launch)."""
    def choose(limits, problem, device_index, k_, c_):
        if kernel is None and config is None:
            spec, cfg, s = CHOOSE(limits, problem, device_index, None, None)
        else:
            spec, cfg = gemm._select(limits, problem, kernel_name=kernel, config_name=config)
            s = None
        return spec, cfg, splits if splits is not None else s
    gemm._choose = choose
    gemm._calls.clear()

    def fix(launch):
        if pdl is not None:
            launch.pdl = pdl
        return launch
    return fix


def host_us(fn, calls=150) -> float:
    """us per call of issuing `fn` while the GPU sleeps (nan if the sleep ran out first)."""
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    cycles = int(gemm.device_limits(0).sm_clock_mhz * 1e3 * 40)  # 40 ms
    torch.cuda._sleep(cycles)
    done = torch.cuda.Event()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    took = time.perf_counter() - start
    done.record()
    busy = not done.query()
    torch.cuda.synchronize()
    return 1e6 * took / calls if busy else float("nan")


def host_table():
    print("\n1. host cost of issuing one call (GPU held by a sleep), us, median of 7")
    rows = []
    for m, n, k in ((64, 64, 64), (16, 4096, 4096), (128, 4096, 4096), (1024, 1024, 1024), (128, 11008, 4096)):
        a = torch.randn(m, k, device="cuda", dtype=H)
        b = torch.randn(k, n, device="cuda", dtype=H)
        out = torch.empty(m, n, device="cuda", dtype=H)
        zoo.mm(a, b)
        plan = next(p for key, p in gemm._calls.items() if (p.m, p.n) == (m, n) and key[-1] is None)
        launch = plan.launch
        fns = {"zoo.mm": lambda: zoo.mm(a, b), "torch.mm": lambda: torch.mm(a, b),
               "zoo.mm out=": lambda: zoo.mm(a, b, out=out), "torch.mm out=": lambda: torch.mm(a, b, out=out),
               "Launch.fire": launch.fire,
               "fn.launch (packed)": lambda: launch.fn.launch(launch.grid, launch.threads, launch.args,
                                                              gemm.current_stream(0), 0, launch.cluster, launch.pdl),
               "a.new_empty((m, n))": lambda: a.new_empty((plan.m, plan.n))}
        res = {name: statistics.median(host_us(fn) for _ in range(7)) for name, fn in fns.items()}
        rows.append((f"{m}x{n}x{k}", launch.choice, launch.pdl, launch.grid, res))
    names = list(rows[0][4])
    print(f"{'shape':16s} " + " ".join(f"{x:>13s}" for x in names) + "  choice")
    for shape, choice, pdl, grid, res in rows:
        print(f"{shape:16s} " + " ".join(f"{res[x]:13.2f}" for x in names) + f"  {choice} pdl={pdl} grid={grid}")


def kernel_events(fn, sets, calls=40) -> list[dict]:
    """torch.profiler's kernel events (chrome-trace dicts, by start) of `calls` calls of
    fn(set), the sets taken in turn after one warm call each."""
    for s in range(sets):
        fn(s)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(calls):
            fn(i % sets)
        torch.cuda.synchronize()
    path = tempfile.mktemp(suffix=".json")
    prof.export_chrome_trace(path)
    events = [e for e in json.load(open(path))["traceEvents"] if e.get("cat") == "kernel"]
    os.unlink(path)
    return sorted(events, key=lambda e: e["ts"])


def kernel_spans(fn, sets, calls=40):
    events = kernel_events(fn, sets, calls)
    ends = [e["ts"] + e["dur"] for e in events]
    gaps = [e["ts"] - x for x, e in zip(ends, events[1:])]
    names = sorted({e["name"][:70] for e in events})
    return statistics.median(e["dur"] for e in events), statistics.median(gaps) if gaps else 0.0, names


def eager_table(shapes):
    print("\n2. eager wall us per call (inputs rotating out of L2) and graph device us (lead), side by side")
    for m, n, k in shapes:
        sets = bench.rotation_sets(2 * (m * k + k * n), torch.cuda.get_device_properties(0).L2_cache_size)
        a = [torch.randn(m, k, device="cuda", dtype=H) for _ in range(sets)]
        b = [torch.randn(k, n, device="cuda", dtype=H) for _ in range(sets)]
        variants = [("auto", {}), ("auto pdl off", {"pdl": False}), ("auto pdl on", {"pdl": True})]
        for cfg in CONFIGS:
            for s in SPLITS:
                variants.append((f"{cfg} s{s}", {"kernel": "sm90_gemm_tma_wgmma", "config": cfg, "splits": s}))
        results = {}
        for label, opts in variants:
            fix = force(**opts)
            try:
                zoo.mm(a[0], b[0])
            except Exception as exc:  # noqa: BLE001 - a variant the kernel cannot take
                print(f"  {label}: {exc}")
                continue
            for p in gemm._calls.values():
                fix(p.launch)
            check = bench.verify(a[0], b[0], zoo.mm(a[0], b[0]))
            if not check.ok:
                print(f"  {label}: WRONG ({check.describe()})")
                continue
            choice, pdl = next(iter(gemm._calls.values())).launch.choice, next(iter(gemm._calls.values())).launch.pdl
            lead = bench.lead_cycles(gemm.device_limits(0), 100)
            fns = {"zoo": lambda s: zoo.mm(a[s], b[s]), "torch": lambda s: torch.mm(a[s], b[s])}
            wall = bench.wall_side_by_side(fns, sets, warmup=5, iters=15)
            dev = bench.time_side_by_side(fns, sets, warmup=3, iters=30, graph=True, lead_cycles=lead)
            dur, gap, _ = kernel_spans(fns["zoo"], sets)
            results[label] = (wall["zoo"].median_ms, wall["torch"].median_ms, dev["zoo"].median_ms,
                              dev["torch"].median_ms, dur, gap, choice, pdl)
        gemm._choose = CHOOSE
        gemm._calls.clear()
        print(f"{m}x{n}x{k} ({sets} input sets)")
        print(f"  {'variant':18s} {'eager':>7s} {'torch':>7s} {'%':>6s} {'graph':>7s} {'torch':>7s} {'%':>6s} "
              f"{'kern':>6s} {'gap':>5s}  choice")
        for label, (w, wt, d, dt, dur, gap, choice, pdl) in results.items():
            print(f"  {label:18s} {1e3 * w:7.1f} {1e3 * wt:7.1f} {100 * wt / w:6.1f} {1e3 * d:7.1f} {1e3 * dt:7.1f} "
                  f"{100 * dt / d:6.1f} {dur:6.1f} {gap:5.1f}  {choice} pdl={pdl}")
        tdur, tgap, tnames = kernel_spans(lambda s: torch.mm(a[s], b[s]), sets)
        print(f"  torch eager under the profiler: kernel {tdur:.1f} us, gap {tgap:.1f}: {tnames}")
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            torch.mm(a[0], b[0])
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            g.replay()
            torch.cuda.synchronize()
        names = sorted({e.name[:70] for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA})
        print(f"  torch captured: {names}")


def main():
    shapes = [tuple(int(x) for x in s.split("x")) for s in sys.argv[1:]] or \
        [(128, 4096, 4096), (128, 11008, 4096), (128, 4096, 11008)]
    torch.manual_seed(0)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, zoo {zoo.__version__}")
    if not os.environ.get("PROBE_NO_HOST"):
        host_table()
    eager_table(shapes)


if __name__ == "__main__":
    main()
