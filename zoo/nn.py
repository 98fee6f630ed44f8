"""`zoo.nn`: torch.nn layers whose matmuls and convolutions run on the zoo.

- `Linear` is a torch.nn.Linear (a subclass, torch's weight layout (out_features,
  in_features), so torch state dicts load unchanged) computing x @ weight^T + bias on the
  zoo's kernels: eager with or without autograd, torch.compile in every mode (the custom op
  zoo::mm), and DTensor weights (tensor parallel) through the op's sharding rules.
- `Conv2d` is a torch.nn.Conv2d running zoo.conv2d (inference: with grad enabled it raises
  and says how to proceed, as zoo.conv2d does).
- `convert(model)` swaps, in place, every Linear and Conv2d the zoo can run on the model's
  device and dtypes, keeps their parameters (the same tensors), and says which it left and why.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch

from . import conv, convnets, gemm, linear, ops
from .cuda import ZooError


class Linear(torch.nn.Linear):
    """torch.nn.Linear on the zoo's kernels (same constructor, parameters and state dict)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w, bias = self.weight, self.bias
        if torch.compiler.is_compiling():
            return self._through_op(x, w, bias)
        if gemm.subclassed(x, w, bias) and gemm.any_dtensor(x, w, bias):
            ops.ensure_sharding()
            with gemm.dtensor_call("zoo.nn.Linear", "input weight bias", x, w, bias):
                return self._through_op(x, w, bias)
        # The eager path, at torch's host cost where it can be: without autograd no view of x,
        # w or the output (linear.linear); with it no reshape for a matrix, and torch's C++
        # Function.apply (_apply_linear) where no functorch transform is active.
        if not (torch.is_grad_enabled() and (x.requires_grad or w.requires_grad
                                             or (bias is not None and bias.requires_grad))):
            return linear.linear(x, w, bias)
        x2 = x if x.dim() == 2 else x.reshape(-1, self.in_features)
        y = _apply_linear(x2, w, bias) if not _functorch_active() else LinearFunction.apply(x2, w, bias)
        return y if x.dim() == 2 else y.view(*x.shape[:-1], self.out_features)

    def _through_op(self, x, w, bias):
        """x W^T + b by the op zoo::mm: traced, or sharded by its rules."""
        y = torch.ops.zoo.mm(x.reshape(-1, self.in_features), w.t())
        if bias is not None:
            y = y + bias
        return y.view(*x.shape[:-1], self.out_features)

    @classmethod
    def from_torch(cls, linear: torch.nn.Linear) -> "Linear":
        """A zoo Linear sharing `linear`'s parameters (the same tensors, nothing copied)."""
        return _sharing(linear, cls)


class LinearFunction(torch.autograd.Function):
    """Linear under eager autograd: one node; y = x W^T + b (the bias in the kernel's epilogue
    where it has one), dX = dY W, dW = dY^T X, db = sum of dY's rows."""

    @staticmethod
    def forward(ctx, x2, w, bias):
        ctx.save_for_backward(x2, w)
        return linear.linear(x2, w, bias)

    @staticmethod
    def backward(ctx, grad):
        x2, w = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad
        if torch.is_grad_enabled():  # a double backward (create_graph) records these products in turn
            return (ops.mm(grad, w) if need_x else None, ops.mm(grad.t(), x2) if need_w else None,
                    grad.sum(0) if need_b else None)
        # The launch path straight away: both plans by one lookup, no view; the bias gradient
        # summed by dW's kernel where it can
        return linear.linear_grads(grad, x2, w, need_x, need_w, need_b)


# torch's C++ apply (torch._C._FunctionBase): Function.apply's Python around it binds default
# arguments and unwraps functorch wrappers, neither of which a call outside functorch needs,
# and costs about a third of the node's host time.
_apply_linear = super(torch.autograd.Function, LinearFunction).apply
_functorch_active = torch._C._are_functorch_transforms_active


class Conv2d(torch.nn.Conv2d):
    """torch.nn.Conv2d on zoo.conv2d: zero padding given as numbers, groups=1, inference.
    keep_layout = True (on a layer, or on the class) keeps a weight the kernel reads as a copy
    in that layout until the weight changes in place (zoo.conv2d's keep_layout)."""

    keep_layout = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        reason = convnets.layer_refusal(self)
        if reason:
            raise ZooError(f"zoo.nn.Conv2d runs zero padding given as numbers and groups=1; this layer has {reason}")
        return ops.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups,
                          keep_layout=self.keep_layout)

    @classmethod
    def from_torch(cls, layer: torch.nn.Conv2d) -> "Conv2d":
        """A zoo Conv2d sharing `layer`'s parameters (the same tensors, nothing copied)."""
        return _sharing(layer, cls)


def _sharing(layer: torch.nn.Module, cls: type) -> torch.nn.Module:
    """A module of class `cls` holding `layer`'s parameters and buffers (the same tensors) in
    dicts of its own, so registering on one leaves the other as it is."""
    out = copy.copy(layer)
    out.__class__ = cls
    out._parameters, out._buffers, out._modules = dict(layer._parameters), dict(layer._buffers), dict(layer._modules)
    return out


LINEAR_DTYPES = (torch.float16, torch.bfloat16)


@dataclass(frozen=True)
class Swap:
    """What convert did with one layer: its name in the model, its type, and why it was left."""
    name: str
    kind: str
    swapped: bool
    reason: str = ""


def convert(model: torch.nn.Module, *, linear: bool = True, conv2d: bool = True,
            dtypes: tuple[torch.dtype, ...] = LINEAR_DTYPES) -> list[Swap]:
    """Swap, in place, every torch.nn.Linear and torch.nn.Conv2d of `model` that the zoo can run
    for zoo.nn.Linear / zoo.nn.Conv2d (the module's class changes; its parameters, buffers and
    hooks stay the same objects). Returns one Swap per such layer, saying which were left and
    why: not on a CUDA device, a dtype not in `dtypes` (fp32 would run on the zoo's SIMT
    kernel, slower than cuBLAS; pass dtypes to take it), bf16 below CC 8.0, a Conv2d with
    groups, string padding or a non-zero padding mode. Call it after moving the model to its
    device and dtype."""
    report = []
    for name, module in model.named_modules():
        if isinstance(module, (Linear, Conv2d)):
            continue
        if type(module) is torch.nn.Linear and linear:
            reason = _refusal(module.weight, dtypes)
            if not reason:
                module.__class__ = Linear
            report.append(Swap(name, "Linear", not reason, reason))
        elif type(module) is torch.nn.Conv2d and conv2d:
            reason = _refusal(module.weight, conv.CONV_DTYPES) or convnets.layer_refusal(module)
            if not reason:
                module.__class__ = Conv2d
            report.append(Swap(name, "Conv2d", not reason, reason))
    return report


def _refusal(weight: torch.Tensor, dtypes) -> str:
    if weight.device.type != "cuda":
        return f"on {weight.device}, not a CUDA device"
    if weight.dtype not in dtypes:
        return f"{weight.dtype} (convert takes {', '.join(str(d).replace('torch.', '') for d in dtypes)})"
    index = weight.device.index if weight.device.index is not None else torch.cuda.current_device()
    cc = gemm.device_limits(index).cc
    if weight.dtype == torch.bfloat16 and cc < (8, 0):
        return f"bfloat16 needs CC >= 8.0, the device is {cc[0]}.{cc[1]}"
    return ""


