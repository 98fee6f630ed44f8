"""Verification against a float64 reference, side-by-side timing with CUDA events, and the
shape suites `zoo bench` and `zoo tune` measure."""

from __future__ import annotations

import contextlib
import math
import statistics
from dataclasses import dataclass
from typing import Callable

import torch

from .cuda import ZooError

NORMWISE_BOUND = 1e-2   # ||C - ref|| / ||ref|| never above this, whatever torch does
FLOOR = {torch.float16: 1e-4, torch.float32: 1e-5}  # slack over 2x torch's own error
# fp32 inputs rounded to TF32 (10-bit mantissa): one product may be off by 2^-11 per rounded
# input and 2^-10 per truncated one (wgmma reads shared-memory operands truncated), and
# torch.mm does not use TF32 for every shape (a 1x1x1 product is exact there).
TF32_FLOOR = 2.0**-9


def _torch_product(op, a: torch.Tensor, b: torch.Tensor, out_dtype: torch.dtype) -> torch.Tensor:
    """op (torch.mm or torch.bmm) producing out_dtype: fp16 inputs with fp32 output use
    torch's out_dtype overload (cuBLAS writes fp32 directly); older torch falls back to an
    fp32 product."""
    if out_dtype == a.dtype:
        return op(a, b)
    try:
        return op(a, b, out_dtype=out_dtype)
    except (TypeError, RuntimeError):
        return op(a.to(out_dtype), b.to(out_dtype))


def torch_allows_tf32() -> bool:
    """torch's TF32 setting for fp32 matmuls. torch >= 2.9 has a new API
    (torch.backends.cuda.matmul.fp32_precision); once it is used, reading the legacy flag
    (allow_tf32) raises, so the new one is read then."""
    matmul = torch.backends.cuda.matmul
    try:
        return bool(matmul.allow_tf32)
    except RuntimeError:
        return matmul.fp32_precision == "tf32"


@contextlib.contextmanager
def tf32_matmul(enabled: bool):
    """torch's TF32 setting for fp32 matmuls, set for the block and restored after, through
    the API the caller uses (the legacy flag, or torch >= 2.9's fp32_precision once that is
    set): the reference and zoo.mm (allow_tf32=None) then agree on it."""
    matmul = torch.backends.cuda.matmul
    try:
        before, legacy = matmul.allow_tf32, True
    except RuntimeError:
        before, legacy = matmul.fp32_precision, False
    if legacy:
        matmul.allow_tf32 = enabled
    else:
        matmul.fp32_precision = "tf32" if enabled else "ieee"
    try:
        yield
    finally:
        if legacy:
            matmul.allow_tf32 = before
        else:
            matmul.fp32_precision = before


def torch_mm(a: torch.Tensor, b: torch.Tensor, out_dtype: torch.dtype) -> torch.Tensor:
    return _torch_product(torch.mm, a, b, out_dtype)


def torch_bmm(a: torch.Tensor, b: torch.Tensor, out_dtype: torch.dtype) -> torch.Tensor:
    return _torch_product(torch.bmm, a, b, out_dtype)


def reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.mm(a.double(), b.double())


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """Normwise ||out - ref|| / ||ref||; inf when out has a NaN or Inf (so it never passes)."""
    if not torch.isfinite(out).all():
        return math.inf
    denom = torch.linalg.vector_norm(ref).item()
    diff = torch.linalg.vector_norm(out.double() - ref).item()
    return diff / denom if denom else diff


@dataclass
class Check:
    ok: bool
    error: float          # normwise relative error of the zoo's result vs float64
    torch_error: float    # the same for torch.mm on the same inputs and output dtype
    bound: float

    def describe(self) -> str:
        verdict = "PASS" if self.ok else "FAIL"
        return f"{verdict}: error {self.error:.2e} vs torch.mm {self.torch_error:.2e} (bound {self.bound:.2e})"


def verify(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, tf32: bool | None = None) -> Check:
    """Pass when the error is within 2x torch.mm's own error (plus a small floor) and under
    the normwise bound; a NaN/Inf anywhere fails. tf32: whether fp32 inputs may have been
    rounded to TF32 (None: torch's matmul setting, which torch.mm here follows too)."""
    ref = reference(a, b)
    err = relative_error(out, ref)
    err_torch = relative_error(torch_mm(a, b, out.dtype), ref)
    if tf32 is None:
        tf32 = torch_allows_tf32()
    floor = TF32_FLOOR if tf32 and a.dtype == torch.float32 else FLOOR.get(out.dtype, 1e-4)
    bound = min(2 * err_torch + floor, NORMWISE_BOUND)
    return Check(err <= bound, err, err_torch, bound)


LEAD_US = 200  # GPU sleep before each timed call: longer than a call's or a graph replay's host side


def lead_cycles(limits, us: float = LEAD_US) -> int:
    """time_side_by_side's lead_cycles for `us` microseconds of sleep at `limits`' SM clock."""
    return int(us * max(limits.sm_clock_mhz, 1000))


def rotation_sets(bytes_per_set: int, l2_bytes: int, max_sets: int = 16) -> int:
    """How many input sets to rotate through so that each call finds its inputs out of L2."""
    return max(2, min(max_sets, math.ceil(3 * l2_bytes / max(bytes_per_set, 1)) + 1))


@dataclass
class Timing:
    times_ms: list[float]

    @property
    def median_ms(self) -> float:
        return statistics.median(self.times_ms)

    @property
    def spread(self) -> float:
        """Interquartile range over the median: the run-to-run noise of this measurement."""
        q = statistics.quantiles(self.times_ms, n=4) if len(self.times_ms) >= 4 else [self.median_ms] * 3
        return (q[2] - q[0]) / self.median_ms if self.median_ms else 0.0

    def tflops(self, flops: int) -> float:
        return flops / (self.median_ms * 1e-3) / 1e12


def time_side_by_side(fns: dict[str, Callable[[int], object]], sets: int, warmup: int, iters: int,
                      progress: Callable[[int], None] | None = None,
                      graph: bool = True, lead_cycles: int = 0) -> dict[str, Timing]:
    """Time each fn(set_index) with CUDA events, interleaved call by call so both see the
    same clocks and thermals; inputs rotate over `sets` call by call, across the fns too, so
    that no call finds in L2 the inputs the calls before it read (a set per round for every
    fn handed the second fn what the first had just read: 16 x 4096 x 4096's 32 MB of weights
    fit in an H100's 50 MB).

    graph=True replays each call from a CUDA graph captured after the warm-up, so the events
    time the device work, not the Python that launches it (what a 20-us GEMM would otherwise
    measure); graph=False times the calls themselves, host overhead included.
    lead_cycles > 0: before each timed call the GPU sleeps that many cycles (untimed), so a
    call whose host side is shorter than the sleep is enqueued before the GPU reaches its
    start event: the events then see only its device time."""
    for i in range(warmup):
        for fn in fns.values():
            fn(i % sets)
    torch.cuda.synchronize()
    calls = {name: [(lambda f, s: lambda: f(s))(fn, s) for s in range(sets)] for name, fn in fns.items()}
    if graph:
        pool = torch.cuda.graph_pool_handle()
        for name, per_set in calls.items():
            graphs = []
            for call in per_set:
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g, pool=pool):
                    call()
                graphs.append(g.replay)
            calls[name] = graphs
        torch.cuda.synchronize()
        for i in range(sets):  # the first replay of a graph uploads it: not in a timed sample
            for per_set in calls.values():
                per_set[i]()
        torch.cuda.synchronize()
    events = {name: [] for name in fns}
    done = 0  # calls so far: the sets advance call by call, across the fns
    for i in range(iters):
        for name, per_set in calls.items():
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            if lead_cycles:  # from an idle GPU, so every call gets the same lead
                torch.cuda.synchronize()
                torch.cuda._sleep(lead_cycles)
            start.record()
            per_set[done % sets]()
            end.record()
            done += 1
            events[name].append((start, end))
        if progress:
            progress(i + 1)
    torch.cuda.synchronize()
    return {name: Timing([s.elapsed_time(e) for s, e in pairs]) for name, pairs in events.items()}


def wall_side_by_side(fns: dict[str, Callable[[int], object]], sets: int, warmup: int, iters: int,
                      progress: Callable[[int], None] | None = None, calls: int = 50) -> dict[str, Timing]:
    """Wall-clock time per call of each fn(set_index): `calls` calls back to back, then a
    synchronize, so each sample counts the host's work and the device's, whichever is longer
    (as a user's loop sees them); the fns take turns, sample by sample, in an order reversed
    every other round (whichever runs first after another's synchronize, each does as often).
    Times in ms per call."""
    import time
    for i in range(warmup):
        for fn in fns.values():
            fn(i % sets)
    torch.cuda.synchronize()
    samples = {name: [] for name in fns}
    done = 0  # calls so far: the sets advance call by call, across the fns (as time_side_by_side's)
    order = list(fns.items())
    for i in range(iters):
        for name, fn in (order if i % 2 == 0 else order[::-1]):
            start = time.perf_counter()
            for j in range(calls):
                fn((done + j) % sets)
            torch.cuda.synchronize()
            samples[name].append(1e3 * (time.perf_counter() - start) / calls)
            done += calls
        if progress:
            progress(i + 1)
    return {name: Timing(times) for name, times in samples.items()}


def host_us(fn, calls: int = 20) -> float:
    """Host time of one call (launch overhead): `calls` back-to-back calls, no synchronize,
    after two untimed ones (a graph=True call captures its graph on the second call with a set
    of buffers: a one-time cost, not a call's)."""
    import time
    fn()
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return 1e6 * elapsed / calls


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


LLM_NK = ((4096, 4096), (11008, 4096), (4096, 11008))  # hidden 4096 -> 4096, MLP up, MLP down
SUITES = {
    "square": [(4096, 4096, 4096), (8192, 8192, 8192)],
    # LLM projections: tokens M x (hidden 4096 -> 4096, 4096 -> 11008 MLP up, 11008 -> 4096 down)
    "llm": [(m, n, k) for m in (128, 1024, 4096, 16384) for n, k in LLM_NK],
    # Decoding and small batches: a few tokens against the same weights.
    "skinny": [(m, n, k) for m in (1, 16, 64, 128) for n, k in LLM_NK],
    # Under a few waves, and rows off 16-byte multiples (1000, 3000).
    "small": [(s, s, s) for s in (256, 512, 1024, 2048)] + [(1000, 1000, 1000), (3000, 3000, 3000)],
}


def parse_shapes(text: str) -> list[tuple[int, int, int]]:
    """Shapes from 'MxNxK,MxNxK,...' (the CLI's --shapes)."""
    shapes = []
    for item in text.split(","):
        parts = item.strip().lower().split("x")
        if len(parts) != 3 or not all(p.isdigit() and int(p) >= 1 for p in parts):
            raise ZooError(f"--shapes: {item.strip()!r} is not MxNxK with positive integers (e.g. 4096x4096x4096)")
        shapes.append(tuple(int(p) for p in parts))
    return shapes
