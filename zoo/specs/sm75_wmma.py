"""The sm_75 WMMA kernel (kernels/sm75/hgemm_wmma.cu): its shared-memory formula, rules and SASS."""

from __future__ import annotations

from dataclasses import replace

from .. import configs as cfgs
from ..cuda import KERNELS_DIR
from .base import KernelSpec, epilogue_bytes, tile_copy_rules


def _sm75_smem(c: cfgs.TileConfig) -> int:
    """Same formula as SMEM_BYTES in kernels/sm75/hgemm_wmma.cu (a static_assert ties them)."""
    pad = 8
    pipe = 2 * (c.block_m * (c.block_k + pad) + c.block_k * (c.block_n + pad)) * 2
    return max(pipe, epilogue_bytes(c))


def _sm75_rules(c: cfgs.TileConfig) -> list[str]:
    return tile_copy_rules(c, "the conflict-free A store order")


SM75_HGEMM = KernelSpec(
    name="sm75_hgemm_wmma",
    source=KERNELS_DIR / "sm75" / "hgemm_wmma.cu",
    config_file=cfgs.CONFIGS_DIR / "sm75_hgemm_wmma.yaml",
    min_cc=(7, 5), exact_cc=None, arch_specific=False,
    offline_archs=("sm_75", "sm_80", "sm_90a"), layouts=("row x row",),
    entry={("float16", "float16"): "zoo_hgemm_sm75_f16out",
           ("float16", "float32"): "zoo_hgemm_sm75_f32out"},
    aligned_rows=False, mma_shape=(16, 16, 16), stages=(2, 3),
    smem_bytes=_sm75_smem, rules=_sm75_rules,
    sass_required=((r"\bHMMA\.", "HMMA"),
                   (r"\bLDG\.E\.128\b", "LDG.128")),
    sass_forbidden=((r"\bLDGSTS\b", "LDGSTS (cp.async; Turing has none)"),
                    (r"\b(LDL|STL)\b", "LDL/STL (local memory)")),
    description="FP16 WMMA m16n16k16, register-prefetch double buffer, padded smem",
    pipeline="{stages} K-tiles in flight: one computed from shared memory (2 buffers), {ahead} "
             "loaded into registers ahead of it (with 2, by two groups of warps in turn) and "
             "stored to the other buffer, one barrier per K-step",
    exports={("float16", "float32"): "zoo_hgemm_sm75", ("float16", "float16"): "zoo_hgemm_sm75_half"},
)

# The same source built with ZOO_CONV: conv2d as implicit GEMM, A tiles loaded from the NHWC
# input by addresses worked out from the geometry (zoo/conv.py; zoo::ConvGeometry).
SM75_CONV = replace(
    SM75_HGEMM,
    name="sm75_conv_wmma",
    entry={("float16", "float16"): "zoo_conv_sm75_f16out",
           ("float16", "float32"): "zoo_conv_sm75_f32out"},
    exports={}, extra_defines={"ZOO_CONV": 1}, op="conv",
    description="conv2d as implicit GEMM: A chunks loaded from the NHWC input by address, the sm75 WMMA pipeline",
)
