"""zoo.nn.Linear's calls on the launch path (zoo/gemm.py): the forward without autograd and
the backward, each looked up by the tensors' own layouts so that a call makes no view."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import replace

import torch

from . import gemm
from .cuda import ZooError


def linear(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """x @ w^T (+ bias) over x's last dimension, as torch.nn.functional.linear, for an eager
    call autograd does not record (zoo.nn.Linear's). mm's plan for (x viewed as a matrix, w.t()),
    looked up by x's and w's own layouts and making the output in x's leading shape: a call
    makes no view of x, w or the output."""
    try:
        x_ptr, w_ptr = x.data_ptr(), w.data_ptr()
        key = (_LINEAR, x.shape, x.stride(), w.shape, w.stride(), x.dtype, w.dtype, x.get_device(), w.get_device(),
               x_ptr % gemm.ALIGN_BYTES, w_ptr % gemm.ALIGN_BYTES,
               x.dtype == torch.float32 and gemm.tf32_allowed(x.dtype, None),
               None if bias is None else (bias.shape, bias.stride(), bias.dtype, bias.get_device()))
    except AttributeError:  # not tensors: mm says which argument is wrong
        return gemm.mm(x, w.t(), bias=bias)
    plan = _plans.get(key)
    if plan is None:
        plan = _plan_linear(x, w, bias)
        if plan is None:  # x's rows are not one matrix's (a rare layout): torch's reshape copies them
            return gemm.mm(x.reshape(-1, x.shape[-1]), w.t(), bias=bias).view(*x.shape[:-1], w.shape[0])
        gemm.remember(_plans, key, plan, _PLANS_KEPT)
    if plan.copy_a or plan.copy_b:  # an input read from a copy: the copy takes the matrix views
        return plan.run(x.view(-1, x.shape[-1]), w.t(), None, bias=bias)
    return plan.run(x, w, None, x_ptr, w_ptr, None, bias)


def linear_grads(grad: torch.Tensor, x: torch.Tensor, w: torch.Tensor, need_x: bool = True,
                 need_w: bool = True, need_b: bool = False) -> tuple[torch.Tensor | None, ...]:
    """A Linear's input, weight and bias gradients, dX = grad @ w, dW = grad^T @ x and db =
    grad's column sums (grad and x matrices), for a backward autograd does not record: the two
    plans looked up by one key, made of the tensors' own layouts, so a call makes no view
    (grad^T is read in place). A layout's first call plans both products, whichever it needs.
    db is summed by dW's kernel (cuBLASLt's BGRADB) where dW's launch reads grad^T in place
    (column-major, 16-byte aligned), its config has a row-sums build (KernelSpec.row_sums: the
    sm_90a kernel, no swap-AB) and it has no split-K or stream-K; else it is grad.sum(0)."""
    try:
        g_ptr, x_ptr, w_ptr = grad.data_ptr(), x.data_ptr(), w.data_ptr()
        key = (_GRADS, grad.shape, grad.stride(), x.shape, x.stride(), w.shape, w.stride(), grad.dtype, x.dtype,
               w.dtype, grad.get_device(), x.get_device(), w.get_device(), g_ptr % gemm.ALIGN_BYTES,
               x_ptr % gemm.ALIGN_BYTES, w_ptr % gemm.ALIGN_BYTES,
               grad.dtype == torch.float32 and gemm.tf32_allowed(grad.dtype, None),
               need_b)
    except AttributeError:  # not tensors: mm says which argument is wrong
        return (gemm.mm(grad, w) if need_x else None, gemm.mm(grad.t(), x) if need_w else None,
                grad.sum(0) if need_b else None)
    plans = _plans.get(key)
    if plans is None:
        plans = (gemm.plan_call(grad, w, None, None, None, None, None),
                 gemm.plan_call(grad.t(), x, None, None, None, None, None, row_sums=need_b))
        gemm.remember(_plans, key, plans, _PLANS_KEPT)
    dx_plan, dw_plan = plans
    dx = dw = db = None
    if need_x:
        dx = dx_plan.run(grad, w, None) if dx_plan.copy_a or dx_plan.copy_b else \
            dx_plan.run(grad, w, None, g_ptr, w_ptr)
    if need_w:  # the plan's a is grad^T; a copy takes the view, the launch grad's address
        if dw_plan.copy_a or dw_plan.copy_b:
            dw = dw_plan.run(grad.t(), x, None)
        elif need_b and dw_plan.launch is not None and dw_plan.launch.row_sums_slot is not None:
            dw, db = grad.new_empty(dw_plan.shape), grad.new_empty(dw_plan.m)
            dw_plan.launch.fire_at(g_ptr, x_ptr, dw.data_ptr(), row_sums_ptr=db.data_ptr())
        else:
            dw = dw_plan.run(grad, x, None, g_ptr, x_ptr)
    if need_b and db is None:
        db = grad.sum(0)
    return dx, dw, db


def _plan_linear(x, w, bias) -> "gemm.CallPlan | None":
    """linear's plan for this layout; None where x is no matrix's view."""
    if not isinstance(w, torch.Tensor) or w.dim() != 2 or x.dim() == 0 or x.shape[-1] != w.shape[1]:
        got = tuple(w.shape) if isinstance(w, torch.Tensor) else type(w).__name__
        raise ZooError(f"linear: x's last dimension must match the weight's (out_features, in_features), "
                       f"got x {tuple(x.shape)} and weight {got}")
    try:
        matrix = x.view(-1, x.shape[-1])
    except RuntimeError:
        return None
    plan = gemm.plan_call(matrix, w.t(), None, None, None, None, None, bias)
    return replace(plan, shape=(*x.shape[:-1], w.shape[0]))


_LINEAR = "x @ w^T"  # linear's keys in _plans
_GRADS = "dY @ w, dY^T @ x"  # linear_grads' keys: a pair of plans each
_PLANS_KEPT = 256
_plans: OrderedDict = OrderedDict()  # linear's and linear_grads' plans, by layout (as zoo.mm's)
