"""The sm_90a TMA + wgmma kernel (kernels/sm90/gemm_tma_wgmma.cu) and its TF32 variant: shared
memory, register split, TMA boxes, cluster rules and SASS."""

from __future__ import annotations

import ctypes
import math
from dataclasses import replace

from .. import configs as cfgs
from .. import cuda
from ..cuda import KERNELS_DIR
from .base import COLUMN_MAJOR_LAYOUTS, SCALE_BLOCK, KernelSpec


SM90_THREADS_PER_WARPGROUP = 128
SM90_PRODUCER_REGS = 40       # PRODUCER_REGS in kernels/sm90/gemm_tma_wgmma.cu
SM90_PRODUCER_REGS_THREE = 32  # ... beside three promoted consumers (PROMOTED_THREE), which take 160
TMA_SWIZZLE_COLS = 64         # 16-bit elements in one 128-byte swizzled row
SWAP_AB_ROWS = (8, 16, 32, 64)  # wgmma N of the swap-AB wrappers (WgmmaSwapAB): C rows per consumer


def _sm90_consumers(c: cfgs.TileConfig) -> int:
    """Each "warp tile" of an sm90 config is one consumer warpgroup's slice of a tile; ping-pong
    configs have two consumers whose slice is the whole tile."""
    return 2 if c.pingpong else c.warps


def _sm90_threads(c: cfgs.TileConfig) -> tuple[int, str]:
    n = _sm90_consumers(c)
    return SM90_THREADS_PER_WARPGROUP * (1 + n), f"128 x (1 producer + {n} consumer warpgroups)"


def _sm90_launch_registers(c: cfgs.TileConfig) -> int:
    """LAUNCH_REGS in the kernel: the register file split evenly, in multiples of 8."""
    return (65536 // _sm90_threads(c)[0]) // 8 * 8


def _sm90_promoted_three(c: cfgs.TileConfig) -> bool:
    """PROMOTED_THREE in the kernel: three promoted FP8 consumers taking turns."""
    return bool(c.promote) and _sm90_consumers(c) == 3


def _sm90_consumer_registers(c: cfgs.TileConfig) -> int:
    """CONSUMER_REGS in the kernel: what the producer's setmaxnreg.dec frees, shared out."""
    total = _sm90_launch_registers(c) * _sm90_threads(c)[0]
    producer = SM90_PRODUCER_REGS_THREE if _sm90_promoted_three(c) else SM90_PRODUCER_REGS
    free = (total - producer * SM90_THREADS_PER_WARPGROUP) // (_sm90_consumers(c) * SM90_THREADS_PER_WARPGROUP)
    return min(free // 8 * 8, 256)


class Divisor(ctypes.Structure):
    """zoo::Divisor (kernels/common/zoo_common.cuh): n / d as (umulhi(n, mul) + n) >> shift for
    0 <= n < 2^31 (Granlund and Montgomery, "Division by invariant integers using
    multiplication", 1994, the round-up method with shift = ceil(log2 d))."""
    _fields_ = [("d", ctypes.c_int), ("mul", ctypes.c_uint), ("shift", ctypes.c_int)]

    @classmethod
    def of(cls, d: int) -> "Divisor":
        if not 1 <= d < 2 ** 31:
            raise ValueError(f"a Divisor takes 1 <= d < 2^31, got {d}")
        shift = (d - 1).bit_length()
        return cls(d, (1 << (32 + shift)) // d - (1 << 32) + 1, shift)

    def div(self, n: int) -> int:
        """What the kernel computes, in 32-bit unsigned arithmetic."""
        return ((((n * self.mul) >> 32) + n) & 0xFFFFFFFF) >> self.shift


class UnitLayout(ctypes.Structure):
    """zoo_sm90::UnitLayout: how a one-GEMM launch's unit numbers decode, passed by value."""
    _fields_ = [("per_matrix", Divisor), ("splits", Divisor), ("per_group", Divisor),
                ("last_rows", Divisor), ("k_per_split", ctypes.c_int)]


def unit_layout(c: cfgs.TileConfig, m: int, n: int, k: int, splits: int) -> UnitLayout:
    """Same as plain_layout in the kernel, with the multipliers: units are (matrix, stack, K
    slice), stacks in groups of `group` stack rows (group_m / cluster_m)."""
    stacks_m, stacks_n = -(-m // (c.block_m * c.cluster_m)), -(-n // (c.block_n * c.cluster_n))
    group = max(1, c.group_m // c.cluster_m)
    k_tiles = -(-k // c.block_k)
    return UnitLayout(Divisor.of(stacks_m * stacks_n * splits), Divisor.of(splits), Divisor.of(group * stacks_n),
                      Divisor.of(stacks_m - (stacks_m - 1) // group * group), -(-k_tiles // splits))


SM90_EPILOGUE_BOXES = 2      # EPI_BOXES: C boxes of 64 rows x 128 B staged per consumer
SM90_EPILOGUE_ROWS = 64
SM90_MAX_CLUSTER = 8        # CTAs in a portable thread-block cluster (the kernel asserts it too)


def _sm90_smem_bytes(c: cfgs.TileConfig, in_bytes: int) -> int:
    """Same formula as SMEM_BYTES in kernels/sm90/gemm_tma_wgmma.cu: 1024 B of alignment
    slack, the ring, the consumers' C staging boxes, a full and an empty mbarrier per stage,
    16 B of split-K flags."""
    ring = c.stages * (c.block_m * c.block_k + c.block_k * c.block_n) * in_bytes
    staging = _sm90_consumers(c) * SM90_EPILOGUE_BOXES * SM90_EPILOGUE_ROWS * cuda.TMA_SWIZZLE_BYTES
    return 1024 + ring + staging + 2 * c.stages * 8 + 16


def _sm90_smem(c: cfgs.TileConfig) -> int:
    return _sm90_smem_bytes(c, 2)


def _sm90_rules(c: cfgs.TileConfig) -> list[str]:
    out = []
    if c.block_k != TMA_SWIZZLE_COLS:
        out.append(f"block_k {c.block_k} must be {TMA_SWIZZLE_COLS}: one 128-byte swizzled row of A per K-tile")
    accumulators = c.warp_m // 2 if c.swap_ab else c.warp_m // 64 * c.warp_n // 2
    return out + _sm90_tile_rules(c) + _sm90_register_rules(c, accumulators, 40, "fp32 accumulators")


def _sm90_tile_rules(c: cfgs.TileConfig) -> list[str]:
    """The tiling rules of every sm90 build whatever its element size: consumer slices,
    wgmma N, 128-byte B boxes, cluster shares."""
    out = []
    if c.swap_ab:
        # wgmma's M (64) runs along C's columns, its N (the warp tile's rows) along C's rows.
        if c.warp_n != TMA_SWIZZLE_COLS or c.warp_m not in SWAP_AB_ROWS or c.pingpong:
            out.append(f"a swap-AB consumer's slice is 8, 16, 32 or 64 rows x {TMA_SWIZZLE_COLS} columns of C "
                       f"(cooperative consumers): warp tile {c.warp_m}x{c.warp_n}"
                       + (", pingpong 1" if c.pingpong else ""))
    elif c.pingpong:
        if (c.warp_m, c.warp_n) != (c.block_m, c.block_n) or c.warp_m not in (64, 128):
            out.append(f"a ping-pong consumer owns the whole tile: warp tile {c.warp_m}x{c.warp_n} must be "
                       f"the block tile {c.block_m}x{c.block_n}, with block_m 64 or 128 (one or two wgmma m64)")
    elif c.warp_m not in (64, 128):
        out.append(f"warp_m {c.warp_m} must be 64 or 128: a consumer warpgroup issues one or two wgmma m64")
    if c.warp_n not in (64, 128, 192, 256) and not c.swap_ab:
        out.append(f"warp_n {c.warp_n} must be 64, 128, 192 or 256 (the wgmma N the kernel instantiates)")
    if c.block_n % TMA_SWIZZLE_COLS:
        out.append(f"block_n {c.block_n} must be a multiple of {TMA_SWIZZLE_COLS} (whole 128-byte B boxes)")
    # Each CTA of a cluster multicasts 1/cluster_n of A's rows and 1/cluster_m of B's K rows:
    # with clusters of at most 4 along a side, block_m (64s) and block_k 64, whole 8-row atoms.
    if c.cluster_size > SM90_MAX_CLUSTER:
        out.append(f"cluster {c.cluster_m}x{c.cluster_n} has more than {SM90_MAX_CLUSTER} CTAs (the portable cluster size)")
    if c.block_m > 256:
        out.append(f"block_m {c.block_m} > 256, the largest TMA box dimension")
    if (c.block_m // c.cluster_n) % 8:
        out.append(f"block_m {c.block_m} / cluster_n {c.cluster_n} is not whole 8-row swizzle atoms "
                   "(each CTA multicasts its share of A's rows)")
    return out


def _sm90_register_rules(c: cfgs.TileConfig, accumulators: int, others: int, what: str) -> list[str]:
    """Two consumer warpgroups (three promoted FP8 ones), whose registers hold `accumulators`
    plus `others`."""
    if _sm90_consumers(c) != 2 and not _sm90_promoted_three(c):
        # With 384 threads the block is launched at 168 registers; the producer frees 128 x 128
        # and the two consumers take exactly that. With 512 the producer keeps 32 and three
        # consumers take 160. Other splits are not tuned or tested.
        return [f"{_sm90_consumers(c)} consumer warpgroups; the kernel's register split assumes 2 "
                "(or 3 promoted FP8 ones)"]
    if _sm90_consumer_registers(c) < accumulators + others:
        return [f"{accumulators} {what} do not fit the consumers' {_sm90_consumer_registers(c)} registers"]
    return []


def _sm90_tma_boxes(c: cfgs.TileConfig, out_size: int) -> tuple[tuple[int, int], ...]:
    """TMA boxes (rows, cols) of A, B and C: a K-tile is one 128-byte swizzled row (block_k
    elements), so A's box is block_m rows of it and B's block_k rows of 128 bytes, each cut into
    the shares the CTAs of a cluster multicast (1/cluster_n of A's rows, 1/cluster_m of B's);
    C goes out in boxes of SM90_EPILOGUE_ROWS rows x 128 bytes (C_BOX_ROWS in the kernel), or
    for swap-AB of a consumer's rows when fewer (a box must not reach the next tile's rows)."""
    c_rows = min(c.warp_m, SM90_EPILOGUE_ROWS) if c.swap_ab else SM90_EPILOGUE_ROWS
    return ((c.block_m // c.cluster_n, c.block_k), (c.block_k // c.cluster_m, c.block_k),
            (c_rows, cuda.TMA_SWIZZLE_BYTES // out_size))


def _sm90_a_col_box(c: cfgs.TileConfig) -> tuple[int, int]:
    """(rows, cols) of A's boxes when A is read column-major (A^T: K rows, M cols): 64 columns
    (128 bytes) of a K-tile's rows, cut into the shares the CTAs of a cluster row multicast."""
    return c.block_k // c.cluster_n, TMA_SWIZZLE_COLS


def _sm90_b_col_box(c: cfgs.TileConfig) -> tuple[int, int]:
    """(rows, cols) of B's box when B is read column-major (B^T: N rows, K cols): block_n rows
    of one 128-byte K-tile, cut into the shares the CTAs of a cluster column multicast."""
    return c.block_n // c.cluster_m, c.block_k


def _sm90_bias_epilogue(c: cfgs.TileConfig) -> bool:
    """The kernel's BIAS_EPILOGUE: a consumer thread's accumulators (warp_m x warp_n over 128
    threads) at most 128; wider slices spill the bias loads, so the host adds it after."""
    return c.warp_m * c.warp_n // 128 <= 128


def _sm90_row_sums(c: cfgs.TileConfig) -> bool:
    """The kernel's ROW_SUMS builds: the slices the bias epilogue takes (at most 128
    accumulators a thread; 4 more a row block, and 128x192ppc2 spilled with two registers
    more), no swap-AB (A is not read column-major there), no FP8 promotion."""
    return _sm90_bias_epilogue(c) and not c.swap_ab and not c.promote


R2UR_WGMMA = "R2UR feeding a wgmma (descriptors in vector registers)"  # a sass_forbidden label
SM90_ROW_SUMS_BYTES = 256 + 128  # the kernel's ONES_BYTES: 256 B of ones on a 128-byte boundary


SM90_GEMM = KernelSpec(
    name="sm90_gemm_tma_wgmma",
    source=KERNELS_DIR / "sm90" / "gemm_tma_wgmma.cu",
    config_file=cfgs.CONFIGS_DIR / "sm90_gemm_tma_wgmma.yaml",
    min_cc=(9, 0), exact_cc=(9, 0), arch_specific=True,
    offline_archs=("sm_90a",), layouts=("row x row", *COLUMN_MAJOR_LAYOUTS),
    entry={("float16", "float16"): "zoo_gemm_sm90_f16_f16out",
           ("float16", "float32"): "zoo_gemm_sm90_f16_f32out",
           ("bfloat16", "bfloat16"): "zoo_gemm_sm90_bf16_bf16out",
           ("bfloat16", "float32"): "zoo_gemm_sm90_bf16_f32out"},
    aligned_rows=True, mma_shape=(64, 8, 16), stages=tuple(range(2, 17)),
    smem_bytes=_sm90_smem, rules=_sm90_rules,
    sass_required=((r"\bHGMMA\.", "HGMMA"), (r"\bUTMALDG\b", "UTMALDG"),
                   (r"\bSYNCS\.", "SYNCS (mbarrier)"), (r"\bUSETMAXREG\b", "USETMAXREG"),
                   (r"\bUTMASTG\b", "UTMASTG"),
                   # ready for programmatic dependent launch (KernelSpec.pdl): it must wait
                   (r"\bACQBULK\b", "ACQBULK (griddepcontrol.wait)")),
    sass_forbidden=((r"\b(LDL|STL)\b", "LDL/STL (local memory)"),
                    (r"\bHMMA\.", "HMMA (the legacy tensor-core path)"),
                    # split-K counts in with one acq_rel atomic: a __threadfence() on either side
                    # cost ~1 us per split launch (NOTES.md, "The split-K tail")
                    (r"\bMEMBAR\.SC\.GPU\b", "MEMBAR.SC.GPU (fence.sc.gpu)"),
                    # a wgmma whose descriptor was just moved over from a vector register (R2UR
                    # within 6 instructions, 2 lines each): the consumers' K loop worked out per
                    # thread what is warp-uniform (NOTES.md, "A warp-uniform warpgroup index");
                    # the FP8 swap tiles are let have it (_fp8_sass_allowed)
                    (r"\bR2UR\b[^\n]*\n(?:[^\n]*\n){0,11}[^\n]*\b[HQ]GMMA\.", R2UR_WGMMA)),
    description="TMA + mbarrier ring, warp-specialized producer/consumers, wgmma, persistent",
    thread_layout=_sm90_threads, launch_registers=_sm90_launch_registers, persistent=True,
    # pdl: they wait for the grid before them (ACQBULK above); registry.dependent_launch
    # says which launches overlap it (NOTES.md, "Programmatic dependent launch").
    cluster_sizes=(1, 2, 4), split_k=True, stream_k=True, pingpong=True, swap_ab=True, pdl=True, chains=True,
    bias_epilogue=_sm90_bias_epilogue, row_sums=_sm90_row_sums, row_sums_bytes=SM90_ROW_SUMS_BYTES,
    # Measured on an H100 (1 x 4096 x K and 16 x 1024 x 4096, forced slice counts; NOTES.md,
    # "The split-K tail"): a split launch ends ~2.6 us later than a whole one of the same
    # streaming time (the reduction itself ~1.3 of it: "Split-K's cost taken apart"), and one
    # CTA streams ~78 GB/s through its ~150-200 KiB ring.
    split_k_cost_us=2.6, stream_gbps_per_cta=78.0,
    exports={("float16", "float32"): "zoo_gemm_sm90", ("float16", "float16"): "zoo_gemm_sm90_half",
             ("bfloat16", "float32"): "zoo_gemm_sm90_bf16", ("bfloat16", "bfloat16"): "zoo_gemm_sm90_bf16_bf16"},
    pipeline="{stages}-stage TMA ring with full/empty mbarriers: the producer warpgroup runs up "
             "to {stages} K-tiles ahead of the two consumer warpgroups, across tiles",
    tma_boxes=_sm90_tma_boxes, unit_layout=unit_layout, a_col_box=_sm90_a_col_box,
    b_col_box=_sm90_b_col_box,
)

TF32_SWIZZLE_COLS = 32       # fp32 elements in one 128-byte swizzled row


def _tf32_smem(c: cfgs.TileConfig) -> int:
    return _sm90_smem_bytes(c, 4)


def _tf32_rules(c: cfgs.TileConfig) -> list[str]:
    out = []
    if c.block_k != TF32_SWIZZLE_COLS:
        out.append(f"block_k {c.block_k} must be {TF32_SWIZZLE_COLS}: one 128-byte swizzled row of fp32 A per K-tile")
    if c.warp_n != 64:
        out.append(f"warp_n {c.warp_n} must be 64: a consumer's wgmma m64 runs along N (the tile is transposed)")
    if c.warp_m != c.block_m or c.warp_m not in (128, 256):
        out.append(f"warp_m {c.warp_m} must equal block_m and be 128 or 256 (the wgmma N, along M)")
    return out + _sm90_register_rules(c, c.warp_m // 2, 56, "fp32 accumulators and 16 fragment registers")


# The same source built with ZOO_TF32: a variant of SM90_GEMM with its own tiles and signature.
SM90_TF32 = replace(
    SM90_GEMM,
    name="sm90_gemm_tf32",
    config_file=cfgs.CONFIGS_DIR / "sm90_gemm_tf32.yaml",
    entry={("float32", "float32"): "zoo_gemm_sm90_tf32"},
    mma_shape=(8, 64, 8), smem_bytes=_tf32_smem, rules=_tf32_rules,
    sass_required=((r"\bHGMMA\.\w+\.F32\.TF32\b", "HGMMA .TF32"),) + SM90_GEMM.sass_required[1:],
    description="TF32 wgmma on fp32 data: the sm_90a kernel computing C^T = B^T A^T, B from registers",
    cluster_sizes=(1,), exports={}, tf32=True, extra_defines={"ZOO_TF32": 1}, swap_ab=False, stream_k=False,
    layouts=("row x row",), a_col_box=None, b_col_box=None,
)


def _conv_rules(c: cfgs.TileConfig) -> list[str]:
    out = _sm90_rules(c)
    if c.cluster_size != 1:
        out.append(f"cluster {c.cluster_m}x{c.cluster_n} must be 1x1: a convolution's A tile is one im2col "
                   "load and its B tile one box of the weights, not multicast shares")
    return out


def _conv_tma_boxes(c: cfgs.TileConfig, out_size: int) -> tuple[tuple[int, int], ...]:
    """(rows, cols) of A's im2col box (block_m pixels x block_k channels), B's box of the
    weights (block_n output channels x block_k input channels: K-major) and C's boxes."""
    return ((c.block_m, c.block_k), (c.block_n, c.block_k), (SM90_EPILOGUE_ROWS, cuda.TMA_SWIZZLE_BYTES // out_size))


# The same source built with ZOO_CONV: a convolution as implicit GEMM whose A tiles TMA reads
# from the NHWC input in im2col mode (zoo/conv.py builds that map).
SM90_CONV = replace(
    SM90_GEMM,
    name="sm90_conv_tma_wgmma",
    config_file=cfgs.CONFIGS_DIR / "sm90_conv_tma_wgmma.yaml",
    entry={("float16", "float16"): "zoo_conv_sm90_f16_f16out",
           ("float16", "float32"): "zoo_conv_sm90_f16_f32out",
           ("bfloat16", "bfloat16"): "zoo_conv_sm90_bf16_bf16out",
           ("bfloat16", "float32"): "zoo_conv_sm90_bf16_f32out"},
    rules=_conv_rules, cluster_sizes=(1,), exports={}, extra_defines={"ZOO_CONV": 1, "ZOO_B_K_MAJOR": 1},
    swap_ab=False, stream_k=False,  # its entry point has no stream-K argument
    op="conv", tma_boxes=_conv_tma_boxes, layouts=("row x row",), a_col_box=None, b_col_box=None,
    sass_required=((r"\bUTMALDG\.4D\.IM2COL\b", "UTMALDG.4D.IM2COL (TMA im2col loads)"),) + SM90_GEMM.sass_required,
    description="conv2d as implicit GEMM: TMA im2col loads of the NHWC input, the sm_90a wgmma pipeline",
)


FP8_SWIZZLE_COLS = 128       # one-byte elements in one 128-byte swizzled row: an FP8 K-tile


def fp8_scale_bytes(c: cfgs.TileConfig) -> int:
    """The kernel's SCALE_BYTES: the blockwise build's slots of its scales, one a stage (sa of
    block_m rows, 16 B for sb)."""
    return c.stages * (c.block_m * 4 + 16) if c.block_scales else 0


def _fp8_smem(c: cfgs.TileConfig) -> int:
    return _sm90_smem_bytes(c, 1) + fp8_scale_bytes(c)


def _fp8_sass_allowed(c: cfgs.TileConfig) -> tuple[str, ...]:
    """The promoted swap tiles issue without turns, and ptxas then keeps their descriptors in
    vector registers: measured 1-7% faster than with turns and uniform descriptors (the
    kernel's TURNS; NOTES.md, "Swap tiles free of turns, measured: kept")."""
    return (R2UR_WGMMA,) if c.swap_ab and c.promote else ()


def _fp8_rules(c: cfgs.TileConfig) -> list[str]:
    out = []
    if c.block_k != FP8_SWIZZLE_COLS:
        out.append(f"block_k {c.block_k} must be {FP8_SWIZZLE_COLS}: one 128-byte swizzled row of e4m3 per K-tile "
                   "(and one K block of the blockwise scales)")
    step = math.gcd(c.warp_n, SCALE_BLOCK)  # a consumer's slice starts on a multiple of it inside a block
    if c.block_scales and SCALE_BLOCK % c.warp_n and (2 * step != SCALE_BLOCK or c.warp_n > SCALE_BLOCK + step):
        out.append(f"a blockwise consumer's {c.warp_n} columns may span more than two {SCALE_BLOCK}-wide blocks of "
                   f"B's scales: warp_n must divide {SCALE_BLOCK}, or start at 0 or {SCALE_BLOCK // 2} inside one and "
                   f"be at most {SCALE_BLOCK + SCALE_BLOCK // 2}")
    if c.block_scales and c.swap_ab:
        out.append("the blockwise recipe's build has no swap-AB tiles (its scales are applied by C rows)")
    accumulators = (c.warp_m // 2 if c.swap_ab else c.warp_m // 64 * c.warp_n // 2) * (2 if c.promote else 1)
    return out + _sm90_tile_rules(c) + _sm90_register_rules(
        c, accumulators, 32 if _sm90_promoted_three(c) else 40,
        "fp32 accumulators (twice, promoted)" if c.promote else "fp32 accumulators")


# The same source built with ZOO_FP8 (and ZOO_B_K_MAJOR): zoo.scaled_mm's e4m3 GEMM with
# float32 dequantization scales, torch._scaled_mm's recipes (zoo/fp8.py). Its own op: zoo.mm
# never selects it.
SM90_FP8 = replace(
    SM90_GEMM,
    name="sm90_scaled_fp8",
    config_file=cfgs.CONFIGS_DIR / "sm90_scaled_fp8.yaml",
    entry={("float8_e4m3fn", "bfloat16"): "zoo_scaled_sm90_e4m3_bf16out",
           ("float8_e4m3fn", "float16"): "zoo_scaled_sm90_e4m3_f16out",
           ("float8_e4m3fn", "float32"): "zoo_scaled_sm90_e4m3_f32out"},
    mma_shape=(64, 8, 32), smem_bytes=_fp8_smem, rules=_fp8_rules, sass_allowed=_fp8_sass_allowed,
    sass_required=((r"\bQGMMA\.\w+\.F32\.E4M3\.E4M3\b", "QGMMA .E4M3 (FP8 wgmma)"),) + SM90_GEMM.sass_required[1:],
    description="FP8 (e4m3) wgmma with dequantization scales; fp32 promotion of the partial sums in promote configs",
    op="scaled", layouts=("row x col",), a_col_box=None, exports={}, extra_defines={"ZOO_FP8": 1},
    swap_ab=True, pingpong=True, stream_k=False, chains=False, grouped=False, promote=True,
    pipeline="{stages}-stage TMA ring of 128-byte e4m3 K-tiles: the producer warpgroup runs up to {stages} "
             "K-tiles ahead of its consumer warpgroups",
)
