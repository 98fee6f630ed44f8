"""What every kernel spec shares: the KernelSpec record (a kernel family's facts: source,
eligible CCs, dtypes, configs, shared-memory formula, rules, SASS signature), the unit count of
a persistent grid, and the rules two or more families have in common. Each family's own facts
live in a module of its own beside this one; zoo/registry.py holds only the selection policy."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .. import configs as cfgs
from ..arch import device_arch
from ..cuda import ZooError

ELEMENT_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float8_e4m3fn": 1}
SCALE_BLOCK = 128  # the blockwise FP8 recipe's blocks along K and N (the kernel's SCALE_BLOCK)


@dataclass(frozen=True)
class Problem:
    """One GEMM as the registry chooses for it: its sizes, dtypes and B's row stride."""
    m: int
    n: int
    k: int
    dtype: str = "float16"
    out_dtype: str = "float16"
    tf32: bool = False     # fp32 inputs may be rounded to TF32 (torch's allow_tf32)
    ldb: int = 0           # B's row stride in elements (0: n, packed rows)
    b_col: bool = False    # B is read column-major in place (B^T row-major: a Linear's weight W)
    promote: bool = False  # a scaled FP8 GEMM whose partial sums must be promoted to fp32 (KernelSpec.promote)
    block: bool = False    # a blockwise-scaled FP8 GEMM: served by the configs with block_scales: 1

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k
COLUMN_MAJOR_LAYOUTS = ("row x col", "col x row", "col x col")


def layout(a_col: bool, b_col: bool) -> str:
    """The name of an operand layout (KernelSpec.layouts): "row x row", "col x row", ..."""
    return f"{'col' if a_col else 'row'} x {'col' if b_col else 'row'}"


@dataclass(frozen=True)
class KernelSpec:
    name: str
    source: Path
    config_file: Path
    min_cc: tuple[int, int]
    exact_cc: tuple[int, int] | None     # arch-specific code (sm_90a) runs on one CC only
    arch_specific: bool                  # compile for sm_XYa instead of sm_XY
    offline_archs: tuple[str, ...]       # targets `zoo build --arch` compiles it for
    # "row x row": A (M,K) and B (K,N) both row-major. Kernels that also read an operand
    # column-major in place list "row x col" (B^T row-major, as x @ W^T gives W: a build with
    # ZOO_B_K_MAJOR), "col x row" (A^T row-major, as dY^T X gives dY: ZOO_A_M_MAJOR), "col x col".
    layouts: tuple[str, ...]
    entry: dict[tuple[str, str], str]    # (input dtype, output dtype) -> extern "C" name
    aligned_rows: bool                   # needs 16-byte-aligned rows (cp.async, TMA); else copied
    mma_shape: tuple[int, int, int]
    stages: tuple[int, ...]
    smem_bytes: Callable[[cfgs.TileConfig], int]
    rules: Callable[[cfgs.TileConfig], list[str]]
    sass_required: tuple[tuple[str, str], ...]   # (regex, what it proves)
    sass_forbidden: tuple[tuple[str, str], ...]
    description: str = ""
    # The sass_forbidden labels a config may have: where its build was measured faster with them.
    sass_allowed: Callable[[cfgs.TileConfig], tuple[str, ...]] = lambda c: ()
    # (threads per block, how they split) for a config's tiling; warps of WARP_M x WARP_N here.
    thread_layout: Callable[[cfgs.TileConfig], tuple[int, str]] = lambda c: (32 * c.warps, f"32 x {c.warps} warps")
    # Registers per thread the block is launched with, when the kernel fixes it (setmaxnreg);
    # None: assume the arch's per-thread cap until the cubin says otherwise.
    launch_registers: Callable[[cfgs.TileConfig], int] | None = None
    persistent: bool = False             # a grid of as many blocks as fit at once, looping over tiles
    cluster_sizes: tuple[int, ...] = (1,)  # thread-block cluster sizes it supports (along M, and along N)
    pingpong: bool = False               # configs may set pingpong: consumers take whole tiles in turn
    swap_ab: bool = False                # configs may set swap_ab: the MMA computes C^T tiles
    # May be launched as a programmatic dependent of the grid before it in the stream: the
    # kernel waits for that grid (griddepcontrol.wait) before touching global memory, so its
    # launch and set-up can overlap that grid's last tiles (registry.dependent_launch: when).
    pdl: bool = False
    # Takes an `independent` argument: a launch that follows another on its stream and shares
    # no output with it may start without waiting for it (the streams mode's chains). Only
    # with pdl.
    chains: bool = False
    split_k: bool = False                # can cut K into units reduced through a workspace
    # Whether a config adds a bias vector (C's dtype, one value per column) in fp32 before C's
    # rounding: a pointer argument right after C (0: none). Else the bias is added after.
    bias_epilogue: Callable[[cfgs.TileConfig], bool] = lambda c: False
    # Whether a config has a build (ZOO_ROW_SUMS) of its A-column-major layouts that also sums
    # A's rows over K (a Linear's bias gradient with dW = dY^T X), written through a pointer
    # argument after the bias, and the shared memory that build needs beyond smem_bytes.
    row_sums: Callable[[cfgs.TileConfig], bool] = lambda c: False
    row_sums_bytes: int = 0
    # Split-K's model (registry.split_k): how much later a split launch ends than a whole one of
    # the same streaming time (the reduction at its end: the units' partials through L2, a
    # count, the last unit's reads; and its more, shorter CTAs), and the rate at which one CTA
    # streams its K-tiles.
    split_k_cost_us: float = 0.0
    stream_gbps_per_cta: float = 0.0
    stream_k: bool = False               # configs may set stream_k: the tail wave's tiles cut along K over every CTA
    # Configs may set promote (an FP8 build): each K-tile's wgmma sums added into fp32
    # registers. A problem's `promote` then selects the configs with it, or those without.
    promote: bool = False
    pipeline: str = ""                   # how K-tiles are staged; {stages} and {ahead} filled per config
    # Host launchers of an nvcc build (zoo export): (input dtype, output dtype) -> extern "C"
    # int fn(const A*, const B*, C*, int M, int N, int K, cudaStream_t). Empty: none yet.
    exports: dict[tuple[str, str], str] = field(default_factory=dict)
    # TMA boxes (rows, cols) of A, B and C for a config and C's element size: the kernel
    # reads A and B through tensor maps, and stores C through one when C's rows allow it.
    tma_boxes: Callable[[cfgs.TileConfig, int], tuple[tuple[int, int], ...]] | None = None
    # The by-value argument that tells a persistent TMA kernel how its unit numbers decode,
    # for a config and (M, N, K, K slices): divisions worked out once per layout, not per unit.
    unit_layout: Callable[[cfgs.TileConfig, int, int, int, int], object] | None = None
    # TMA kernels that read A or B column-major (layouts): A^T's and B^T's boxes (rows, cols).
    a_col_box: Callable[[cfgs.TileConfig], tuple[int, int]] | None = None
    b_col_box: Callable[[cfgs.TileConfig], tuple[int, int]] | None = None
    tf32: bool = False                   # rounds fp32 inputs to TF32: only where the problem allows it
    extra_defines: dict[str, int] = field(default_factory=dict)  # -D values that select a variant
    # What it computes: "gemm" (zoo.mm, zoo.bmm) or "conv" (zoo.conv2d: an implicit GEMM over an
    # NHWC image, kernels/common/zoo_common.cuh ConvGeometry); each op selects among its own.
    op: str = "gemm"
    # A conv kernel that packs several filter taps into a K-tile where C is small (Conv.c_pad):
    # its K follows R*S*C, not R*S*BK.
    packs_taps: bool = False
    # A streaming kernel for skinny GEMMs (no tiles: blocks of columns over slices of K) serves
    # problems of at most this many rows when registry.skinny_choice takes it; 0: a tile kernel,
    # in the ordinary choice.
    max_m: int = 0
    grouped: bool = True                 # has a grouped entry point (entry name + "_grouped")
    # The layouts a config is built for, where not all of `layouts` (None: all of them).
    config_layouts: Callable[[cfgs.TileConfig], tuple[str, ...]] | None = None

    @property
    def dtypes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(i for i, _ in self.entry))

    def supports(self, problem: Problem) -> bool:
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

    def forbidden_sass(self, c: cfgs.TileConfig) -> tuple[tuple[str, str], ...]:
        """The (regex, label) patterns a config's SASS must not have."""
        allowed = self.sass_allowed(c)
        return tuple(f for f in self.sass_forbidden if f[1] not in allowed)

    def runs_on(self, cc: tuple[int, int]) -> bool:
        return cc == self.exact_cc if self.exact_cc else cc >= self.min_cc

    def eligible_ccs(self) -> str:
        if self.exact_cc:
            return f"{self.exact_cc[0]}.{self.exact_cc[1]} only"
        return f">= {self.min_cc[0]}.{self.min_cc[1]}"

    def compile_arch(self, cc: tuple[int, int]) -> str:
        return device_arch(cc, self.arch_specific)

    def defines(self, c: cfgs.TileConfig, a_col: bool = False, b_col: bool = False,
                row_sums: bool = False) -> dict[str, int]:
        """The -D defines of a config's build; a_col, b_col: A, B read column-major (layouts);
        row_sums: the build that also sums A's rows (row_sums; A column-major)."""
        return {**({"ZOO_A_M_MAJOR": 1} if a_col else {}), **({"ZOO_B_K_MAJOR": 1} if b_col else {}),
                **({"ZOO_ROW_SUMS": 1} if row_sums else {}),
                "ZOO_BM": c.block_m, "ZOO_BN": c.block_n, "ZOO_BK": c.block_k,
                "ZOO_WARP_M": c.warp_m, "ZOO_WARP_N": c.warp_n, "ZOO_STAGES": c.stages,
                "ZOO_GROUP_M": c.group_m, "ZOO_CLUSTER_M": c.cluster_m, "ZOO_CLUSTER_N": c.cluster_n,
                "ZOO_SMEM_BYTES": self.build_smem_bytes(c, row_sums), "ZOO_THREADS": c.threads,
                **({"ZOO_PINGPONG": 1} if c.pingpong else {}),
                **({"ZOO_SWAP_AB": 1} if c.swap_ab else {}),
                **({"ZOO_STREAM_K": 1} if c.stream_k else {}),
                **({"ZOO_FP8_PROMOTE": 1} if c.promote else {}),
                **({"ZOO_FP8_BLOCK": 1} if c.block_scales else {}),
                **self.extra_defines}

    def build_smem_bytes(self, c: cfgs.TileConfig, row_sums: bool = False) -> int:
        """Dynamic shared memory of a config's build (its row-sums build takes row_sums_bytes more)."""
        return self.smem_bytes(c) + (self.row_sums_bytes if row_sums else 0)

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


def layouts_of(spec: KernelSpec, c: cfgs.TileConfig) -> tuple[str, ...]:
    """The layouts ("row x row", ...) a config of `spec` is built for."""
    return spec.config_layouts(c) if spec.config_layouts else spec.layouts


def column_layouts(spec: KernelSpec, c: cfgs.TileConfig) -> list[tuple[bool, bool]]:
    """(a_col, b_col) of each column-major build of `spec` a config allows: A is not read
    column-major by swap-AB tiles (their A stage is wgmma's B operand, K-major)."""
    out = []
    for a_col, b_col in ((False, True), (True, False), (True, True)):
        if layout(a_col, b_col) in layouts_of(spec, c) and not (a_col and c.swap_ab):
            out.append((a_col, b_col))
    return out


def stacks(c: cfgs.TileConfig, m: int, n: int) -> int:
    """Units of work of a persistent kernel without split-K: stacks of cluster_m x cluster_n
    tiles (one per CTA of a cluster)."""
    return -(-m // (c.block_m * c.cluster_m)) * -(-n // (c.block_n * c.cluster_n))


def epilogue_bytes(c: cfgs.TileConfig) -> int:
    """fp32 strips, 16 rows x (warp_n + 8) per warp: zoo::store_strip in kernels/common."""
    return c.warps * 16 * (c.warp_n + 8) * 4


def tile_copy_rules(c: cfgs.TileConfig, why_block_k: str) -> list[str]:
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
