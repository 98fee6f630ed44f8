"""`zoo.mm`: input checks, kernel selection and the one launch path every kernel shares."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import struct
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import NamedTuple

import torch

from . import arch, bench, cuda, overlap, registry, tune
from .configs import TileConfig
from .cuda import ZooError
from .registry import INT32_MAX, KernelSpec, Problem
from .specs.base import column_layouts, layout, layouts_of
from .specs.gemv import GEMV_LANE_COLS

DTYPE_NAMES = {torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32"}
INPUT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
MAX_DIM = 2**31 - 1024  # kernels index in int32 and round dimensions up to a tile
ALIGN_BYTES = 16  # cp.async and TMA rows: 16-byte aligned


# The choice depends only on the device and the problem's shape and dtypes: made once each,
# not on every call (zoo.mm sits inside timed loops).
_select = functools.lru_cache(maxsize=1024)(registry.select)


@functools.lru_cache(maxsize=None)
def device_limits(device_index: int) -> arch.ArchLimits:
    """The device's hardware facts, read once per device (a dozen driver attribute queries that
    planning a launch would otherwise repeat)."""
    return arch.from_device(device_index)


def _dtype_name(dtype: torch.dtype) -> str:
    return DTYPE_NAMES.get(dtype, str(dtype).replace("torch.", ""))


def check_inputs(a, b, out_dtype) -> torch.dtype:
    """Raise ZooError naming what is wrong with (a, b, out_dtype); return the output dtype."""
    out_dtype = check_shapes(a, b, out_dtype)
    if a.device != b.device:
        raise ZooError(f"a and b are on different devices: {a.device} and {b.device}")
    if a.device.type != "cuda":
        raise ZooError(f"inputs must be CUDA tensors, got device {a.device}")
    return out_dtype


def check_shapes(a, b, out_dtype) -> torch.dtype:
    """check_inputs without the device: what a fake (meta) tensor can be checked for too."""
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor):
            raise ZooError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != 2:
            raise ZooError(f"{name} must be 2-D, got {t.dim()}-D with shape {tuple(t.shape)}")
    if a.shape[1] != b.shape[0]:
        raise ZooError(f"inner dimensions differ: a is {tuple(a.shape)}, b is {tuple(b.shape)} "
                       f"(a's K={a.shape[1]} must equal b's K={b.shape[0]})")
    if max(a.shape[0], a.shape[1], b.shape[1]) > MAX_DIM:
        raise ZooError(f"dimensions above {MAX_DIM} are not supported: a {tuple(a.shape)}, b {tuple(b.shape)}")
    if a.dtype != b.dtype:
        raise ZooError(f"a and b must share a dtype, got {a.dtype} and {b.dtype}")
    if a.dtype not in INPUT_DTYPES:
        raise ZooError(f"dtype {a.dtype} is not supported: the zoo's kernels take torch.float16, "
                       "torch.bfloat16 or torch.float32")
    out_dtype = a.dtype if out_dtype is None else out_dtype
    if out_dtype not in (a.dtype, torch.float32):
        raise ZooError(f"out_dtype must be {a.dtype} (the input dtype) or torch.float32, got {out_dtype}")
    return out_dtype


def tf32_allowed(dtype: torch.dtype, allow_tf32: bool | None) -> bool:
    """Whether fp32 inputs may be rounded to TF32: the caller's choice, else torch's own
    setting for matmuls (allow_tf32 or fp32_precision), as torch.mm decides."""
    if dtype != torch.float32:
        return False
    return bench.torch_allows_tf32() if allow_tf32 is None else bool(allow_tf32)


def row_major_plan(t: torch.Tensor, aligned: bool) -> tuple[torch.Tensor, int, torch.Tensor | None]:
    """(what the kernel reads, its row stride in elements, the view to copy `t` into first or
    None). In place needs unit column stride (or one column), rows that do not overlap
    (stride >= cols, so no expanded/broadcast rows) within int32, and for `aligned` kernels
    (cp.async, TMA) 16-byte-aligned rows; otherwise a zeroed buffer with rows padded to 16
    bytes is allocated here and the caller copies `t` into the returned view."""
    rows, cols = t.shape
    align = ALIGN_BYTES // t.element_size()
    pad = _aligned_cols(t) if aligned else cols
    ld = t.stride(0) if rows > 1 else pad  # a single row's stride is never used to address
    readable = (cols == 1 or t.stride(1) == 1) and cols <= ld <= INT32_MAX
    if readable and (not aligned or (ld % align == 0 and t.data_ptr() % ALIGN_BYTES == 0)):
        return t, ld, None
    buffer = torch.zeros((rows, pad), dtype=t.dtype, device=t.device)
    return buffer, pad, buffer[:, :cols]


def column_major(t: torch.Tensor) -> bool:
    """Whether a TMA kernel can read the 2-D `t` column-major in place: unit row stride, columns
    that do not overlap, their stride a multiple of 16 bytes (and within int32), a 16-byte-aligned
    base; more than one row and column (a vector's layout is ambiguous: row-major takes it)."""
    rows, cols = t.shape
    ld = t.stride(1)
    return rows > 1 and cols > 1 and t.stride(0) == 1 and rows <= ld <= INT32_MAX and \
        ld * t.element_size() % ALIGN_BYTES == 0 and t.data_ptr() % ALIGN_BYTES == 0


def read_in_place(spec: KernelSpec, cfg: TileConfig, a: torch.Tensor, b: torch.Tensor) -> tuple[bool, bool]:
    """(a_col, b_col): whether the kernel reads a, b column-major in place (a build of its that
    the config allows: KernelSpec.layouts, column_layouts), rather than a row-major copy."""
    a_col, b_col = column_major(a), column_major(b)
    while (a_col or b_col) and (a_col, b_col) not in column_layouts(spec, cfg):
        a_col, b_col = (False, b_col) if a_col else (False, False)  # A in place first to go: swap-AB tiles cannot
    if layout(a_col, b_col) not in layouts_of(spec, cfg):  # a config built for a K-major B only
        raise ZooError(f"{spec.name} [{cfg.name}] reads B K-major only (a transposed view such as a Linear's "
                       f"W.t(), columns 16-byte aligned); this B is row-major: name another config")
    return a_col, b_col


def batch_plan(t: torch.Tensor) -> tuple[torch.Tensor, int, torch.Tensor | None]:
    """row_major_plan for a batch (B, rows, cols) that one TMA tensor map reads: in place when
    every matrix is (16-byte-aligned rows) and the matrices are a whole number of 16 bytes
    apart without overlapping; else a zeroed (B, rows, padded cols) buffer to copy `t` into."""
    batch, rows, cols = t.shape
    _, ld, copy_into = row_major_plan(t[0], True)
    if copy_into is None and not cuda.tma_layout_problem(t.data_ptr(), t.element_size(), rows, cols, ld,
                                                         batch, _matrix_stride(t)):
        return t, ld, None
    pad = _aligned_cols(t)
    buffer = torch.zeros((batch, rows, pad), dtype=t.dtype, device=t.device)
    return buffer, pad, buffer[:, :, :cols]


def _aligned_cols(t: torch.Tensor) -> int:
    """t's row length (its last dimension) rounded up to ALIGN_BYTES: a padded copy's row stride."""
    align = ALIGN_BYTES // t.element_size()
    return -(-t.shape[-1] // align) * align


def _row_major(t: torch.Tensor, aligned: bool) -> tuple[torch.Tensor, int]:
    """A view the kernel can read in place, or a copy that it can, with its row stride."""
    readable, ld, copy_into = row_major_plan(t, aligned)
    if copy_into is not None:
        copy_into.copy_(t)
    return readable, ld


def _check_out(out: torch.Tensor, a: torch.Tensor, b: torch.Tensor, m: int, n: int,
               dtype: torch.dtype) -> None:
    """out's shape, dtype, device and strides; whether it shares memory with a or b is a
    question of the call's addresses (CallPlan.run)."""
    if tuple(out.shape) != (m, n) or out.dtype != dtype or out.device != a.device:
        raise ZooError(f"out must be a ({m}, {n}) {dtype} tensor on {a.device}, got "
                       f"{tuple(out.shape)} {out.dtype} on {out.device}")
    if (n > 1 and out.stride(1) != 1) or (m > 1 and out.stride(0) < n) or out.stride(0) > INT32_MAX:
        raise ZooError(f"out must have unit column stride and non-overlapping rows, got strides {out.stride()}")


# The sm_90a entries' bias pointer: the argument after C (maps A, B, C, c_tma, C, bias, ...);
# the FP8 entries' scale pointers follow it (scale_a, scale_b, four strides).
BIAS_SLOT = 5
SCALE_SLOTS = (6, 7)
ROW_SUMS_SLOT = 6  # sm90 GEMM entries: the row sums' address, after the bias (KernelSpec.row_sums)

OVERLAP_MESSAGE = "out must not overlap a or b: the kernel reads them while it writes out"
BIAS_OVERLAP_MESSAGE = "bias must not share memory with out: the kernel reads it while it writes out"
AUTOGRAD_MESSAGE = ("zoo.mm(..., out=...) does not support automatic differentiation, but one of "
                    "its arguments requires grad (as torch.mm: call it under torch.no_grad(), or "
                    "without out=)")


def check_no_grad_out(*tensors: torch.Tensor) -> None:
    """torch's rule for out= calls: no autograd through them, so none of the tensors may
    require grad while grad mode is on (the kernel writes out behind autograd's back)."""
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        raise ZooError(AUTOGRAD_MESSAGE)


def mm(a: torch.Tensor, b: torch.Tensor, *, out_dtype: torch.dtype | None = None,
       kernel: str | None = None, config: str | None = None,
       out: torch.Tensor | None = None, allow_tf32: bool | None = None,
       bias: torch.Tensor | None = None) -> torch.Tensor:
    """C = a @ b (+ bias) on the GPU with the best kernel of the zoo for the device (or the one named).

    a: (M, K) and b: (K, N) CUDA float16, bfloat16 or float32 tensors, any strides. Returns
    (M, N) in the input dtype, or float32 with out_dtype=torch.float32; FP32 accumulation.
    float32 inputs run in full precision (the SIMT kernel) unless TF32 is allowed: by
    allow_tf32=True, or when None by torch.backends.cuda.matmul.allow_tf32, as torch.mm.
    `out`, if given, is written and returned (row-major, unit column stride, sharing no
    element with a or b; as torch.mm, not while autograd tracks any of the three).
    bias, an (N,) vector, is added to every row of C: by the sm_90a kernel's epilogue in its
    configs of at most 128 accumulators a thread (in fp32, before C's rounding, as cuBLASLt's
    bias epilogue; a bias of another dtype is converted to C's first), else, and under autograd
    or torch.compile, after the product. It must not share memory with `out`.
    Autograd and torch.compile go through the custom op zoo::mm (zoo/ops.py): gradients by
    the zoo's own kernels, a fake implementation for tracing.
    The first call for a layout (shapes, strides, dtypes, device, alignment, options) checks
    it and works out the launch; later calls with that layout patch the addresses and fire.
    """
    if torch.compiler.is_compiling():  # traced as the custom op (zoo/ops.py)
        return _plus(_through_ops(a, b, out_dtype, kernel, config, out, allow_tf32), bias)
    try:
        if (a.requires_grad or b.requires_grad or (bias is not None and bias.requires_grad)) \
                and torch.is_grad_enabled():  # autograd records it
            if out is not None and bias is not None:
                check_no_grad_out(bias)  # before the op writes out
            return _plus(_through_ops(a, b, out_dtype, kernel, config, out, allow_tf32), bias)
        # Each tensor's device as get_device()'s int (-1 off CUDA, where no plan is ever made):
        # cheaper to read and hash than a torch.device, and b's too, so that a b on another
        # device never meets a plan made for a's. The addresses are read once, for the launch.
        a_ptr, b_ptr, c_ptr = a.data_ptr(), b.data_ptr(), None if out is None else out.data_ptr()
        key = (a.shape, a.stride(), b.shape, b.stride(), a.dtype, b.dtype, a.get_device(), b.get_device(),
               a_ptr % ALIGN_BYTES, b_ptr % ALIGN_BYTES, out_dtype, kernel, config,
               a.dtype == torch.float32 and tf32_allowed(a.dtype, allow_tf32),
               None if bias is None else (bias.shape, bias.stride(), bias.dtype, bias.get_device()),
               None if out is None else (out.shape, out.stride(), out.dtype, out.get_device(),
                                         c_ptr % ALIGN_BYTES))
    except AttributeError:  # not tensors: plan_call says which argument is wrong
        key = None
    plan = _calls.get(key)
    if plan is None:
        plan = plan_call(a, b, out_dtype, kernel, config, out, allow_tf32, bias)
        if key is None:
            return plan.run(a, b, out, bias=bias)
        remember(_calls, key, plan, _CALLS_KEPT)
    return plan.run(a, b, out, a_ptr, b_ptr, c_ptr, bias)


_PLAIN = frozenset((torch.Tensor, torch.nn.Parameter))


def subclassed(x, w, bias) -> bool:
    """Whether any of the three is other than a plain tensor or parameter (a DTensor, say):
    two type lookups for the common call, any_dtensor's test only past them."""
    return type(x) not in _PLAIN or type(w) not in _PLAIN or (bias is not None and type(bias) not in _PLAIN)


def any_dtensor(*tensors) -> bool:
    """Whether any of the tensors is a DTensor (torch.distributed.tensor), without importing it."""
    return any(type(t).__name__ == "DTensor" for t in tensors)


@contextlib.contextmanager
def dtensor_call(call: str, names: str, *tensors):
    """Around a call with sharding rules (zoo.mm, zoo.bmm, zoo.nn.Linear) on DTensors. DTensor
    refuses a tensor that is not one beside them, unless torch's implicit_replication() is on;
    that refusal becomes a ZooError naming the argument (`names`: one word a tensor)."""
    try:
        yield
    except RuntimeError as exc:
        plain = [n for n, t in zip(names.split(), tensors) if t is not None and not any_dtensor(t)]
        if not plain or "mixed torch.Tensor and DTensor" not in str(exc):
            raise
        raise ZooError(f"{call} on DTensors takes DTensors only, got a tensor that is not one for "
                       f"{', '.join(plain)}: distribute it on the same mesh (distribute_tensor, or "
                       "parallelize_module for a layer's parameters), or call under torch's "
                       "implicit_replication()") from exc


def refuse_dtensors(call: str, *tensors) -> None:
    """A ZooError for DTensors given to a call without sharding rules."""
    if any_dtensor(*tensors):
        raise ZooError(f"{call} has no sharding rules for DTensors: call it on their local tensors "
                       "(DTensor.to_local()); zoo.mm, zoo.bmm and zoo.nn.Linear take DTensors")


def _plus(y: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """y + bias, in place (y is the call's own output, or out), where autograd or tracing
    records the product: the op has no bias. The bias is checked as the launch path checks it
    (a DTensor product's by the sharding rules' add)."""
    if bias is None:
        return y
    if type(y).__name__ != "DTensor":
        _check_bias(bias, y, y.shape[-1])
    return y.add_(bias)


def _through_ops(a, b, out_dtype, kernel, config, out, allow_tf32) -> torch.Tensor:
    """The call as the custom op torch.compile traces and autograd differentiates."""
    if out is not None:
        if not torch.compiler.is_compiling():
            check_no_grad_out(*(t for t in (a, b, out) if isinstance(t, torch.Tensor)))
        if out_dtype is not None and out_dtype != out.dtype:
            raise ZooError(f"out_dtype {out_dtype} differs from out's dtype {out.dtype}")
        torch.ops.zoo.mm_out(a, b, out, kernel, config, allow_tf32)
        return out
    return torch.ops.zoo.mm(a, b, out_dtype, kernel, config, allow_tf32)


@dataclass
class CallPlan:
    """What zoo.mm works out once per layout: the launch (its arguments packed, addresses
    patched per call), the output to make, which input to copy into a row-major buffer first
    (strided, misaligned, or too hard to tell apart from out), the byte extents of a, b and
    out for the per-call overlap test."""
    m: int
    n: int
    out_dtype: torch.dtype
    launch: "Launch | None"      # None: an empty problem (K = 0 gives zeros)
    copy_a: bool
    copy_b: bool
    aligned: bool
    extents: tuple[int, int, int]  # bytes from data_ptr() to the end of a, b, out's span
    options: dict                  # the call's kernel, config, out_dtype, allow_tf32
    same_dtype: bool               # C in a's dtype: a.new_empty(shape) makes it
    bias_copy: bool = False        # the bias is not a packed vector of C's dtype: converted per call
    shape: tuple | None = None     # the output's shape: (m, n), or linear's (*x's leading dims, n)
    strides: tuple | None = None   # and its strides where not row-major (conv2d's (N, K, P, Q), channels-last)

    def __post_init__(self):
        if self.shape is None:
            self.shape = (self.m, self.n)

    def run(self, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None,
            a_ptr: int | None = None, b_ptr: int | None = None, out_ptr: int | None = None,
            bias: torch.Tensor | None = None) -> torch.Tensor:
        """The call; a_ptr, b_ptr, out_ptr: the addresses when the caller has read them."""
        if out is None:
            # From a, as torch.empty with a dtype and a device costs more to parse. No device
            # tensor is kept in the plan: one made while torch routes allocations to a CUDA-graph
            # pool would stay alive there (torch.compile's reduce-overhead mode refuses that).
            if self.strides is None:
                c = a.new_empty(self.shape) if self.same_dtype else a.new_empty(self.shape, dtype=self.out_dtype)
            else:
                c = a.new_empty_strided(self.shape, self.strides, dtype=self.out_dtype)
        else:  # a and b do not require grad here while grad is on: mm sent those to the op
            if out.requires_grad and torch.is_grad_enabled():
                raise ZooError(AUTOGRAD_MESSAGE)
            c = out
            if bias is not None and _meet(bias, out.data_ptr(), self.extents[2]):
                shared = overlap.share_elements(out, bias)
                if shared:
                    raise ZooError(BIAS_OVERLAP_MESSAGE)
                if shared is None:  # too hard to tell: read a copy
                    bias = bias.clone()
        if self.launch is None:
            c.zero_()
            if bias is not None:
                c.add_(bias)
        else:
            if a_ptr is None:
                a_ptr, b_ptr = a.data_ptr(), b.data_ptr()
            c_ptr = out_ptr if out is not None and out_ptr is not None else c.data_ptr()
            ea, eb, ec = self.extents
            if out is not None and ((a_ptr < c_ptr + ec and c_ptr < a_ptr + ea) or
                                    (b_ptr < c_ptr + ec and c_ptr < b_ptr + eb)):
                apart = _apart_from_out(a, b, out)
                if apart is not None:  # an input copied: another layout, another plan
                    return mm(*apart, out=out, bias=bias, **self.options)
            if self.copy_a:
                a = _row_major_copy(a, self.aligned)
                a_ptr = a.data_ptr()
            if self.copy_b:
                b = _row_major_copy(b, self.aligned)
                b_ptr = b.data_ptr()
            if bias is None or self.launch.bias_slot is None:  # none, or added after
                self.launch.fire_at(a_ptr, b_ptr, c_ptr)
                if bias is not None:
                    c.add_(bias)
            else:
                if self.bias_copy:
                    bias = bias.to(self.out_dtype).contiguous()
                self.launch.fire_at(a_ptr, b_ptr, c_ptr, bias.data_ptr())
        if out is not None:
            torch.autograd.graph.increment_version(out)  # autograd sees the write, as torch.mm's
        return c


def _meet(t: torch.Tensor, c_ptr: int, c_extent: int) -> bool:
    """Whether t's byte span meets out's (c_ptr, c_extent bytes)."""
    start, end = overlap.span(t)
    return t.numel() > 0 and start < c_ptr + c_extent and c_ptr < end


def _apart_from_out(a, b, out) -> tuple[torch.Tensor, torch.Tensor] | None:
    """out's byte span meets a's or b's: refuse a real overlap (as torch.mm); None when they
    share no element; else (a, b) with an input whose layout is too hard to tell apart from
    out replaced by a copy (right either way)."""
    shared = [overlap.share_elements(out, t) for t in (a, b)]
    if any(shared):
        raise ZooError(OVERLAP_MESSAGE)
    if None not in shared:
        return None
    return tuple(t.clone() if hard is None else t for t, hard in zip((a, b), shared))


def _row_major_copy(t: torch.Tensor, aligned: bool) -> torch.Tensor:
    """t in a zeroed buffer the kernel reads in place, as row_major_plan laid it out: rows
    padded to 16 bytes for `aligned` kernels (the padding zero: whole 16-byte chunks are read)."""
    rows, cols = t.shape
    buffer = torch.zeros((rows, _aligned_cols(t) if aligned else cols), dtype=t.dtype, device=t.device)
    buffer[:, :cols].copy_(t)
    return buffer[:, :cols]


def _extent(t: torch.Tensor) -> int:
    return overlap.span(t)[1] - t.data_ptr() if t.numel() else 0


def plan_call(a, b, out_dtype, kernel, config, out, allow_tf32, bias=None, row_sums: bool = False) -> CallPlan:
    """Every check of a zoo.mm call (raising ZooError before anything runs), the kernel and
    config, and the launch for this layout, compiled on first use; row_sums: the launch may
    sum A's rows too (plan_launch's row_sums; zoo/linear.py's bias gradient)."""
    if out is not None and not isinstance(out, torch.Tensor):
        raise ZooError(f"out must be a torch.Tensor, got {type(out).__name__}")
    if out is not None:
        check_no_grad_out(*(t for t in (a, b, out) if isinstance(t, torch.Tensor)))
    out_dtype = check_inputs(a, b, out_dtype if out is None or out_dtype else out.dtype)
    m, k = a.shape
    n = b.shape[1]
    if out is not None:
        _check_out(out, a, b, m, n, out_dtype)
    if bias is not None:
        _check_bias(bias, a, n)
    extents = (_extent(a), _extent(b), _extent(out) if out is not None else 0)
    options = {"out_dtype": out_dtype, "kernel": kernel, "config": config, "allow_tf32": allow_tf32}
    if m == 0 or n == 0 or k == 0:
        return CallPlan(m, n, out_dtype, None, False, False, False, extents, options, out_dtype == a.dtype)
    device_index = a.device.index if a.device.index is not None else torch.cuda.current_device()
    limits = device_limits(device_index)
    problem = Problem(m, n, k, _dtype_name(a.dtype), _dtype_name(out_dtype), tf32_allowed(a.dtype, allow_tf32),
                      ldb=b.stride(0) if b.stride(1) == 1 and k > 1 else 0,  # one row has no stride
                      b_col=column_major(b))
    spec, cfg, splits = _choose(limits, problem, device_index, kernel, config)
    a_col, b_col = read_in_place(spec, cfg, a, b)
    a_read, lda, a_copy = (a, a.stride(1), None) if a_col else row_major_plan(a, spec.aligned_rows)
    b_read, ldb, b_copy = (b, b.stride(1), None) if b_col else row_major_plan(b, spec.aligned_rows)
    c = torch.empty((m, n), dtype=out_dtype, device=a.device) if out is None else out
    launch = plan_launch(spec, cfg, device_index, a_read, b_read, c, k, lda, ldb, splits=splits,
                         a_col=a_col, b_col=b_col, row_sums=row_sums)
    launch.choice = (spec.name, cfg.name, splits)
    bias_copy = bias is not None and (bias.dtype != out_dtype or bias.stride(0) != 1)
    return CallPlan(m, n, out_dtype, launch, a_copy is not None, b_copy is not None, spec.aligned_rows,
                    extents, options, out_dtype == a.dtype, bias_copy)


def _check_bias(bias, a: torch.Tensor, n: int) -> None:
    if not isinstance(bias, torch.Tensor) or bias.shape != (n,) or bias.device != a.device \
            or bias.dtype not in INPUT_DTYPES:
        got = f"{tuple(bias.shape)} {bias.dtype} on {bias.device}" if isinstance(bias, torch.Tensor) \
            else type(bias).__name__
        raise ZooError(f"bias must be a ({n},) float16, bfloat16 or float32 tensor on {a.device}, got {got}")


def _choose(limits, problem: Problem, device_index: int, kernel: str | None, config: str | None):
    """(kernel, config, splits or None for the registry's rule): what `zoo tune` measured
    fastest on this GPU for this shape, where it did and nothing was named; else the registry."""
    if kernel is None and config is None:
        won = tune.lookup(device_index, problem.dtype, problem.out_dtype, problem.tf32, problem.m, problem.n, problem.k)
        if won is not None:
            try:
                return (*_select(limits, problem, kernel_name=won.kernel, config_name=won.config), won.splits)
            except ZooError as exc:  # a winner this zoo no longer has: the model decides
                cuda._warn_once(f"tuned choice {won} not used: {exc}")
    return (*_select(limits, problem, kernel_name=kernel, config_name=config), None)


def remember(cache: OrderedDict, key, value, kept: int) -> None:
    """Store `value` in a cache that keeps its `kept` newest entries."""
    cache[key] = value
    if len(cache) > kept:
        cache.popitem(last=False)


_CALLS_KEPT = 256
_calls: OrderedDict = OrderedDict()  # zoo.mm's plans, by layout (see mm)

_current_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def current_stream(device_index: int) -> int:
    """The raw handle of torch's current stream on the device (the call torch's own
    generated code makes: no torch.cuda.Stream object per call)."""
    if _current_raw_stream is not None:
        return _current_raw_stream(device_index)
    return torch.cuda.current_stream(device_index).cuda_stream


class Launch:
    """One launch, worked out (a GEMM, or a grouped launch over a table): function, grid and
    the kernel's arguments packed once. fire_at re-points it at new addresses of the same
    layout (A, B, C; in tensor maps or as pointers) and fires; fire uses the ones it has.
    A split-K launch reads the per-stream workspace, whose counters the kernel leaves zeroed."""

    def __init__(self, fn: cuda.Function, device_index: int, grid: tuple[int, int, int], threads: int,
                 cluster: int, args: list, split_k: tuple[int, int] | None = None,
                 slots: tuple[int, int, int] | None = None, maps: bool = False, pdl: bool = False,
                 stream_k: int = 0, bias_slot: int | None = None, scale_slots: tuple[int, int] | None = None,
                 row_sums_slot: int | None = None):
        self.fn, self.device_index, self.grid, self.threads, self.cluster = fn, device_index, grid, threads, cluster
        self.pdl = pdl                  # a programmatic dependent of the grid before it (registry.dependent_launch)
        self.args = cuda.PackedArgs(args)
        self.split_k = split_k          # (workspace floats, counters); the last two arguments
        self.slots = slots              # argument indices of A, B and C
        self.maps = maps                # A and B (and C when it goes out by TMA) are tensor maps
        self.c_map = maps and args[2][0] is not None  # C goes out through its tensor map
        self.lock = threading.Lock()    # one thread patches and fires at a time
        self.choice: tuple | None = None  # (kernel, config, splits) zoo.mm chose, for zoo tune's tests
        self.stream_k = stream_k        # tail tiles spread along K (registry.stream_k_tiles)
        self.bound: tuple[int, int] | None = None  # the split-K workspace the arguments point at
        self.bias_slot = bias_slot      # BIAS_SLOT where the kernel adds the bias (KernelSpec.bias_epilogue)
        self.scale_slots = scale_slots  # a scaled GEMM's scale_a and scale_b pointers (SCALE_SLOTS)
        self.row_sums_slot = row_sums_slot  # ROW_SUMS_SLOT where the build sums A's rows (plan_launch's row_sums)

    def fire_at(self, a_ptr: int, b_ptr: int, c_ptr: int, bias_ptr: int = 0, stream: int | None = None,
                scale_ptrs: tuple[int, int] | None = None, row_sums_ptr: int = 0) -> None:
        """Launch at these addresses (bias_ptr: 0 for none; kernels with bias_slot; scale_ptrs:
        a scaled GEMM's scale_a and scale_b; row_sums_ptr: where a launch with row_sums_slot
        writes A's row sums, 0 for nowhere) on `stream`, a raw stream handle (default: torch's
        current stream of the device)."""
        with self.lock:
            args, (ia, ib, ic) = self.args, self.slots
            if self.maps:
                args.set_map_address(ia, a_ptr)
                args.set_map_address(ib, b_ptr)
                if self.c_map:
                    args.set_map_address(2, c_ptr)
            else:
                args.set(ia, a_ptr)
                args.set(ib, b_ptr)
            args.set(ic, c_ptr)
            if self.bias_slot is not None:
                args.set(self.bias_slot, bias_ptr)
            if scale_ptrs is not None:
                args.set(self.scale_slots[0], scale_ptrs[0])
                args.set(self.scale_slots[1], scale_ptrs[1])
            if self.row_sums_slot is not None:
                args.set(self.row_sums_slot, row_sums_ptr)
            self._fire(stream)

    def fire(self, stream: int | None = None) -> None:
        """Launch on `stream`, a raw stream handle (default: torch's current stream of the device)."""
        with self.lock:
            self._fire(stream)

    def _fire(self, stream: int | None = None) -> None:
        if stream is None:
            stream = current_stream(self.device_index)
            if self.split_k:
                self._bind_workspace(stream)
        elif self.split_k:
            # The workspace is taken with its stream current: zeroed there, or from the pool of
            # the capture that stream has joined.
            with torch.cuda.stream(torch.cuda.ExternalStream(stream, device=self.device_index)):
                self._bind_workspace(stream)
        self.fn.launch(self.grid, self.threads, self.args, stream, self.device_index, self.cluster, self.pdl)

    def _bind_workspace(self, stream: int) -> None:
        bound = split_k_workspace(self.device_index, stream, *self.split_k)
        if bound != self.bound:
            n = len(self.args.values)
            self.args.set(n - 2, bound[0])
            self.args.set(n - 1, bound[1])
            self.bound = bound


class _Workspace(NamedTuple):
    """A stream's split-K buffers (cuda.StreamBuffer: the driver's, on that stream), with their
    addresses and sizes as plain ints: read on every split-K call without a further call."""
    partials: cuda.StreamBuffer
    counters: cuda.StreamBuffer
    partials_ptr: int
    counters_ptr: int
    floats: int
    slots: int


_workspaces: dict[tuple[int, int], _Workspace] = {}
# Whether torch's current stream is being captured into a graph (False on a torch without CUDA).
_capturing = (getattr(torch._C, "_cuda_isCurrentStreamCapturing", None) or torch.cuda.is_current_stream_capturing) \
    if torch.backends.cuda.is_built() else (lambda: False)


def split_k_workspace(device_index: int, stream: int, floats: int, counters: int) -> tuple[int, int]:
    """Addresses of fp32 partials and zeroed int32 counters for a split-K launch on `stream`:
    kept per (device, stream), grown when too small (the kernel leaves its counters at zero,
    so one launch after another on a stream can share them). Kept buffers come from the
    driver, not torch's allocator (cuda.StreamBuffer says why). While the stream is being
    captured into a graph, a fresh pair from the graph's pool, zeroed inside the graph and
    not kept: the graph's own, as any temporary of a captured op."""
    if _capturing():
        workspace = torch.empty(floats, dtype=torch.float32, device=device_index)
        zeros = torch.zeros(counters, dtype=torch.int32, device=device_index)
        return workspace.data_ptr(), zeros.data_ptr()
    key = (device_index, stream)
    kept = _workspaces.get(key)
    if kept is None or kept.floats < floats or kept.slots < counters:
        if kept is not None:
            floats, counters = max(floats, kept.floats), max(counters, kept.slots)
            kept.partials.free()  # after the launches already queued on this stream
            kept.counters.free()
        partials = cuda.StreamBuffer(device_index, 4 * floats, stream)
        zeros = cuda.StreamBuffer(device_index, 4 * counters, stream)
        kept = _workspaces[key] = _Workspace(partials, zeros, partials.ptr, zeros.ptr, floats, counters)
    return kept.partials_ptr, kept.counters_ptr


_loaded: dict[tuple, cuda.Function] = {}


def compiled(spec: KernelSpec, cfg: TileConfig, dtype: str, out_dtype: str,
             device_index: int, grouped: bool = False, a_col: bool = False, b_col: bool = False,
             row_sums: bool = False) -> cuda.Function:
    """The loaded function for (kernel, config, dtypes) on a device, compiled for its arch on
    first use (disk cache across processes, this dict within one); `grouped`: the entry point
    that reads a table of problems (entry name + "_grouped"); a_col, b_col: the build that
    reads A, B column-major (KernelSpec.layouts); row_sums: the build that also sums A's rows
    (KernelSpec.row_sums)."""
    key = (spec.name, cfg, dtype, out_dtype, device_index, grouped, a_col, b_col, row_sums)
    if key in _loaded:
        return _loaded[key]
    limits = device_limits(device_index)
    cubin = cuda.compile_cubin(spec.source, spec.compile_arch(limits.cc), spec.defines(cfg, a_col, b_col, row_sums),
                               kernel=spec.name, config=cfg.name)
    name = spec.entry[(dtype, out_dtype)] + ("_grouped" if grouped else "")
    fn = cuda.load_function(device_index, cubin, name, spec.build_smem_bytes(cfg, row_sums), kernel=spec.name,
                            config=cfg.name)
    _loaded[key] = fn
    return fn


def _matrix_stride(t: torch.Tensor) -> int:
    """Elements from one matrix of a batch (a 3-D tensor, the batch first) to the next."""
    return t.stride(0) if t.dim() == 3 and t.shape[0] > 1 else 0


def tma_maps(spec: KernelSpec, cfg: TileConfig, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor,
             k: int, lda: int, ldb: int, a_col: bool = False, b_col: bool = False) -> tuple[object, object, object, bool]:
    """The tensor maps of A, B and C for a TMA kernel (matrices, or batches of them: 3-D, the
    batch first) as cuda.tensor_map's arguments, and whether C goes out through TMA (its rows
    and matrices 16-byte aligned; else the kernel stores C directly and its map is None, a
    blank). a_col, b_col: A, B read column-major (lda, ldb their column strides): the maps of
    A^T (K rows of M) and B^T (N rows of K)."""
    batch = c.shape[0] if c.dim() == 3 else 1
    m, n = c.shape[-2:]
    ldc = max(c.stride(-2), 1)
    (a_rows, a_cols), (b_rows, b_cols), (c_rows, c_cols) = spec.tma_boxes(cfg, c.element_size())
    dtype = _dtype_name(a.dtype)
    a_map = (a.data_ptr(), dtype, m, k, lda, a_rows, a_cols, batch, _matrix_stride(a))
    if a_col:
        a_map = (a.data_ptr(), dtype, k, m, lda, *spec.a_col_box(cfg), batch, _matrix_stride(a))
    b_map = (b.data_ptr(), dtype, k, n, ldb, b_rows, b_cols, batch, _matrix_stride(b))
    if b_col:
        b_map = (b.data_ptr(), dtype, n, k, ldb, *spec.b_col_box(cfg), batch, _matrix_stride(b))
    # TMA stores whole 16-byte chunks: a row whose end is not on a 16-byte boundary would be
    # written past N (measured on the H200), so such C is stored directly.
    c_tma = n * c.element_size() % 16 == 0 and not cuda.tma_layout_problem(
        c.data_ptr(), c.element_size(), m, n, ldc, batch, _matrix_stride(c))
    c_map = (c.data_ptr(), _dtype_name(c.dtype), m, n, ldc, c_rows, c_cols, batch,
             _matrix_stride(c)) if c_tma else None
    for params in (a_map, b_map, c_map):  # raises ZooError for a layout TMA cannot read
        if params:
            cuda.tensor_map(*params)
    return a_map, b_map, c_map, c_tma


def _resident_clusters(spec: KernelSpec, cfg: TileConfig, fn: cuda.Function, device_index: int) -> int:
    """Clusters of cfg.cluster_size blocks the GPU holds at once (persistent kernels); 0 for the
    others, whose grid is one block per tile."""
    if not spec.persistent:
        return 0
    return fn.resident_clusters(cfg.threads, cfg.cluster_size, device_limits(device_index).sm_count)


def launch(spec: KernelSpec, cfg: TileConfig, device_index: int, a: torch.Tensor,
           b: torch.Tensor, c: torch.Tensor, k: int, lda: int, ldb: int) -> None:
    """The launch path shared by every GEMM kernel: C(M,N) = A(M,K) @ B(K,N). The sizes come
    from C and `k`, not from a and b, which may be copies with padded rows."""
    plan_launch(spec, cfg, device_index, a, b, c, k, lda, ldb).fire()


def plan_launch(spec: KernelSpec, cfg: TileConfig, device_index: int, a: torch.Tensor,
                b: torch.Tensor, c: torch.Tensor, k: int, lda: int, ldb: int, *,
                shared_units: int | None = None, splits: int | None = None,
                independent: bool = False, a_col: bool = False, b_col: bool = False,
                scales: tuple | None = None, row_sums: bool = False) -> Launch:
    """`launch`'s work before the launch itself (compile on first use, grid, split-K, tensor
    maps, arguments): what a repeated call can keep. TMA kernels also take a batch of
    same-shape GEMMs in one launch: a, b and c 3-D (the batch first, uniform strides), lda and
    ldb their row strides. shared_units: the launch is one of several that share the GPU at the
    same time (the streams mode), whose units add up to this: a grid under one wave is left as
    it is, not split along K (nor given a stream-K tail) to fill it, and a persistent kernel's
    grid takes its share of the GPU (registry.shared_clusters). splits: K slices by hand (zoo
    tune), instead of the registry's rule. independent (kernels with spec.chains; no split-K): the
    launch follows another on its stream whose output it neither reads nor writes (the streams
    mode's next GEMM): it goes as that one's programmatic dependent and starts without waiting
    for it (NOTES.md, "The streams mode's launches"). a_col, b_col: a, b read column-major
    (their column strides lda, ldb; KernelSpec.layouts). scales: a scaled GEMM's (spec.op
    "scaled") scale_a and scale_b addresses and their four strides (zoo/scaled.py; the
    kernel's Scales; the config says whether it is the blockwise recipe's build). row_sums:
    A's rows summed over K too, where the config has that build and the launch no split-K or
    stream-K (Launch.row_sums_slot says whether it got it; fire_at's row_sums_ptr, where they
    go)."""
    batch = c.shape[0] if c.dim() == 3 else 1
    if batch > 1 and not spec.tma_boxes:
        raise ZooError(f"{spec.name} takes one GEMM per launch; batches go through its grouped entry point")
    m, n = c.shape[-2:]
    # Compiling loads a module, the occupancy query and the tensor maps need a context: the
    # device's, made current here, as a plan may be made on a thread that has none (autograd's
    # backward thread, when a layout's first call is a backward).
    with torch.cuda.device(device_index), cuda.device_context(device_index):
        fn = compiled(spec, cfg, _dtype_name(a.dtype), _dtype_name(c.dtype), device_index, a_col=a_col, b_col=b_col)
        if spec.max_m:
            return _plan_stream(spec, cfg, fn, device_index, a, b, c, k, lda, ldb, splits,
                                alone=shared_units is None, b_col=b_col)
        resident = _resident_clusters(spec, cfg, fn, device_index)
        alone = shared_units is None
        if not alone and resident:
            resident = registry.shared_clusters(registry.stacks(cfg, m, n) * batch, shared_units, resident)
        if splits is None or not spec.split_k:
            splits = registry.split_k(spec, cfg, m, n, k, resident, batch,
                                      device_limits(device_index).dram_gbps) if alone else 1
        tail = registry.stream_k_tiles(spec, cfg, m, n, k, resident, batch) if alone and splits == 1 else 0
        if independent and (not spec.chains or splits > 1 or tail):  # the per-stream workspace is not for two grids at once
            raise ZooError(f"{spec.name} [{cfg.name}]: only a launch without split-K, of a kernel that "
                           "waits for the grid before it, can overlap it")
        grid = spec.grid(cfg, m, n, resident, splits, batch)
        if grid[0] > INT32_MAX:
            raise ZooError(f"{m}x{n} needs {grid[0]} blocks of {cfg.block_m}x{cfg.block_n}; the grid allows {INT32_MAX}")
        units = registry.stacks(cfg, m, n) * splits * batch
        if spec.persistent and units > INT32_MAX:
            raise ZooError(f"{batch} x {m}x{n} makes {units} units of work; the kernel counts at most {INT32_MAX}")
        row_sums = row_sums and a_col and spec.row_sums(cfg) and splits == 1 and not tail and batch == 1
        if row_sums:
            fn = compiled(spec, cfg, _dtype_name(a.dtype), _dtype_name(c.dtype), device_index, a_col=a_col,
                          b_col=b_col, row_sums=True)
        ldc = (max(c.stride(-2), 1), cuda.INT32)
        split_k = None
        if spec.tma_boxes:
            a_map, b_map, c_map, c_tma = tma_maps(spec, cfg, a, b, c, k, lda, ldb, a_col, b_col)
            if splits > 1:  # fp32 partials per (tile, consumer warpgroup, split), and counts
                slots = registry.stacks(cfg, m, n) * cfg.cluster_size * cfg.warps * batch
                split_k = (slots * splits * cfg.warp_m * cfg.warp_n, slots)
            elif tail:  # stream-K: fp32 partials per (CTA, run of its two), counts per (tail tile, warpgroup)
                split_k = (2 * grid[0] * cfg.block_m * cfg.block_n, tail * cfg.warps)
            args = [(a_map, cuda.TENSOR_MAP), (b_map, cuda.TENSOR_MAP), (c_map, cuda.TENSOR_MAP), (int(c_tma), cuda.INT32),
                    (c.data_ptr(), cuda.POINTER), (0, cuda.POINTER), (m, cuda.INT32), (n, cuda.INT32), (k, cuda.INT32), ldc,
                    (_matrix_stride(c), cuda.INT64), (batch, cuda.INT32),
                    (splits, cuda.INT32), (tail, cuda.INT32), (int(independent), cuda.INT32),
                    (spec.unit_layout(cfg, m, n, k, splits), cuda.BY_VALUE),
                    (0, cuda.POINTER), (0, cuda.POINTER)]  # workspace, counters: per fire
            if spec.op == "gemm":  # the entry's row-sums address (0: none)
                args.insert(ROW_SUMS_SLOT, (0, cuda.POINTER))
            if spec.op == "scaled":
                pa, pb, *strides = scales
                args[SCALE_SLOTS[0]:SCALE_SLOTS[0]] = [(pa, cuda.POINTER), (pb, cuda.POINTER),
                                                       *((v, cuda.INT32) for v in strides)]
        else:
            args = [(a.data_ptr(), cuda.POINTER), (b.data_ptr(), cuda.POINTER), (c.data_ptr(), cuda.POINTER),
                    (m, cuda.INT32), (n, cuda.INT32), (k, cuda.INT32),
                    (lda, cuda.INT32), (ldb, cuda.INT32), ldc]
    slots = (0, 1, 4) if spec.tma_boxes else (0, 1, 2)
    footprint = batch * ((m * k + k * n) * a.element_size() + m * n * c.element_size())
    return Launch(fn, device_index, grid, cfg.threads, cfg.cluster_size, args, split_k, slots,
                  maps=bool(spec.tma_boxes), stream_k=tail, bias_slot=BIAS_SLOT if spec.bias_epilogue(cfg) else None,
                  scale_slots=SCALE_SLOTS if spec.op == "scaled" else None,
                  row_sums_slot=ROW_SUMS_SLOT if row_sums else None,
                  pdl=independent or registry.dependent_launch(spec, device_limits(device_index), footprint))


def _plan_stream(spec: KernelSpec, cfg: TileConfig, fn: cuda.Function, device_index: int, a: torch.Tensor,
                 b: torch.Tensor, c: torch.Tensor, k: int, lda: int, ldb: int, splits: int | None,
                 alone: bool = True, b_col: bool = False) -> Launch:
    """plan_launch for a streaming kernel (spec.max_m; kernels/sm75/gemv_stream.cu): a grid of
    column blocks x K slices x row groups, the slices added through the split-K workspace.
    splits: by hand (a probe), else registry.stream_splits; either way no slice is over
    block_k rows (a count that asks for deeper ones gets more). alone=False: the launch shares
    the GPU with others (the streams mode), so it is not sliced further to fill it. b_col: B
    read K-major (B^T rows, ldb apart), whose slices start on whole 8-element chunks."""
    if c.dim() != 2:
        raise ZooError(f"{spec.name} takes one GEMM per launch")
    m, n = c.shape
    if b_col and (ldb % GEMV_LANE_COLS or b.data_ptr() % ALIGN_BYTES):
        raise ZooError(f"{spec.name} reads a column-major B in 16-byte chunks: its column stride ({ldb}) must be "
                       f"a multiple of {GEMV_LANE_COLS} elements and its base 16-byte aligned")
    resident = fn.resident_clusters(cfg.threads, 1, device_limits(device_index).sm_count) if alone else 0
    auto_splits, per = registry.stream_splits(cfg, m, n, k, resident)  # raises past the grid's limits
    if splits is not None and splits != auto_splits:
        per = min(-(-k // max(splits, 1)), cfg.block_k)
    if b_col:
        per = -(-per // GEMV_LANE_COLS) * GEMV_LANE_COLS  # block_k is whole chunks too (its rules)
    splits = -(-k // per)
    grid = (-(-n // cfg.block_n), splits, -(-m // cfg.block_m))
    args = [(a.data_ptr(), cuda.POINTER), (b.data_ptr(), cuda.POINTER), (c.data_ptr(), cuda.POINTER),
            (m, cuda.INT32), (n, cuda.INT32), (k, cuda.INT32), (lda, cuda.INT32), (ldb, cuda.INT32),
            (max(c.stride(0), 1), cuda.INT32), (per, cuda.INT32), (0, cuda.POINTER), (0, cuda.POINTER)]
    split_k = (splits * m * n, grid[0] * grid[2]) if splits > 1 else None  # partials, counts per column block
    footprint = (m * k + k * n) * a.element_size() + m * n * c.element_size()
    return Launch(fn, device_index, grid, cfg.threads, 1, args, split_k, (0, 1, 2),
                  pdl=registry.dependent_launch(spec, device_limits(device_index), footprint))


# ----------------------------------------------------------------------------- grouped launches

UPLOAD_SOURCE = cuda.KERNELS_DIR / "common" / "upload.cu"
UPLOAD_WORDS = 1000  # ZOO_UPLOAD_WORDS: the 4-byte words one upload launch carries


class _UploadChunk(ctypes.Structure):
    _fields_ = [("words", ctypes.c_uint * UPLOAD_WORDS)]


def upload(device_index: int, dst: torch.Tensor, data: bytes) -> None:
    """Copy `data` (a multiple of 4 bytes) into `dst` on torch's current stream, as the
    parameters of zoo_upload launches (kernels/common/upload.cu): a graph captured around it
    keeps the bytes in its nodes, where a host-to-device copy could not be captured."""
    if len(data) % 4 or dst.numel() * dst.element_size() < len(data):
        raise ZooError(f"upload of {len(data)} bytes into {dst.numel() * dst.element_size()}")
    fn, stream = _upload_function(device_index), current_stream(device_index)
    for first in range(0, len(data), 4 * UPLOAD_WORDS):
        part = data[first:first + 4 * UPLOAD_WORDS]
        chunk = _UploadChunk()
        ctypes.memmove(chunk.words, part, len(part))
        args = cuda.PackedArgs([(dst.data_ptr() + first, cuda.POINTER), (len(part) // 4, cuda.INT32),
                                (chunk, cuda.BY_VALUE)])
        fn.launch((1, 1, 1), 256, args, stream, device_index)


@functools.lru_cache(maxsize=None)
def _upload_function(device_index: int) -> cuda.Function:
    cubin = cuda.compile_cubin(UPLOAD_SOURCE, arch.device_arch(device_limits(device_index).cc), {},
                               kernel="zoo_upload")
    return cuda.load_function(device_index, cubin, "zoo_upload", 0, kernel="zoo_upload")


POINTER_ENTRY = struct.Struct("<3Q7i12x")           # zoo::PointerProblem, 64 bytes
TMA_ENTRY_TAIL = struct.Struct("<Q6i")               # zoo_sm90::GroupEntry after its 3 tensor maps
TMA_ENTRY_BYTES = 448


def group_units(spec: KernelSpec, cfg: TileConfig, shapes: list[tuple[int, int, int]]) -> list[int]:
    """Blocks (pointer kernels: one per tile) or units (persistent: stacks of a cluster's tiles)
    of each problem of a grouped launch."""
    if spec.persistent:
        return [registry.stacks(cfg, m, n) for m, n, _ in shapes]
    return [cfg.tiles(m, n) for m, n, _ in shapes]


def group_table(spec: KernelSpec, cfg: TileConfig, problems: list[tuple]) -> bytes:
    """The table a grouped entry point reads: one entry per (a, b, c, k, lda, ldb) with its
    first block/unit. TMA kernels get their three tensor maps inside the entry."""
    units = group_units(spec, cfg, [(c.shape[0], c.shape[1], k) for _, _, c, k, _, _ in problems])
    begin, out = 0, bytearray()
    for (a, b, c, k, lda, ldb), count in zip(problems, units):
        m, n = c.shape
        ldc = max(c.stride(0), 1)
        if spec.tma_boxes:
            *maps, c_tma = tma_maps(spec, cfg, a, b, c, k, lda, ldb)
            entry = b"".join(cuda.tensor_map_bytes(cuda.tensor_map(*t)) if t else bytes(cuda.TENSOR_MAP_BYTES)
                             for t in maps) + \
                TMA_ENTRY_TAIL.pack(c.data_ptr(), m, n, k, ldc, int(c_tma), begin)
            out += entry + bytes(TMA_ENTRY_BYTES - len(entry))
        else:
            out += POINTER_ENTRY.pack(a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k, lda, ldb, ldc, begin)
        begin += count
    return bytes(out)


def plan_grouped(spec: KernelSpec, cfg: TileConfig, device_index: int, table: torch.Tensor,
                 count: int, units: int, dtype: torch.dtype, out_dtype: torch.dtype) -> Launch:
    """One launch for every problem of a table (group_table, on the device): the pointer
    kernels get a block per tile; persistent ones as many blocks as fit, walking all units.
    The Launch holds the table's address only: keep the table alive while it may fire."""
    with torch.cuda.device(device_index), cuda.device_context(device_index):  # as plan_launch
        fn = compiled(spec, cfg, _dtype_name(dtype), _dtype_name(out_dtype), device_index, grouped=True)
        args = [(table.data_ptr(), cuda.POINTER), (count, cuda.INT32)]
        if spec.persistent:
            args.append((units, cuda.INT32))
        grid = spec.grid_for_units(cfg, units, _resident_clusters(spec, cfg, fn, device_index))
        if grid[0] > INT32_MAX:
            raise ZooError(f"a grouped launch of {units} blocks exceeds the grid limit {INT32_MAX}")
    return Launch(fn, device_index, grid, cfg.threads, cfg.cluster_size, args)
