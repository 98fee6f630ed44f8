"""The sm_75 ldmatrix + mma.sync kernel (kernels/sm75/hgemm_mma.cu): its shared-memory formula,
rules and SASS signature, and the Python twin of its swizzle (tests replay the kernel's
address math with it)."""

from __future__ import annotations

from .. import configs as cfgs
from ..cuda import KERNELS_DIR
from .base import KernelSpec, epilogue_bytes, tile_copy_rules


def _sm75_mma_smem(c: cfgs.TileConfig) -> int:
    """Same formula as SMEM_BYTES in kernels/sm75/hgemm_mma.cu (a static_assert ties them):
    two unpadded buffers of the A and B tiles, or the epilogue's fp32 strips if larger (3
    stages add a register slot, not a buffer)."""
    pipe = 2 * (c.block_m * c.block_k + c.block_k * c.block_n) * 2
    return max(pipe, epilogue_bytes(c))


def _sm75_mma_rules(c: cfgs.TileConfig) -> list[str]:
    out = tile_copy_rules(c, "64- or 128-byte swizzled A rows")
    if c.warp_m % 32:
        out.append(f"warp_m {c.warp_m} must be a multiple of 32 (one ldmatrix.x4 loads two m16 A tiles)")
    if c.warp_n % 32:
        out.append(f"warp_n {c.warp_n} must be a multiple of 32 (one ldmatrix.x4.trans loads four n8 B tiles)")
    if out:  # the pass arithmetic below assumes whole chunks per thread
        return out
    for name, cols in (("A", c.block_k), ("B", c.block_n)):
        chunks = cols // 8
        if c.threads % chunks or (c.threads // chunks) % 8:
            out.append(f"{c.threads} threads do not copy whole {name} rows in passes of a multiple of "
                       "the 8-row swizzle period")
    return out


def swizzle(row: int, col: int, row_chunks: int) -> int:
    """Element offset of (row, col) in a tile of `row_chunks` 16-byte chunks per row: the
    kernel's swizzle<ROW_CHUNKS>() (chunk XOR row % 8, or (row / 2) % 4 for 64-byte rows)."""
    x = row % 8 if row_chunks >= 8 else (row // 2) % 4
    return row * row_chunks * 8 + ((col // 8) ^ x) * 8 + col % 8


SM75_HMMA = KernelSpec(
    name="sm75_hgemm_mma",
    source=KERNELS_DIR / "sm75" / "hgemm_mma.cu",
    config_file=cfgs.CONFIGS_DIR / "sm75_hgemm_mma.yaml",
    min_cc=(7, 5), exact_cc=None, arch_specific=False,
    offline_archs=("sm_75", "sm_80", "sm_90a"), layouts=("row x row",),
    entry={("float16", "float16"): "zoo_hgemm_sm75_mma_f16out",
           ("float16", "float32"): "zoo_hgemm_sm75_mma_f32out"},
    aligned_rows=False, mma_shape=(16, 8, 8), stages=(2, 3),
    smem_bytes=_sm75_mma_smem, rules=_sm75_mma_rules,
    sass_required=((r"\bLDSM\.16\.M88\.4\b", "LDSM (ldmatrix.x4)"),
                   (r"\bLDSM\.16\.MT88\.4\b", "LDSM.MT (ldmatrix.x4.trans)"),
                   (r"\bHMMA\.(1688|16816)\.F32\b", "HMMA.1688 (sm_75: mma.sync m16n8k8; pairs of them "
                    "as HMMA.16816 on sm_80+)"),
                   (r"\bLDG\.E\.128\b", "LDG.128")),
    sass_forbidden=((r"\bLDGSTS\b", "LDGSTS (cp.async; Turing has none)"),
                    (r"\b(LDL|STL)\b", "LDL/STL (local memory)")),
    description="FP16 ldmatrix + mma.sync m16n8k8, register-prefetch double buffer, XOR-swizzled smem",
    pipeline="{stages} K-tiles in flight: one computed from shared memory (2 swizzled buffers; "
             "fragments double-buffered per k8 step on sm_75, one k16 set on sm_80+), {ahead} "
             "loaded into registers ahead and stored to the other buffer, one barrier per K-step",
    exports={("float16", "float32"): "zoo_hgemm_sm75_mma", ("float16", "float16"): "zoo_hgemm_sm75_mma_half"},
)
