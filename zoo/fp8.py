"""FP8 operands and their scales, as torch._scaled_mm takes them on sm_90 (issue 43).

A scaled GEMM computes (a * scale_a) @ (b * scale_b): a (M, K) row-major and b (K, N)
column-major (b = W.t() of a row-major (N, K) weight), both float8 (e4m3, or e5m2 for one of
them), with float32 dequantization scales in one of three recipes:

- "tensor": one scale each (0-dim tensors);
- "row": one per row of a, (M, 1), and one per column of b, (1, N) (both e4m3);
- "block": DeepSeek-V3's, one per 1 x 128 block of a, (M, K / 128) stored outer-dim-major
  (column-major, as cuBLAS reads it), and one per 128 x 128 block of b, (K / 128, N / 128)
  likewise; K a multiple of 128.

`quantize` makes such an operand and its scales from a float tensor; `check_scaled` says
which recipe a call's scales follow, or raises a ZooError naming what is wrong. zoo.scaled_mm
(zoo/scaled.py) runs them on the sm_90a kernel's FP8 build; torch._scaled_mm is the
reference they match.
"""

from __future__ import annotations

import torch

from .cuda import ZooError

FP8_DTYPES = (torch.float8_e4m3fn, torch.float8_e5m2)
FP8_MAX = {torch.float8_e4m3fn: 448.0, torch.float8_e5m2: 57344.0}
RECIPES = ("tensor", "row", "block")
BLOCK = 128          # the block recipe's K block (and b's N block)
SCALED_OUT_DTYPES = (torch.bfloat16, torch.float16, torch.float32)
# What a scaled GEMM's error against float64 of the dequantized inputs may reach where torch's
# own gives no bound: the rounding of C plus wgmma's accumulation (measured on an H100 and an
# H200 at K <= 65536: bf16 1.7e-3, fp16 2.4e-4, fp32 1.3e-4 promoted and 5.5e-4 fast; torch's
# the same where it runs).
SCALED_FLOOR = {torch.bfloat16: 4e-3, torch.float16: 1e-3, torch.float32: 1e-3}
TINY = 1e-12         # an all-zero block's amax: its scale stays finite


def quantize(x: torch.Tensor, recipe: str, *, operand: str = "a",
             dtype: torch.dtype = torch.float8_e4m3fn) -> tuple[torch.Tensor, torch.Tensor]:
    """(q, scale) with q * scale ~ x, q in `dtype` (each block's largest magnitude mapped to the
    dtype's largest finite value). operand "a": x is (M, K), q row-major; "b": x is (K, N)
    (e.g. W.t()), q column-major (a view of a row-major (N, K) tensor). Scales are float32 in
    the recipe's shape and layout (module docstring)."""
    if recipe not in RECIPES:
        raise ZooError(f"recipe must be one of {', '.join(RECIPES)}, got {recipe!r}")
    if operand not in ("a", "b"):
        raise ZooError(f"operand must be 'a' (M, K) or 'b' (K, N), got {operand!r}")
    if dtype not in FP8_DTYPES:
        raise ZooError(f"dtype must be torch.float8_e4m3fn or torch.float8_e5m2, got {dtype}")
    if not isinstance(x, torch.Tensor) or x.dim() != 2 or not x.is_floating_point() or x.dtype in FP8_DTYPES:
        raise ZooError(f"x must be a 2-D float16, bfloat16 or float32 tensor, got "
                       f"{tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__}"
                       f"{' ' + str(x.dtype) if isinstance(x, torch.Tensor) else ''}")
    # Work on the operand's rows along K: a as it is, b as b.t() (N, K).
    rows = (x if operand == "a" else x.t()).float()
    k = rows.shape[1]
    if recipe == "block" and k % BLOCK:
        raise ZooError(f"the block recipe needs K a multiple of {BLOCK}, got K={k}")
    if recipe == "block" and operand == "b" and rows.shape[0] % BLOCK:
        raise ZooError(f"the block recipe's b needs N a multiple of {BLOCK} (128 x 128 blocks), got N={rows.shape[0]}")
    fmax = FP8_MAX[dtype]
    if recipe == "tensor":
        scale = rows.abs().amax().clamp(min=TINY) / fmax
    elif recipe == "row":
        scale = rows.abs().amax(dim=1, keepdim=True).clamp(min=TINY) / fmax          # (rows, 1)
    elif operand == "a":
        blocks = rows.view(rows.shape[0], k // BLOCK, BLOCK)
        scale = blocks.abs().amax(dim=2).clamp(min=TINY) / fmax                       # (M, K / 128)
    else:
        n = rows.shape[0]
        blocks = rows.view(n // BLOCK, BLOCK, k // BLOCK, BLOCK)
        scale = blocks.abs().amax(dim=(1, 3)).clamp(min=TINY) / fmax                  # (N / 128, K / 128)
    q = (rows / _over_blocks(scale, recipe, operand)).clamp(-fmax, fmax).to(dtype).contiguous()
    if operand == "b":
        q = q.t()                                                                      # (K, N), column-major
        scale = scale.t()                                 # row: (1, N); block: (K / 128, N / 128), outer-dim-major
    elif recipe == "block":
        scale = scale.t().contiguous().t()                # (M, K / 128), outer-dim-major
    return q, scale.to(torch.float32)


def dequantize(q: torch.Tensor, scale: torch.Tensor, recipe: str, operand: str = "a") -> torch.Tensor:
    """q * scale in float32, the scales broadcast over their blocks: the scaled GEMM's input as
    its reference sees it."""
    return q.float() * _over_blocks(scale, recipe, operand)


def _over_blocks(scale: torch.Tensor, recipe: str, operand: str) -> torch.Tensor:
    """A block recipe's scales repeated over their blocks' elements (a: 1 x 128 along K; b:
    128 x 128); the other recipes' broadcast as they are."""
    if recipe != "block":
        return scale
    scale = scale.repeat_interleave(BLOCK, dim=1)
    return scale if operand == "a" else scale.repeat_interleave(BLOCK, dim=0)


def check_scaled(a, b, scale_a, scale_b, out_dtype: torch.dtype, bias=None) -> str:
    """The recipe of a scaled GEMM's arguments ("tensor", "row" or "block"), checked as
    torch._scaled_mm takes them on sm_90; a ZooError naming what is wrong otherwise."""
    for name, t in (("a", a), ("b", b), ("scale_a", scale_a), ("scale_b", scale_b)):
        if not isinstance(t, torch.Tensor):
            raise ZooError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ZooError(f"a (M, K) and b (K, N) must be 2-D with the same K, got {tuple(a.shape)} and {tuple(b.shape)}")
    if a.dtype not in FP8_DTYPES or b.dtype not in FP8_DTYPES or a.dtype == b.dtype == torch.float8_e5m2:
        raise ZooError(f"a and b must be float8_e4m3fn, or one of them float8_e5m2, got {a.dtype} and {b.dtype}")
    m, k = a.shape
    n = b.shape[1]
    if a.stride(1) != 1 or a.stride(0) < max(k, 1):
        raise ZooError(f"a must be row-major (unit column stride), got strides {a.stride()}")
    if b.stride(0) != 1 or b.stride(1) < max(k, 1):
        raise ZooError(f"b must be column-major (b = W.t() of a row-major W), got strides {b.stride()}")
    if k % 16 or n % 16:
        raise ZooError(f"K and N must be multiples of 16 (16-byte rows of FP8), got K={k}, N={n}")
    if out_dtype not in SCALED_OUT_DTYPES:
        raise ZooError(f"out_dtype must be torch.bfloat16, torch.float16 or torch.float32, got {out_dtype} "
                       "(the zoo does not write FP8 results)")
    if scale_a.dtype != torch.float32 or scale_b.dtype != torch.float32:
        raise ZooError(f"scales must be float32, got {scale_a.dtype} and {scale_b.dtype}")
    sa, sb = tuple(scale_a.shape), tuple(scale_b.shape)
    if scale_a.numel() == 1 and scale_b.numel() == 1 and scale_a.dim() <= 1 and scale_b.dim() <= 1:
        recipe = "tensor"
    elif sa == (m, 1) and sb == (1, n):
        recipe = "row"
        if a.dtype != torch.float8_e4m3fn or b.dtype != torch.float8_e4m3fn:
            raise ZooError("the row recipe takes float8_e4m3fn a and b")
    elif k % BLOCK == 0 and sa == (m, k // BLOCK) and sb == (k // BLOCK, -(-n // BLOCK)):
        recipe = "block"
        if m > 1 and scale_a.stride(0) != 1:
            raise ZooError(f"the block recipe's scale_a must be outer-dim-major (scale_a.t().contiguous().t()), "
                           f"got strides {scale_a.stride()}")
        if sb[1] > 1 and scale_b.stride(0) != 1:
            raise ZooError(f"the block recipe's scale_b must be outer-dim-major (the (N/128, K/128) scales' .t()), "
                           f"got strides {scale_b.stride()}")
    else:
        raise ZooError(
            f"scales {sa} and {sb} follow no recipe for {m}x{n}x{k}: per-tensor (one each), per-row ({m}, 1) and "
            f"(1, {n}), or blockwise ({m}, K/128) and (K/128, ceil(N/128)) with K a multiple of {BLOCK}")
    if bias is not None and (not isinstance(bias, torch.Tensor) or tuple(bias.shape) != (n,)
                             or bias.dtype not in SCALED_OUT_DTYPES):
        raise ZooError(f"bias must be an ({n},) bfloat16, float16 or float32 tensor, got "
                       f"{tuple(bias.shape) if isinstance(bias, torch.Tensor) else type(bias).__name__}")
    return recipe
