"""The 10-GEMM stream pipeline demo (`zoo batched --pipeline`).

Inputs start in pinned host memory and results go back to it. GEMM i is three steps on three
streams: copy-in (H2D), the GEMM, copy-out (D2H), chained by events, so copying i+1 in
overlaps computing i and copying i-1 out. The same work on one stream gives each step's
isolated time: the serial total, and the ideal (the busiest of the three engines). Each GEMM
step is a CUDA-graph replay of zoo.mm, so the host keeps ahead of the GPU.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field

import torch

from . import gemm

LANES = ("copy-in", "GEMM", "copy-out")


@dataclass
class PipelineResult:
    batch: int
    pipelined_us: float                      # median over repeats
    serial_us: float
    step_us: dict[str, list[float]]          # isolated per-GEMM times per lane (serial run)
    spans: list[tuple[str, int, float, float]] = field(default_factory=list)   # pipelined run
    serial_spans: list[tuple[str, int, float, float]] = field(default_factory=list)

    @property
    def ideal_us(self) -> float:
        """The busiest engine's summed work: no schedule can finish sooner."""
        return max(sum(v) for v in self.step_us.values())

    @property
    def efficiency(self) -> float:
        return self.ideal_us / self.pipelined_us


class _Steps:
    """Timing events around each step of each GEMM."""

    def __init__(self, batch: int):
        self.events = {(lane, i): (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                       for lane in LANES for i in range(batch)}

    def spans(self, origin: torch.cuda.Event) -> list[tuple[str, int, float, float]]:
        """(lane, i, start us, end us) relative to `origin`."""
        return [(lane, i, 1e3 * origin.elapsed_time(s), 1e3 * origin.elapsed_time(e))
                for (lane, i), (s, e) in self.events.items()]


def _buffers(batch, m, n, k, dtype, out_dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    host_a = [torch.randn(m, k, generator=gen).to(dtype).pin_memory() for _ in range(batch)]
    host_b = [torch.randn(k, n, generator=gen).to(dtype).pin_memory() for _ in range(batch)]
    host_c = [torch.empty(m, n, dtype=out_dtype).pin_memory() for _ in range(batch)]
    dev_a = [torch.empty(m, k, dtype=dtype, device="cuda") for _ in range(batch)]
    dev_b = [torch.empty(k, n, dtype=dtype, device="cuda") for _ in range(batch)]
    dev_c = [torch.empty(m, n, dtype=out_dtype, device="cuda") for _ in range(batch)]
    return host_a, host_b, host_c, dev_a, dev_b, dev_c


def _gemm_graphs(bufs, kernel, config) -> list:
    """Each GEMM step captured once as a CUDA graph: replaying one costs the host a few
    microseconds where an eager zoo.mm costs tens, so the host stays ahead of the copy
    engines and the timeline shows the GPU, not Python."""
    _, _, _, dev_a, dev_b, dev_c = bufs
    graphs = []
    for a, b, c in zip(dev_a, dev_b, dev_c):
        gemm.mm(a, b, out=c, kernel=kernel, config=config)  # compile and load outside the capture
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            gemm.mm(a, b, out=c, kernel=kernel, config=config)
        graphs.append(g)
    return graphs


def _one_run(bufs, streams, graphs):
    """One pass over the batch; `streams` = (copy-in, GEMM, copy-out), one stream for all of
    them gives the serial run. Returns (total us, spans)."""
    host_a, host_b, host_c, dev_a, dev_b, dev_c = bufs
    batch = len(host_a)
    steps = _Steps(batch)
    origin, finish = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s_in, s_mm, s_out = streams
    origin.record(s_in)
    for s in {s_mm, s_out} - {s_in}:
        s.wait_event(origin)
    # Every copy-in first: they run back to back on their engine while the host goes on to
    # enqueue the GEMMs and copy-outs, which wait on them through the events.
    for i in range(batch):
        start, end = steps.events[("copy-in", i)]
        start.record(s_in)
        with torch.cuda.stream(s_in):
            dev_a[i].copy_(host_a[i], non_blocking=True)
            dev_b[i].copy_(host_b[i], non_blocking=True)
        end.record(s_in)
    for i in range(batch):
        s_mm.wait_event(steps.events[("copy-in", i)][1])
        start, end = steps.events[("GEMM", i)]
        start.record(s_mm)
        with torch.cuda.stream(s_mm):
            graphs[i].replay()
        end.record(s_mm)
        s_out.wait_event(end)
        start, end = steps.events[("copy-out", i)]
        start.record(s_out)
        with torch.cuda.stream(s_out):
            host_c[i].copy_(dev_c[i], non_blocking=True)
        end.record(s_out)
    finish.record(s_out)
    finish.synchronize()
    return 1e3 * origin.elapsed_time(finish), steps.spans(origin)


def run(batch: int, m: int, n: int, k: int, dtype: torch.dtype, out_dtype: torch.dtype, *,
        repeats: int = 5, kernel: str | None = None, config: str | None = None,
        seed: int = 0) -> tuple[PipelineResult, list[torch.Tensor], list[torch.Tensor], list[torch.Tensor]]:
    """Run the pipeline and the serial baseline `repeats` times each (after one warm-up of
    each); returns the result and the host inputs and outputs for checking."""
    bufs = _buffers(batch, m, n, k, dtype, out_dtype, seed)
    graphs = _gemm_graphs(bufs, kernel, config)
    lanes = tuple(torch.cuda.Stream() for _ in LANES)
    serial = (torch.cuda.Stream(),) * 3
    _one_run(bufs, lanes, graphs)
    _one_run(bufs, serial, graphs)
    piped, alone = [], []
    for _ in range(repeats):
        piped.append(_one_run(bufs, lanes, graphs))
        alone.append(_one_run(bufs, serial, graphs))
    mid = sorted(range(repeats), key=lambda r: piped[r][0])[repeats // 2]
    step_us = {lane: [statistics.median(e - s for run in alone for (ln, j, s, e) in run[1] if ln == lane and j == i)
                      for i in range(batch)] for lane in LANES}
    result = PipelineResult(batch, piped[mid][0], statistics.median(t for t, _ in alone), step_us,
                            piped[mid][1], alone[mid][1])
    return result, bufs[0], bufs[1], bufs[2]


def chrome_trace(result: PipelineResult, title: str) -> str:
    """Chrome trace JSON (chrome://tracing, ui.perfetto.dev): the pipelined run and the serial
    run as two processes, one thread per engine, one slice per step."""
    events = []
    for pid, (name, spans) in enumerate((("pipelined: 3 streams", result.spans),
                                         ("serial: 1 stream", result.serial_spans))):
        events.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": f"{title} - {name}"}})
        for tid, lane in enumerate(LANES):
            events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": lane}})
        for lane, i, start, end in spans:
            events.append({"name": f"{lane} {i}", "ph": "X", "pid": pid, "tid": LANES.index(lane),
                           "ts": round(start, 3), "dur": round(end - start, 3), "args": {"gemm": i}})
    return json.dumps({"traceEvents": events, "displayTimeUnit": "ns"}, indent=1)


def timeline(spans: list[tuple[str, int, float, float]], width: int = 72) -> list[str]:
    """A text picture of the spans: one row per engine, GEMM i drawn with the digit i % 10."""
    end = max((e for *_, e in spans), default=0.0) or 1.0
    rows = []
    for lane in LANES:
        cells = [" "] * width
        for ln, i, s, e in spans:
            if ln != lane:
                continue
            first, last = int(s / end * width), max(int(s / end * width), int(e / end * width) - 1)
            for col in range(first, min(last, width - 1) + 1):
                cells[col] = str(i % 10)
        rows.append(f"{lane:>8} |{''.join(cells)}|")
    rows.append(f"{'':>8}  0{'':{width - 12}}{end:8.1f} us")
    return rows
