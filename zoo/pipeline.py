"""The 10-GEMM stream pipeline demo (`zoo batched --pipeline`).

Inputs start in pinned host memory and results go back to it. GEMM i is three steps on three
streams: copy-in (H2D), the GEMM, copy-out (D2H), chained by events, so copying i+1 in
overlaps computing i and copying i-1 out. The same work on one stream gives each step's
isolated time: the serial total, and the ideal (the busiest of the three engines). Each
schedule is captured once as a CUDA graph and replayed, so no host work sits between the
steps: with ~3 us GEMMs and ~50 us copies, Python launching them one by one would be the
slowest engine of all. Timing events inside the graph are event-record nodes.
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


def _timing_event() -> torch.cuda.Event:
    """A timing event that, recorded inside a CUDA-graph capture, becomes an event-record node
    (external=True), so its timestamp is readable after each replay."""
    return torch.cuda.Event(enable_timing=True, external=True)


class _Steps:
    """Timing events around each step of each GEMM, and at the start and end of the run."""

    def __init__(self, batch: int):
        self.events = {(lane, i): (_timing_event(), _timing_event()) for lane in LANES for i in range(batch)}
        self.origin, self.finish = _timing_event(), _timing_event()

    def total_us(self) -> float:
        return 1e3 * self.origin.elapsed_time(self.finish)

    def spans(self) -> list[tuple[str, int, float, float]]:
        """(lane, i, start us, end us) relative to the run's start."""
        return [(lane, i, 1e3 * self.origin.elapsed_time(s), 1e3 * self.origin.elapsed_time(e))
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


def _schedule(bufs, lanes, steps: _Steps, kernel, config) -> None:
    """Enqueue the whole batch on the current stream: forked onto `lanes` (copy-in, GEMM,
    copy-out streams) chained by events, or all on the current stream when lanes is None
    (the serial run). Timing events sit around every step."""
    host_a, host_b, host_c, dev_a, dev_b, dev_c = bufs
    home = torch.cuda.current_stream()
    s_in, s_mm, s_out = lanes or (home, home, home)
    steps.origin.record(home)
    if lanes:
        fork = home.record_event()
        for s in lanes:
            s.wait_event(fork)
    loaded, computed = [], []
    for i in range(len(host_a)):
        start, end = steps.events[("copy-in", i)]
        start.record(s_in)
        with torch.cuda.stream(s_in):
            dev_a[i].copy_(host_a[i], non_blocking=True)
            dev_b[i].copy_(host_b[i], non_blocking=True)
        end.record(s_in)
        loaded.append(s_in.record_event())
    for i in range(len(host_a)):
        s_mm.wait_event(loaded[i])
        start, end = steps.events[("GEMM", i)]
        start.record(s_mm)
        with torch.cuda.stream(s_mm):
            gemm.mm(dev_a[i], dev_b[i], out=dev_c[i], kernel=kernel, config=config)
        end.record(s_mm)
        computed.append(s_mm.record_event())
        s_out.wait_event(computed[i])
        start, end = steps.events[("copy-out", i)]
        start.record(s_out)
        with torch.cuda.stream(s_out):
            host_c[i].copy_(dev_c[i], non_blocking=True)
        end.record(s_out)
    if lanes:
        for s in lanes:
            home.wait_event(s.record_event())
    steps.finish.record(home)


def _captured(bufs, lanes, kernel, config) -> tuple[torch.cuda.CUDAGraph, _Steps]:
    """The schedule captured as one CUDA graph: a replay runs the copies, GEMMs and event
    chain with no host work between them."""
    steps = _Steps(len(bufs[0]))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        _schedule(bufs, lanes, steps, kernel, config)
    return graph, steps


def run(batch: int, m: int, n: int, k: int, dtype: torch.dtype, out_dtype: torch.dtype, *,
        repeats: int = 5, kernel: str | None = None, config: str | None = None,
        seed: int = 0) -> tuple[PipelineResult, list[torch.Tensor], list[torch.Tensor], list[torch.Tensor]]:
    """Capture the pipelined and the serial schedule once each, replay each `repeats` times
    (after a warm-up replay) and time them; returns the result and the host inputs and
    outputs for checking."""
    bufs = _buffers(batch, m, n, k, dtype, out_dtype, seed)
    for a, b, c in zip(*bufs[3:]):  # compile and load outside the captures
        gemm.mm(a, b, out=c, kernel=kernel, config=config)
    torch.cuda.synchronize()
    lanes = tuple(torch.cuda.Stream() for _ in LANES)
    piped_graph, piped_steps = _captured(bufs, lanes, kernel, config)
    serial_graph, serial_steps = _captured(bufs, None, kernel, config)
    piped, alone = [], []
    for r in range(repeats + 1):
        for graph, steps, runs in ((piped_graph, piped_steps, piped), (serial_graph, serial_steps, alone)):
            graph.replay()
            torch.cuda.synchronize()
            if r:  # the first replay uploads the graph
                runs.append((steps.total_us(), steps.spans()))
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
