"""`zoo explain`: why a kernel's configs run the way they do on an arch, from the compiled
cubin (registers, shared memory) and the arch table (limits, datasheet rates), not from
hand-typed numbers: occupancy and its limiter, waves for a problem, the block tile's
arithmetic intensity against the arch's ridge point, and the pipeline depth."""

from __future__ import annotations

from dataclasses import dataclass

from . import configs as cfgs
from . import cuda, sass
from .arch import ArchLimits
from .registry import ELEMENT_BYTES, KernelSpec, Problem


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
    math: str                      # the units the roofline is drawn for: fp16, tf32 or fp32
    pipeline: str


def pipeline_depth(spec: KernelSpec, cfg: cfgs.TileConfig) -> str:
    return spec.pipeline.format(stages=cfg.stages, ahead=cfg.stages - 1)


def math_of(spec: KernelSpec, problem: Problem) -> str:
    """fp16 / bf16 run on fp16-rate tensor cores, fp32 on TF32 ones or on the CUDA cores."""
    if problem.dtype != "float32":
        return "fp16"
    return "tf32" if spec.tf32 else "fp32"


def explain(spec: KernelSpec, cfg: cfgs.TileConfig, limits: ArchLimits, problem: Problem) -> Explanation:
    cfgs.validate(cfg, spec, limits)
    cubin = cuda.compile_cubin(spec.source, limits.arch, spec.defines(cfg), kernel=spec.name, config=cfg.name)
    function = spec.entry[(problem.dtype, problem.out_dtype)]
    res = sass.resources(cubin.image, function)
    smem = spec.smem_bytes(cfg) + res.static_smem
    occ = sass.occupancy(limits, cfg.threads, res.registers, smem)
    tiles = cfg.tiles(problem.m, problem.n)
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
        pipeline=pipeline_depth(spec, cfg))
