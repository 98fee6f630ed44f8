"""Why a call timed from an idle GPU (as `zoo bench` times: synchronize, sleep, then the call)
ranks the zoo lower against torch.mm than calls back to back do (NOTES.md, eighth session).
For each shape, zoo.mm and torch.mm from CUDA-graph replays, inputs out of L2, interleaved
call by call, timed three ways with CUDA events:

  idle:       synchronize, GPU sleep LEAD_US, then the timed call (zoo bench);
  idle+warm:  the same, but the same op on another input set runs untimed just before the
              timed call (its code, constants and descriptors warm; the clocks as idle);
  b2b:        no synchronize or sleep: calls back to back (on the lent host the Python
              around each replay takes longer than calls under ~40 us, so there it times
              the host: 11 and 27 us at 256^3 and 512^3 in
              results/h100-2026-11-24/session8/run1/idle-start.json).

Then torch.profiler over the idle way: each call's kernel time (first kernel's start to the
last one's end) and the gap between the sleep's end and its first kernel's start.

    python3 scripts/idle_start_probe.py [MxNxK ...] [--json FILE]
"""
import json
import statistics
import sys

import torch

import zoo
from zoo import bench, gemm
from eager_probe import kernel_events  # scripts/, next to this one
from variant_probe import json_arg

H = torch.float16
SHAPES = ["256x256x256", "512x512x512", "1000x1000x1000", "3000x3000x3000", "1x11008x4096",
          "16x11008x4096", "128x11008x4096", "4096x4096x4096"]


def timed_warm(replays, sets, lead, iters=40):
    """{name: median us} of the replays timed the idle+warm way, interleaved (the idle and
    back-to-back ways are bench.time_side_by_side's)."""
    times = {name: [] for name in replays}
    for i in range(iters):
        for name, per_set in replays.items():
            s = i % sets
            torch.cuda.synchronize()
            torch.cuda._sleep(lead)
            per_set[(s + 1) % sets]()  # untimed: the op just ran
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            per_set[s]()
            end.record()
            times[name].append((start, end))
    torch.cuda.synchronize()
    return {name: 1e3 * statistics.median(s.elapsed_time(e) for s, e in pairs) for name, pairs in times.items()}


def profiled(per_set, sets, lead, calls=20):
    """(median kernel us per call, median gap us from the sleep's end to the call's first
    kernel, kernel names) of the idle way under torch.profiler."""
    def idle_call(s):
        torch.cuda.synchronize()
        torch.cuda._sleep(lead)
        per_set[s]()
    events = kernel_events(idle_call, sets, calls)
    spans, gaps, sleep_end, first, last = [], [], None, None, None
    for e in events + [{"name": "spin", "ts": float("inf"), "dur": 0}]:
        if "spin" in e["name"] or "sleep" in e["name"]:
            if first is not None and sleep_end is not None:
                spans.append(last - first)
                gaps.append(first - sleep_end)
            sleep_end, first, last = e["ts"] + e["dur"], None, None
        else:
            first = e["ts"] if first is None else first
            last = e["ts"] + e["dur"]
    return statistics.median(spans), statistics.median(gaps), sorted({e["name"][:60] for e in events})


def main(argv):
    argv, out_json = json_arg(argv)
    lim = gemm.device_limits(0)
    lead = bench.lead_cycles(lim)
    rows = []
    print(f"{lim.part}, torch {torch.__version__}; us per call; profiler over the idle way")
    print(f"{'shape':>16} {'op':>6} {'idle':>7} {'+warm':>7} {'b2b':>7} {'kernel':>7} {'gap':>6}")
    for text in argv or SHAPES:
        m, n, k = (int(x) for x in text.split("x"))
        sets = bench.rotation_sets((m * k + k * n) * 2, lim.l2_bytes, max_sets=8)
        A = [torch.randn(m, k, device="cuda", dtype=H) for _ in range(sets)]
        B = [torch.randn(k, n, device="cuda", dtype=H) for _ in range(sets)]
        C = {op: [torch.empty(m, n, device="cuda", dtype=H) for _ in range(sets)] for op in ("zoo", "torch")}
        calls = {"zoo": lambda s: zoo.mm(A[s], B[s], out=C["zoo"][s]),
                 "torch": lambda s: torch.mm(A[s], B[s], out=C["torch"][s])}
        replays = {}
        for op, fn in calls.items():
            for s in range(sets):
                fn(s)
            torch.cuda.synchronize()
            graphs = []
            for s in range(sets):
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    fn(s)
                g.replay()
                graphs.append(g)
            replays[op] = [g.replay for g in graphs]
        torch.cuda.synchronize()
        assert bench.verify(A[0], B[0], C["zoo"][0]).ok, text
        replays_by_set = {op: (lambda per_set: lambda s: per_set[s]())(per_set) for op, per_set in replays.items()}
        t = {mode: {op: 1e3 * timing.median_ms for op, timing in bench.time_side_by_side(
                 replays_by_set, sets, warmup=3, iters=40, graph=False, lead_cycles=cycles).items()}
             for mode, cycles in (("idle", lead), ("b2b", 0))}
        t["idle+warm"] = timed_warm(replays, sets, lead)
        for op in replays:
            kern, gap, names = profiled(replays[op], sets, lead)
            row = {"shape": text, "op": op, **{mode: t[mode][op] for mode in t}, "kernel": kern, "gap": gap,
                   "kernels": names}
            rows.append(row)
            print(f"{text:>16} {op:>6} {row['idle']:7.1f} {row['idle+warm']:7.1f} {row['b2b']:7.1f} "
                  f"{kern:7.1f} {gap:6.1f}  {'; '.join(names)[:90]}", flush=True)
    if out_json:
        with open(out_json, "w") as f:
            json.dump({"device": lim.part, "torch": torch.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
