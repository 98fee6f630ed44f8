"""The convolutions zoo conv and zoo tune --conv measure: the suites of layers (ResNet-50's at
batch 32), a torchvision network's own layers found by tracing it on the meta device, and a
layer from the command line."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch

from .conv import Conv, _pair
from .cuda import ZooError


@dataclass(frozen=True)
class NetworkLayer:
    """A distinct convolution of a network: the first module that runs it, its shape (None
    where it has no zoo shape), how often one forward runs it, and why the zoo cannot run it
    (empty: it can)."""
    name: str
    shape: Conv | None
    count: int
    refusal: str = ""


def layer_refusal(layer: torch.nn.Conv2d) -> str:
    """Why zoo.conv2d cannot run a torch.nn.Conv2d as it is (empty: it can): it computes dense
    convolutions (groups=1) with zero padding given as numbers."""
    if layer.groups != 1:
        return f"groups={layer.groups}"
    if layer.padding_mode != "zeros" or isinstance(layer.padding, str):
        return f"padding {layer.padding!r}, mode {layer.padding_mode!r}"
    return ""


def network_layers(model: torch.nn.Module, input_shape: tuple[int, ...]) -> list[NetworkLayer]:
    """Every torch.nn.Conv2d one forward of `model` on an input of `input_shape` runs, grouped
    by shape in order of first use. Traced on the meta device (a model built there is used as
    it is, any other is copied there): nothing is computed or allocated."""
    on_meta = all(p.is_meta for p in model.parameters())
    traced = model if on_meta else copy.deepcopy(model).to("meta")
    found: dict[tuple, list] = {}
    names = {module: name for name, module in traced.named_modules()}

    def record(module, args):
        n, c, h, w = args[0].shape
        k, _, r, s = module.weight.shape
        refusal, shape = layer_refusal(module), None
        if not refusal:
            shape = Conv(n, h, w, c, k, r, s, tuple(module.stride), tuple(module.padding), tuple(module.dilation))
        key = (shape, refusal) if shape else (names[module], refusal)
        entry = found.setdefault(key, [names[module], shape, 0, refusal])
        entry[2] += 1

    hooks = [m.register_forward_pre_hook(record) for m in traced.modules() if isinstance(m, torch.nn.Conv2d)]
    try:
        dtype = next(traced.parameters(), torch.empty(0)).dtype
        with torch.no_grad():
            traced.eval()(torch.empty(input_shape, device="meta", dtype=dtype))
    finally:
        for hook in hooks:
            hook.remove()
    return [NetworkLayer(*entry) for entry in found.values()]


def _layer(name: str, c: int, k: int, hw: int, rs: int, stride: int = 1, images: int = 32) -> tuple[str, Conv]:
    pad = rs // 2
    return name, Conv(images, hw, hw, c, k, rs, rs, (stride, stride), (pad, pad), (1, 1))


# The layer worked through in the issue, and ResNet-50's (v1.5, torchvision) layers at batch 32,
# its 7x7 stem first, each distinct shape once: (name, shape).
SUITES: dict[str, list[tuple[str, Conv]]] = {
    "layer": [_layer("3x3 64->128 @56", 64, 128, 56, 3)],
    "resnet50": [
        _layer("stem 7x7 3->64 s2", 3, 64, 224, 7, 2),
        _layer("conv2 1x1 64->64", 64, 64, 56, 1), _layer("conv2 3x3 64->64", 64, 64, 56, 3),
        _layer("conv2 1x1 64->256", 64, 256, 56, 1), _layer("conv2 1x1 256->64", 256, 64, 56, 1),
        _layer("conv3 1x1 256->128", 256, 128, 56, 1), _layer("conv3 3x3 128->128 s2", 128, 128, 56, 3, 2),
        _layer("conv3 1x1 128->512", 128, 512, 28, 1), _layer("conv3 down 1x1 256->512 s2", 256, 512, 56, 1, 2),
        _layer("conv3 1x1 512->128", 512, 128, 28, 1), _layer("conv3 3x3 128->128", 128, 128, 28, 3),
        _layer("conv4 1x1 512->256", 512, 256, 28, 1), _layer("conv4 3x3 256->256 s2", 256, 256, 28, 3, 2),
        _layer("conv4 1x1 256->1024", 256, 1024, 14, 1), _layer("conv4 down 1x1 512->1024 s2", 512, 1024, 28, 1, 2),
        _layer("conv4 1x1 1024->256", 1024, 256, 14, 1), _layer("conv4 3x3 256->256", 256, 256, 14, 3),
        _layer("conv5 1x1 1024->512", 1024, 512, 14, 1), _layer("conv5 3x3 512->512 s2", 512, 512, 14, 3, 2),
        _layer("conv5 1x1 512->2048", 512, 2048, 7, 1), _layer("conv5 down 1x1 1024->2048 s2", 1024, 2048, 14, 1, 2),
        _layer("conv5 1x1 2048->512", 2048, 512, 7, 1), _layer("conv5 3x3 512->512", 512, 512, 7, 3),
    ],
}


def parse(text: str) -> Conv:
    """A convolution from 'N,C,H,W,K,R,S[,stride[,padding[,dilation]]]' (the CLI's --conv)."""
    try:
        v = [int(p) for p in text.split(",")]
    except ValueError:
        v = []
    if not 7 <= len(v) <= 10 or min(v[:7]) < 1:
        raise ZooError(f"--conv {text!r}: expected N,C,H,W,K,R,S[,stride[,padding[,dilation]]] with positive "
                       "sizes, e.g. 32,64,56,56,128,3,3,1,1")
    n, c, h, w, k, r, s = v[:7]
    stride, padding, dilation = (v[7:] + [1, r // 2, 1][len(v) - 7:])[:3]
    shape = Conv(n, h, w, c, k, r, s, _pair("stride", stride, 1), _pair("padding", padding, 0),
                 _pair("dilation", dilation, 1))
    if shape.p <= 0 or shape.q <= 0:
        raise ZooError(f"the output would be {shape.p} x {shape.q}: {shape.describe()}")
    return shape
