"""`zoo.bmm`: many GEMMs at once, in three modes, each replayable from a CUDA graph.

- "streams": one zoo.mm per GEMM, round-robin over S CUDA streams that fork from and join
  back to the caller's stream with events (the classic multi-stream driver); on sm_90a a
  stream's next GEMM is launched as an independent programmatic dependent of the one before,
  so it runs beside it as the streams' GEMMs do.
- "batched": a (B, M, K) x (B, K, N) batch in one launch. On sm_90a, 3-D TMA tensor maps
  (the batch their third dimension) passed as kernel parameters: the persistent kernel walks
  the batch's tiles with nothing to look up. Elsewhere the kernel's grouped entry point
  walks the tiles of every GEMM of a table.
- "grouped": the same single launch for a list of GEMMs whose shapes differ.
graph=True captures the chosen mode once per set of buffers and replays it afterwards.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass

import torch

from . import bench, cuda, gemm, overlap, registry
from .cuda import ZooError

MODES = ("streams", "batched", "grouped")
_TABLES_KEPT = 128  # device tables cached per (kernel, config, buffers, shapes)
_GRAPHS_KEPT = 64   # captured graphs cached per (mode, buffers, shapes)
_REPLAYS_KEPT = 128  # eager one-launch calls with `out`, by buffers and shapes


@dataclass
class _Plan:
    """What one call computes: the problems (what the kernels read, row strides), the input
    copies to make first (unaligned or strided inputs), and the kernel and config chosen. A
    captured graph keeps its plan alive: the copy buffers and the table it reads."""
    spec: registry.KernelSpec
    cfg: object
    problems: list             # (a, b, c, k, lda, ldb) per GEMM
    copies: list               # (destination view, source) pairs, copied before the launch
    zeros: list                # outputs of K = 0 GEMMs, zeroed with the launch
    dtype: torch.dtype
    out_dtype: torch.dtype
    device_index: int
    whole: bool = False        # one problem: the batch as 3-D tensors, for one TMA map each
    table: torch.Tensor | None = None
    units: int = 0
    launch: gemm.Launch | None = None  # the one-launch modes' launch, worked out once
    keep: bool = True          # its table may be kept across calls (_table)
    launches: list | None = None       # the streams mode's launches, one per GEMM
    pool: list | None = None           # and its streams (GEMM i on pool[i % len(pool)])
    fork: cuda.StreamFork | None = None  # their fork from and join to the caller's stream


_tables: OrderedDict = OrderedDict()
_graphs: OrderedDict = OrderedDict()
_replays: OrderedDict = OrderedDict()  # (launch, table) of eager calls with `out` (see bmm)
_stream_pools: dict[int, list[torch.cuda.Stream]] = {}


def _layout(t: torch.Tensor) -> tuple:
    """What a launch worked out for `t` depends on: its address, shape, strides, dtype, device."""
    return t.data_ptr(), t.shape, t.stride(), t.dtype, t.device


def _key(tensors) -> tuple:
    return tuple(_layout(t) for t in tensors)


def _ident(x) -> tuple | None:
    """The layout of a bmm argument (a tensor, or a list of tensors) for the call caches."""
    if isinstance(x, torch.Tensor):
        return _key([x])
    if isinstance(x, (list, tuple)) and all(isinstance(t, torch.Tensor) for t in x):
        return _key(x)
    return None


def _as_lists(a, b):
    """(list of a_i, list of b_i, batched?) from 3-D tensors or lists of 2-D tensors."""
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.dim() != 3 or b.dim() != 3:
            raise ZooError(f"bmm takes 3-D tensors (B, M, K) and (B, K, N), got {tuple(a.shape)} and {tuple(b.shape)}; "
                           "pass lists of 2-D tensors for GEMMs of different shapes")
        if a.shape[0] != b.shape[0]:
            raise ZooError(f"batch sizes differ: a has {a.shape[0]}, b has {b.shape[0]}")
        return list(a.unbind(0)), list(b.unbind(0)), True
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            raise ZooError(f"{len(a)} a matrices but {len(b)} b matrices")
        if not all(isinstance(t, torch.Tensor) for t in (*a, *b)):
            raise ZooError("the lists must hold torch.Tensors")
        return list(a), list(b), False
    raise ZooError("bmm takes two 3-D tensors, or two lists of 2-D tensors of the same length")


def _plan(a_list, b_list, outs, out_dtype, kernel, config, zeros, whole=None) -> _Plan:
    """whole: the batch as 3-D (a, b, out), for a batched call: kernels with TMA maps take it
    in one piece."""
    if len({t.dtype for t in a_list}) > 1 or len({t.device for t in a_list}) > 1:
        raise ZooError("all GEMMs of one bmm call must share a dtype and a device")
    dev = a_list[0].device
    device_index = dev.index if dev.index is not None else torch.cuda.current_device()
    limits = gemm.device_limits(device_index)
    dtype = a_list[0].dtype
    tf32 = gemm.tf32_allowed(dtype, None)  # as torch.bmm: torch's matmul setting
    shapes = tuple(registry.Problem(a.shape[0], b.shape[1], a.shape[1], gemm._dtype_name(dtype),
                                    gemm._dtype_name(out_dtype), tf32) for a, b in zip(a_list, b_list))
    spec, cfg = gemm._select(limits, shapes[0], kernel_name=kernel, config_name=config, group=shapes)
    if not (spec.tma_boxes and spec.persistent):
        whole = None
    # One problem, the batch as 3-D tensors; or one per GEMM.
    read = gemm.batch_plan if whole else (lambda t: gemm.row_major_plan(t, spec.aligned_rows))
    problems, copies = [], []
    for a, b, c in [whole] if whole else zip(a_list, b_list, outs):
        ar, lda, a_copy = read(a)
        br, ldb, b_copy = read(b)
        copies += [(dst, src) for dst, src in ((a_copy, a), (b_copy, b)) if dst is not None]
        problems.append((ar, br, c, a.shape[-1], lda, ldb))
    return _Plan(spec, cfg, problems, copies, zeros, dtype, out_dtype, device_index, whole=whole is not None)


def _table(plan: _Plan) -> None:
    """The plan's problem table on the device and the blocks/units its launch walks. Eager
    calls keep tables across calls, by the buffers and shapes they describe. Inside a graph
    capture, or for a plan that keeps nothing (cache=False), the table is the call's own:
    a tensor of the current stream (the capture's pool) that zoo_upload launches fill, so a
    captured graph holds its bytes in its nodes and no kept table lies in a graph's pool."""
    if plan.table is not None:
        return
    plan.units = sum(gemm.group_units(plan.spec, plan.cfg,
                                      [(c.shape[0], c.shape[1], k) for _, _, c, k, _, _ in plan.problems]))
    if not plan.keep or gemm._capturing():
        data = gemm.group_table(plan.spec, plan.cfg, plan.problems)
        plan.table = torch.empty(len(data), dtype=torch.uint8, device=plan.device_index)
        gemm.upload(plan.device_index, plan.table, data)
        plan.keep = False
        return
    key = (plan.spec.name, plan.cfg, plan.device_index,
           _key([t for a, b, c, *_ in plan.problems for t in (a, b, c)]))
    plan.table = _tables.get(key)
    if plan.table is None:
        data = gemm.group_table(plan.spec, plan.cfg, plan.problems)
        plan.table = torch.frombuffer(bytearray(data), dtype=torch.uint8).to(f"cuda:{plan.device_index}")
        gemm.remember(_tables, key, plan.table, _TABLES_KEPT)


MAX_STREAMS = 32  # the streams mode's pool per device; more GEMMs than this share streams
# The streams mode's default for kernels whose launches chain (KernelSpec.chains): two streams,
# each a chain of GEMMs in which a GEMM starts under the one before (an independent
# programmatic dependent). Two chains interleave on the GPU (their grids start in pairs), a
# chain link costs ~1 us, and a further stream is a further graph branch, which starts later:
# 10 x [768, 1024, 768] from a graph on an H100 (inputs in L2 for both), 27.4-28.5 us on 2
# streams against 29.3-29.9 on 5 in the same runs (NOTES.md, "Two streams for the streams
# mode"). Other kernels: a stream per GEMM.
CHAINED_STREAMS = 2


def stream_count(streams: int | None, gemms: int, chained: bool) -> int:
    """The streams a streams-mode call of `gemms` GEMMs uses: `streams`, or the default for
    kernels whose launches chain on a stream (`chained`) or not."""
    return min(streams or (min(CHAINED_STREAMS, gemms) if chained else gemms), MAX_STREAMS)


def _pool(device_index: int, count: int) -> list[torch.cuda.Stream]:
    pool = _stream_pools.setdefault(device_index, [])
    while len(pool) < count:
        pool.append(torch.cuda.Stream(device=device_index))
    return pool[:count]


def _run(plan: _Plan, mode: str, streams: int | None) -> None:
    """The plan's work on the current stream: input copies, then the launch(es). Everything
    here is stream work, so a graph captures all of it."""
    for dst, src in plan.copies:
        dst.copy_(src)
    for o in plan.zeros:
        o.zero_()
    if mode == "streams":
        if plan.launches is None:
            plan.pool = _pool(plan.device_index, stream_count(streams, len(plan.problems), plan.spec.chains))
            plan.launches = _streams_launches(plan, len(plan.pool))
            plan.fork = _stream_fork(plan.device_index, [s.cuda_stream for s in plan.pool])
        _fire_streams(plan.launches, plan.fork)
    elif plan.whole:
        if plan.launch is None:
            plan.launch = gemm.plan_launch(plan.spec, plan.cfg, plan.device_index, *plan.problems[0])
        plan.launch.fire()
    else:
        _table(plan)
        if plan.launch is None:
            plan.launch = gemm.plan_grouped(plan.spec, plan.cfg, plan.device_index, plan.table,
                                            len(plan.problems), plan.units, plan.dtype, plan.out_dtype)
        _fire(plan.launch, plan.table if plan.keep else None)  # a call's own table needs no guard


def _streams_launches(plan: _Plan, streams: int) -> list[gemm.Launch]:
    """The streams mode's launches, GEMM i on stream i % streams. A GEMM after another on its
    stream goes as that one's programmatic dependent, without waiting for it (they share no
    output: bmm checks), so a stream's GEMMs run side by side as the streams' do; the GPU starts
    such a launch sooner than one on another stream (NOTES.md, "The streams mode's launches").
    Each grid takes its share of the GPU (registry.shared_clusters), so that all are resident
    at once and a ping-pong CTA hides its first tile's epilogue under its second's MMAs."""
    units = sum(registry.stacks(plan.cfg, c.shape[0], c.shape[1]) for _, _, c, *_ in plan.problems)
    return [gemm.plan_launch(plan.spec, plan.cfg, plan.device_index, *p, shared_units=units,
                             independent=plan.spec.chains and i >= streams)
            for i, p in enumerate(plan.problems)]


def _fire_streams(launches: list, fork: cuda.StreamFork, at=None) -> None:
    """The streams mode's launches, GEMM i on side stream i % S, between the fork from the
    caller's stream and the join to it: each side waits for the caller's work once, before its
    first launch (so each later launch directly follows the one it may start under: a
    programmatic dependent follows the kernel before it in its stream), and the caller's later
    work waits for every side. So what the caller frees after the call is safe to reuse as
    after any torch op on its stream (torch's own rule covers tensors made on other streams):
    no record_stream. at(i): launch i's (A, B, C) addresses, for a worked-out call."""
    current = gemm.current_stream(launches[0].device_index)
    sides = fork.sides
    with _fork_lock:  # the events and side streams are shared: one call's fork to join at a time
        fork.fork(current)
        for i, launch in enumerate(launches):
            if at is None:
                launch.fire(sides[i % len(sides)])
            else:
                launch.fire_at(*at(i), stream=sides[i % len(sides)])
        fork.join(current)


def _fire(launch: gemm.Launch, table: torch.Tensor | None) -> None:
    # A cached table may be read on another stream than it was made on: the caching
    # allocator must not reuse it (after eviction) before this launch is done.
    if table is not None:
        table.record_stream(torch.cuda.current_stream(launch.device_index))
    launch.fire()


def bmm(a, b, *, mode: str | None = None, streams: int | None = None, graph: bool = False,
        out_dtype: torch.dtype | None = None, kernel: str | None = None, config: str | None = None,
        out=None, cache: bool = True):
    """C_i = a_i @ b_i for a batch: a (B, M, K) and b (B, K, N) tensors, giving (B, M, N); or
    lists of 2-D a_i (M_i, K_i) and b_i (K_i, N_i) of any shapes, giving a list.

    mode: "batched" (default for tensors) or "grouped" (default for lists): one launch for
    all GEMMs (the same launch; the names say which inputs they take); "streams": one launch
    per GEMM over `streams` CUDA streams (default: CHAINED_STREAMS on sm_90a, whose kernel
    starts a stream's next GEMM under the one before; elsewhere one per GEMM; at most
    MAX_STREAMS).
    graph=True: the first call with these buffers runs eagerly; the second captures a CUDA
    graph (on a stream of the inputs' device), which later calls with the same buffers replay:
    from the second call on the output is the same tensor each time (pass `out` to choose it).
    The graph is dropped when any of those buffers is freed, so calls with fresh tensors each
    time hold no memory and never capture. out_dtype, kernel and config as in zoo.mm (`out`'s
    dtype when given); `out` is a (B, M, N) tensor or a list matching the inputs.
    Eager one-launch calls with `out` keep their worked-out launch: a later call with the
    same buffers (pointers, shapes, strides, dtypes; any contents) and arguments replays it.
    cache=False keeps nothing past the call (no worked-out launch, no device table): the
    custom op zoo::bmm calls it so, as torch.compile's CUDA graphs own what their ops make.
    """
    # Replays are looked up from the caller's own tensors, before any other work (a key is
    # kept only after a call with it passed every check). torch's TF32 setting picks the
    # kernel for fp32 inputs: what was worked out under the other setting must not be replayed.
    if torch.compiler.is_compiling() or (torch.is_grad_enabled() and any(
            t.requires_grad for x in (a, b) for t in _tensors(x) if isinstance(x, (torch.Tensor, list, tuple)))):
        return _through_ops(a, b, mode, streams, graph, out_dtype, kernel, config, out)
    fast_key = None
    if cache and not graph and isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and \
            (out is None or isinstance(out, torch.Tensor)) and a.dim() == 3:
        fast_key = (mode, streams, out_dtype, kernel, config, a.shape, a.stride(), b.shape, b.stride(),
                    a.dtype, b.dtype, a.device, b.device,  # b's device too: a b elsewhere is refused
                    a.data_ptr() % gemm.ALIGN_BYTES, b.data_ptr() % gemm.ALIGN_BYTES,
                    None if out is None else (out.shape, out.stride(), out.dtype, out.device,
                                              out.data_ptr() % gemm.ALIGN_BYTES),
                    a.dtype == torch.float32 and bench.torch_allows_tf32())
        fast = _fast.get(fast_key)
        if fast is not None:
            done = fast.run(a, b, out)
            if done is not None:
                return done
    key = (mode, streams, out_dtype, kernel, config, _ident(a), _ident(b), _ident(out),
           bench.torch_allows_tf32())
    if cache and not graph and out is not None and not gemm._capturing():  # a kept table: not for a graph
        cached = _replays.get(key)
        if cached is not None:
            outs = [out] if isinstance(out, torch.Tensor) else list(out)
            gemm.check_no_grad_out(*outs, *_tensors(a), *_tensors(b))
            _fire(*cached)
            _bump(outs)
            return out
    out_given = out is not None
    a_list, b_list, batched = _as_lists(a, b)
    if graph and a_list:
        device_index = _device_index(a_list[0])
        key += (device_index, gemm.current_stream(device_index))
        cached = _graphs.get(key)
        if cached is not None:
            if out_given:
                gemm.check_no_grad_out(*_tensors(out), *a_list, *b_list)
            with torch.cuda.device(device_index):  # replay on that device's current stream
                cached.graph.replay()
            if out_given:
                _bump(_tensors(out))
            return out if out_given else cached.out

    mode = mode or ("batched" if batched else "grouped")
    if mode not in MODES:
        raise ZooError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if mode == "batched" and not batched:
        raise ZooError("mode 'batched' takes 3-D tensors; use mode 'grouped' for lists of GEMMs")
    if streams is not None and streams < 1:
        raise ZooError(f"streams must be >= 1, got {streams}")
    if out is not None and not (isinstance(out, torch.Tensor) or
                                (isinstance(out, (list, tuple)) and all(isinstance(o, torch.Tensor) for o in out))):
        raise ZooError("out must be a (B, M, N) tensor or a list of tensors")
    if not a_list:
        if batched:  # an empty batch still has to be a valid one
            out_dtype = gemm.check_inputs(a.new_empty(a.shape[1:]), b.new_empty(b.shape[1:]), out_dtype)
            return out if out is not None else torch.empty((0, a.shape[1], b.shape[2]), dtype=out_dtype, device=a.device)
        return out if out is not None else []
    if out_dtype is None and out is not None:  # as zoo.mm: out's dtype is the output dtype
        out_dtype = (out if isinstance(out, torch.Tensor) else out[0]).dtype if len(out) else None
    out_dtype = gemm.check_inputs(a_list[0], b_list[0], out_dtype)
    for x, y in zip(a_list[1:], b_list[1:]):
        gemm.check_inputs(x, y, out_dtype)
    shapes = [(x.shape[0], y.shape[1]) for x, y in zip(a_list, b_list)]
    device = a_list[0].device

    if out is None:
        out = torch.empty((len(a_list), *shapes[0]), dtype=out_dtype, device=device) if batched \
            else [torch.empty(s, dtype=out_dtype, device=device) for s in shapes]
    outs = list(out.unbind(0)) if isinstance(out, torch.Tensor) else list(out)
    if len(outs) != len(a_list):
        raise ZooError(f"out holds {len(outs)} results for {len(a_list)} GEMMs")
    for o, x, y in zip(outs, a_list, b_list):
        gemm._check_out(o, x, y, x.shape[0], y.shape[1], out_dtype)
    if out_given:
        gemm.check_no_grad_out(*a_list, *b_list, *outs)
    # One launch writes every output while reading every input: none may share an element with
    # another GEMM's. (NOTE: checking every pair took ~65% of an eager call's host time for 10 GEMMs.)
    clash = overlap.first_overlap(outs, a_list + b_list)
    if clash is not None:
        raise ZooError(f"out[{clash}] overlaps another GEMM's input or output; every output needs its own memory")
    # Empty results need nothing; K = 0 gives zeros (with the launch); the rest go to the kernel.
    live = [(x, y, o) for x, y, o in zip(a_list, b_list, outs) if o.numel()]
    zeros = [o for x, _, o in live if x.shape[1] == 0]
    live = [(x, y, o) for x, y, o in live if x.shape[1]]
    if not live:
        for o in zeros:
            o.zero_()
        return out
    a_list, b_list, outs = (list(t) for t in zip(*live))

    # A batched call whose every GEMM runs (all of one shape) may go to the kernel whole.
    whole = (a, b, out) if mode == "batched" and isinstance(out, torch.Tensor) and len(a_list) == a.shape[0] \
        else None
    plan = _plan(a_list, b_list, outs, out_dtype, kernel, config, zeros, whole)
    plan.keep = cache
    if mode != "streams" and not plan.spec.grouped:
        raise ZooError(f"{plan.spec.name} has no {mode} launch (one GEMM per launch); use mode='streams'")
    _run(plan, mode, streams)  # eager, and the warm-up a capture needs (compile, tables)
    # Kept for replay: one-launch calls into the caller's `out` with nothing to copy or zero
    # first (the launch and its table; not the plan, which holds the caller's tensors).
    if plan.keep and not graph and out_given and plan.launch is not None and not plan.copies and not plan.zeros:
        gemm.remember(_replays, key, (plan.launch, plan.table), _REPLAYS_KEPT)
    if fast_key is not None and not plan.copies and not plan.zeros and \
            (plan.whole or (mode == "streams" and len(plan.problems) == a.shape[0])):
        gemm.remember(_fast, fast_key, _FastBatch.of(plan, a, b, out), _REPLAYS_KEPT)
    if out_given:
        _bump(outs)
    if graph:
        _graph_call(key, plan, mode, streams, [a, b] + ([out] if out_given else []), None if out_given else out)
    return out  # computed by the eager run above; later calls replay the graph


_fast: OrderedDict = OrderedDict()  # eager (B, M, K) x (B, K, N) calls, by layout (see _FastBatch)


@dataclass
class _FastBatch:
    """An eager tensor call's launch(es), worked out once per layout (shapes, strides, dtypes,
    device, alignment, options) as zoo.mm's: a later call patches the addresses and fires.
    The batched mode's one launch takes the batch's base addresses (its 3-D tensor maps
    carry the matrix strides); the streams mode's launches take each matrix's, each fired
    at its side stream's raw handle (no stream switch) between a fork and a join made once."""
    launches: list             # gemm.Launch: one (batched), or one per GEMM (streams)
    fork: cuda.StreamFork | None  # the streams mode's side streams (None: one launch)
    shape: tuple
    out_dtype: torch.dtype
    steps: tuple[int, int, int]      # bytes from one matrix of a, b, out to the next
    extents: tuple[int, int, int]    # bytes from data_ptr() to the end of a, b, out's span

    @staticmethod
    def of(plan: _Plan, a, b, out) -> "_FastBatch":
        """After _run(plan): its launch(es), and the streams mode's streams."""
        launches = [plan.launch] if plan.whole else plan.launches
        fork = None if plan.whole else plan.fork
        size = lambda t: t.element_size() * (t.stride(0) if t.shape[0] > 1 else 0)  # noqa: E731
        extent = lambda t: overlap.span(t)[1] - t.data_ptr() if t.numel() else 0  # noqa: E731
        return _FastBatch(launches, fork, tuple(out.shape), out.dtype, (size(a), size(b), size(out)),
                          (extent(a), extent(b), extent(out)))

    def run(self, a, b, out):
        """The result, or None when out's span meets an input's (the full path decides)."""
        if out is None:
            c = torch.empty(self.shape, dtype=self.out_dtype, device=a.device)
        else:
            gemm.check_no_grad_out(a, b, out)
            c = out
        pa, pb, pc = a.data_ptr(), b.data_ptr(), c.data_ptr()
        ea, eb, ec = self.extents
        if out is not None and ((pa < pc + ec and pc < pa + ea) or (pb < pc + ec and pc < pb + eb)):
            return None
        if self.fork is None:
            self.launches[0].fire_at(pa, pb, pc)
        else:
            sa, sb, sc = self.steps
            _fire_streams(self.launches, self.fork, lambda i: (pa + i * sa, pb + i * sb, pc + i * sc))
        if out is not None:
            torch.autograd.graph.increment_version(out)
        return c


_forks: dict[tuple, cuda.StreamFork] = {}
_fork_lock = threading.Lock()


def _stream_fork(device_index: int, sides: list[int]) -> cuda.StreamFork:
    """One fork and join (its events) per device and set of side streams: the pool's streams
    live as long as the process, so these are few and never freed."""
    key = (device_index, tuple(sides))
    with _fork_lock:
        fork = _forks.get(key)
        if fork is None:
            fork = _forks[key] = cuda.StreamFork(device_index, sides)
    return fork


def _through_ops(a, b, mode, streams, graph, out_dtype, kernel, config, out):
    """A call torch.compile traces or autograd records: the custom op zoo::bmm, which takes
    (B, M, K) x (B, K, N) tensors in the one-launch mode, no out, no graph of its own."""
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or out is not None or graph \
            or streams is not None or mode not in (None, "batched"):
        raise ZooError("under torch.compile or autograd, zoo.bmm takes two 3-D tensors and none of "
                       "out=, graph=, streams= or another mode (torch.compile makes the graphs; "
                       "run the rest under torch.no_grad())")
    return torch.ops.zoo.bmm(a, b, out_dtype, kernel, config)


def _tensors(x) -> list[torch.Tensor]:
    return [x] if isinstance(x, torch.Tensor) else [t for t in x if isinstance(t, torch.Tensor)]


def _bump(outs) -> None:
    """Tell autograd the outputs were written (as torch's out= ops do)."""
    for o in outs:
        torch.autograd.graph.increment_version(o)


def _device_index(t: torch.Tensor) -> int:
    return t.device.index if t.device.index is not None else torch.cuda.current_device()


@dataclass
class _Graph:
    graph: torch.cuda.CUDAGraph
    out: object                # the output bmm allocated (None: the caller's `out`)
    keep: tuple                # what the graph reads besides the caller's buffers: copies, table


_seen: OrderedDict = OrderedDict()     # graph keys met once: the next call with them captures
_capture_lock = threading.Lock()       # one capture at a time in this process
_capture_streams: dict[int, torch.cuda.Stream] = {}


def _forget(key) -> None:
    """A buffer of a graph key was freed: its graph (and the memory it holds) goes too."""
    _graphs.pop(key, None)
    _seen.pop(key, None)


def _graph_call(key, plan: _Plan, mode: str, streams: int | None, callers: list, own_out) -> None:
    """After the eager run of a graph=True call: remember its buffers on first sight, capture
    on the second. Neither holds the caller's tensors: each entry goes when one of them is
    freed (a finalizer on its storage)."""
    if key not in _seen and key not in _graphs:
        gemm.remember(_seen, key, True, _GRAPHS_KEPT)
        for t in {id(s): s for x in callers for s in (t.untyped_storage() for t in _tensors(x))}.values():
            weakref.finalize(t, _forget, key)
        return
    device_index = plan.device_index
    with _capture_lock, torch.cuda.device(device_index):
        stream = _capture_streams.get(device_index)
        if stream is None:
            stream = _capture_streams[device_index] = torch.cuda.Stream(device=device_index)
        stream.wait_stream(torch.cuda.current_stream(device_index))
        g = torch.cuda.CUDAGraph()
        # thread_local: other threads' CUDA calls neither break this capture nor fail for it.
        with torch.cuda.graph(g, stream=stream, capture_error_mode="thread_local"):
            _run(plan, mode, streams)
    _seen.pop(key, None)
    keep = ([dst for dst, _ in plan.copies], plan.table, plan.launch, plan.launches)
    gemm.remember(_graphs, key, _Graph(g, own_out, keep), _GRAPHS_KEPT)


def measure(bsz: int, m: int, n: int, k: int, dtype: torch.dtype, out_dtype: torch.dtype, modes=MODES, *,
            warmup: int = 10, iters: int = 50, seed: int = 0, streams: int | None = None,
            kernel: str | None = None, config: str | None = None, progress=None):
    """`zoo batched`: each mode, eager and from a CUDA graph, verified (every GEMM of the first
    input set) and timed side by side with torch.bmm, eager and replayed: device time per call,
    interleaved, over rotating input sets. Returns (timings by name, the wrong GEMMs' indices
    per zoo mode, host us per call by name, sets)."""
    lim = gemm.device_limits(torch.cuda.current_device())
    gen = torch.Generator(device="cuda").manual_seed(seed)
    sets = bench.rotation_sets(bsz * (m * k + k * n) * 2, lim.l2_bytes)
    inputs = [(torch.randn(bsz, m, k, device="cuda", dtype=dtype, generator=gen),
               torch.randn(bsz, k, n, device="cuda", dtype=dtype, generator=gen)) for _ in range(sets)]
    outs = [torch.empty(bsz, m, n, device="cuda", dtype=out_dtype) for _ in range(sets)]
    lists = [(list(a.unbind(0)), list(b.unbind(0)), list(c.unbind(0))) for (a, b), c in zip(inputs, outs)]

    def torch_bmm(i):
        return bench.torch_bmm(*inputs[i], out_dtype)

    def zoo_call(mode, graph):
        if mode == "grouped":
            return lambda i: bmm(lists[i][0], lists[i][1], mode=mode, graph=graph, out=lists[i][2],
                                 kernel=kernel, config=config)
        return lambda i: bmm(*inputs[i], mode=mode, graph=graph, out=outs[i], streams=streams,
                             kernel=kernel, config=config)

    graphs = []
    for i in range(sets):  # torch.bmm captured once per input set, replayed when timed
        torch_bmm(i)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            torch_bmm(i)
        graphs.append(g)
    fns = {"torch.bmm": torch_bmm, "torch.bmm (graph)": lambda i: graphs[i].replay()}
    for mode in modes:
        fns[f"zoo {mode}"] = zoo_call(mode, False)
        fns[f"zoo {mode} (graph)"] = zoo_call(mode, True)
    wrong = {}
    for name, fn in fns.items():
        if not name.startswith("zoo"):
            continue
        for i in range(sets):
            outs[i].fill_(float("nan"))
            fn(i)
        torch.cuda.synchronize()
        wrong[name] = [j for j in range(bsz) if not bench.verify(inputs[0][0][j], inputs[0][1][j], outs[0][j]).ok]
    host = {name: bench.host_us(lambda: fn(0)) for name, fn in fns.items()}
    # The GPU sleeps ~bench.LEAD_US before each call, so calls whose host side is shorter
    # (graph replays, torch.bmm) are timed on the device alone; eager zoo modes, whose
    # Python takes longer, stay host-bound (the caller's "bound by" column says so).
    timings = bench.time_side_by_side(fns, sets, warmup, iters, graph=False, lead_cycles=bench.lead_cycles(lim),
                                      progress=progress)
    return timings, wrong, host, sets
