"""`zoo explain`: why a kernel's configs run the way they do on an arch, from the compiled
cubin (registers, shared memory) and the arch table (limits, datasheet rates), not from
hand-typed numbers: occupancy and its limiter, waves for a problem, the block tile's
arithmetic intensity against the arch's ridge point, the pipeline depth, and the main loop's
instruction mix read from the SASS (what one K-tile costs a warp in issue slots and
shared-memory traffic)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import configs as cfgs
from . import cuda, sass
from .arch import ArchLimits
from .registry import ELEMENT_BYTES, KernelSpec, Problem, layout, layouts_of, stream_splits


@dataclass(frozen=True)
class LoopMix:
    """One K-tile of a kernel's main loop in SASS, per warp: the first loop with HMMAs, walked
    from its head to its back branch taking the fall-through of every conditional branch (the
    interior tiles' path: the edge tiles' checked loads and skipped copies are branched to).
    A thread of the 3-stage WMMA kernel loads and stores every other K-tile; the walk counts
    both, so its LDG and STS are twice their per-K-tile average. A loop unrolled over several
    K-tiles (the 3-stage mma kernel's two register slots) is counted per K-tile."""
    hmma: int            # HMMA instructions
    mma: int             # in m16n8k8 units (2048 FLOP): HMMA.1688 = 1, HMMA.16816 = 2
    ldsm: int
    ldg: int
    sts: int
    bar: int
    other: int           # integer, move, branch, predicate ... instructions
    smem_read: int       # bytes a warp reads from shared memory (LDSM, LDS)
    smem_written: int    # bytes a warp writes (STS)

    @property
    def total(self) -> int:
        return self.hmma + self.ldsm + self.ldg + self.sts + self.bar + self.other

    @property
    def smem_read_per_mma(self) -> float:
        """Shared-memory bytes read per m16n8k8 MMA (2048 FLOP)."""
        return self.smem_read / self.mma if self.mma else 0.0

    def describe(self) -> str:
        return (f"{self.hmma} HMMA, {self.ldsm} LDSM, {self.ldg} LDG, {self.sts} STS, {self.bar} BAR, "
                f"{self.other} other")


_WARP_BYTES = {"128": 512, "64": 256, "32": 128}  # per warp, by access width in bits
_BRANCH = re.compile(r"\bBRA\s+(?:\S+,\s*)?0x([0-9a-f]+)")


def loop_mix(sass_text: str, k_tile_mma: int = 0) -> LoopMix | None:
    """The instruction mix of one pass of the first loop of `sass_text` that issues HMMAs, per
    K-tile when the pass covers a whole number of K-tiles of `k_tile_mma` m16n8k8 MMAs each."""
    ins = [(int(a, 16), body.strip()) for a, body in re.findall(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);", sass_text)]
    index = {a: i for i, (a, _) in enumerate(ins)}
    head = None
    for i, (addr, body) in enumerate(ins):
        m = _BRANCH.search(body)
        if m and int(m.group(1), 16) < addr and any("HMMA" in b for _, b in ins[index[int(m.group(1), 16)]:i]):
            head, tail = index[int(m.group(1), 16)], i
            break
    if head is None:
        return None
    ops, i = [], head
    while head <= i < tail and len(ops) < len(ins):
        body = ins[i][1]
        ops.append(re.sub(r"^@!?U?P\w+\s+", "", body).split()[0])
        m = _BRANCH.search(body)
        i = index[int(m.group(1), 16)] if m and not body.startswith("@") else i + 1
    counts = dict(hmma=0, mma=0, ldsm=0, ldg=0, sts=0, bar=0, other=1,  # other: the back branch
                  smem_read=0, smem_written=0)
    for op in ops:
        width = op.rsplit(".", 1)[-1]
        if op.startswith("HMMA"):
            counts["mma"] += 2 if ".16816" in op else 1
            counts["hmma"] += 1
        elif op.startswith("LDSM"):  # .M88.4 / .2 / (x1): 4, 2, 1 8x8 matrices of 128 bytes
            counts["ldsm"] += 1
            counts["smem_read"] += 128 * (int(width) if width in ("2", "4") else 1)
        elif op.startswith("LDS"):
            counts["other"] += 1
            counts["smem_read"] += _WARP_BYTES.get(width, 128)
        elif op.startswith("LDG"):
            counts["ldg"] += 1
        elif op.startswith("STS"):
            counts["sts"] += 1
            counts["smem_written"] += _WARP_BYTES.get(width, 128)
        elif op.startswith("BAR"):
            counts["bar"] += 1
        else:
            counts["other"] += 1
    passes = counts["mma"] // k_tile_mma if k_tile_mma and counts["mma"] % k_tile_mma == 0 else 1
    return LoopMix(**{name: -(-value // passes) for name, value in counts.items()})


@dataclass(frozen=True)
class Explanation:
    kernel: str
    config: str
    arch: str
    function: str
    registers: int
    smem_bytes: int                # dynamic + static, per block
    threads: int
    occupancy: sass.Occupancy
    tiles: int
    waves: float
    tile_flop_per_byte: float      # one K-step: 2*BM*BN*BK FLOP over (BM+BN)*BK operand bytes
    problem_flop_per_byte: float   # the whole GEMM with A, B read and C written once
    ridge_flop_per_byte: float
    math: str                      # the units the roofline is drawn for: fp16, tf32, fp8 or fp32
    pipeline: str
    loop: LoopMix | None = None    # the main loop's SASS instruction mix (None: no HMMA loop)


def pipeline_depth(spec: KernelSpec, cfg: cfgs.TileConfig) -> str:
    return spec.pipeline.format(stages=cfg.stages, ahead=cfg.stages - 1)


def math_of(spec: KernelSpec, problem: Problem) -> str:
    """fp16 / bf16 run on fp16-rate tensor cores (the streaming kernel: FFMA on the CUDA cores),
    fp32 on TF32 ones or on the CUDA cores."""
    if spec.max_m:
        return "fp32"
    if problem.dtype.startswith("float8"):
        return "fp8"
    if problem.dtype != "float32":
        return "fp16"
    return "tf32" if spec.tf32 else "fp32"


def explain(spec: KernelSpec, cfg: cfgs.TileConfig, limits: ArchLimits, problem: Problem) -> Explanation:
    cfgs.validate(cfg, spec, limits)
    b_col = layout(False, False) not in layouts_of(spec, cfg)  # a config built for a K-major B only
    cubin = cuda.compile_cubin(spec.source, limits.arch, spec.defines(cfg, b_col=b_col), kernel=spec.name,
                               config=cfg.name)
    function = spec.entry[(problem.dtype, problem.out_dtype)]
    res = sass.resources(cubin.image, function)
    smem = spec.smem_bytes(cfg) + res.static_smem
    occ = sass.occupancy(limits, cfg.threads, res.registers, smem)
    tiles = cfg.tiles(problem.m, problem.n)
    if spec.max_m:  # a streaming kernel's blocks: column blocks x K slices x row groups
        tiles = tiles * stream_splits(cfg, problem.m, problem.n, problem.k, occ.blocks_per_sm * limits.sm_count)[0]
    in_bytes, out_bytes = ELEMENT_BYTES[problem.dtype], ELEMENT_BYTES[problem.out_dtype]
    m, n, k = problem.m, problem.n, problem.k
    return Explanation(
        kernel=spec.name, config=cfg.name, arch=limits.arch, function=function, registers=res.registers,
        smem_bytes=smem, threads=cfg.threads, occupancy=occ, tiles=tiles,
        waves=occ.waves(tiles, limits.sm_count),
        tile_flop_per_byte=2 * cfg.block_m * cfg.block_n * cfg.block_k
        / ((cfg.block_m + cfg.block_n) * cfg.block_k * in_bytes),
        problem_flop_per_byte=2 * m * n * k / ((m * k + k * n) * in_bytes + m * n * out_bytes),
        ridge_flop_per_byte=limits.ridge(math_of(spec, problem)), math=math_of(spec, problem),
        pipeline=pipeline_depth(spec, cfg), loop=loop_mix(sass.function_sass(cubin.image, function),
                                                      cfg.warp_m // 16 * cfg.warp_n // 8 * cfg.block_k // 8))
