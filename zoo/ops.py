"""zoo.mm and zoo.bmm as torch custom ops (torch.library): what torch.compile traces and
autograd differentiates.

`zoo.mm` calls its launch path directly when neither is involved (the op's dispatch costs
microseconds an eager call should not pay); under torch.compile, or when an input requires
grad, it calls these ops instead:
- `zoo::mm(a, b, out_dtype, kernel_name, config_name, allow_tf32) -> Tensor` (not `kernel`:
  inductor's fallback for custom ops takes an argument of that name itself), with a fake (meta)
  implementation, so `torch.compile(fullgraph=True)` traces it without a graph break, and a
  backward through the zoo's own kernels: dA = dC B^T, dB = A^T dC (any layout: the launch
  path copies what its kernels cannot read in place);
- `zoo::mm_out(a, b, out, ...)`, which declares that it writes `out`;
- `zoo::bmm(a, b, out_dtype, kernel_name, config_name) -> Tensor` for (B, M, K) x (B, K, N) batches,
  with its backward dA = dC B^T, dB = A^T dC per matrix.
"""

from __future__ import annotations

from typing import Optional

import torch

from . import batched, gemm


@torch.library.custom_op("zoo::mm", mutates_args=())
def mm(a: torch.Tensor, b: torch.Tensor, out_dtype: Optional[torch.dtype] = None,
       kernel_name: Optional[str] = None, config_name: Optional[str] = None,
       allow_tf32: Optional[bool] = None) -> torch.Tensor:
    return gemm.mm(a, b, out_dtype=out_dtype, kernel=kernel_name, config=config_name, allow_tf32=allow_tf32)


@mm.register_fake
def _(a, b, out_dtype=None, kernel_name=None, config_name=None, allow_tf32=None):
    gemm.check_shapes(a, b, out_dtype)
    return a.new_empty((a.shape[0], b.shape[1]), dtype=out_dtype or a.dtype)


@torch.library.custom_op("zoo::mm_out", mutates_args=("out",))
def mm_out(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, kernel_name: Optional[str] = None,
           config_name: Optional[str] = None, allow_tf32: Optional[bool] = None) -> None:
    gemm.mm(a, b, out=out, kernel=kernel_name, config=config_name, allow_tf32=allow_tf32)


@mm_out.register_fake
def _(a, b, out, kernel_name=None, config_name=None, allow_tf32=None):
    gemm.check_shapes(a, b, out.dtype)
    return None


def _mm_setup(ctx, inputs, output):
    a, b, *_, allow_tf32 = inputs
    ctx.save_for_backward(a, b)
    ctx.options = {"allow_tf32": allow_tf32}  # not kernel/config: the backward's shapes differ


def _mm_backward(ctx, grad):
    a, b = ctx.saved_tensors
    grad = grad.to(a.dtype)  # an fp32 output's gradient, back in the inputs' dtype
    grad_a = mm(grad, b.t(), **ctx.options) if ctx.needs_input_grad[0] else None
    grad_b = mm(a.t(), grad, **ctx.options) if ctx.needs_input_grad[1] else None
    return grad_a, grad_b, None, None, None, None


mm.register_autograd(_mm_backward, setup_context=_mm_setup)


@torch.library.custom_op("zoo::bmm", mutates_args=())
def bmm(a: torch.Tensor, b: torch.Tensor, out_dtype: Optional[torch.dtype] = None,
        kernel_name: Optional[str] = None, config_name: Optional[str] = None) -> torch.Tensor:
    return batched.bmm(a, b, out_dtype=out_dtype, kernel=kernel_name, config=config_name)


@bmm.register_fake
def _(a, b, out_dtype=None, kernel_name=None, config_name=None):
    if a.dim() != 3 or b.dim() != 3 or a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        from .cuda import ZooError
        raise ZooError(f"bmm takes (B, M, K) and (B, K, N), got {tuple(a.shape)} and {tuple(b.shape)}")
    return a.new_empty((a.shape[0], a.shape[1], b.shape[2]), dtype=out_dtype or a.dtype)


def _bmm_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0], inputs[1])


def _bmm_backward(ctx, grad):
    a, b = ctx.saved_tensors
    grad = grad.to(a.dtype)
    grad_a = bmm(grad, b.transpose(1, 2)) if ctx.needs_input_grad[0] else None
    grad_b = bmm(a.transpose(1, 2), grad) if ctx.needs_input_grad[1] else None
    return grad_a, grad_b, None, None, None


bmm.register_autograd(_bmm_backward, setup_context=_bmm_setup)


def traced(*tensors) -> bool:
    """Whether a call must go through the ops: torch.compile is tracing it, or autograd
    records it (grad mode on and an input that requires grad)."""
    return torch.compiler.is_compiling() or (
        torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad for t in tensors))
