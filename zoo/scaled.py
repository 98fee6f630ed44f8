"""`zoo.scaled_mm`: an FP8 GEMM with dequantization scales on Hopper (issue 43), with
torch._scaled_mm's arguments, layouts and scale recipes (zoo/fp8.py: quantize, check_scaled),
on the FP8 build of the sm_90a kernel (zoo/specs/sm90_wgmma.py, SM90_FP8) through the launch
path every kernel shares (gemm.plan_launch).

As zoo.mm, the first call for a layout checks it, chooses the config and works out the launch;
later calls with that layout patch the addresses and fire.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import torch

from . import fp8, gemm, registry
from .cuda import ZooError
from .registry import Problem

FP8_CC = (9, 0)  # FP8 tensor cores: Hopper (Turing and Ampere have none; the kernel is sm_90a)


def scaled_mm(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor,
              bias: torch.Tensor | None = None, scale_result: torch.Tensor | None = None,
              out_dtype: torch.dtype | None = torch.bfloat16, use_fast_accum: bool = False, *,
              kernel: str | None = None, config: str | None = None) -> torch.Tensor:
    """(a * scale_a) @ (b * scale_b) (+ bias), as torch._scaled_mm computes it on sm_90.

    a: (M, K) row-major float8_e4m3fn; b: (K, N) column-major float8_e4m3fn (b = W.t() of a
    row-major (N, K) weight); K and N multiples of 16. Scales float32, in one of torch's
    recipes (zoo.fp8.quantize makes them): one each ("tensor"), (M, 1) and (1, N) ("row"), or
    (M, K/128) and (K/128, N/128), both outer-dim-major ("block", DeepSeek-V3's). out_dtype
    bfloat16 (the default here; torch's is the input's FP8 dtype, which the zoo does not
    write), float16 or float32. bias: (N,), added after the scales. use_fast_accum=False (as
    torch's default) promotes the kernel's partial sums into fp32 every K-tile; True keeps them
    in wgmma's accumulators (faster, less precise over long K). The block recipe always
    promotes. No autograd (as torch._scaled_mm); torch.compile traces it as zoo::scaled_mm.
    """
    if scale_result is not None:
        raise ZooError("scale_result is not supported (it scales an FP8 output, which the zoo does not write)")
    if torch.compiler.is_compiling():
        return torch.ops.zoo.scaled_mm(a, b, scale_a, scale_b, bias, out_dtype, use_fast_accum, kernel, config)
    if type(a) is not torch.Tensor or type(b) is not torch.Tensor or type(scale_a) is not torch.Tensor or \
            type(scale_b) is not torch.Tensor or (bias is not None and type(bias) is not torch.Tensor):  # DTensors, ...
        gemm.refuse_dtensors("zoo.scaled_mm", a, b, scale_a, scale_b, bias)
    return plan(a, b, scale_a, scale_b, bias, out_dtype, use_fast_accum, kernel, config).run(a, b, scale_a, scale_b,
                                                                                            bias)


def plan(a, b, scale_a, scale_b, bias, out_dtype, use_fast_accum, kernel=None, config=None) -> "ScaledPlan":
    """The call's plan for its layout: kept from an earlier call, or worked out and kept."""
    try:
        key = (a.shape, a.stride(), b.shape, b.stride(), a.dtype, b.dtype, a.get_device(), b.get_device(),
               a.data_ptr() % gemm.ALIGN_BYTES, b.data_ptr() % gemm.ALIGN_BYTES,
               scale_a.shape, scale_a.stride(), scale_a.dtype, scale_a.get_device(),
               scale_b.shape, scale_b.stride(), scale_b.dtype, scale_b.get_device(),
               None if bias is None else (bias.shape, bias.stride(), bias.dtype, bias.get_device()),
               out_dtype, bool(use_fast_accum), kernel, config)
    except AttributeError:  # not tensors: plan says which argument is wrong
        key = None
    found = _plans.get(key)
    if found is None:
        found = _plan(a, b, scale_a, scale_b, bias, out_dtype, bool(use_fast_accum), kernel, config)
        if key is not None:
            gemm.remember(_plans, key, found, _PLANS_KEPT)
    return found


@dataclass
class ScaledPlan:
    """What scaled_mm works out once per layout: the launch (None: an empty product), C's
    shape and dtype, and whether the bias is converted per call (another dtype or stride)."""
    m: int
    n: int
    out_dtype: torch.dtype
    launch: "gemm.Launch | None"
    bias_copy: bool

    def run(self, a, b, scale_a, scale_b, bias) -> torch.Tensor:
        c = a.new_empty((self.m, self.n), dtype=self.out_dtype)
        if self.launch is None:
            c.zero_()
            return c if bias is None else c.add_(bias)
        if bias is not None and self.bias_copy:
            bias = bias.to(self.out_dtype).contiguous()
        scales = (scale_a.data_ptr(), scale_b.data_ptr())
        if bias is None or self.launch.bias_slot is None:
            self.launch.fire_at(a.data_ptr(), b.data_ptr(), c.data_ptr(), scale_ptrs=scales)
            return c if bias is None else c.add_(bias)
        self.launch.fire_at(a.data_ptr(), b.data_ptr(), c.data_ptr(), bias.data_ptr(), scale_ptrs=scales)
        return c


def check_device(*tensors: torch.Tensor) -> int:
    """The CUDA device index all the tensors are on, which must have FP8 tensor cores."""
    devices = {t.device for t in tensors if t is not None}
    if len(devices) != 1 or next(iter(devices)).type != "cuda":
        raise ZooError(f"a, b, the scales and the bias must be on one CUDA device, got {sorted(map(str, devices))}")
    device = next(iter(devices))
    index = device.index if device.index is not None else torch.cuda.current_device()
    limits = gemm.device_limits(index)
    if limits.cc != FP8_CC:
        raise ZooError(f"zoo.scaled_mm runs on CC {FP8_CC[0]}.{FP8_CC[1]} (Hopper's FP8 tensor cores); this device is "
                       f"{limits.cc[0]}.{limits.cc[1]} ({limits.part}): Turing and Ampere have no FP8 tensor cores")
    return index


def _plan(a, b, scale_a, scale_b, bias, out_dtype, use_fast_accum, kernel, config) -> ScaledPlan:
    recipe = fp8.check_scaled(a, b, scale_a, scale_b, out_dtype, bias)
    if a.dtype != torch.float8_e4m3fn or b.dtype != torch.float8_e4m3fn:
        raise ZooError(f"the zoo's FP8 kernel takes float8_e4m3fn a and b, got {a.dtype} and {b.dtype} "
                       "(e5m2 operands are not built)")
    index = check_device(a, b, scale_a, scale_b, bias)
    if any(t.requires_grad for t in (a, b, scale_a, scale_b, bias) if t is not None) and torch.is_grad_enabled():
        raise ZooError("zoo.scaled_mm has no backward (as torch._scaled_mm): call it under torch.no_grad()")
    m, k = a.shape
    n = b.shape[1]
    if m == 0 or n == 0 or k == 0:
        return ScaledPlan(m, n, out_dtype, None, False)
    problem = Problem(m, n, k, "float8_e4m3fn", gemm._dtype_name(out_dtype), b_col=True,
                      promote=recipe == "block" or not use_fast_accum, block=recipe == "block")
    limits = gemm.device_limits(index)
    spec, cfg = registry.select(limits, problem, kernel_name=kernel, config_name=config, op="scaled")
    refusal = registry.fp8_refusal(cfg, problem)  # a named config the registry would not take
    if refusal:
        asked = "the block recipe" if recipe == "block" else f"use_fast_accum={use_fast_accum}"
        raise ZooError(f"{spec.name} [{cfg.name}] ({asked}): {refusal}")
    # The kernel's Scales strides (sa: per row, per K block; sb: per K block, per column or block).
    if recipe == "tensor":
        strides = (0, 0, 0, 0)
    elif recipe == "row":
        strides = (scale_a.stride(0), 0, 0, scale_b.stride(1))
    else:
        strides = (scale_a.stride(0), scale_a.stride(1), scale_b.stride(0), scale_b.stride(1))
    c = torch.empty((m, n), dtype=out_dtype, device=a.device)
    launch = gemm.plan_launch(spec, cfg, index, a, b, c, k, a.stride(0), b.stride(1), b_col=True,
                              scales=(scale_a.data_ptr(), scale_b.data_ptr(), *strides))
    launch.choice = (spec.name, cfg.name, None)
    bias_copy = bias is not None and (bias.dtype != out_dtype or bias.stride(0) != 1)
    return ScaledPlan(m, n, out_dtype, launch, bias_copy)


_PLANS_KEPT = 256
_plans: OrderedDict = OrderedDict()  # scaled_mm's plans, by layout
