"""`zoo.nn`: torch.nn layers whose matmuls and convolutions run on the zoo.

- `Linear` is a torch.nn.Linear (a subclass, torch's weight layout (out_features,
  in_features), so torch state dicts load unchanged) computing x @ weight^T + bias on the
  zoo's kernels: eager with or without autograd, torch.compile in every mode (the custom op
  zoo::mm), and DTensor weights (tensor parallel) through the op's sharding rules.
- `Conv2d` is a torch.nn.Conv2d running zoo.conv2d (inference: with grad enabled it raises
  and says how to proceed, as zoo.conv2d does).
- `Float8Linear` is an FP8 inference Linear for Hopper (issue 43): its weight quantized once
  to e4m3 with float32 scales in one of torch._scaled_mm's recipes, each input quantized as it
  comes (dynamic scales), the product by zoo.scaled_mm (or torch._scaled_mm, backend="torch",
  the reference it is measured against). A torch Linear's state dict loads into it (quantized
  as it loads).
- `convert(model)` swaps, in place, every Linear and Conv2d the zoo can run on the model's
  device and dtypes, keeps their parameters (the same tensors), and says which it left and why;
  `convert(model, fp8="row")` makes its Linears Float8Linears instead (their weights replaced
  by the FP8 ones).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch

from . import conv, convnets, gemm, linear, ops, scaled
from .cuda import ZooError
from .fp8 import BLOCK as FP8_BLOCK, RECIPES as FP8_RECIPES, quantize


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


FP8_BACKENDS = ("zoo", "torch")
FP8_IN_DTYPES = (torch.bfloat16, torch.float16)


class Float8Linear(torch.nn.Module):
    """y = x W^T + b in FP8 for inference on Hopper: W quantized once to e4m3 (`weight`, (out,
    in), with its float32 `weight_scale` in W's orientation: a scalar, (out, 1) or (out/128,
    in/128)), each input quantized per call in the same recipe (zoo.fp8.quantize), the product
    by zoo.scaled_mm in the input's dtype (bf16 or fp16). backend="torch" runs
    torch._scaled_mm on the same operands instead (the bias added after it), for side-by-side
    measurement. Inference only: an input that needs a gradient raises."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, recipe: str = "row",
                 backend: str = "zoo", device=None, dtype: torch.dtype = torch.bfloat16):
        super().__init__()
        if recipe not in FP8_RECIPES:
            raise ZooError(f"recipe must be one of {', '.join(FP8_RECIPES)}, got {recipe!r}")
        if backend not in FP8_BACKENDS:
            raise ZooError(f"backend must be one of {', '.join(FP8_BACKENDS)}, got {backend!r}")
        reason = _fp8_features_refusal(recipe, in_features, out_features)
        if reason:
            raise ZooError(f"in_features and out_features: {reason}")
        self.in_features, self.out_features, self.recipe, self.backend = in_features, out_features, recipe, backend
        self.weight = torch.nn.Parameter(torch.zeros(out_features, in_features, device=device,
                                                     dtype=torch.float8_e4m3fn), requires_grad=False)
        self.register_buffer("weight_scale", torch.ones(_weight_scale_shape(recipe, out_features, in_features),
                                                        device=device, dtype=torch.float32))
        self.bias = torch.nn.Parameter(torch.zeros(out_features, device=device, dtype=dtype),
                                       requires_grad=False) if bias else None

    @classmethod
    def from_linear(cls, layer: torch.nn.Linear, recipe: str = "row", backend: str = "zoo") -> "Float8Linear":
        """An FP8 copy of `layer` (its weight quantized; its bias the same tensor, detached)."""
        if layer.weight.dtype not in FP8_IN_DTYPES + (torch.float32,):
            raise ZooError(f"Float8Linear quantizes a float16, bfloat16 or float32 weight, got {layer.weight.dtype}")
        with torch.device("meta"):
            out = cls(layer.in_features, layer.out_features, layer.bias is not None, recipe, backend)
        out.weight, out.weight_scale = _quantized_weight(layer.weight.detach(), recipe)
        if layer.bias is not None:
            out.bias = torch.nn.Parameter(layer.bias.detach(), requires_grad=False)
        return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.weight.dtype != torch.float8_e4m3fn or self.weight_scale.dtype != torch.float32:
            raise ZooError(f"Float8Linear's weight is {self.weight.dtype} and its scale {self.weight_scale.dtype} "
                           "(float8_e4m3fn and float32 when made): the model was cast after zoo.nn.convert(fp8=...); "
                           "cast it first, then convert")
        if not isinstance(x, torch.Tensor) or x.dtype not in FP8_IN_DTYPES or x.shape[-1:] != (self.in_features,):
            got = f"{tuple(x.shape)} {x.dtype}" if isinstance(x, torch.Tensor) else type(x).__name__
            raise ZooError(f"Float8Linear takes a bfloat16 or float16 input of last dimension {self.in_features}, "
                           f"got {got}")
        if x.requires_grad and torch.is_grad_enabled():
            raise ZooError("Float8Linear is for inference (FP8 GEMMs have no backward here): run the model under "
                           "torch.no_grad() or torch.inference_mode()")
        qx, sx = quantize(x.reshape(-1, self.in_features), self.recipe, operand="a")
        w, sw = self.weight.t(), self.weight_scale.t()
        if self.backend == "torch":
            y = torch._scaled_mm(qx, w, sx, sw, out_dtype=x.dtype)
            y = y if self.bias is None else y + self.bias
        else:
            y = scaled.scaled_mm(qx, w, sx, sw, bias=self.bias, out_dtype=x.dtype)
        return y.view(*x.shape[:-1], self.out_features)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # A torch Linear's floating-point weight is quantized as it loads (a plain copy into the
        # FP8 parameter would drop its scale); an FP8 weight comes with its own weight_scale.
        w = state_dict.get(prefix + "weight")
        if isinstance(w, torch.Tensor) and w.dtype != torch.float8_e4m3fn:
            if tuple(w.shape) != (self.out_features, self.in_features):
                raise ZooError(f"{prefix}weight: expected ({self.out_features}, {self.in_features}), got {tuple(w.shape)}")
            state_dict[prefix + "weight"], state_dict[prefix + "weight_scale"] = \
                _quantized_weight(w.to(self.weight.device), self.recipe)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, "
                f"recipe={self.recipe}, backend={self.backend}")


def _weight_scale_shape(recipe: str, n: int, k: int) -> tuple[int, ...]:
    return {"tensor": (), "row": (n, 1), "block": (n // FP8_BLOCK, k // FP8_BLOCK)}[recipe]


def _quantized_weight(w: torch.Tensor, recipe: str) -> tuple[torch.nn.Parameter, torch.Tensor]:
    """W (out, in) as an e4m3 parameter (out, in) and its float32 scales in W's orientation
    (their .t() is what torch._scaled_mm takes for b = W.t())."""
    qb, sb = quantize(w.t(), recipe, operand="b")
    return torch.nn.Parameter(qb.t(), requires_grad=False), sb.t().contiguous()


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
            dtypes: tuple[torch.dtype, ...] = LINEAR_DTYPES, fp8: str | None = None,
            skip: tuple[str, ...] = ()) -> list[Swap]:
    """Swap, in place, every torch.nn.Linear and torch.nn.Conv2d of `model` that the zoo can run
    for zoo.nn.Linear / zoo.nn.Conv2d (the module's class changes; its parameters, buffers and
    hooks stay the same objects). Returns one Swap per such layer, saying which were left and
    why: not on a CUDA device, a dtype not in `dtypes` (fp32 would run on the zoo's SIMT
    kernel, slower than cuBLAS; pass dtypes to take it), bf16 below CC 8.0, a Conv2d with
    groups, string padding or a non-zero padding mode. Call it after moving the model to its
    device and dtype.

    fp8="tensor" | "row" | "block": each Linear becomes a Float8Linear of that recipe instead
    (inference; a new module, the bias shared, the weight replaced by its FP8 quantization):
    CC 9.0, in and out features multiples of 16 (block: 128). skip: names of modules (and
    everything under them) left as they are, e.g. ("lm_head",)."""
    if fp8 is not None and fp8 not in FP8_RECIPES:
        raise ZooError(f"fp8 must be None or one of {', '.join(FP8_RECIPES)}, got {fp8!r}")
    report = []
    for name, module in list(model.named_modules()):
        if isinstance(module, (Linear, Conv2d, Float8Linear)):
            continue
        if any(name == s or name.startswith(s + ".") for s in skip):
            if type(module) in (torch.nn.Linear, torch.nn.Conv2d):
                report.append(Swap(name, type(module).__name__, False, "skipped as asked"))
            continue
        if type(module) is torch.nn.Linear and linear and fp8 is not None:
            reason = _fp8_refusal(module, fp8, name)
            if not reason:
                _replace(model, name, Float8Linear.from_linear(module, fp8))
            report.append(Swap(name, "Linear", not reason, reason))
        elif type(module) is torch.nn.Linear and linear:
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


def _fp8_refusal(layer: torch.nn.Linear, recipe: str, name: str = "") -> str:
    if not name:  # a new module replaces the layer in its parent, and the model has none
        return "the model itself: a Float8Linear is a new module (zoo.nn.Float8Linear.from_linear(layer))"
    reason = _refusal(layer.weight, FP8_IN_DTYPES)
    if reason:
        return reason
    index = layer.weight.device.index if layer.weight.device.index is not None else torch.cuda.current_device()
    cc = gemm.device_limits(index).cc
    if cc != scaled.FP8_CC:
        return f"FP8 needs CC {scaled.FP8_CC[0]}.{scaled.FP8_CC[1]} (Hopper), the device is {cc[0]}.{cc[1]}"
    return _fp8_features_refusal(recipe, layer.in_features, layer.out_features)


def _fp8_features_refusal(recipe: str, in_features: int, out_features: int) -> str:
    """Why the recipe cannot take these features ("" if it can): 16-byte FP8 rows; the block
    recipe's 128 x 128 weight blocks."""
    need = FP8_BLOCK if recipe == "block" else 16
    if in_features % need or out_features % need:
        return f"{in_features} -> {out_features} features (the {recipe} recipe needs multiples of {need})"
    return ""


def _replace(model: torch.nn.Module, name: str, layer: torch.nn.Module) -> None:
    parent, _, child = name.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, child, layer)


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


