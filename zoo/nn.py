"""`zoo.nn.Linear`: a torch.nn.Linear whose matmul runs on the zoo (autograd and torch.compile
through the zoo::mm custom op).

The weight is kept as (in_features, out_features), row-major: y = x @ weight + bias is then a
GEMM the kernels read in place (torch.nn.Linear keeps (out, in), whose transpose they would
copy on every call). `Linear.from_torch(linear)` converts a torch.nn.Linear; its state dict
holds the weight in this (in, out) layout, so a torch.nn.Linear state dict is converted with
from_torch (or by transposing "weight"), not loaded as it is.
"""

from __future__ import annotations

import math

import torch

from . import gemm


class Linear(torch.nn.Module):
    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = torch.nn.Parameter(torch.empty(in_features, out_features, device=device, dtype=dtype))
        self.bias = torch.nn.Parameter(torch.empty(out_features, device=device, dtype=dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """torch.nn.Linear's initialisation, on the transposed weight."""
        bound = 1 / math.sqrt(self.in_features) if self.in_features else 0
        torch.nn.init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            torch.nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = gemm.mm(x.reshape(-1, self.in_features), self.weight)
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*x.shape[:-1], self.out_features)

    @classmethod
    def from_torch(cls, linear: torch.nn.Linear) -> "Linear":
        out = cls(linear.in_features, linear.out_features, linear.bias is not None,
                  device=linear.weight.device, dtype=linear.weight.dtype)
        with torch.no_grad():
            out.weight.copy_(linear.weight.t())
            if linear.bias is not None:
                out.bias.copy_(linear.bias)
        return out

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"
