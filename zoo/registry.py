"""The registry: the selection policy. Which kernels exist (zoo/specs/, one module per
kernel family with its facts), where each may run, and which kernel and config a problem gets:
`select(limits, problem)` picks the best eligible kernel and config.
"""

from __future__ import annotations

from dataclasses import replace

from . import configs as cfgs
from . import cuda
from .arch import ArchLimits
from .cuda import ZooError
from .sass import occupancy
from .specs import KERNELS, ELEMENT_BYTES, KernelSpec, stacks  # noqa: F401 - re-exported
from .specs.base import Problem, layout, layouts_of  # noqa: F401 - re-exported
from .specs.gemv import k_major_only
from .specs import (SM75_CONV, SM75_GEMV, SM75_HGEMM, SM75_HMMA, SM75_SGEMM, SM80_CONV, SM80_GEMM,  # noqa: F401
                    SM90_CONV, SM90_FP8, SM90_GEMM, SM90_TF32)

MIN_CC = (7, 5)  # the oldest kernel of the zoo needs Turing tensor cores


MIN_SPLIT_K_TILES = 8   # a K slice or stream-K run of at least 8 K-tiles keeps the TMA ring busy
MAX_SPLITS = 8


# What a stream of TMA loads reached of the datasheet DRAM bandwidth on an H100: 3.1-3.2 of
# 3.35 TB/s (1 x 4096 x K fp16, torch.mm and the zoo; NOTES.md, "The split-K tail").
DRAM_STREAM_SHARE = 0.9


def dram_stream_us(rows: int, k_tiles: int, dram_gbps: float) -> float:
    """How long `rows` rows of A and B (M + N, over all matrices) take to stream K-tile by K-tile
    (one 128-byte row each) from DRAM at DRAM_STREAM_SHARE of its rate (0: rate unknown, no bound)."""
    return rows * k_tiles * cuda.TMA_SWIZZLE_BYTES / (DRAM_STREAM_SHARE * dram_gbps * 1e3) if dram_gbps else 0.0


def split_k(spec: KernelSpec, c: cfgs.TileConfig, m: int, n: int, k: int, resident_clusters: int,
            batch: int = 1, dram_gbps: float = 0.0) -> int:
    """How many slices of K a persistent kernel cuts each tile into: 1 when the tiles (of all
    `batch` matrices) fill the resident clusters, or for narrow tiles (chosen to stream whole:
    on an H100 64x64pp in two slices ran 13-15% slower than whole, NOTES.md, "The split-K
    tail"); else, of the counts whose units fit the resident clusters in slices of at least
    MIN_SPLIT_K_TILES, the one of least modeled time (the fewest among equals):
        spec.split_k_cost_us if split
        + max(a CTA's K-tiles x tile bytes / spec.stream_gbps_per_cta,
              A and B's bytes / (DRAM_STREAM_SHARE x dram_gbps))
    A short K streams fastest whole; few tiles over a deep K are worth cutting until enough
    CTAs stream to fill DRAM (a rate of 0: no bound of that kind). No empty slice: the count is
    recomputed from the slice depth.
    NOTE: a finer rule (the count that least loads the busiest SM, e.g. 3 slices for 86 tiles
    on 132 SMs) was measured on an H100 and lost where M fills a tile's rows (128 x 11008 x
    4096: 79% of torch.mm against 96%); NOTES.md, "Small and skinny shapes"."""
    units = stacks(c, m, n) * batch
    if not spec.split_k or c.narrow or units >= resident_clusters:
        return 1
    k_tiles = -(-k // c.block_k)
    most = min(resident_clusters // units, k_tiles // MIN_SPLIT_K_TILES, MAX_SPLITS)
    if most <= 1:
        return 1
    row_bytes = cuda.TMA_SWIZZLE_BYTES  # a K-tile is one 128-byte row per tile row and column
    dram_us = dram_stream_us(batch * (m + n), k_tiles, dram_gbps)

    rate = spec.stream_gbps_per_cta * 1e3  # bytes per us; 0 (not measured): no per-CTA bound

    def modeled_us(splits: int) -> float:
        cta_us = -(-k_tiles // splits) * (c.block_m + c.block_n) * row_bytes / rate if rate else 0.0
        return (spec.split_k_cost_us if splits > 1 else 0.0) + max(cta_us, dram_us)
    splits = min(range(1, most + 1), key=modeled_us)
    per = -(-k_tiles // splits)
    return -(-k_tiles // per)


def shared_clusters(units: int, all_units: int, resident_clusters: int) -> int:
    """Clusters for one of several grids launched side by side (zoo.bmm's streams mode) whose
    units add up to `all_units`: each cluster takes the units per cluster that one persistent
    grid of them all would (ceil(all_units / resident)), so that every grid's clusters are
    resident at once and each walks its units as a persistent grid does, instead of the later
    grids' waiting for the earlier ones' SMs."""
    per_cluster = -(-all_units // max(resident_clusters, 1))
    return min(resident_clusters, -(-units // per_cluster))


# Stream-K for the last wave (configs with stream_k: 1). A tail of T tiles on G resident CTAs
# takes a whole tile's time; cut along K over all G CTAs it takes T / G of it, plus the fp32
# partials written and read back, and its CTAs read A and B at scattered K offsets. Measured
# on an H100 against the same launch without it (NOTES.md, "Stream-K for the last wave"):
# faster with tails of 9-52% of the CTAs (8192^3 +1.6%, 2304 x 2048 x 8192 +39%), slower with
# 61-88% (4096^3 -11%).
STREAM_K_MAX_FILL = 0.55
INT32_MAX = 2**31 - 1  # the kernels index and count in int32


def stream_k_tiles(spec: KernelSpec, c: cfgs.TileConfig, m: int, n: int, k: int, resident_clusters: int,
                   batch: int = 1) -> int:
    """How many tiles after the last whole wave a stream-K config spreads over every CTA along
    K (0: none, each tile runs whole as usual): when the tiles (of all `batch` matrices) take
    more than one wave and the last leaves over 1 - STREAM_K_MAX_FILL of the CTAs idle, and
    each CTA's run of K-tiles is at least MIN_SPLIT_K_TILES deep (as a split-K slice)."""
    if not (spec.stream_k and c.stream_k) or c.cluster_size != 1 or resident_clusters <= 0:
        return 0
    tiles = c.tiles(m, n) * batch
    tail = tiles % resident_clusters
    k_tiles = -(-k // c.block_k)
    if tiles <= resident_clusters or tail == 0 or tail > STREAM_K_MAX_FILL * resident_clusters:
        return 0
    if tail * k_tiles < MIN_SPLIT_K_TILES * resident_clusters or \
            tail * k_tiles * (resident_clusters + 1) > INT32_MAX:  # the kernel's run arithmetic is int32
        return 0
    return tail


def serves(spec: KernelSpec, c: cfgs.TileConfig, problem: Problem) -> bool:
    """Whether a config has a build for the problem's B: row-major (B as given, or a row-major
    copy of a column-major B), or K-major in place (KernelSpec.config_layouts); and for an FP8
    kernel, whether it is the build the problem's accumulation and scales need (fp8_refusal)."""
    built = layouts_of(spec, c)
    if spec.promote and fp8_refusal(c, problem):
        return False
    return layout(False, False) in built or (problem.b_col and layout(False, True) in built)


def fp8_refusal(c: cfgs.TileConfig, problem: Problem) -> str:
    """Why an FP8 config cannot serve the problem (empty: it can): it must promote its partial
    sums as the problem asks, and be the blockwise recipe's build (block_scales) exactly when
    the problem is blockwise."""
    if bool(c.promote) != problem.promote:
        return (f"{'promotes' if c.promote else 'does not promote'} its partial sums; this call asks for "
                f"{'promotion' if problem.promote else 'fast accumulation'}; name a config with promote: "
                f"{int(problem.promote)}")
    if bool(c.block_scales) != problem.block:
        return (f"{'is' if c.block_scales else 'is not'} the blockwise recipe's build; this call's scales are "
                f"{'blockwise' if problem.block else 'per tensor or per row'}; name a config with block_scales: "
                f"{int(problem.block)}")
    return ""


def dependent_launch(spec: KernelSpec, limits: ArchLimits, footprint_bytes: int) -> bool:
    """Whether a launch goes as a programmatic dependent of the grid before it in its stream
    (its blocks start, and wait, while that grid finishes): for kernels that wait for it
    (spec.pdl; on CC 9.0 and later, where griddepcontrol exists) whose operands and result,
    `footprint_bytes`, fit in L2. Measured on an H100
    in eager loops against the same launches without it (NOTES.md, "Programmatic dependent
    launch"): 1024 x 4096 x 4096 (48 MB) 3-5% faster in two runs, 128 x 4096 x 4096 (34 MB)
    12% in one and even in the other; 128 x 11008 x 4096, 128 x 4096 x 11008 and 16384 x 11008
    x 4096 (94-490 MB, read from DRAM) 4-6% slower, for a reason not found."""
    return spec.pdl and limits.cc >= (9, 0) and footprint_bytes <= limits.l2_bytes


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


def eligible(cc: tuple[int, int], problem: Problem | None = None, op: str = "gemm") -> list[KernelSpec]:
    """Kernels of `op` that run on `cc` (and support the problem's dtypes; a streaming kernel
    only up to its max_m rows), newest arch first."""
    check_cc(cc)
    found = [k for k in KERNELS if k.op == op and k.runs_on(cc) and
             (problem is None or (k.supports(problem) and (not k.max_m or problem.m <= k.max_m)))]
    return sorted(found, key=lambda k: (k.exact_cc or k.min_cc), reverse=True)


# Swap-AB tiles (C^T = B^T A^T, as few as 8 rows of C; zoo/specs/sm90_wgmma.py) measured on an
# H100 against the other tiles (NOTES.md, "Swap-AB tiles"): they won at M = 1 and 16 against
# 4096-wide weights, and lost at M = 64 and 128 (their B tiles are re-read per 16 or 32 rows).
# On small grids that K is too shallow to split they beat the listed tiles but not the narrow
# ones (NOTES.md, "Small grids take narrow tiles"), so they serve there only where no narrow
# tile fits.
SWAP_AB_MAX_M = 16

# Narrow tiles (`narrow: 1`, 64x64) measured on an H100 against the wave-cost choice, inputs out
# of L2 (NOTES.md, "Narrow tiles for 128-row weights", "Small grids take narrow tiles"):
# 128 x 4096 x 4096 and 128 x 4096 x 11008 faster than 64x128pp in two K slices, as fast as
# cuBLAS's 64x64 tiles; 256^3-704^3 and small oblongs 3-29 points of torch.mm faster than the
# swap tiles; but slower where they take more than one wave (128 x 11008 x 4096, 1000^3), and
# no faster for 96 or 100 rows. Skinny M measured up to two whole 64-row tiles.
NARROW_MAX_M = 128

# Ping-pong tiles (`pingpong: 1`) hide each tile's epilogue under the other consumer's MMAs.
# Measured on an H100 against the cooperative 128x256 (NOTES.md, "4096^3, the streams mode and
# ping-pong tiles for large grids"): 128x192pp 1-2.4% faster where its wave cost is no higher (8192^3, 6144^3,
# 1024 x 11008 x 4096), 9% slower where its waves quantize worse (4096^3). Narrower ping-pong
# tiles read more of A and B per FLOP: 128x128pp (half of 128x256's area) lost at 4096^3 at
# an equal wave cost (but see SHORT_K_TILES). Grids under one wave split K instead (split_k),
# but for a short K.
PINGPONG_MIN_AREA = 0.75  # of the cooperative tile's area: 128x192 against 128x256
# Over a short K (at most SHORT_K_TILES K-tiles) a cooperative tile's epilogue, with nothing
# under it, is a large part of its time: there a ping-pong tile of half its area pays. For one
# GEMM on the first config (128x256), not a cluster twin, at any grid size (a grid of 128x256
# tiles for under half the SMs has got a smaller tile by its wave cost already); for the
# others (groups, twins), at one to SHORT_GRID_WAVES waves, as first measured. On an H200
# (CUDA-graph replays, inputs out of L2; NOTES.md, "Short grids take half-size ping-pong
# tiles", "Short K on half-size ping-pong tiles"): x W^T at 8192 x 1024 x 1024 bf16 with
# 128x128pp 29.2 us against 30.9 for 128x256 (torch 29.2); fp16, % of torch.mm, 128x128pp
# against 128x256: 2048^3 (one wave) 100.3 against 98.5, 3000 x 11008 x 1024 104.0 against
# 97.2, 4096 x 8192 x 2048 104.0 against 98.3, 16384 x 4096 x 2048 110.2 against 99.9. At 64
# K-tiles it was mixed (4096^3 97.5 against 98.8, 16384 x 4096 x 4096 104.2 against 100.6):
# not taken.
SHORT_K_TILES = 32
SHORT_GRID_WAVES = 2
PINGPONG_MIN_AREA_SHORT = 0.5

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
    B rows start off 32-byte sectors, with two tile rows or more and tiles for half the SMs or
    more, gets the chosen tile's 2-CTA twin (b_rows_off_sectors). A grid over one wave, or over
    a short K, may get a ping-pong tile instead of a cooperative one (pingpong_choice). Narrow
    and swap-AB tiles stay out of the wave-cost choice; one GEMM gets one where they measured
    faster (narrow_choice, then swap_ab_choice)."""
    valid = [c for c in spec.configs if not cfgs.problems(c, spec, limits) and serves(spec, c, problem)]
    if not valid:
        raise ZooError(f"no config of {spec.name} fits {limits.part} ({limits.arch})")
    if spec.max_m:  # a streaming kernel: the fewest rows that hold M (more: row groups), the narrowest block
        holding = [c for c in valid if c.block_m >= problem.m]
        return min(holding, key=lambda c: (c.block_m, c.block_n)) if holding else max(valid, key=lambda c: c.block_m)
    swapped = [c for c in valid if c.swap_ab]
    narrow = [c for c in valid if c.narrow and not c.swap_ab]
    valid = [c for c in valid if not c.swap_ab and not c.narrow] or swapped
    preferred = [c for c in valid if resident_warps(spec, c, limits) >= MIN_RESIDENT_WARPS] or valid
    costs = {c: wave_cost(spec, c, limits, problem, sum(c.tiles(p.m, p.n) for p in group) if group else None)
             for c in preferred}
    cheapest = min(costs.values())
    chosen = next(c for c in preferred if costs[c] <= cheapest * (1 + WAVE_SLACK))
    chosen = pingpong_choice(spec, preferred, costs, limits, problem, chosen, group)
    if problem.promote and not group:
        chosen = promoted_choice(spec, preferred, limits, problem, chosen)
    if narrow and not group:
        chosen = conv_narrow_choice(narrow, problem, chosen) if spec.op == "conv" else \
            narrow_choice(spec, narrow, limits, problem, chosen)
    if swapped and not group and not chosen.narrow:
        chosen = swap_ab_choice(spec, swapped, limits, problem, chosen)
    if spec.tma_boxes and not group and not chosen.swap_ab and b_rows_off_sectors(problem) and \
            problem.m > chosen.block_m and 2 * chosen.tiles(problem.m, problem.n) >= limits.sm_count:
        # The twin: the same config but in 2 x 1 clusters (so without stream-K, which clusters lack).
        return next((c for c in valid if c.cluster_m == 2 and c.cluster_n == 1 and
                     replace(c, name=chosen.name, cluster_m=chosen.cluster_m, stream_k=chosen.stream_k) == chosen),
                    chosen)
    return chosen


# FP8 promoted tiles: each tile's speed per unit of area against 128x128p (or 128x128pb), keyed
# by (block_m, block_n, blockwise), measured on an H200.
# - 128x192 (two consumers of 64x192) per tensor and per row: 1.09-1.11 (area over time) in
#   forced runs of five shapes where it costs 7-13% more area than 128x128 (NOTES.md, "Promoted
#   FP8 tiles' speeds refitted"); 1.08 gives it 4096 x 11008 x 4096 (96.4% of torch._scaled_mm
#   per tensor against 95.0%, per row 96.8 against 94.9) and leaves 4096^3 (12.5% more area)
#   to 128x128.
# - 192x128 (three consumers of 64x128 in turns), blockwise: 1.09-1.13 in the same runs;
#   1.10 gives it 2048 x 11008 x 4096 (91.5% against 89.9%) and leaves 4096^3 and 2048 x 8192 x
#   8192 to 128x128pb (91.4% against 89.5%, 90.0 against 87.8).
# - 128x192pb: 1.02-1.04 in the same runs (84.5% of torch's blockwise over the five shapes,
#   against 89.9% for 128x128pb and 90.4% for 192x128pb): 1.03.
# - 192x128 per tensor and per row: no faster than 128x192p over equal waves (8192^3: 100.3%
#   against 100.8%), so 1.04 lies under 128x192's speed; but above 1.08 x 21 / 22, so it takes
#   16384 x 4096 x 11008, 21 waves of it against 22 (100.1% against 95.4%).
# (NOTES.md, "Three promoted consumers, measured".) The wider tiles quantize worse: 4096^3 is
# 5.3 waves of either, 7.8 of 128x128.
PROMOTED_AREA_SPEED = {(128, 192, False): 1.08, (128, 192, True): 1.03,
                       (192, 128, False): 1.04, (192, 128, True): 1.10}


def promoted_choice(spec: KernelSpec, preferred: list[cfgs.TileConfig], limits: ArchLimits, problem: Problem,
                    chosen: cfgs.TileConfig) -> cfgs.TileConfig:
    """For a promoted FP8 problem: the promoted tile of least wave cost over its speed
    (PROMOTED_AREA_SPEED; 1 for a tile not listed), the first listed among equals (configs are
    listed best first: a tile added at the end with no speed measured ties 128x128p at 4096^3 and
    ran there at 81% of torch._scaled_mm against 98-100; NOTES.md, "The producer tail, measured")."""
    promoted = [c for c in preferred if c.promote]
    if len(promoted) < 2:
        return chosen

    def cost(c: cfgs.TileConfig) -> float:
        speed = PROMOTED_AREA_SPEED.get((c.block_m, c.block_n, bool(c.block_scales)), 1.0)
        return wave_cost(spec, c, limits, problem) / speed
    return min(promoted, key=cost)  # min keeps the first of equals


# A convolution of at most CONV_NARROW_MAX_N output channels on a 64-wide conv tile (128x64pp),
# measured with `zoo tune --conv resnet50` on an H200 against the automatic 128-wide choice
# (NOTES.md, "64-wide conv tiles"): ResNet-50's 1x1 64->64 at 56x56 11.3 us against 15.4
# (cuDNN 11.2), 3x3 64->64 28.0 against 43.0 (cuDNN 31.0), 1x1 256->64 21.7 against 25.8
# (cuDNN 21.7).
CONV_NARROW_MAX_N = 64


def conv_narrow_choice(narrow: list[cfgs.TileConfig], problem: Problem, chosen: cfgs.TileConfig) -> cfgs.TileConfig:
    """The first narrow conv tile as wide as the output channels instead of `chosen`, for a
    convolution of at most CONV_NARROW_MAX_N of them; else `chosen`."""
    if problem.n > CONV_NARROW_MAX_N:
        return chosen
    return next((c for c in narrow if c.block_n >= problem.n), chosen)


def packed_config(spec: KernelSpec, limits: ArchLimits, problem: Problem) -> cfgs.TileConfig:
    """conv2d's config of packed taps (KernelSpec.packs_taps): the narrowest tile that holds the
    output channels (few: the stem's 64), the tallest of those, as B is read once per tile. On
    an H200, the stem at batch 32 (x's copy included): 128x64 95.5 us, 64x64 106, 128x128 148
    (cuDNN 85.6); results/h200-2026-11-28/issue41/packed-taps."""
    fits = [c for c in spec.configs if not cfgs.problems(c, spec, limits)]
    holding = [c for c in fits if c.block_n >= problem.n] or fits
    narrowest = min(c.block_n for c in holding)
    return max((c for c in holding if c.block_n == narrowest), key=lambda c: c.block_m)


def pingpong_choice(spec: KernelSpec, preferred: list[cfgs.TileConfig], costs: dict, limits: ArchLimits,
                    problem: Problem, chosen: cfgs.TileConfig, group: tuple[Problem, ...] = ()) -> cfgs.TileConfig:
    """The first ping-pong config instead of a cooperative `chosen` for a grid of more than one
    wave, where its wave cost is no higher and its tile at least PINGPONG_MIN_AREA of chosen's
    (PINGPONG_MIN_AREA_SHORT over at most SHORT_K_TILES K-tiles: for one GEMM on the first
    config, not a cluster twin, at any grid size; else for one to SHORT_GRID_WAVES waves; same
    cluster shape):
    the epilogues hidden, for no more waves and little more operand traffic."""
    if spec.op != "gemm" or chosen.pingpong:
        return chosen
    tiles = sum(chosen.tiles(p.m, p.n) for p in group) if group else chosen.tiles(problem.m, problem.n)
    wave = limits.sm_count * max(resident_blocks(spec, chosen, limits), 1)
    first = chosen is preferred[0] and chosen.cluster_size == 1 and not group and not b_rows_off_sectors(problem)
    short = -(-problem.k // chosen.block_k) <= SHORT_K_TILES and \
        (first or wave < tiles <= SHORT_GRID_WAVES * wave)
    if tiles <= wave and not short:
        return chosen
    least = PINGPONG_MIN_AREA_SHORT if short else PINGPONG_MIN_AREA
    area = chosen.block_m * chosen.block_n
    return next((c for c in preferred if c.pingpong and c.cluster_size == chosen.cluster_size
                 and costs[c] <= costs[chosen] and c.block_m * c.block_n >= least * area), chosen)


def swap_ab_choice(spec: KernelSpec, swapped: list[cfgs.TileConfig], limits: ArchLimits, problem: Problem,
                   chosen: cfgs.TileConfig) -> cfgs.TileConfig:
    """A swap-AB tile instead of `chosen` for one GEMM where they measured faster (SWAP_AB_MAX_M):
    an M of at most SWAP_AB_MAX_M rows gets the shortest swap tile that holds them (no MMA on
    rows past M); a grid of `chosen` under half a wave whose K is too shallow for two slices
    (and that no narrow tile took: narrow_choice) gets the swap tile of the least wave cost
    (the first listed among equals): more, smaller tiles. (Deeper K, e.g. 500 x 1000 x 1000:
    64x128 whole 10.6 us, 32x64s 13.7 on an H100.) Past SWAP_AB_MAX_M rows the FP8 kernel's
    swap tiles take a rule of their own, measured on them (scaled_small_m_choice)."""
    m, n, k = problem.m, problem.n, problem.k
    if m <= SWAP_AB_MAX_M:
        holding = [c for c in swapped if c.block_m >= m]
        return min(holding, key=lambda c: c.block_m) if holding else chosen
    if spec.op == "scaled":  # the small-grid rule below was measured on 16-bit tiles only
        return scaled_small_m_choice(spec, swapped, limits, problem, chosen)
    if 2 * chosen.tiles(m, n) < limits.sm_count and -(-k // chosen.block_k) < 2 * MIN_SPLIT_K_TILES:
        costs = [wave_cost(spec, c, limits, problem) for c in swapped]
        return swapped[costs.index(min(costs))]
    return chosen


# The FP8 swap tiles' time model (scaled_small_m_choice), fitted on an H200 to 17 shapes of 32-512
# rows, each on 16x128sp, 32x128sp and 64x128sp, per tensor and per row (NOTES.md, "Small-M FP8
# tiles by modeled time"): a CTA streams ~115 GB/s of its K-tiles (a 128-byte row of A and of B
# per tile row and column) from L2, and a launch in K slices ends ~1.5 us plus ~1 us per MB of
# fp32 partials later.
SWAP_STREAM_GBPS = 115.0
SWAP_SPLIT_US = 1.5
SWAP_SPLIT_US_PER_MB = 1.0


def swap_modeled_us(spec: KernelSpec, c: cfgs.TileConfig, m: int, n: int, k: int, resident: int,
                    dram_gbps: float) -> float:
    """An FP8 swap-tile launch's modeled time on `resident` CTAs: their streaming of their K
    slices (split_k's count, as the launch takes it) or the whole of A and B from DRAM,
    whichever is longer, plus the reduction of the slices' partials."""
    splits = split_k(spec, c, m, n, k, resident, dram_gbps=dram_gbps)
    k_tiles = -(-k // c.block_k)
    stream_us = -(-k_tiles // splits) * (c.block_m + c.block_n) * cuda.TMA_SWIZZLE_BYTES / (SWAP_STREAM_GBPS * 1e3)
    partial_mb = splits * -(-m // c.block_m) * c.block_m * n * 4 / 1e6
    return max(stream_us, dram_stream_us(m + n, k_tiles, dram_gbps)) + \
        (SWAP_SPLIT_US + SWAP_SPLIT_US_PER_MB * partial_mb if splits > 1 else 0.0)


def scaled_small_m_choice(spec: KernelSpec, swapped: list[cfgs.TileConfig], limits: ArchLimits, problem: Problem,
                          chosen: cfgs.TileConfig) -> cfgs.TileConfig:
    """FP8, over SWAP_AB_MAX_M rows: where `chosen` leaves over half the SMs idle or its tiles'
    rows half empty, the swap tile of least modeled time (swap_modeled_us; the first listed
    among equals) of those whose tiles fit one wave, else `chosen`. Shorter tiles make more
    CTAs, but each streams more bytes per output row, and a taller tile's K slices cost their
    reduction. On an H200, per tensor, % of torch._scaled_mm (NOTES.md, "Small-M FP8 tiles" and
    "Small-M FP8 tiles by modeled time"): 128 x 4096 x 4096 on 32x128sp 94 (128 tiles)
    against 66 on 128x128p (32 tiles in K slices); 128 x 2048 x 11008 on 32x128sp in two
    slices 94 against 84 on 16x128sp whole; 64 x 11008 x 4096 on 64x128sp 99 against 74.
    128 x 11008 x 4096 (86 full tiles) stays on 128x128p: 94, against 71-78 on swap tiles."""
    m, n, k = problem.m, problem.n, problem.k
    if 2 * chosen.tiles(m, n) >= limits.sm_count and 2 * m > chosen.block_m:
        return chosen
    resident = {c.name: limits.sm_count * max(resident_blocks(spec, c, limits), 1) for c in swapped}
    fitting = [c for c in swapped if c.tiles(m, n) <= resident[c.name]]
    return min(fitting, key=lambda c: swap_modeled_us(spec, c, m, n, k, resident[c.name], limits.dram_gbps)) \
        if fitting else chosen


def narrow_choice(spec: KernelSpec, narrow: list[cfgs.TileConfig], limits: ArchLimits, problem: Problem,
                  chosen: cfgs.TileConfig) -> cfgs.TileConfig:
    """The first narrow tile instead of `chosen` for one GEMM of more than SWAP_AB_MAX_M rows
    whose chosen tiles leave over half the SMs idle, where the narrow tiles fit one wave and
    `chosen` would run whole (split_k: K too shallow to be worth cutting), or, for at most
    NARROW_MAX_M rows, where they fill a third of a wave: more CTAs, each a whole 64x64 tile
    behind a deep ring. Up to NARROW_MAX_M rows only in whole narrow tiles (96 and 100 rows,
    part-filled, measured no faster). On an H100: 64 x 4096 x 4096 (64 narrow tiles) 99% of
    torch.mm, against 84% for 64x128 tiles in two K slices (NOTES.md, "The split-K tail");
    512^3 97% against 88% for 32x64s, 640^3 101% against 72% (NOTES.md, "Small grids take
    narrow tiles")."""
    m, n, k = problem.m, problem.n, problem.k
    if m <= SWAP_AB_MAX_M or 2 * chosen.tiles(m, n) >= limits.sm_count:
        return chosen
    resident = limits.sm_count * max(resident_blocks(spec, chosen, limits), 1) // chosen.cluster_size
    whole = split_k(spec, chosen, m, n, k, resident, dram_gbps=limits.dram_gbps) == 1
    skinny = m <= NARROW_MAX_M
    for c in narrow:
        tiles = c.tiles(m, n)
        if skinny and m % c.block_m:
            continue
        if tiles <= limits.sm_count * max(resident_blocks(spec, c, limits), 1) and \
                (whole or (skinny and limits.sm_count <= 3 * tiles)):
            return c
    return chosen


def b_rows_off_sectors(problem: Problem) -> bool:
    """Whether B's rows (at least a 128-byte TMA box row wide) start off 32-byte sectors: TMA
    reads them slowly, unless the two CTAs of a cluster share each B tile and load half of it
    each. On an H100, 3000^3 fp16 ran at 63-65% of torch.mm with 128x192pp and 85-88% in
    2-CTA clusters; under a wave too: 1000^3 80.8% with 64x128pp and 89.8% with 64x128ppc2,
    1536 x 1000 x 4096 72.4% with 128x128 and 85.6% with 128x128c2, but 500 x 1000 x 1000 (64
    tiles on 132 SMs) 68.5% against 66.2%. So pick_config takes a config's cluster twin for one
    GEMM (not a group) whose tiles cover half the SMs or more, in two tile rows or more (the
    pair's second CTA has rows to work on)."""
    row_bytes = problem.n * ELEMENT_BYTES[problem.dtype]
    return row_bytes >= cuda.TMA_SWIZZLE_BYTES and \
        (problem.ldb or problem.n) * ELEMENT_BYTES[problem.dtype] % cuda.TMA_SECTOR_BYTES != 0


def select(limits: ArchLimits, problem: Problem, *, kernel_name: str | None = None,
           config_name: str | None = None,
           group: tuple[Problem, ...] = (), op: str = "gemm") -> tuple[KernelSpec, cfgs.TileConfig]:
    """The kernel and config for `problem` on the device described by `limits` (for a grouped
    launch, `problem` gives the dtypes and `group` all the problems); `op` "conv": the GEMM
    of a convolution, among the implicit-GEMM kernels."""
    check_cc(limits.cc)
    if kernel_name:
        spec = kernel(kernel_name)
        if spec.op != op:
            raise ZooError(f"{spec.name} is a {spec.op} kernel, not a {op} one; "
                           f"{op} kernels: {', '.join(k.name for k in KERNELS if k.op == op)}")
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
        candidates = [k for k in eligible(limits.cc, problem, op) if not k.max_m]
        if not candidates:
            raise ZooError(f"no kernel for {problem.dtype} -> {problem.out_dtype} on CC "
                           f"{limits.cc[0]}.{limits.cc[1]}")
        spec = candidates[0]
        if op == "gemm" and not group and not config_name:
            spec = skinny_choice(limits, problem, spec) or spec
    if config_name:
        return spec, cfgs.validate(spec.config(config_name), spec, limits)
    return spec, pick_config(spec, limits, problem, group)


def select_each(limits: ArchLimits, problem: Problem,
                config_name: str | None = None) -> list[tuple[KernelSpec, cfgs.TileConfig]]:
    """select() for every kernel eligible on the device for `problem` (zoo run --all-kernels),
    each with its own config choice unless it has one named `config_name`."""
    specs = eligible(limits.cc, problem)
    if not specs:
        raise ZooError(f"no kernel computes {problem.dtype} -> {problem.out_dtype} on CC {limits.cc[0]}.{limits.cc[1]}")
    return [select(limits, problem, kernel_name=k.name,
                   config_name=config_name if config_name in {c.name for c in k.configs} else None)
            for k in specs]


# The streaming kernel (kernels/sm75/gemv_stream.cu) against the tile kernels, side by side
# with torch.mm on an H200 (NOTES.md, "A streaming kernel for skinny M"): no faster than the
# sm90 kernel's swap-AB tiles (16x128s: 1 x 4096 x 4096 98.6% of torch.mm against 97.8-101.6%,
# 1 x 4096 x 1024 85.5% against 76%), so a kernel with swap-AB tiles keeps skinny M; the others'
# 64-row tiles run a GEMM of a few rows on a few SMs, where it streams B over all of them. Its
# K-major build (x @ W^T, W read in place) spares a copy of W there.
SKINNY_MAX_M = 8


# Its narrow K-major blocks (the 1x8 config, PDL on sm_90) against the swap-AB tiles on an
# H200, x @ W^T bf16 (NOTES.md, "Decoding GEMMs on narrow streaming blocks"): one row against
# 2048x2048 and 512x2048 weights (8 and 2 MB) 6.2 and 5.5 us against 8.3 and 6.8 (cuBLAS 5.8,
# 5.2); against 8192x2048 and 2048x8192 (32 MB) 15.4 and 17.8 against 10.9 and 14.7; four rows
# 14-15 us against 8.3. So a Hopper GPU takes them for one row of C and a weight of at most
# DECODE_MAX_B_BYTES.
DECODE_MAX_M = 1
DECODE_MAX_B_BYTES = 8 << 20


def skinny_choice(limits: ArchLimits, problem: Problem, chosen: KernelSpec) -> KernelSpec | None:
    """The streaming kernel instead of `chosen` for one GEMM of at most SKINNY_MAX_M rows, where
    a streaming kernel runs on the device and computes the dtypes, and B is either read K-major
    in place (a Linear's W^T, by its K-major build) or row-major with N and its row stride
    multiples of the 8-column chunks (no copy of B, no element-wise tail); where `chosen` has
    swap-AB tiles (those hold a few rows as well), only for a decoding GEMM: DECODE_MAX_M rows
    against a K-major B of at most DECODE_MAX_B_BYTES. Else None (`chosen` stands)."""
    if problem.m > SKINNY_MAX_M:
        return None
    if chosen.swap_ab and not (problem.b_col and problem.m <= DECODE_MAX_M and
                               problem.n * problem.k * ELEMENT_BYTES[problem.dtype] <= DECODE_MAX_B_BYTES):
        return None
    if not problem.b_col and (problem.n % 8 or (problem.ldb or problem.n) % 8):
        return None
    return next((k for k in eligible(limits.cc, problem) if k.max_m >= problem.m), None)


# A streaming launch's K slices: as many blocks as the GPU holds at once (one wave, each block
# streaming its slice), no more slices than make STREAM_MIN_SLICE rows of B each, none over
# the config's block_k rows, and at most MAX_GRID_Y of them (the grid's y dimension).
STREAM_MIN_SLICE = 64
MAX_GRID_Y = cuda.GRID_YZ_MAX


def stream_splits(c: cfgs.TileConfig, m: int, n: int, k: int, resident_blocks: int) -> tuple[int, int]:
    """(splits, rows of K per split) for a streaming kernel's launch: the blocks of
    ceil(N / block_n) column blocks x ceil(M / block_m) row groups, times the splits, fit the
    `resident_blocks` the GPU holds at once (no second wave for a few blocks; 0: no more
    slices than block_k forces, as for a launch that shares the GPU, and for narrow K-major
    blocks: NOTES.md, "Decoding GEMMs on narrow streaming blocks"); no more slices than
    ceil(K / STREAM_MIN_SLICE) unless block_k forces more; slices are whole rounds of the
    block's warps. An M of more than MAX_GRID_Y row groups, or a K that needs more than
    MAX_GRID_Y slices, is a ZooError."""
    if -(-m // c.block_m) > MAX_GRID_Y:
        raise ZooError(f"[{c.name}] computes at most {MAX_GRID_Y * c.block_m} rows (it is for skinny GEMMs), got M={m}")
    if k_major_only(c):  # narrow blocks fill the GPU by themselves (N / block_n): more slices measured slower
        resident_blocks = 0
    blocks = -(-n // c.block_n) * -(-m // c.block_m)
    warps = max(c.threads // 32, 1)
    fewest = -(-k // c.block_k)
    if fewest > MAX_GRID_Y:
        raise ZooError(f"K={k} needs {fewest} slices of at most {c.block_k} rows; the grid holds {MAX_GRID_Y}")
    wanted = min(resident_blocks // blocks, -(-k // STREAM_MIN_SLICE))
    splits = max(fewest, wanted, 1)
    per = -(-k // splits)
    per = min(-(-per // warps) * warps, c.block_k)  # whole rounds of the warps, none over block_k
    return -(-k // per), per
