"""The sm_80 cp.async + ldmatrix + mma.sync kernel (kernels/sm80/gemm_mma_multistage.cu)."""

from __future__ import annotations

from dataclasses import replace

from .. import configs as cfgs
from ..cuda import KERNELS_DIR
from .base import KernelSpec, epilogue_bytes, tile_copy_rules


def _sm80_smem(c: cfgs.TileConfig) -> int:
    """Same formula as SMEM_BYTES in kernels/sm80/gemm_mma_multistage.cu."""
    pipe = c.stages * (c.block_m * c.block_k + c.block_k * c.block_n) * 2
    return max(pipe, epilogue_bytes(c))


def _sm80_rules(c: cfgs.TileConfig) -> list[str]:
    out = tile_copy_rules(c, "64- or 128-byte swizzled A rows")
    if out:  # the pass arithmetic below assumes whole chunks per thread
        return out
    for name, cols in (("A", c.block_k), ("B", c.block_n)):
        rows_per_pass = c.threads // (cols // 8)
        if rows_per_pass % 8:
            out.append(f"{c.threads} threads copy {rows_per_pass} {name} rows per pass; "
                       "it must be a multiple of the 8-row swizzle period")
    return out


SM80_GEMM = KernelSpec(
    name="sm80_gemm_mma",
    source=KERNELS_DIR / "sm80" / "gemm_mma_multistage.cu",
    config_file=cfgs.CONFIGS_DIR / "sm80_gemm_mma.yaml",
    min_cc=(8, 0), exact_cc=None, arch_specific=False,
    offline_archs=("sm_80", "sm_90a"), layouts=("row x row",),
    entry={("float16", "float16"): "zoo_gemm_sm80_f16_f16out",
           ("float16", "float32"): "zoo_gemm_sm80_f16_f32out",
           ("bfloat16", "bfloat16"): "zoo_gemm_sm80_bf16_bf16out",
           ("bfloat16", "float32"): "zoo_gemm_sm80_bf16_f32out"},
    aligned_rows=True, mma_shape=(16, 16, 16), stages=(3, 4),
    smem_bytes=_sm80_smem, rules=_sm80_rules,
    sass_required=((r"\bLDGSTS\b", "LDGSTS"), (r"\bLDSM\b", "LDSM"), (r"\bHMMA\.16816", "HMMA.16816")),
    sass_forbidden=((r"\b(LDL|STL)\b", "LDL/STL (local memory)"),),
    description="cp.async multistage ring, ldmatrix + mma.sync m16n8k16, XOR-swizzled smem",
    pipeline="{stages}-stage cp.async ring: {ahead} K-tiles in flight while one is computed",
    exports={("float16", "float32"): "zoo_gemm_sm80", ("float16", "float16"): "zoo_gemm_sm80_half",
             ("bfloat16", "float32"): "zoo_gemm_sm80_bf16", ("bfloat16", "bfloat16"): "zoo_gemm_sm80_bf16_bf16"},
)

# The same source built with ZOO_CONV: conv2d as implicit GEMM, A tiles copied from the NHWC
# input by addresses worked out from the geometry, zero-filled outside it (zoo/conv.py).
SM80_CONV = replace(
    SM80_GEMM,
    name="sm80_conv_mma",
    entry={("float16", "float16"): "zoo_conv_sm80_f16_f16out",
           ("float16", "float32"): "zoo_conv_sm80_f16_f32out",
           ("bfloat16", "bfloat16"): "zoo_conv_sm80_bf16_bf16out",
           ("bfloat16", "float32"): "zoo_conv_sm80_bf16_f32out"},
    exports={}, extra_defines={"ZOO_CONV": 1}, op="conv", packs_taps=True,
    description="conv2d as implicit GEMM: cp.async A chunks from the NHWC input by address (small C: several "
                "filter taps a K-tile), the sm80 mma.sync pipeline",
)
