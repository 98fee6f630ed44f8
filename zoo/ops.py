"""The zoo inside torch programs: the public `zoo.mm`, `zoo.bmm` and `zoo.conv2d`, and the torch
custom ops (torch.library) that torch.compile traces.

- Eager calls without autograd go straight to the launch path (gemm.mm, batched.bmm,
  conv.conv2d): the dispatcher costs microseconds an eager call should not pay.
- Eager calls that autograd records (grad mode on, an input that requires grad) go through
  `MatMul` / `BatchMatMul`, torch.autograd.Functions whose forward and backward call the
  launch path directly: dA = dC B^T, dB = A^T dC on the zoo's kernels (the launch path copies
  what its kernels cannot read in place).
- Under torch.compile every call is a custom op with a fake (meta) implementation, so
  `fullgraph=True` traces it without a graph break:
  `zoo::mm(a, b, out_dtype, kernel_name, config_name, allow_tf32) -> Tensor` (not `kernel`:
  inductor's fallback for custom ops takes an argument of that name itself), with its
  backward; `zoo::mm_out(a, b, out, ...)`, which declares that it writes `out`;
  `zoo::bmm(a, b, out_dtype, kernel_name, config_name) -> Tensor` for (B, M, K) x (B, K, N)
  batches, with its backward; `zoo::conv2d(x, w, bias, stride, padding, dilation, groups,
  out_dtype, kernel_name, config_name) -> Tensor` (inference: no backward);
  `zoo::scaled_mm(a, b, scale_a, scale_b, bias, out_dtype, use_fast_accum, kernel_name,
  config_name) -> Tensor`, the FP8 GEMM of zoo.scaled_mm (no backward, as torch._scaled_mm).
  The ops keep nothing on the device past a call (no kept table or workspace in a graph's
  pool), so the CUDA graphs of `mode="reduce-overhead"` capture and replay them.
- Inductor calls the launch path itself for zoo::mm and zoo::conv2d (zoo/inductor.py: extern
  kernels, as aten::mm's); the other ops run as its fallback kernels, through the dispatcher.
"""

from __future__ import annotations

import sys
from typing import Optional

import torch

from . import batched, conv, fp8, gemm, inductor, scaled
from .cuda import ZooError


# ----------------------------------------------------------------------------- public calls

def mm(a: torch.Tensor, b: torch.Tensor, *, out_dtype: torch.dtype | None = None,
       kernel: str | None = None, config: str | None = None,
       out: torch.Tensor | None = None, allow_tf32: bool | None = None,
       bias: torch.Tensor | None = None) -> torch.Tensor:
    if type(a) is not torch.Tensor or type(b) is not torch.Tensor or bias is not None:  # parameters, DTensors, ...
        if gemm.any_dtensor(a, b, bias):
            if out is not None:
                raise ZooError("zoo.mm on DTensors takes no out= (the sharding rules make the result)")
            ensure_sharding()
            with gemm.dtensor_call("zoo.mm", "a b bias", a, b, bias):
                return gemm._plus(torch.ops.zoo.mm(a, b, out_dtype, kernel, config, allow_tf32), bias)
    if out is None and (_recorded(a, b) or (bias is not None and _recorded(bias, None))):
        return gemm._plus(MatMul.apply(a, b, out_dtype, kernel, config, allow_tf32), bias)
    return gemm.mm(a, b, out_dtype=out_dtype, kernel=kernel, config=config, out=out, allow_tf32=allow_tf32,
                   bias=bias)


mm.__doc__ = gemm.mm.__doc__


def bmm(a, b, *, mode: str | None = None, streams: int | None = None, graph: bool = False,
        out_dtype: torch.dtype | None = None, kernel: str | None = None, config: str | None = None,
        out=None, cache: bool = True):
    one_launch = isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and out is None and not graph \
        and streams is None and mode in (None, "batched")
    if one_launch and gemm.any_dtensor(a, b):
        ensure_sharding()
        with gemm.dtensor_call("zoo.bmm", "a b", a, b):
            return torch.ops.zoo.bmm(a, b, out_dtype, kernel, config)
    if one_launch and _recorded(a, b):
        return BatchMatMul.apply(a, b, out_dtype, kernel, config)
    if gemm.any_dtensor(*_flat(a), *_flat(b)):
        raise ZooError("zoo.bmm on DTensors takes two 3-D DTensors in the one-launch mode (no lists, out=, "
                       "graph=, streams=)")
    return batched.bmm(a, b, mode=mode, streams=streams, graph=graph, out_dtype=out_dtype, kernel=kernel,
                       config=config, out=out, cache=cache)


bmm.__doc__ = batched.bmm.__doc__


def _flat(x) -> list:
    return [x] if isinstance(x, torch.Tensor) else list(x) if isinstance(x, (list, tuple)) else []


def _recorded(a, b) -> bool:
    """An eager call autograd records: grad mode on and an input that requires grad (the
    cheapest tests first: most calls stop at one of them)."""
    return torch.is_grad_enabled() and (getattr(a, "requires_grad", False) or getattr(b, "requires_grad", False)) \
        and not torch.compiler.is_compiling()


def _product_grads(product, transpose, ctx, grad) -> tuple:
    """dA = dC B^T and dB = A^T dC of a product saved in ctx (a, b), each only where needed,
    through `product` (the eager call or the op; transpose: of a matrix or of a batch)."""
    a, b = ctx.saved_tensors
    grad = grad.to(a.dtype)  # an fp32 output's gradient, back in the inputs' dtype
    return (product(grad, transpose(b)) if ctx.needs_input_grad[0] else None,
            product(transpose(a), grad) if ctx.needs_input_grad[1] else None)


class MatMul(torch.autograd.Function):
    """zoo.mm under eager autograd: one node, forward and backward on the launch path."""

    @staticmethod
    def forward(ctx, a, b, out_dtype, kernel, config, allow_tf32):
        ctx.save_for_backward(a, b)
        ctx.allow_tf32 = allow_tf32  # not kernel/config: the backward's shapes differ
        return gemm.mm(a, b, out_dtype=out_dtype, kernel=kernel, config=config, allow_tf32=allow_tf32)

    @staticmethod
    def backward(ctx, grad):
        product = lambda x, y: mm(x, y, allow_tf32=ctx.allow_tf32)  # noqa: E731
        return *_product_grads(product, torch.t, ctx, grad), None, None, None, None


class BatchMatMul(torch.autograd.Function):
    """zoo.bmm of two 3-D tensors under eager autograd."""

    @staticmethod
    def forward(ctx, a, b, out_dtype, kernel, config):
        ctx.save_for_backward(a, b)
        return batched.bmm(a, b, out_dtype=out_dtype, kernel=kernel, config=config)

    @staticmethod
    def backward(ctx, grad):
        return *_product_grads(bmm, _batch_t, ctx, grad), None, None, None


def conv2d(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1, *, out_dtype: torch.dtype | None = None,
           kernel: str | None = None, config: str | None = None, keep_layout: bool = False) -> torch.Tensor:
    if torch.compiler.is_compiling():  # the op lays weights out per call: nothing kept in a graph's pool
        conv.check_no_grad(x, w, bias)
        pair = lambda v: [v, v] if isinstance(v, int) else list(v)  # noqa: E731 - the op's int[2]
        return torch.ops.zoo.conv2d(x, w, bias, pair(stride), pair(padding), pair(dilation), groups,
                                    out_dtype, kernel, config)
    if gemm.subclassed(x, w, bias):
        gemm.refuse_dtensors("zoo.conv2d", x, w, bias)
    return conv.conv2d(x, w, bias, stride, padding, dilation, groups, out_dtype=out_dtype, kernel=kernel,
                       config=config, keep_layout=keep_layout)


conv2d.__doc__ = conv.conv2d.__doc__


# ----------------------------------------------------------------------------- custom ops

@torch.library.custom_op("zoo::mm", mutates_args=())
def mm_op(a: torch.Tensor, b: torch.Tensor, out_dtype: Optional[torch.dtype] = None,
          kernel_name: Optional[str] = None, config_name: Optional[str] = None,
          allow_tf32: Optional[bool] = None) -> torch.Tensor:
    return gemm.mm(a, b, out_dtype=out_dtype, kernel=kernel_name, config=config_name, allow_tf32=allow_tf32)


@mm_op.register_fake
def _(a, b, out_dtype=None, kernel_name=None, config_name=None, allow_tf32=None):
    gemm.check_shapes(a, b, out_dtype)
    inductor.install()  # traced: inductor calls the launch path itself (zoo/inductor.py)
    return a.new_empty((a.shape[0], b.shape[1]), dtype=out_dtype or a.dtype)


@torch.library.custom_op("zoo::mm_out", mutates_args=("out",))
def mm_out_op(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, kernel_name: Optional[str] = None,
              config_name: Optional[str] = None, allow_tf32: Optional[bool] = None) -> None:
    gemm.mm(a, b, out=out, kernel=kernel_name, config=config_name, allow_tf32=allow_tf32)


@mm_out_op.register_fake
def _(a, b, out, kernel_name=None, config_name=None, allow_tf32=None):
    gemm.check_shapes(a, b, out.dtype)
    return None


def _mm_setup(ctx, inputs, output):
    a, b, *_, allow_tf32 = inputs
    ctx.save_for_backward(a, b)
    ctx.allow_tf32 = allow_tf32


def _mm_backward(ctx, grad):
    product = lambda x, y: mm_op(x, y, allow_tf32=ctx.allow_tf32)  # noqa: E731
    return *_product_grads(product, torch.t, ctx, grad), None, None, None, None


mm_op.register_autograd(_mm_backward, setup_context=_mm_setup)


@torch.library.custom_op("zoo::bmm", mutates_args=())
def bmm_op(a: torch.Tensor, b: torch.Tensor, out_dtype: Optional[torch.dtype] = None,
           kernel_name: Optional[str] = None, config_name: Optional[str] = None) -> torch.Tensor:
    return batched.bmm(a, b, out_dtype=out_dtype, kernel=kernel_name, config=config_name, cache=False)


@bmm_op.register_fake
def _(a, b, out_dtype=None, kernel_name=None, config_name=None):
    if a.dim() != 3 or b.dim() != 3 or a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise ZooError(f"bmm takes (B, M, K) and (B, K, N), got {tuple(a.shape)} and {tuple(b.shape)}")
    return a.new_empty((a.shape[0], a.shape[1], b.shape[2]), dtype=out_dtype or a.dtype)


def _bmm_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0], inputs[1])


def _bmm_backward(ctx, grad):
    return *_product_grads(bmm_op, _batch_t, ctx, grad), None, None, None


def _batch_t(t: torch.Tensor) -> torch.Tensor:
    return t.transpose(1, 2)


bmm_op.register_autograd(_bmm_backward, setup_context=_bmm_setup)


@torch.library.custom_op("zoo::conv2d", mutates_args=())
def conv2d_op(x: torch.Tensor, w: torch.Tensor, bias: Optional[torch.Tensor], stride: list[int],
              padding: list[int], dilation: list[int], groups: int, out_dtype: Optional[torch.dtype] = None,
              kernel_name: Optional[str] = None, config_name: Optional[str] = None) -> torch.Tensor:
    # Laid out per call (keep_layout=False): a copy kept past it would stay in a CUDA-graph pool.
    return conv.conv2d(x, w, bias, tuple(stride), tuple(padding), tuple(dilation), groups, out_dtype=out_dtype,
                       kernel=kernel_name, config=config_name, keep_layout=False)


@conv2d_op.register_fake
def _(x, w, bias, stride, padding, dilation, groups, out_dtype=None, kernel_name=None, config_name=None):
    shape, out_dtype = conv.check_conv(x, w, bias, tuple(stride), tuple(padding), tuple(dilation), groups,
                                       out_dtype)
    inductor.install()
    # conv2d returns an NHWC buffer seen as (N, K, P, Q): channels-last strides.
    return torch.empty((shape.images, shape.out_channels, shape.p, shape.q), dtype=out_dtype, device=x.device,
                       memory_format=torch.channels_last)


@torch.library.custom_op("zoo::scaled_mm", mutates_args=())
def scaled_mm_op(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor,
                 bias: Optional[torch.Tensor] = None, out_dtype: Optional[torch.dtype] = torch.bfloat16,
                 use_fast_accum: bool = False, kernel_name: Optional[str] = None,
                 config_name: Optional[str] = None) -> torch.Tensor:
    return scaled.scaled_mm(a, b, scale_a, scale_b, bias, out_dtype=out_dtype, use_fast_accum=use_fast_accum,
                            kernel=kernel_name, config=config_name)


@scaled_mm_op.register_fake
def _(a, b, scale_a, scale_b, bias=None, out_dtype=torch.bfloat16, use_fast_accum=False, kernel_name=None,
      config_name=None):
    fp8.check_scaled(a, b, scale_a, scale_b, out_dtype, bias)
    inductor.install()
    return a.new_empty((a.shape[0], b.shape[1]), dtype=out_dtype)


# ----------------------------------------------------------------------------- DTensor

def _register_sharding() -> None:
    """Sharding rules for the ops (torch.distributed.tensor's register_sharding), as aten.mm and
    aten.bmm have: zoo.mm / zoo.bmm on DTensors return the right DTensor (redistributing the
    inputs to the cheapest placement these allow). Without torch.distributed, nothing."""
    if not torch.distributed.is_available():
        return
    try:
        from torch.distributed.tensor import Partial, Replicate, Shard
        from torch.distributed.tensor.experimental import register_sharding
    except ImportError:  # a torch without DTensor (< 2.5)
        return

    @register_sharding(torch.ops.zoo.mm.default)
    def _(a, b, out_dtype=None, kernel_name=None, config_name=None, allow_tf32=None):
        rest = [None] * 4
        return [([Replicate()], [Replicate(), Replicate(), *rest]),
                ([Shard(0)], [Shard(0), Replicate(), *rest]),     # rows of a
                ([Shard(1)], [Replicate(), Shard(1), *rest]),     # columns of b (column-wise parallel)
                ([Partial()], [Shard(1), Shard(0), *rest])]       # K (row-wise parallel): partial sums

    @register_sharding(torch.ops.zoo.bmm.default)
    def _(a, b, out_dtype=None, kernel_name=None, config_name=None):
        rest = [None] * 3
        return [([Replicate()], [Replicate(), Replicate(), *rest]),
                ([Shard(0)], [Shard(0), Shard(0), *rest]),        # the batch
                ([Shard(1)], [Shard(1), Replicate(), *rest]),
                ([Shard(2)], [Replicate(), Shard(2), *rest]),
                ([Partial()], [Shard(2), Shard(1), *rest])]


_sharding: list = []  # [True] once the rules are registered


def ensure_sharding() -> None:
    """Register the sharding rules before the first call on DTensors (importing
    torch.distributed.tensor costs ~0.7 s, which a zoo that meets no DTensor should not pay;
    a DTensor means it is imported already)."""
    if not _sharding:
        _register_sharding()
        _sharding.append(True)


if "torch.distributed.tensor" in sys.modules:
    ensure_sharding()
