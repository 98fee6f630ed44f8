"""The fp32 SIMT kernel (kernels/sm75/sgemm_simt.cu): register tile, shared memory, launch bound."""

from __future__ import annotations

from .. import configs as cfgs
from ..cuda import KERNELS_DIR
from .base import KernelSpec


SIMT_LANE_COLS = 8           # TN in kernels/sm75/sgemm_simt.cu: a lane's 8 columns (two float4s)
SIMT_REGS_BEYOND_ACC = 104   # ZOO_SIMT_REGS_BEYOND_ACC there: its register cap is the accumulators plus this


def _simt_lane_rows(c: cfgs.TileConfig) -> int:
    """TM: rows of a lane's register tile, for a warp of (32 / lanes per row) x (warp_n / 8) lanes."""
    lanes_n = max(c.warp_n // SIMT_LANE_COLS, 1)
    return c.warp_m // max(32 // lanes_n, 1)


def _simt_smem(c: cfgs.TileConfig) -> int:
    """Same formula as SMEM_BYTES in kernels/sm75/sgemm_simt.cu: two buffers of As and Bs."""
    return 2 * c.block_k * (c.block_m + c.block_n) * 4


def _simt_registers(c: cfgs.TileConfig) -> int:
    """The kernel's launch bound: accumulators + SIMT_REGS_BEYOND_ACC, rounded to whole blocks."""
    blocks = max(1, 65536 // ((_simt_lane_rows(c) * SIMT_LANE_COLS + SIMT_REGS_BEYOND_ACC) * c.threads))
    return min(255, 65536 // (blocks * c.threads) // 8 * 8)


def _simt_rules(c: cfgs.TileConfig) -> list[str]:
    out = []
    lanes_n = c.warp_n // SIMT_LANE_COLS
    if c.warp_n % SIMT_LANE_COLS or lanes_n not in (1, 2, 4, 8):
        out.append(f"warp_n {c.warp_n} must be 8, 16, 32 or 64: 8 columns per lane, 1-8 lanes per row")
    elif c.warp_m % (32 // lanes_n) or _simt_lane_rows(c) not in (4, 8, 12, 16):
        out.append(f"warp tile {c.warp_m}x{c.warp_n} gives lanes {c.warp_m * c.warp_n // 32} outputs; "
                   "each must hold 4, 8, 12 or 16 rows of 8")
    if c.block_k not in (8, 16):
        out.append(f"block_k {c.block_k} must be 8 or 16 (the A swizzle spreads 16 or 8 rows per k group)")
    if c.block_m % 32:
        out.append(f"block_m {c.block_m} must be a multiple of 32 (the A swizzle works in 32-row groups)")
    for name, count in (("A", c.block_m * c.block_k // 4), ("B", c.block_k * c.block_n // 4)):
        if count % c.threads:
            out.append(f"the {name} tile's {count} float4s do not split evenly over {c.threads} threads")
    return out


SM75_SGEMM = KernelSpec(
    name="sm75_sgemm_simt",
    source=KERNELS_DIR / "sm75" / "sgemm_simt.cu",
    config_file=cfgs.CONFIGS_DIR / "sm75_sgemm_simt.yaml",
    min_cc=(7, 5), exact_cc=None, arch_specific=False,
    offline_archs=("sm_75", "sm_80", "sm_90a"), layouts=("row x row",),
    entry={("float32", "float32"): "zoo_sgemm_simt"},
    aligned_rows=False, mma_shape=(8, 8, 4), stages=(2,),
    smem_bytes=_simt_smem, rules=_simt_rules,
    sass_required=((r"\bFFMA\b", "FFMA"), (r"\bLDS(\.U)?\.128\b", "LDS.128"),
                   (r"\bLDG\.E\.128\b", "LDG.128")),
    sass_forbidden=((r"\b(HMMA|HGMMA)\.", "tensor-core MMA (this is the full-precision path)"),
                    (r"\b(LDL|STL)\b", "LDL/STL (local memory)")),
    description="FP32 SIMT (FFMA), 8-16 x 8 per lane, transposed+swizzled A, register-prefetch double buffer",
    launch_registers=_simt_registers,
    pipeline="{stages} shared-memory buffers + 1 register stage: the next K-tile is loaded into "
             "registers during this one's FFMAs, stored to the other buffer, one barrier per K-tile",
)
