"""`zoo.conv2d`: a convolution as an implicit GEMM on the zoo's kernels.

An NHWC image x [images, H, W, C] convolved with weights [K, C, R, S] is the GEMM
    y[M = images * P * Q, K] = A[M, R * S * C] @ B[R * S * C, K]
whose A (the im2col of x: row m is output pixel (n, p, q), column (r, s, c) the input pixel
that filter tap (r, s) sees from it, channel c) is never stored: each kernel computes its A
tiles' addresses from the geometry (sm_80, sm_75) or has TMA read them in im2col mode (sm_90a).
B is the weights: for sm_90a, as they lie channels-last (K, R, S, C), read K-major through a
4-D TMA map; for the others, a (R * S * c_pad, K) row-major matrix, each tap's channels padded
to the kernel's K-tile (c_pad), so one K-tile lies in one filter tap; except where the cp.async
kernel packs taps (small C: the stem's 3 channels as 4, BK / 4 taps a K-tile). y comes out NHWC:
the returned (images, K, P, Q) tensor is channels-last. Where no kernel packs taps and padding
each to a K-tile would waste the MMAs, A is stored instead, with one flat K (FlatConvPlan).
"""

from __future__ import annotations

import ctypes
import functools
from collections import OrderedDict
from dataclasses import dataclass, replace

import torch
from torch.utils.weak import WeakTensorKeyDictionary

from . import arch, cuda, gemm, registry, tune
from .configs import TileConfig
from .cuda import ZooError
from .registry import KernelSpec, Problem

CONV_DTYPES = (torch.float16, torch.bfloat16)
CHANNEL_ALIGN = 8  # channels per 16-byte chunk: a chunk never straddles two pixels


class ConvGeometry(ctypes.Structure):
    """zoo::ConvGeometry (kernels/common/zoo_common.cuh), passed to the kernels by value."""
    _fields_ = [(name, ctypes.c_int) for name in
                ("H", "W", "C", "P", "Q", "S", "c_pad", "stride_h", "stride_w",
                 "pad_h", "pad_w", "dil_h", "dil_w", "taps")]


@dataclass(frozen=True)
class Conv:
    """A convolution's shape, and the GEMM it becomes."""
    images: int
    height: int
    width: int
    channels: int        # C of the input
    out_channels: int    # K
    r: int
    s: int
    stride: tuple[int, int]
    padding: tuple[int, int]
    dilation: tuple[int, int]

    @property
    def p(self) -> int:
        return (self.height + 2 * self.padding[0] - self.dilation[0] * (self.r - 1) - 1) // self.stride[0] + 1

    @property
    def q(self) -> int:
        return (self.width + 2 * self.padding[1] - self.dilation[1] * (self.s - 1) - 1) // self.stride[1] + 1

    @property
    def gemm_m(self) -> int:
        return self.images * self.p * self.q

    @property
    def gemm_k(self) -> int:
        return self.r * self.s * self.channels

    @property
    def flops(self) -> int:
        return 2 * self.gemm_m * self.out_channels * self.gemm_k

    def c_pad(self, block_k: int, packs: bool = False) -> int:
        """Each tap's channels in B (zero rows past C): rounded up to the kernel's K-tile; for a
        kernel that packs taps (packs: KernelSpec.packs_taps), to a power of two from 4 where
        that is below the K-tile (block_k / c_pad taps a K-tile)."""
        if packs:
            small = max(4, 1 << (self.channels - 1).bit_length())
            if small < block_k:
                return small
        return -(-_aligned_channels(self.channels) // block_k) * block_k

    def padded_k(self, block_k: int, packs: bool = False) -> int:
        """The implicit GEMM's K: R * S taps of c_pad channels each, rounded up to a K-tile."""
        return -(-self.r * self.s * self.c_pad(block_k, packs) // block_k) * block_k

    def x_channels(self, block_k: int, packs: bool = False) -> int:
        """x's channels as the kernel reads it (NHWC, zero-padded): 4 where taps of 4 channels
        are packed (8-byte copies), else C rounded up to 8 (16-byte chunks)."""
        return 4 if self.c_pad(block_k, packs) == 4 else _aligned_channels(self.channels)

    def geometry(self, block_k: int, packs: bool = False) -> ConvGeometry:
        return ConvGeometry(self.height, self.width, self.x_channels(block_k, packs), self.p, self.q, self.s,
                            self.c_pad(block_k, packs), *self.stride, *self.padding, *self.dilation,
                            self.r * self.s)

    def im2col_corners(self) -> tuple[tuple[int, int], tuple[int, int]]:
        """The (h, w) corners of the bounding box a TMA im2col map walks at filter offset 0:
        from -padding to the last output pixel's first input pixel (as offsets from the
        image's first pixel and from one past its last), so each image yields P x Q pixels."""
        lower = (-self.padding[0], -self.padding[1])
        upper = ((self.p - 1) * self.stride[0] + 1 - self.height - self.padding[0],
                 (self.q - 1) * self.stride[1] + 1 - self.width - self.padding[1])
        return lower, upper

    def describe(self) -> str:
        return (f"x [{self.images}, {self.channels}, {self.height}, {self.width}] * w [{self.out_channels}, "
                f"{self.channels}, {self.r}, {self.s}], stride {self.stride}, padding {self.padding}, "
                f"dilation {self.dilation} -> y [{self.images}, {self.out_channels}, {self.p}, {self.q}]")


def _aligned_channels(c: int) -> int:
    return -(-c // CHANNEL_ALIGN) * CHANNEL_ALIGN


# Small channel counts: the TMA implicit GEMM pads each filter tap's C channels to a whole
# K-tile, so where that multiplies the MMA work of R*S*C by FLAT_K_WASTE or more (the ResNet
# stem's 3 channels: 49 taps x 64 = 3136 columns of K for 147 of data, 21x), conv2d runs a
# kernel that packs taps (the cp.async kernel: 49 taps x 4 = 224 columns), or where none runs,
# gathers the (r, s, c) product into one im2col matrix, its K padded once to whole 16-byte
# chunks (152 for the stem), and runs it as one zoo.mm (the gather writes and reads that
# matrix once). FLAT_K_WASTE is a first choice, not measured.
# Packed taps (64x64 tiles) against the flat K on an H200, 2026-11-28, CUDA-graph replays with
# x's 4-channel copy: the stem at batch 32 111 us against 130 (cuDNN 86), C = 1 3x3 (K 64 for
# 9 of data) 37 against 46, C = 13 7x7 stride 2 30 against 40 (cuDNN 38);
# results/h200-2026-11-28/issue41/packed-taps.
# A call holds at most FLAT_K_CHUNK_BYTES of the matrix at a time (whole images: the stem's
# 122 MB at batch 32 in one go, batch 256 in eight).
FLAT_K_WASTE = 4
FLAT_K_CHUNK_BYTES = 128 << 20


def flat_k(shape: Conv) -> int:
    """K of the flat im2col matrix: R*S*C rounded up to whole 16-byte chunks."""
    return _aligned_channels(shape.gemm_k)


def gathers_flat(shape: Conv, block_k: int) -> bool:
    """Whether one filter tap a K-tile of `block_k` would waste the MMAs (FLAT_K_WASTE): then
    conv2d packs taps, or where no kernel does, gathers a flat K."""
    return shape.padded_k(block_k) >= FLAT_K_WASTE * flat_k(shape)


def flat_columns(x: torch.Tensor, shape: Conv) -> torch.Tensor:
    """x's im2col matrix, (N*P*Q, flat_k) row-major: row (n, p, q), column (r * S + s) * C + c
    holding x[n, c, p * stride_h - pad_h + r * dil_h, q * stride_w - pad_w + s * dil_w] (zero in
    the padding), zero past R*S*C. A zero-padded channels-last copy of x, then one gather."""
    n, c, h, w = x.shape
    (ph, pw), (sh, sw), (dh, dw) = shape.padding, shape.stride, shape.dilation
    padded = torch.zeros((n, h + 2 * ph, w + 2 * pw, c), dtype=x.dtype, device=x.device)
    padded[:, ph:ph + h, pw:pw + w].copy_(x.permute(0, 2, 3, 1))
    s_n, s_h, s_w, s_c = padded.stride()
    taps = padded.as_strided((n, shape.p, shape.q, shape.r, shape.s, c),
                             (s_n, s_h * sh, s_w * sw, s_h * dh, s_w * dw, s_c))
    k = flat_k(shape)
    cols = torch.empty((shape.gemm_m, k), dtype=x.dtype, device=x.device)
    if k > shape.gemm_k:
        cols[:, shape.gemm_k:].zero_()
    cols[:, :shape.gemm_k].view(n, shape.p, shape.q, shape.r, shape.s, c).copy_(taps)
    return cols


IM2COL_SOURCE = cuda.KERNELS_DIR / "common" / "im2col.cu"
IM2COL_MAX_K = 2048  # ZOO_IM2COL_MAX_K: columns (R*S*C) the kernel tabulates in shared memory
IM2COL_THREADS = 256
# The input patch one output row reads, in dynamic shared memory: at most this much (with the
# 8 KB column table, under the 48 KB every arch gives a block without opting in). The stem's
# is 9.6 KB.
IM2COL_PATCH_BYTES = 32 << 10


class Im2col(ctypes.Structure):
    """ZooIm2col (kernels/common/im2col.cu), passed by value: the geometry, x's strides and the
    input patch of one output row."""
    _fields_ = [(name, ctypes.c_longlong) for name in ("rows", "sn", "sh", "sw", "sc")] + \
        [(name, ctypes.c_int) for name in ("H", "W", "C", "P", "Q", "S", "k", "k_chunks", "stride_h",
                                           "stride_w", "pad_h", "pad_w", "dil_h", "dil_w", "patch_rows",
                                           "patch_cols")]


@functools.lru_cache(maxsize=None)
def _im2col_function(device_index: int, patch_bytes: int) -> cuda.Function:
    cubin = cuda.compile_cubin(IM2COL_SOURCE, arch.device_arch(gemm.device_limits(device_index).cc), {},
                               kernel="zoo_im2col")
    return cuda.load_function(device_index, cubin, "zoo_im2col", patch_bytes, kernel="zoo_im2col")


def patch_shape(shape: Conv) -> tuple[int, int]:
    """(rows, columns) of the input patch one output row of the im2col matrix reads."""
    (dh, dw), (_, sw) = shape.dilation, shape.stride
    return (shape.r - 1) * dh + 1, (shape.q - 1) * sw + (shape.s - 1) * dw + 1


def gather_columns(x: torch.Tensor, shape: Conv) -> torch.Tensor:
    """flat_columns's matrix, gathered on the GPU by kernels/common/im2col.cu in one launch on
    torch's current stream, x read in place through its strides (NCHW or channels-last);
    flat_columns itself for a CPU x, more than IM2COL_MAX_K columns, an input patch over
    IM2COL_PATCH_BYTES, more images than a grid's y holds, or an image the kernel's 32-bit offsets
    cannot index."""
    k = flat_k(shape)
    sn, sc, sh, sw = x.stride()
    image_extent = (shape.height - 1) * sh + (shape.width - 1) * sw + (shape.channels - 1) * sc
    rows, cols_in = patch_shape(shape)
    patch_bytes = -(-rows * cols_in * shape.channels * x.element_size() // 4096) * 4096  # 4 KB steps: few loads of the function
    if not x.is_cuda or shape.gemm_k > IM2COL_MAX_K or patch_bytes > IM2COL_PATCH_BYTES \
            or shape.images > cuda.GRID_YZ_MAX or image_extent >= 2 ** 31 or shape.q * (k // CHANNEL_ALIGN) >= 2 ** 31:
        return flat_columns(x, shape)
    cols = torch.empty((shape.gemm_m, k), dtype=x.dtype, device=x.device)
    g = Im2col(shape.gemm_m, sn, sh, sw, sc, shape.height, shape.width, shape.channels, shape.p, shape.q,
               shape.s, shape.gemm_k, k // CHANNEL_ALIGN, *shape.stride, *shape.padding, *shape.dilation,
               rows, cols_in)
    args = cuda.PackedArgs([(x.data_ptr(), cuda.POINTER), (cols.data_ptr(), cuda.POINTER), (g, cuda.BY_VALUE)])
    device_index = x.device.index if x.device.index is not None else torch.cuda.current_device()
    _im2col_function(device_index, patch_bytes).launch((shape.p, shape.images, 1), IM2COL_THREADS, args,
                                                       gemm.current_stream(device_index), device_index)
    return cols


def flat_weights(w: torch.Tensor) -> torch.Tensor:
    """w (K, C, R, S) as the flat GEMM's B: weight_matrix with no channel padding, its rows
    padded once at the end to flat_k (zero past R*S*C)."""
    _, c, r, s = w.shape
    return weight_matrix(w, c, rows=_aligned_channels(r * s * c))


def _pair(name: str, v, minimum: int) -> tuple[int, int]:
    # SymInts too: torch.compile traces the op's int[2] arguments as symbols where they change
    pair = (v, v) if isinstance(v, (int, torch.SymInt)) else tuple(v) if isinstance(v, (tuple, list)) else None
    if pair is None or len(pair) != 2 or not all(isinstance(i, (int, torch.SymInt)) and not isinstance(i, bool)
                                                 for i in pair):
        raise ZooError(f"{name} must be an int or a pair of ints, got {v!r}")
    if min(pair) < minimum:
        raise ZooError(f"{name} must be >= {minimum}, got {v!r}")
    return pair


def check_conv(x, w, bias, stride, padding, dilation, groups, out_dtype) -> tuple[Conv, torch.dtype]:
    """Every check of a conv2d call, raising ZooError naming what is wrong; (shape, out dtype)."""
    for name, t in (("x", x), ("w", w)):
        if not isinstance(t, torch.Tensor):
            raise ZooError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != 4:
            raise ZooError(f"{name} must be 4-D ({'N, C, H, W' if name == 'x' else 'K, C, R, S'}), "
                           f"got {t.dim()}-D with shape {tuple(t.shape)}")
    if groups != 1:
        raise ZooError(f"groups={groups} is not supported: zoo.conv2d computes dense convolutions (groups=1)")
    if x.dtype not in CONV_DTYPES or w.dtype != x.dtype:
        raise ZooError(f"x and w must both be torch.float16 or both torch.bfloat16, got {x.dtype} and {w.dtype}")
    if x.shape[1] != w.shape[1]:
        raise ZooError(f"x has {x.shape[1]} channels but w expects {w.shape[1]} (w is K, C, R, S = {tuple(w.shape)})")
    if min(x.shape) == 0 or min(w.shape) == 0:
        raise ZooError(f"empty tensors: x {tuple(x.shape)}, w {tuple(w.shape)}")
    shape = Conv(x.shape[0], x.shape[2], x.shape[3], x.shape[1], w.shape[0], w.shape[2], w.shape[3],
                 _pair("stride", stride, 1), _pair("padding", padding, 0), _pair("dilation", dilation, 1))
    if shape.p <= 0 or shape.q <= 0:
        raise ZooError(f"the output would be {shape.p} x {shape.q}: {shape.describe()}")
    if shape.height * shape.width > gemm.INT32_MAX:  # the kernels index an image's pixels in int32
        raise ZooError(f"images of {shape.height} x {shape.width} pixels exceed {gemm.INT32_MAX} per image")
    if max(shape.gemm_m, shape.padded_k(64), shape.out_channels) > gemm.MAX_DIM:
        raise ZooError(f"the GEMM of {shape.describe()} exceeds {gemm.MAX_DIM} in a dimension")
    out_dtype = x.dtype if out_dtype is None else out_dtype
    if out_dtype not in (x.dtype, torch.float32):
        raise ZooError(f"out_dtype must be {x.dtype} (the input dtype) or torch.float32, got {out_dtype}")
    if bias is not None:
        if not isinstance(bias, torch.Tensor) or tuple(bias.shape) != (shape.out_channels,) or bias.device != x.device:
            raise ZooError(f"bias must be a ({shape.out_channels},) tensor on {x.device}, got "
                           f"{tuple(bias.shape) if isinstance(bias, torch.Tensor) else type(bias).__name__}")
    if x.device != w.device or x.device.type != "cuda":
        raise ZooError(f"x and w must be CUDA tensors on one device, got {x.device} and {w.device}")
    return shape, out_dtype


def conv2d(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1, *, out_dtype: torch.dtype | None = None,
           kernel: str | None = None, config: str | None = None, keep_layout: bool = False) -> torch.Tensor:
    """torch.nn.functional.conv2d on the zoo's kernels, as an implicit GEMM (no im2col buffer).
    Small channel counts (the stem's C = 3), where padding each tap's channels to a K-tile would
    waste the MMAs (gathers_flat), run on a kernel that packs taps into K-tiles, or where none
    runs, gather x's im2col matrix first and run one zoo.mm on it. A 1x1, stride-1, unpadded
    convolution of few output pixels is one zoo.mm (GEMM_CONV_MAX_M). `zoo tune --conv`'s
    winners take precedence.

    x: (N, C, H, W) and w: (K, C, R, S), both torch.float16 or both torch.bfloat16 on one CUDA
    device. x is read channels-last (NHWC): an NCHW x is converted first (a copy), as is one
    whose C is not a multiple of 8 (its channels padded with zeros; to 4 for packed taps). Any
    stride, padding and dilation (ints or (h, w) pairs); groups must be 1. FP32 accumulation; the result is
    (N, K, P, Q) in x's dtype or out_dtype=torch.float32, channels-last. bias (K,) is added in
    fp32 by the sm_90a kernel's epilogue, after the GEMM by the others. No autograd: inputs that
    require grad raise. A weight the kernel cannot read in place (NCHW, C not a multiple of 8,
    the non-TMA kernels' (R*S*c_pad, K) matrix) is copied into the kernel's layout per call;
    with keep_layout=True the copy is made once and kept with the weight until it changes in
    place (its version) or is freed. Not by default: a write through `w.data` bumps no version,
    and the kept copy would go stale.
    kernel / config name a conv kernel (zoo list) and one of its configs.
    """
    try:  # a layout met before skips the checks, as zoo.mm's plans do
        x_ptr, w_ptr = x.data_ptr(), w.data_ptr()
        key = (x.shape, x.stride(), w.shape, w.stride(), x.dtype, w.dtype, x.get_device(), w.get_device(),
               x_ptr % 16, w_ptr % 16, _arguments(stride, padding, dilation, groups), out_dtype, kernel, config,
               None if bias is None else (bias.shape, bias.stride(), bias.dtype, bias.get_device()))
        plan, direct = _calls.get(key, _UNPLANNED)
    except (AttributeError, TypeError):  # not tensors: the checks say what is wrong
        key, plan, direct = None, None, None
    if plan is None:
        shape, out_dtype = check_conv(x, w, bias, stride, padding, dilation, groups, out_dtype)
        plan = plan_for(x, shape, out_dtype, kernel, config)
        # A channels-last x and w (C a multiple of 8, 16-byte aligned) that the kernel reads as
        # they are: the plan's `direct` runs them by address, making no view.
        direct = plan.direct(x, w, bias) if _packed(x) and _packed(w) else None
        if key is not None:
            gemm.remember(_calls, key, (plan, direct), _PLANS_KEPT)
    check_no_grad(x, w, bias)
    if direct is not None:
        return direct.run(x, w, bias, x_ptr, w_ptr)
    return plan.run(x, laid_out(plan, w) if keep_layout else plan.weights(w), bias)


_UNPLANNED = (None, None)


def _arguments(stride, padding, dilation, groups) -> str:
    """The arguments as the plans' key has them: by repr, so that True or 1.0 (refused by the
    checks) never meet a plan made for 1. The repr of immutable arguments is kept by their
    identity (a call passing the same tuples, a layer's, skips the repr), holding them so that
    no other object takes their id."""
    ids = (id(stride), id(padding), id(dilation), id(groups))
    kept = _argument_reprs.get(ids)
    if kept is not None:
        return kept[1]
    held = (stride, padding, dilation, groups)
    text = repr(held)
    if all(type(v) is int or (type(v) is tuple and all(type(e) is int for e in v)) for v in held):
        gemm.remember(_argument_reprs, ids, (held, text), _ARGUMENTS_KEPT)
    return text


_ARGUMENTS_KEPT = 1024  # a layer's own tuples each: more than a large CNN's convolutions


_argument_reprs: OrderedDict = OrderedDict()


# A weight's copy in the layout a kernel reads, kept per weight tensor (weakly: it goes with the
# weight) with the weight's version, address and the layout: (key, copy).
_layouts = WeakTensorKeyDictionary()


def laid_out(plan: "ConvPlan | FlatConvPlan | GemmConvPlan", w: torch.Tensor) -> torch.Tensor:
    """plan.weights(w), made once per weight and layout: a copy is kept until w changes in place
    (w._version) or is freed; a view of w (a channels-last weight read in place) is not kept.
    While a CUDA graph captures, the layout is made in the graph, neither kept nor reused: a
    replay then reads w as it is (a change to w bumps no version a replay could see)."""
    if w.is_inference() or (w.is_cuda and torch.cuda.is_current_stream_capturing()):
        return plan.weights(w)  # inference tensors keep no version counter
    # The stream too: a copy is only ever read on the stream that made it, so when it is freed
    # (the weight dropped, or replaced here) no other stream may still be reading it.
    key = (w._version, w.data_ptr(), w.dtype, w.device, w.shape, w.stride(), plan.layout,
           gemm.current_stream(w.device.index) if w.is_cuda else None)
    kept = _layouts.get(w)
    if kept is not None and kept[0] == key:
        return kept[1]
    b = plan.weights(w)
    if b.untyped_storage().data_ptr() != w.untyped_storage().data_ptr():
        _layouts[w] = (key, b)
    return b


def check_no_grad(x, w, bias) -> None:
    """conv2d has no backward: refuse a call autograd would record."""
    if torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad for t in (x, w, bias)):
        raise ZooError("zoo.conv2d has no backward: call it under torch.no_grad() or torch.inference_mode() "
                       "(or use torch.nn.functional.conv2d where gradients are needed)")


# Plans (launch arguments and tensor maps, no tensors) kept per layout: more than a large CNN's
# distinct convolutions. NOTE: at 64, DenseNet-121's forward (66 distinct layers) found none of
# its plans, each evicted before its layer came round again, and re-planned every call:
# eager 0.36-0.43x of torch's against 0.94-0.95x from a CUDA graph (2026-11-28, H200).
_PLANS_KEPT = 1024
_plans: OrderedDict = OrderedDict()
_calls: OrderedDict = OrderedDict()  # conv2d's plans by its arguments' layout (no tensor kept)


def forget_plans() -> None:
    """Drop every plan (zoo tune --conv changed the choices they were made with)."""
    _plans.clear()
    _calls.clear()


def plan_for(x: torch.Tensor, shape: Conv, out_dtype: torch.dtype, kernel: str | None,
             config: str | None) -> "ConvPlan | FlatConvPlan | GemmConvPlan":
    """The plan of a call's layout: worked out on its first call, then looked up."""
    key = (x.shape, x.stride(), x.dtype, x.device, x.data_ptr() % 16, shape, out_dtype, kernel, config)
    plan = _plans.get(key)
    if plan is None:
        plan = plan_conv(x, shape, out_dtype, kernel, config)
        gemm.remember(_plans, key, plan, _PLANS_KEPT)
    return plan


@dataclass
class ConvPlan:
    """What conv2d works out once per layout: the kernel, config, the launch with its
    arguments packed (addresses patched per call) and how to lay out x and w for it."""
    shape: Conv
    spec: KernelSpec
    cfg: TileConfig
    launch: gemm.Launch
    out_dtype: torch.dtype
    im2col: tuple | None   # the im2col map's arguments after the address (TMA kernels)
    # The x and weight maps' address fields (PackedArgs.address_field), patched per call as
    # zoo.mm's maps are; None: both maps encoded per call (no TMA, or a driver that moved them).
    map_fields: tuple | None = None

    @property
    def layout(self) -> tuple:
        """What weights() makes: the TMA kernel's packed KRSC, or the (K rows, K) matrix."""
        return ("krsc",) if self.im2col is not None else ("matrix", self.c_pad, self.padded_k)

    def direct(self, x, w, bias) -> "ConvPlan | None":
        """For a packed x and w: the TMA kernel reads them in place (this plan, by address)."""
        return self if self.im2col is not None else None

    @functools.cached_property
    def c_pad(self) -> int:
        return self.shape.c_pad(self.cfg.block_k, self.spec.packs_taps)

    @functools.cached_property
    def padded_k(self) -> int:
        return self.shape.padded_k(self.cfg.block_k, self.spec.packs_taps)

    @functools.cached_property
    def x_channels(self) -> int:
        return self.shape.x_channels(self.cfg.block_k, self.spec.packs_taps)

    def weights(self, w: torch.Tensor) -> torch.Tensor:
        """w as this plan's kernel reads it: the TMA kernel, K x R x S x C8 (channels-last);
        the others, weight_matrix's (padded K, K) matrix of taps of c_pad channels."""
        if self.im2col is not None:
            return krsc(w)
        return weight_matrix(w, self.c_pad, rows=self.padded_k)

    def run(self, x: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None,
            x_ptr: int | None = None, b_ptr: int | None = None) -> torch.Tensor:
        """y (+ bias) for x and the weights as weights() lays them out; x_ptr and b_ptr: the
        addresses the kernel reads, where the caller knows x and w are read in place (b is w)."""
        if x_ptr is None:  # x_nhwc is held until the launch: a copy freed sooner could become y
            x_nhwc = nhwc(x, self.x_channels)
            x_ptr, b_ptr = x_nhwc.data_ptr(), b.data_ptr()
        # The (N, K, P, Q) result with channels-last strides: the GEMM's (N*P*Q, K) row-major
        # output, made in its final shape (a view of it costs as much as the allocation).
        y = x.new_empty_strided(self.out_size, self.out_strides) if self.out_dtype == x.dtype else \
            x.new_empty_strided(self.out_size, self.out_strides, dtype=self.out_dtype)
        y_ptr = y.data_ptr()
        launch, args = self.launch, self.launch.args
        if bias is not None and (bias.dtype != y.dtype or bias.stride(0) != 1):
            bias = bias.to(y.dtype).contiguous()  # a packed vector of y's dtype
        with launch.lock:
            if self.im2col is not None:
                if self.map_fields is not None:  # x and b are 16-byte aligned (nhwc, krsc)
                    self.map_fields[0].value = x_ptr
                    self.map_fields[1].value = b_ptr
                else:
                    args.set_map(0, cuda.im2col_tensor_map(x_ptr, *self.im2col))
                    sh = self.shape  # b: K x R x S x C8 (krsc)
                    args.set_map(1, cuda.weights_tensor_map(b_ptr, self.im2col[0], sh.out_channels, sh.r, sh.s,
                                                            _aligned_channels(sh.channels),
                                                            self.cfg.block_n, self.cfg.block_k))
                if launch.c_map:
                    args.set_map_address(2, y_ptr)
                args.set(4, y_ptr)
                if launch.bias_slot is not None:
                    args.set(launch.bias_slot, 0 if bias is None else bias.data_ptr())
            else:
                args.set(0, x_ptr)
                args.set(1, b_ptr)
                args.set(2, y_ptr)
            launch._fire()
        if bias is not None and launch.bias_slot is None:
            y.permute(0, 2, 3, 1).add_(bias)  # along K, the channels-last rows
        return y

    @functools.cached_property
    def out_size(self) -> tuple[int, int, int, int]:
        sh = self.shape
        return sh.images, sh.out_channels, sh.p, sh.q

    @functools.cached_property
    def out_strides(self) -> tuple[int, int, int, int]:
        sh = self.shape
        return sh.p * sh.q * sh.out_channels, 1, sh.q * sh.out_channels, sh.out_channels


@dataclass
class RoutePlan:
    """A route of conv2d's through zoo.mm (ROUTES): spec and cfg are zoo.mm's choice for the
    GEMM, as reported; the bias is added as zoo.mm adds it."""
    shape: Conv
    spec: KernelSpec
    cfg: TileConfig
    out_dtype: torch.dtype

    def direct(self, x, w, bias) -> "GemmCall | None":
        """For a packed x and w: a call by address, where the route has one."""
        return None


class FlatConvPlan(RoutePlan):
    """conv2d's plan where it gathers a flat K (gathers_flat): per call, x's im2col matrix
    (gather_columns), then one zoo.mm against the weights' flat matrix (flat_weights); zoo.mm's
    choice is the whole batch's (a chunk of images may take another)."""

    @property
    def layout(self) -> tuple:
        return ("flat", flat_k(self.shape))

    def weights(self, w: torch.Tensor) -> torch.Tensor:
        return flat_weights(w)

    def run(self, x: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        """y (+ bias), FLAT_K_CHUNK_BYTES of im2col matrix at a time (whole images)."""
        sh = self.shape
        y = torch.empty((sh.gemm_m, sh.out_channels), dtype=self.out_dtype, device=x.device)
        per_image = sh.p * sh.q
        step = max(1, FLAT_K_CHUNK_BYTES // (per_image * flat_k(sh) * x.element_size()))
        for first in range(0, sh.images, step):
            part = replace(sh, images=min(step, sh.images - first))
            rows = slice(first * per_image, (first + part.images) * per_image)
            gemm.mm(gather_columns(x[first:first + part.images], part), b, out=y[rows], bias=bias)
        return nchw_view(y, sh)


class GemmConvPlan(RoutePlan):
    """conv2d's plan where a 1x1 convolution runs as one zoo.mm (runs_as_gemm): x as the
    (N*H*W, C) matrix (a view of a channels-last x, else reshape's copy) times w's (K, C) rows
    transposed (a view zoo.mm reads in place)."""

    @property
    def layout(self) -> tuple:
        return ("gemm",)

    def weights(self, w: torch.Tensor) -> torch.Tensor:
        return w.reshape(self.shape.out_channels, self.shape.channels).t()

    def run(self, x: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        sh = self.shape
        a = x.permute(0, 2, 3, 1).reshape(sh.gemm_m, sh.channels)
        y = gemm.mm(a, b, out_dtype=None if self.out_dtype == x.dtype else self.out_dtype, bias=bias)
        return nchw_view(y, sh)

    def direct(self, x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None) -> "GemmCall | None":
        """For a packed x and w: zoo.mm's plan for x's (N*H*W, C) matrix
        times w's (K, C) rows transposed, making its output in the final (N, K, P, Q)
        channels-last shape; None where zoo.mm would read either from a copy."""
        sh = self.shape
        call = gemm.plan_call(x.permute(0, 2, 3, 1).reshape(sh.gemm_m, sh.channels), self.weights(w),
                              self.out_dtype, None, None, None, None, bias)
        if call.copy_a or call.copy_b:
            return None
        size = (sh.images, sh.out_channels, sh.p, sh.q)
        strides = (sh.p * sh.q * sh.out_channels, 1, sh.q * sh.out_channels, sh.out_channels)
        return GemmCall(replace(call, shape=size, strides=strides),
                        call.launch is not None and call.launch.bias_slot is not None)


@dataclass
class GemmCall:
    """The 1x1 route's call on a packed x and w, by address (GemmConvPlan.direct); a bias the
    kernel's epilogue does not add goes along K, the channels-last rows."""
    call: gemm.CallPlan
    epilogue: bool  # the kernel adds the bias

    def run(self, x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None, x_ptr: int, w_ptr: int):
        if bias is None or self.epilogue:
            return self.call.run(x, w, None, x_ptr, w_ptr, None, bias)
        y = self.call.run(x, w, None, x_ptr, w_ptr)
        y.permute(0, 2, 3, 1).add_(bias)
        return y


def nchw_view(y: torch.Tensor, shape: Conv) -> torch.Tensor:
    """The GEMM's (N*P*Q, K) output as the (N, K, P, Q) result, a channels-last view."""
    return y.view(shape.images, shape.p, shape.q, shape.out_channels).permute(0, 3, 1, 2)


def nhwc(x: torch.Tensor, channels: int | None = None) -> torch.Tensor:
    """x as a packed NHWC tensor (N, H, W, channels: C8 unless given) the kernels read: a view
    of a channels-last x with C8 channels and a 16-byte-aligned base; otherwise a copy
    (channels zero-padded)."""
    n, c, h, w = x.shape
    channels = channels or _aligned_channels(c)
    if channels == c and _packed(x):
        return x.permute(0, 2, 3, 1)
    # A memset and one copy: zeroing only the padding channels (a strided write) took as long
    # as the copy (the stem's x: 21.8 us on an H200 for the two).
    out = torch.zeros((n, h, w, channels), dtype=x.dtype, device=x.device) if channels > c else \
        torch.empty((n, h, w, channels), dtype=x.dtype, device=x.device)
    out[..., :c].copy_(x.permute(0, 2, 3, 1))
    return out


def _packed(t: torch.Tensor) -> bool:
    """Whether nhwc / krsc read t (an x or a w) in place: channels-last, C a multiple of 8, a
    16-byte-aligned base."""
    return t.shape[1] % CHANNEL_ALIGN == 0 and t.is_contiguous(memory_format=torch.channels_last) \
        and t.data_ptr() % 16 == 0


def krsc(w: torch.Tensor) -> torch.Tensor:
    """w (K, C, R, S) as packed (K, R, S, C8) weights, channels innermost: a view of a
    channels-last w whose C is a multiple of 8, else one copy (channels zero-padded)."""
    if _packed(w):
        return w.permute(0, 2, 3, 1)
    k, c, r, s = w.shape
    c8 = _aligned_channels(c)
    out = torch.empty((k, r, s, c8), dtype=w.dtype, device=w.device)
    if c8 > c:
        out[..., c:].zero_()
    out[..., :c].copy_(w.permute(0, 2, 3, 1))
    return out


def weight_matrix(w: torch.Tensor, c_pad: int, rows: int | None = None) -> torch.Tensor:
    """w (K, C, R, S) as the GEMM's B: a (R * S * c_pad, K) row-major matrix, row
    (r * S + s) * c_pad + c holding w[:, c, r, s], zero for c >= C; its rows are
    _aligned_channels(K) long (16-byte multiples, as cp.async and TMA read them). rows: that
    many rows instead, the ones past R * S * c_pad zero (the flat K's padding)."""
    k, c, r, s = w.shape
    k8 = _aligned_channels(k)
    rows = rows or r * s * c_pad
    if c_pad == c and k8 == k and rows == r * s * c:
        # One copy kernel; reshape alone may return a transposed view (a 1x1 filter's is one).
        b = w.permute(2, 3, 1, 0).reshape(r * s * c, k).contiguous()
        return b if b.data_ptr() % 16 == 0 else b.clone(memory_format=torch.contiguous_format)
    b = torch.zeros((rows, k8), dtype=w.dtype, device=w.device)
    b[:r * s * c_pad].view(r, s, c_pad, k8)[:, :, :c, :k].copy_(w.permute(2, 3, 1, 0))
    return b[:, :k]


def plan_conv(x: torch.Tensor, shape: Conv, out_dtype: torch.dtype, kernel: str | None,
              config: str | None, splits: int | None = None) -> "ConvPlan | FlatConvPlan | GemmConvPlan":
    """The kernel and config for the convolution's GEMM (the one named; else what `zoo tune
    --conv` measured fastest for this shape on this GPU, where it did; else `automatic`'s),
    compiled on first use, and its launch; or the flat-K or zoo.mm route where the tuning or
    `automatic` chose it. splits: slices of K for a split-K kernel (None: the tuned count,
    else the registry's rule)."""
    device_index = x.device.index if x.device.index is not None else torch.cuda.current_device()
    limits = gemm.device_limits(device_index)
    dtype, out_name = gemm._dtype_name(x.dtype), gemm._dtype_name(out_dtype)
    if kernel is None and config is None:
        tuned = tune.lookup_key(device_index, tune_key(shape, dtype, out_name))
        if tuned is not None and tuned.kernel in ROUTES:
            return route_plan(tuned.kernel, x, shape, out_dtype)
        if tuned is not None:
            try:
                return plan_conv(x, shape, out_dtype, tuned.kernel, tuned.config, tuned.splits)
            except ZooError as exc:  # a winner this zoo no longer has: the registry decides
                cuda._warn_once(f"tuned conv choice {tuned} not used: {exc}")
        chosen = automatic(limits, shape, dtype, out_name)
        if isinstance(chosen, str):
            return route_plan(chosen, x, shape, out_dtype)
        spec, cfg = chosen
    else:
        problem = Problem(shape.gemm_m, shape.out_channels, shape.gemm_k, dtype, out_name)
        spec, cfg = registry.select(limits, problem, kernel_name=kernel, config_name=config, op="conv")
        if spec.tma_boxes and not _im2col_fits(shape):
            if kernel:
                raise ZooError(f"{spec.name} reads x through a TMA im2col map, which cannot express {shape.describe()} "
                               f"(corners in {cuda.IM2COL_CORNER}, strides <= {cuda.IM2COL_MAX_STRIDE})")
            spec, cfg = _without_im2col_map(limits, problem, shape)
    launch, im2col = plan_launch(spec, cfg, device_index, x, shape, out_dtype, splits)
    offset = cuda.map_address_offset("im2col") if im2col is not None else None
    if offset is not None and offset != cuda.map_address_offset("weights"):
        offset = None
    fields = None if offset is None else (launch.args.address_field(0, offset), launch.args.address_field(1, offset))
    return ConvPlan(shape, spec, cfg, launch, out_dtype, im2col, fields)


def automatic(limits, shape: Conv, dtype: str, out_dtype: str) -> tuple[KernelSpec, TileConfig] | str:
    """What conv2d runs with nothing named or tuned: tune.GEMM for a 1x1 convolution that is a
    GEMM as it stands, of at most GEMM_CONV_MAX_M output pixels; else the registry's conv
    kernel and config, a kernel without the TMA im2col map where that map cannot express the
    shape; where its K would waste the MMAs (gathers_flat), a kernel that packs taps, else
    tune.FLAT for the flat K. Nothing is compiled."""
    if runs_as_gemm(shape) and shape.gemm_m <= GEMM_CONV_MAX_M:
        return tune.GEMM
    problem = Problem(shape.gemm_m, shape.out_channels, shape.gemm_k, dtype, out_dtype)
    spec, cfg = registry.select(limits, problem, op="conv")
    if gathers_flat(shape, cfg.block_k):  # one tap a K-tile would waste the MMAs
        # Packed taps beat the flat K wherever measured (above FLAT_K_WASTE), even at 4x waste.
        packing = next((k for k in registry.eligible(limits.cc, problem, "conv") if k.packs_taps), None)
        return tune.FLAT if packing is None else (packing, registry.packed_config(packing, limits, problem))
    if spec.tma_boxes and not _im2col_fits(shape):
        return _without_im2col_map(limits, problem, shape)
    return spec, cfg


def _without_im2col_map(limits, problem: Problem, shape: Conv) -> tuple[KernelSpec, TileConfig]:
    fallback = [k for k in registry.eligible(limits.cc, problem, "conv") if not k.tma_boxes]
    if not fallback:
        raise ZooError(f"no conv kernel for {shape.describe()} on CC {limits.cc[0]}.{limits.cc[1]}")
    return fallback[0], registry.pick_config(fallback[0], limits, problem)


# A 1x1, stride-1, unpadded convolution is a GEMM as it stands (runs_as_gemm), and conv2d runs
# it as one zoo.mm, with the GEMMs' measured choices (split-K, narrow tiles), up to this many
# output pixels. ResNet-50's 1x1 layers at batch 32 on an H200 (2026-11-28, CUDA-graph
# replays, untuned, results/h200-2026-11-28/issue41/conv-1x1-as-gemm.txt), % of cuDNN for
# conv2d's TMA kernel and zoo.mm: at 7x7-28x28 (M 1568-25088) zoo.mm 86-103% against 62-92%
# (2048->512 at 7x7: 91% against 62%), but for 128->512 at 28x28 (90% against 92%); at 56x56
# (M 100352) 71-103% against 89-105% (64->64: 71% against 89%).
GEMM_CONV_MAX_M = 32768
ROUTES = (tune.FLAT, tune.GEMM)


def runs_as_gemm(shape: Conv) -> bool:
    """Whether the convolution is a GEMM as it stands: 1x1, stride 1, no padding, C a multiple
    of 8 (a channels-last x is the (N*H*W, C) matrix of 16-byte rows, w's (K, C) rows B^T)."""
    return shape.r == shape.s == 1 and shape.stride == (1, 1) and shape.padding == (0, 0) and \
        shape.channels % CHANNEL_ALIGN == 0


def route_plan(route: str, x: torch.Tensor, shape: Conv, out_dtype: torch.dtype) -> "FlatConvPlan | GemmConvPlan":
    """The plan of a route of conv2d's (ROUTES): the flat K, or one zoo.mm."""
    if route == tune.GEMM:
        if not runs_as_gemm(shape):
            raise ZooError(f"{shape.describe()} is not a GEMM as it stands (1x1, stride 1, no padding, C % 8 == 0)")
        return gemm_plan(x, shape, out_dtype)
    return flat_plan(x, shape, out_dtype)


def gemm_plan(x: torch.Tensor, shape: Conv, out_dtype: torch.dtype) -> "GemmConvPlan":
    """The zoo.mm plan of a 1x1 convolution: K = C, w's rows read as B^T."""
    return _zoo_mm_plan(GemmConvPlan, x, shape, out_dtype, shape.channels, b_col=True)


def flat_plan(x: torch.Tensor, shape: Conv, out_dtype: torch.dtype) -> FlatConvPlan:
    """The flat-K plan: K = flat_k, against flat_weights' rows of aligned length."""
    return _zoo_mm_plan(FlatConvPlan, x, shape, out_dtype, flat_k(shape), ldb=_aligned_channels(shape.out_channels))


def _zoo_mm_plan(plan_type, x: torch.Tensor, shape: Conv, out_dtype: torch.dtype, k: int, **b_layout):
    """A route's plan, naming the kernel and config zoo.mm will choose for its GEMM."""
    device_index = x.device.index if x.device.index is not None else torch.cuda.current_device()
    problem = Problem(shape.gemm_m, shape.out_channels, k, gemm._dtype_name(x.dtype), gemm._dtype_name(out_dtype),
                      **b_layout)
    spec, cfg, _ = gemm._choose(gemm.device_limits(device_index), problem, device_index, None, None)
    return plan_type(shape, spec, cfg, out_dtype)


def tune_key(shape: Conv, dtype: str, out_dtype: str) -> str:
    """The tuning file's key of a convolution (tune.conv_key)."""
    return tune.conv_key(dtype, out_dtype, shape.images, shape.channels, shape.height, shape.width,
                         shape.out_channels, shape.r, shape.s, shape.stride, shape.padding, shape.dilation)


def _im2col_fits(shape: Conv) -> bool:
    low, high = cuda.IM2COL_CORNER
    lower, upper = shape.im2col_corners()
    offsets = ((shape.r - 1) * shape.dilation[0], (shape.s - 1) * shape.dilation[1])
    return all(low <= v <= high for v in (*lower, *upper)) and max(offsets) <= high and \
        max(shape.stride) <= cuda.IM2COL_MAX_STRIDE


def plan_launch(spec: KernelSpec, cfg: TileConfig, device_index: int, x: torch.Tensor, shape: Conv,
                out_dtype: torch.dtype, splits: int | None = None) -> tuple[gemm.Launch, tuple | None]:
    """The launch of a conv kernel for this shape (addresses filled in per call), and for a TMA
    kernel the im2col map's arguments after its address. splits: K's slices (None: the
    registry's rule; kernels without split-K run whole)."""
    m, n, k = shape.gemm_m, shape.out_channels, shape.padded_k(cfg.block_k, spec.packs_taps)
    ldb = _aligned_channels(n)  # weight_matrix's row stride
    dtype, out_name = gemm._dtype_name(x.dtype), gemm._dtype_name(out_dtype)
    geometry = (shape.geometry(cfg.block_k, spec.packs_taps), cuda.BY_VALUE)
    with torch.cuda.device(device_index), cuda.device_context(device_index):  # as gemm.plan_launch
        fn = gemm.compiled(spec, cfg, dtype, out_name, device_index)
        if not spec.tma_boxes:
            grid = spec.grid(cfg, m, n, 0)
            args = [(0, cuda.POINTER), (0, cuda.POINTER), (0, cuda.POINTER), (m, cuda.INT32), (n, cuda.INT32),
                    (k, cuda.INT32), (ldb, cuda.INT32), (n, cuda.INT32), geometry]
            return gemm.Launch(fn, device_index, grid, cfg.threads, cfg.cluster_size, args, slots=(0, 1, 2)), None
        resident = gemm._resident_clusters(spec, cfg, fn, device_index)
        if splits is None or not spec.split_k:
            splits = registry.split_k(spec, cfg, m, n, k, resident, dram_gbps=gemm.device_limits(device_index).dram_gbps)
        elif not 1 <= splits <= k // cfg.block_k:
            raise ZooError(f"{spec.name} [{cfg.name}]: {splits} slices of K for {k // cfg.block_k} K-tiles")
        grid = spec.grid(cfg, m, n, resident, splits)
        (_, _), (b_rows, b_cols), (c_rows, c_cols) = spec.tma_boxes(cfg, torch.tensor([], dtype=out_dtype).element_size())
        lower, upper = shape.im2col_corners()
        im2col = (dtype, shape.images, shape.height, shape.width, _aligned_channels(shape.channels),
                  lower, upper, shape.stride, cfg.block_m, cfg.block_k)
        # Placeholder addresses (16-byte aligned) until the first call patches them in.
        a_map = cuda.im2col_tensor_map(16, *im2col)
        b_map = cuda.weights_tensor_map(16, dtype, n, shape.r, shape.s, _aligned_channels(shape.channels),
                                        b_rows, b_cols)
        out_size = torch.tensor([], dtype=out_dtype).element_size()
        c_tma = n * out_size % 16 == 0
        c_map = (16, out_name, m, n, n, c_rows, c_cols) if c_tma else None
        split_k = None
        if splits > 1:
            slots = registry.stacks(cfg, m, n) * cfg.cluster_size * cfg.warps
            split_k = (slots * splits * cfg.warp_m * cfg.warp_n, slots)
        args = [(a_map, cuda.ENCODED_MAP), (b_map, cuda.ENCODED_MAP), (c_map, cuda.TENSOR_MAP),
                (int(c_tma), cuda.INT32), (0, cuda.POINTER), (0, cuda.POINTER), (m, cuda.INT32), (n, cuda.INT32), (k, cuda.INT32),
                (n, cuda.INT32), (splits, cuda.INT32), geometry,
                (spec.unit_layout(cfg, m, n, k, splits), cuda.BY_VALUE), (0, cuda.POINTER), (0, cuda.POINTER)]
    launch = gemm.Launch(fn, device_index, grid, cfg.threads, cfg.cluster_size, args, split_k, (0, 1, 4), maps=True,
                         bias_slot=gemm.BIAS_SLOT if spec.bias_epilogue(cfg) else None)
    return launch, im2col


def explain(shape: Conv, block_m: int = 128, block_n: int = 128, block_k: int = 64) -> list[str]:
    """The GEMM a convolution becomes, and what one A tile of it reads, for learners."""
    c_pad = shape.c_pad(block_k)
    lines = [shape.describe(),
             f"GEMM: M = N*P*Q = {shape.images}*{shape.p}*{shape.q} = {shape.gemm_m} output pixels, "
             f"N = K = {shape.out_channels} output channels, K = R*S*C = {shape.r}*{shape.s}*{shape.channels} = {shape.gemm_k}"
             + (f" (each tap padded to {c_pad} channels: {shape.r * shape.s * c_pad})" if c_pad != shape.channels else ""),
             f"{shape.flops / 1e9:.2f} GFLOP; an explicit im2col matrix would hold {shape.gemm_m * shape.gemm_k:,} "
             f"elements ({shape.gemm_m * shape.gemm_k / max(shape.images * shape.height * shape.width * shape.channels, 1):.1f}x the size of x)",
             f"A tile of {block_m} x {block_k} (rows m0.., K-tile kt): tap t = kt / {c_pad // block_k}, (r, s) = (t / {shape.s}, t % {shape.s}), "
             f"channels (kt % {c_pad // block_k}) * {block_k}..; row m is pixel (n, p, q) = (m / {shape.p * shape.q}, m / {shape.q} % {shape.p}, m % {shape.q})",
             f"  it reads x[n, p*{shape.stride[0]} - {shape.padding[0]} + r*{shape.dilation[0]}, "
             f"q*{shape.stride[1]} - {shape.padding[1]} + s*{shape.dilation[1]}, c], zero outside the image"]
    for kt in range(min(3, shape.r * shape.s * (c_pad // block_k))):
        t = kt // (c_pad // block_k)
        r, s, c0 = t // shape.s, t % shape.s, (kt % (c_pad // block_k)) * block_k
        h0 = -shape.padding[0] + r * shape.dilation[0]
        w0 = -shape.padding[1] + s * shape.dilation[1]
        lines.append(f"  tile 0, K-tile {kt}: tap (r={r}, s={s}), channels {c0}..{c0 + block_k - 1}; "
                     f"row 0 reads x[0, {h0}, {w0}, {c0}..]" + (" (padding: zeros)" if h0 < 0 or w0 < 0 else ""))
    return lines


# ----------------------------------------------------------------------------- measuring

def inputs(shape: Conv, dtype: torch.dtype, gen: torch.Generator, channels_last: bool = True,
           weight_channels_last: bool = False):
    """Random x (N, C, H, W) and w (K, C, R, S) for a shape, x channels-last if asked, w too if
    asked (as a network holds them after model.to(memory_format=torch.channels_last))."""
    x = torch.randn(shape.images, shape.channels, shape.height, shape.width, device="cuda", dtype=dtype, generator=gen)
    w = torch.randn(shape.out_channels, shape.channels, shape.r, shape.s, device="cuda", dtype=dtype, generator=gen)
    w = w / (shape.r * shape.s * shape.channels) ** 0.5  # outputs of order 1
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    if weight_channels_last:
        w = w.contiguous(memory_format=torch.channels_last)
    return x, w


def torch_conv(x, w, shape: Conv, bias=None, out_dtype=None):
    """cuDNN's answer; a bias of another dtype (zoo.conv2d takes fp32) converted, as torch needs."""
    bias = bias if bias is None or bias.dtype == x.dtype else bias.to(x.dtype)
    y = torch.nn.functional.conv2d(x, w, bias, shape.stride, shape.padding, shape.dilation)
    return y if out_dtype in (None, y.dtype) else y.to(out_dtype)


def verify(x, w, y, shape: Conv, bias=None):
    """y against a float64 reference (F.conv2d in float64), within 2x cuDNN's own error on
    the same inputs (plus a floor) and the normwise bound; NaN/Inf fail."""
    from . import bench
    ref = torch.nn.functional.conv2d(x.double(), w.double(), None if bias is None else bias.double(),
                                     shape.stride, shape.padding, shape.dilation)
    err = bench.relative_error(y, ref)
    err_torch = bench.relative_error(torch_conv(x, w, shape, bias, y.dtype), ref)
    bound = min(2 * err_torch + bench.FLOOR.get(y.dtype, 1e-4), bench.NORMWISE_BOUND)
    return bench.Check(err <= bound, err, err_torch, bound)


def measure(shape: Conv, dtype: torch.dtype, out_dtype: torch.dtype | None, warmup: int, iters: int,
            seed: int = 0, kernel: str | None = None, config: str | None = None, graph: bool = True):
    """Verify zoo.conv2d on one shape, then time it side by side with cuDNN (x and w
    channels-last, as a channels-last network holds them: neither side lays w out per call;
    torch.backends.cudnn.benchmark on): {"zoo": Timing, "cudnn": Timing}, the Check, and the
    kernel / config that ran."""
    from . import bench
    gen = torch.Generator(device="cuda").manual_seed(seed)
    x, w = inputs(shape, dtype, gen, weight_channels_last=True)
    with torch.no_grad():
        y = conv2d(x, w, stride=shape.stride, padding=shape.padding, dilation=shape.dilation,
                   out_dtype=out_dtype, kernel=kernel, config=config)
        check = verify(x, w, y, shape)
    plan = plan_for(x, shape, y.dtype, kernel, config)
    torch.backends.cudnn.benchmark = True
    lim = gemm.device_limits(x.device.index or 0)
    per_set = x.numel() * x.element_size() + w.numel() * w.element_size() + shape.gemm_m * shape.out_channels * 4
    sets = bench.rotation_sets(per_set, lim.l2_bytes, max_sets=4)
    xs = [inputs(shape, dtype, gen, weight_channels_last=True) for _ in range(sets)]
    fns = {"cudnn": lambda i: torch_conv(xs[i][0], xs[i][1], shape, out_dtype=out_dtype),
           "zoo": lambda i: conv2d(xs[i][0], xs[i][1], stride=shape.stride, padding=shape.padding,
                                   dilation=shape.dilation, out_dtype=out_dtype, kernel=kernel, config=config)}
    with torch.no_grad():  # graph: device time of replays; else wall clock per eager call
        timings = bench.time_side_by_side(fns, sets, warmup, iters) if graph else \
            bench.wall_side_by_side(fns, sets, warmup, iters)
    flat = " (flat K, zoo.mm)" if isinstance(plan, FlatConvPlan) else " (1x1 as zoo.mm)" if isinstance(plan, GemmConvPlan) else ""
    return timings, check, plan.spec.name + flat, plan.cfg.name
