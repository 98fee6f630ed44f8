"""The registry: which kernels exist, where each may run, and which one a problem gets.

Each KernelSpec names its source, the compute capabilities it runs on, its dtypes and
layouts, its configs (configs/*.yaml), its shared-memory formula, and the SASS that defines
it. `select(limits, problem)` picks the best eligible kernel and config.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from . import configs as cfgs
from .arch import ArchLimits, device_arch
from . import cuda
from .cuda import KERNELS_DIR, ZooError
from .sass import occupancy

MIN_CC = (7, 5)  # the oldest kernel of the zoo needs Turing tensor cores


@dataclass(frozen=True)
class Problem:
    m: int
    n: int
    k: int
    dtype: str = "float16"
    out_dtype: str = "float16"
    tf32: bool = False     # fp32 inputs may be rounded to TF32 (torch's allow_tf32)
    ldb: int = 0           # B's row stride in elements (0: n, packed rows)

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k


ELEMENT_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4}


@dataclass(frozen=True)
class KernelSpec:
    name: str
    source: Path
    config_file: Path
    min_cc: tuple[int, int]
    exact_cc: tuple[int, int] | None     # arch-specific code (sm_90a) runs on one CC only
    arch_specific: bool                  # compile for sm_XYa instead of sm_XY
    offline_archs: tuple[str, ...]       # targets `zoo build --arch` compiles it for
    layouts: tuple[str, ...]             # "row x row": A (M,K) and B (K,N) both row-major
    entry: dict[tuple[str, str], str]    # (input dtype, output dtype) -> extern "C" name
    aligned_rows: bool                   # needs 16-byte-aligned rows (cp.async, TMA); else copied
    mma_shape: tuple[int, int, int]
    stages: tuple[int, ...]
    smem_bytes: Callable[[cfgs.TileConfig], int]
    rules: Callable[[cfgs.TileConfig], list[str]]
    sass_required: tuple[tuple[str, str], ...]   # (regex, what it proves)
    sass_forbidden: tuple[tuple[str, str], ...]
    description: str = ""
    # (threads per block, how they split) for a config's tiling; warps of WARP_M x WARP_N here.
    thread_layout: Callable[[cfgs.TileConfig], tuple[int, str]] = lambda c: (32 * c.warps, f"32 x {c.warps} warps")
    # Registers per thread the block is launched with, when the kernel fixes it (setmaxnreg);
    # None: assume the arch's per-thread cap until the cubin says otherwise.
    launch_registers: Callable[[cfgs.TileConfig], int] | None = None
    persistent: bool = False             # a grid of as many blocks as fit at once, looping over tiles
    cluster_sizes: tuple[int, ...] = (1,)  # thread-block cluster sizes it supports (along M, and along N)
    pingpong: bool = False               # configs may set pingpong: consumers take whole tiles in turn
    split_k: bool = False                # can cut K into units reduced through a workspace
    pipeline: str = ""                   # how K-tiles are staged; {stages} and {ahead} filled per config
    # Host launchers of an nvcc build (zoo export): (input dtype, output dtype) -> extern "C"
    # int fn(const A*, const B*, C*, int M, int N, int K, cudaStream_t). Empty: none yet.
    exports: dict[tuple[str, str], str] = field(default_factory=dict)
    # TMA boxes (rows, cols) of A, B and C for a config and C's element size: the kernel
    # reads A and B through tensor maps, and stores C through one when C's rows allow it.
    tma_boxes: Callable[[cfgs.TileConfig, int], tuple[tuple[int, int], ...]] | None = None
    tf32: bool = False                   # rounds fp32 inputs to TF32: only where the problem allows it
    extra_defines: dict[str, int] = field(default_factory=dict)  # -D values that select a variant

    @property
    def dtypes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(i for i, _ in self.entry))

    def supports(self, problem: "Problem") -> bool:
        return (problem.dtype, problem.out_dtype) in self.entry and (problem.tf32 or not self.tf32)

    @functools.cached_property
    def configs(self) -> tuple[cfgs.TileConfig, ...]:
        return cfgs.load(self.config_file)

    def config(self, name: str) -> cfgs.TileConfig:
        for c in self.configs:
            if c.name == name:
                return c
        raise ZooError(f"{self.name} has no config {name!r}; it has: "
                       + ", ".join(c.name for c in self.configs))

    def runs_on(self, cc: tuple[int, int]) -> bool:
        return cc == self.exact_cc if self.exact_cc else cc >= self.min_cc

    def eligible_ccs(self) -> str:
        if self.exact_cc:
            return f"{self.exact_cc[0]}.{self.exact_cc[1]} only"
        return f">= {self.min_cc[0]}.{self.min_cc[1]}"

    def compile_arch(self, cc: tuple[int, int]) -> str:
        return device_arch(cc, self.arch_specific)

    def defines(self, c: cfgs.TileConfig) -> dict[str, int]:
        return {"ZOO_BM": c.block_m, "ZOO_BN": c.block_n, "ZOO_BK": c.block_k,
                "ZOO_WARP_M": c.warp_m, "ZOO_WARP_N": c.warp_n, "ZOO_STAGES": c.stages,
                "ZOO_GROUP_M": c.group_m, "ZOO_CLUSTER_M": c.cluster_m, "ZOO_CLUSTER_N": c.cluster_n,
                "ZOO_SMEM_BYTES": self.smem_bytes(c), **({"ZOO_PINGPONG": 1} if c.pingpong else {}),
                **self.extra_defines}

    def grid(self, c: cfgs.TileConfig, m: int, n: int, resident_clusters: int,
             splits: int = 1, batch: int = 1) -> tuple[int, int, int]:
        """One block per tile; a persistent kernel gets at most as many clusters as can be
        resident at once, each walking units (stacks of cluster_m x cluster_n tiles, x splits
        of K, x the matrices of a batch)."""
        units = stacks(c, m, n) * splits * batch if self.persistent else c.tiles(m, n)
        return self.grid_for_units(c, units, resident_clusters)

    def grid_for_units(self, c: cfgs.TileConfig, units: int, resident_clusters: int) -> tuple[int, int, int]:
        """The grid for `units` of work: a block each, or for a persistent kernel as many
        clusters as are resident at once (each walks units until none are left)."""
        return ((min(units, resident_clusters) * c.cluster_size) if self.persistent else units, 1, 1)


def stacks(c: cfgs.TileConfig, m: int, n: int) -> int:
    """Units of work of a persistent kernel without split-K: stacks of cluster_m x cluster_n
    tiles (one per CTA of a cluster)."""
    return -(-m // (c.block_m * c.cluster_m)) * -(-n // (c.block_n * c.cluster_n))


MIN_SPLIT_K_TILES = 8   # a K slice of at least 8 K-tiles keeps the TMA ring busy
MAX_SPLITS = 8


def split_k(spec: KernelSpec, c: cfgs.TileConfig, m: int, n: int, k: int, resident_clusters: int,
            batch: int = 1) -> int:
    """How many slices of K a persistent kernel cuts each tile into: 1 when the tiles (of all
    `batch` matrices) fill the resident clusters; else enough units to fill them, each at
    least MIN_SPLIT_K_TILES deep (no empty slice: the count is recomputed from the slice depth)."""
    units = stacks(c, m, n) * batch
    if not spec.split_k or units >= resident_clusters:
        return 1
    k_tiles = -(-k // c.block_k)
    splits = min(resident_clusters // units, k_tiles // MIN_SPLIT_K_TILES, MAX_SPLITS)
    if splits <= 1:
        return 1
    per = -(-k_tiles // splits)
    return -(-k_tiles // per)


# ----------------------------------------------------------------------------- shared rules

def _epilogue_bytes(c: cfgs.TileConfig) -> int:
    """fp32 strips, 16 rows x (warp_n + 8) per warp: zoo::store_strip in kernels/common."""
    return c.warps * 16 * (c.warp_n + 8) * 4


def _tile_copy_rules(c: cfgs.TileConfig, why_block_k: str) -> list[str]:
    """What both kernels' 16-byte tile copies need: whole chunks per thread, BK of 32 or 64,
    and whole 128-byte (64-element) B rows."""
    out = []
    if c.block_k not in (32, 64):
        out.append(f"block_k {c.block_k} must be 32 or 64 ({why_block_k})")
    if c.block_n % 64:
        out.append(f"block_n {c.block_n} must be a multiple of 64 (whole 128-byte B rows)")
    for name, rows, cols in (("A", c.block_m, c.block_k), ("B", c.block_k, c.block_n)):
        if (rows * cols // 8) % c.threads:
            out.append(f"the {name} tile's {rows * cols // 8} 16-byte chunks do not split evenly over {c.threads} threads")
    return out


# ----------------------------------------------------------------------------- sm_75

def _sm75_smem(c: cfgs.TileConfig) -> int:
    """Same formula as SMEM_BYTES in kernels/sm75/hgemm_wmma.cu (a static_assert ties them)."""
    pad = 8
    pipe = 2 * (c.block_m * (c.block_k + pad) + c.block_k * (c.block_n + pad)) * 2
    return max(pipe, _epilogue_bytes(c))


def _sm75_rules(c: cfgs.TileConfig) -> list[str]:
    return _tile_copy_rules(c, "the conflict-free A store order")


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

# ----------------------------------------------------------------------------- sm_80

def _sm80_smem(c: cfgs.TileConfig) -> int:
    """Same formula as SMEM_BYTES in kernels/sm80/gemm_mma_multistage.cu."""
    pipe = c.stages * (c.block_m * c.block_k + c.block_k * c.block_n) * 2
    return max(pipe, _epilogue_bytes(c))


def _sm80_rules(c: cfgs.TileConfig) -> list[str]:
    out = _tile_copy_rules(c, "64- or 128-byte swizzled A rows")
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

# ----------------------------------------------------------------------------- sm_90a

SM90_THREADS_PER_WARPGROUP = 128
SM90_PRODUCER_REGS = 40       # PRODUCER_REGS in kernels/sm90/gemm_tma_wgmma.cu
TMA_SWIZZLE_COLS = 64         # 16-bit elements in one 128-byte swizzled row


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


def _sm90_consumer_registers(c: cfgs.TileConfig) -> int:
    """CONSUMER_REGS in the kernel: what the producer's setmaxnreg.dec frees, shared out."""
    total = _sm90_launch_registers(c) * _sm90_threads(c)[0]
    free = (total - SM90_PRODUCER_REGS * SM90_THREADS_PER_WARPGROUP) // (_sm90_consumers(c) * SM90_THREADS_PER_WARPGROUP)
    return min(free // 8 * 8, 256)


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
    if c.pingpong:
        if (c.warp_m, c.warp_n) != (c.block_m, c.block_n) or c.warp_m not in (64, 128):
            out.append(f"a ping-pong consumer owns the whole tile: warp tile {c.warp_m}x{c.warp_n} must be "
                       f"the block tile {c.block_m}x{c.block_n}, with block_m 64 or 128 (one or two wgmma m64)")
    elif c.warp_m not in (64, 128):
        out.append(f"warp_m {c.warp_m} must be 64 or 128: a consumer warpgroup issues one or two wgmma m64")
    if c.warp_n not in (128, 192, 256):
        out.append(f"warp_n {c.warp_n} must be 128, 192 or 256 (the wgmma N the kernel instantiates)")
    if c.block_n % TMA_SWIZZLE_COLS:
        out.append(f"block_n {c.block_n} must be a multiple of {TMA_SWIZZLE_COLS} (whole 128-byte B boxes)")
    # Each CTA of a cluster multicasts 1/cluster_n of A's rows and 1/cluster_m of B's K rows:
    # with clusters of at most 4 along a side, block_m (64s) and block_k 64, whole 8-row atoms.
    if c.cluster_size > SM90_MAX_CLUSTER:
        out.append(f"cluster {c.cluster_m}x{c.cluster_n} has more than {SM90_MAX_CLUSTER} CTAs (the portable cluster size)")
    if c.block_m > 256:
        out.append(f"block_m {c.block_m} > 256, the largest TMA box dimension")
    return out + _sm90_register_rules(c, c.warp_m // 64 * c.warp_n // 2, 40, "fp32 accumulators")


def _sm90_register_rules(c: cfgs.TileConfig, accumulators: int, others: int, what: str) -> list[str]:
    """Two consumer warpgroups, whose registers hold `accumulators` plus `others`."""
    if _sm90_consumers(c) != 2:
        # With 384 threads the block is launched at 168 registers; the producer frees 128 x 128
        # and the two consumers take exactly that. Other splits are not tuned or tested.
        return [f"{_sm90_consumers(c)} consumer warpgroups; the kernel's register split assumes 2"]
    if _sm90_consumer_registers(c) < accumulators + others:
        return [f"{accumulators} {what} do not fit the consumers' {_sm90_consumer_registers(c)} registers"]
    return []


def _sm90_tma_boxes(c: cfgs.TileConfig, out_size: int) -> tuple[tuple[int, int], ...]:
    """TMA boxes (rows, cols) of A, B and C: a K-tile is one 128-byte swizzled row (block_k
    elements), so A's box is block_m rows of it and B's block_k rows of 128 bytes, each cut into
    the shares the CTAs of a cluster multicast (1/cluster_n of A's rows, 1/cluster_m of B's);
    C goes out in boxes of SM90_EPILOGUE_ROWS rows x 128 bytes."""
    return ((c.block_m // c.cluster_n, c.block_k), (c.block_k // c.cluster_m, c.block_k),
            (SM90_EPILOGUE_ROWS, cuda.TMA_SWIZZLE_BYTES // out_size))


SM90_GEMM = KernelSpec(
    name="sm90_gemm_tma_wgmma",
    source=KERNELS_DIR / "sm90" / "gemm_tma_wgmma.cu",
    config_file=cfgs.CONFIGS_DIR / "sm90_gemm_tma_wgmma.yaml",
    min_cc=(9, 0), exact_cc=(9, 0), arch_specific=True,
    offline_archs=("sm_90a",), layouts=("row x row",),
    entry={("float16", "float16"): "zoo_gemm_sm90_f16_f16out",
           ("float16", "float32"): "zoo_gemm_sm90_f16_f32out",
           ("bfloat16", "bfloat16"): "zoo_gemm_sm90_bf16_bf16out",
           ("bfloat16", "float32"): "zoo_gemm_sm90_bf16_f32out"},
    aligned_rows=True, mma_shape=(64, 8, 16), stages=tuple(range(2, 9)),
    smem_bytes=_sm90_smem, rules=_sm90_rules,
    sass_required=((r"\bHGMMA\.", "HGMMA"), (r"\bUTMALDG\b", "UTMALDG"),
                   (r"\bSYNCS\.", "SYNCS (mbarrier)"), (r"\bUSETMAXREG\b", "USETMAXREG"),
                   (r"\bUTMASTG\b", "UTMASTG")),
    sass_forbidden=((r"\b(LDL|STL)\b", "LDL/STL (local memory)"),
                    (r"\bHMMA\.", "HMMA (the legacy tensor-core path)")),
    description="TMA + mbarrier ring, warp-specialized producer/consumers, wgmma, persistent",
    thread_layout=_sm90_threads, launch_registers=_sm90_launch_registers, persistent=True,
    cluster_sizes=(1, 2, 4), split_k=True, pingpong=True,
    exports={("float16", "float32"): "zoo_gemm_sm90", ("float16", "float16"): "zoo_gemm_sm90_half",
             ("bfloat16", "float32"): "zoo_gemm_sm90_bf16", ("bfloat16", "bfloat16"): "zoo_gemm_sm90_bf16_bf16"},
    pipeline="{stages}-stage TMA ring with full/empty mbarriers: the producer warpgroup runs up "
             "to {stages} K-tiles ahead of the two consumer warpgroups, across tiles",
    tma_boxes=_sm90_tma_boxes,
)

# ----------------------------------------------------------------------------- fp32: SIMT and TF32

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
    cluster_sizes=(1,), exports={}, tf32=True, extra_defines={"ZOO_TF32": 1},
)

KERNELS: tuple[KernelSpec, ...] = (SM75_HGEMM, SM80_GEMM, SM90_GEMM, SM75_SGEMM, SM90_TF32)


def offline_archs() -> list[str]:
    """Every offline build target some kernel names, oldest first (the CI matrix)."""
    return sorted({a for k in KERNELS for a in k.offline_archs})


def kernel(name: str) -> KernelSpec:
    for k in KERNELS:
        if k.name == name:
            return k
    raise ZooError(f"unknown kernel {name!r}; registered: {', '.join(k.name for k in KERNELS)}")


def check_cc(cc: tuple[int, int]) -> None:
    if tuple(cc) < MIN_CC:
        raise ZooError(f"compute capability {cc[0]}.{cc[1]} is below {MIN_CC[0]}.{MIN_CC[1]}: "
                       "the zoo's kernels need Turing (sm_75) tensor cores or newer")


def eligible(cc: tuple[int, int], problem: Problem | None = None) -> list[KernelSpec]:
    """Kernels that run on `cc` (and support the problem's dtypes), newest arch first."""
    check_cc(cc)
    found = [k for k in KERNELS if k.runs_on(cc) and (problem is None or k.supports(problem))]
    return sorted(found, key=lambda k: (k.exact_cc or k.min_cc), reverse=True)


MIN_RESIDENT_WARPS = 8  # fewer warps per SM leave the register-prefetch pipeline's latency exposed
WAVE_SLACK = 0.25  # later configs are less efficient per tile (measured): one must save this much


def resident_blocks(spec: KernelSpec, cfg: cfgs.TileConfig, limits: ArchLimits) -> int:
    """Blocks per SM the config keeps resident, estimated before compiling: registers are
    the kernel's launch budget, else the per-thread cap (the 64x64-warp-tile kernels use
    230-250 of 255)."""
    regs = spec.launch_registers(cfg) if spec.launch_registers else limits.max_regs_per_thread
    return occupancy(limits, cfg.threads, regs, spec.smem_bytes(cfg)).blocks_per_sm


def resident_warps(spec: KernelSpec, cfg: cfgs.TileConfig, limits: ArchLimits) -> int:
    return resident_blocks(spec, cfg, limits) * cfg.threads // 32


def wave_cost(spec: KernelSpec, cfg: cfgs.TileConfig, limits: ArchLimits, problem: Problem,
              tiles: int | None = None) -> int:
    """Tile area one SM works through, waves included: ceil(tiles / resident slots) waves of
    min(resident blocks, tiles per SM) tiles. Equal for configs that fill the GPU equally;
    larger for a tile that leaves SMs idle in its last wave or in a short grid. `tiles`
    overrides the problem's own count (a grouped launch: the sum over its problems)."""
    blocks = max(resident_blocks(spec, cfg, limits), 1)
    tiles = cfg.tiles(problem.m, problem.n) if tiles is None else tiles
    waves = -(-tiles // (limits.sm_count * blocks))
    per_sm = min(blocks, -(-tiles // limits.sm_count))
    return waves * per_sm * cfg.block_m * cfg.block_n


def pick_config(spec: KernelSpec, limits: ArchLimits, problem: Problem,
                group: tuple[Problem, ...] = ()) -> cfgs.TileConfig:
    """The configs file lists configs best first (measured; NOTES.md). Among those that fit the
    arch and keep at least MIN_RESIDENT_WARPS warps per SM (all valid ones if none does), take
    the first whose wave cost is within WAVE_SLACK of the cheapest: a small problem gets the
    tile that spreads it over the most SMs, a large one the most efficient tile. For a grouped
    launch, `group` holds all its problems and their tiles are counted together. One GEMM whose
    B rows start off 32-byte sectors gets the chosen tile's 2-CTA twin (b_rows_off_sectors)."""
    valid = [c for c in spec.configs if not cfgs.problems(c, spec, limits)]
    if not valid:
        raise ZooError(f"no config of {spec.name} fits {limits.part} ({limits.arch})")
    preferred = [c for c in valid if resident_warps(spec, c, limits) >= MIN_RESIDENT_WARPS] or valid
    costs = {c: wave_cost(spec, c, limits, problem, sum(c.tiles(p.m, p.n) for p in group) if group else None)
             for c in preferred}
    cheapest = min(costs.values())
    chosen = next(c for c in preferred if costs[c] <= cheapest * (1 + WAVE_SLACK))
    if spec.tma_boxes and not group and b_rows_off_sectors(problem) and \
            chosen.tiles(problem.m, problem.n) >= limits.sm_count:
        return next((c for c in valid if c.cluster_m == 2 and c.cluster_n == 1 and
                     replace(c, name=chosen.name, cluster_m=chosen.cluster_m) == chosen), chosen)
    return chosen


def b_rows_off_sectors(problem: Problem) -> bool:
    """Whether B's rows (at least a 128-byte TMA box row wide) start off 32-byte sectors: TMA
    reads them slowly, unless the two CTAs of a cluster share each B tile and load half of it
    each. On an H100, 3000^3 fp16 ran at 63-65% of torch.mm with 128x192pp and 85-88% in
    2-CTA clusters; so pick_config takes a config's cluster twin for one GEMM (not a group)
    whose tiles fill a wave or more."""
    row_bytes = problem.n * ELEMENT_BYTES[problem.dtype]
    return row_bytes >= cuda.TMA_SWIZZLE_BYTES and \
        (problem.ldb or problem.n) * ELEMENT_BYTES[problem.dtype] % cuda.TMA_SECTOR_BYTES != 0


def select(limits: ArchLimits, problem: Problem, *, kernel_name: str | None = None,
           config_name: str | None = None,
           group: tuple[Problem, ...] = ()) -> tuple[KernelSpec, cfgs.TileConfig]:
    """The kernel and config for `problem` on the device described by `limits` (for a grouped
    launch, `problem` gives the dtypes and `group` all the problems)."""
    check_cc(limits.cc)
    if kernel_name:
        spec = kernel(kernel_name)
        if not spec.runs_on(limits.cc):
            raise ZooError(f"{spec.name} runs on CC {spec.eligible_ccs()}; this device is "
                           f"{limits.cc[0]}.{limits.cc[1]} ({limits.part})")
        if spec.tf32 and not problem.tf32 and (problem.dtype, problem.out_dtype) in spec.entry:
            raise ZooError(f"{spec.name} rounds fp32 inputs to TF32; allow it (zoo.mm(..., allow_tf32=True), "
                           "torch.backends.cuda.matmul.allow_tf32, or --tf32) or leave the kernel to the zoo")
        if not spec.supports(problem):
            pairs = ", ".join(f"{i} -> {o}" for i, o in spec.entry)
            raise ZooError(f"{spec.name} computes {pairs}, not {problem.dtype} -> {problem.out_dtype}")
    else:
        candidates = eligible(limits.cc, problem)
        if not candidates:
            raise ZooError(f"no kernel for {problem.dtype} -> {problem.out_dtype} on CC "
                           f"{limits.cc[0]}.{limits.cc[1]}")
        spec = candidates[0]
    if config_name:
        return spec, cfgs.validate(spec.config(config_name), spec, limits)
    return spec, pick_config(spec, limits, problem, group)
